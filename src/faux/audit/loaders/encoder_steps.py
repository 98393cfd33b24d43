"""Reading a fitted Pipeline's encoding steps: which raw column each output column of the
steps comes from, and which encoder made it (:class:`Tracer`), walking ColumnTransformers,
nested Pipelines and FeatureUnions; what faux cannot map is refused in one line naming the
step (:func:`refuse`). Used by :mod:`faux.audit.loaders.encoders`."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd

from faux.errors import ConfigError

SUPPORTED = ("faux reads OneHotEncoder and OrdinalEncoder, with SimpleImputer before them and "
             "column-wise scalers, in Pipelines and ColumnTransformers; audit the model after "
             "its encoding instead (the Pipeline's later steps, on the columns its encoding "
             "steps output)")


def encoder_types():
    from sklearn.compose import ColumnTransformer
    from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder

    return ColumnTransformer, OneHotEncoder, OrdinalEncoder


def columnwise():
    """Transformers that map each column on its own (no column reads another): kept inside the
    encoding steps, their output column still one raw column's."""
    from sklearn.impute import SimpleImputer
    from sklearn.preprocessing import (
        MaxAbsScaler,
        MinMaxScaler,
        PowerTransformer,
        QuantileTransformer,
        RobustScaler,
        StandardScaler,
    )

    return (SimpleImputer, StandardScaler, MinMaxScaler, MaxAbsScaler, RobustScaler,
            PowerTransformer, QuantileTransformer)


@dataclass
class Col:
    """One column inside ``pre``: the raw column it comes from, and what it is: ``raw`` (the
    raw value, imputed at most), ``num`` (a column-wise function of it), ``enc`` (an encoder's
    output) or ``ind`` (a missing-value indicator)."""

    source: str
    kind: str


@dataclass
class Use:
    """One encoder inside ``pre``: its step, how its input is made from the raw frame
    (``ops``: ``("take", positions)`` or ``("apply", fitted step)``, in order) and the raw
    column of each of its input columns."""

    est: object
    path: str
    ops: tuple
    sources: list[str]

    @property
    def checked(self) -> bool:
        """An unseen value is refused: the encoder raises on it, or encodes it as NaN."""
        how = getattr(self.est, "handle_unknown", "error")
        if how == "use_encoded_value":
            return is_nan(getattr(self.est, "unknown_value", None))
        return how == "error"

    def inputs(self, frame: pd.DataFrame) -> np.ndarray:
        """The encoder's input for raw rows ``frame`` (one column per input, as objects)."""
        x = frame
        for op, arg in self.ops:
            if op == "take":
                x = x.iloc[:, list(arg)] if isinstance(x, pd.DataFrame) else x[:, list(arg)]
            else:
                x = arg.transform(x)
        if hasattr(x, "toarray"):
            x = x.toarray()
        return x.to_numpy(dtype=object) if isinstance(x, pd.DataFrame) else np.asarray(x)

    def unknown(self, frame: pd.DataFrame) -> Iterator[tuple[int, np.ndarray]]:
        """Per input column, the rows of ``frame`` whose value is none of its categories."""
        x = self.inputs(frame)
        for j, cats in enumerate(self.est.categories_):
            yield j, ~known(x[:, j], cats)


def is_nan(v) -> bool:
    return isinstance(v, float) and np.isnan(v)


def known(values, cats) -> np.ndarray:
    """Which ``values`` are among the categories ``cats`` (NaN matching a NaN category)."""
    values = pd.Series(np.asarray(values, dtype=object))
    known = values.isin(list(cats)).to_numpy()
    if any(is_nan(v) for v in cats):
        known |= pd.isna(values).to_numpy()
    return known


def refuse(path: str, est, why: str):
    """The one-line refusal of step ``path`` (empty: the encoding steps as a whole)."""
    what = f"Pipeline step {path!r}" if path else "encoding steps"
    return ConfigError(f"the model's {what} ({type(est).__name__}) {why}; {SUPPORTED}")


def names_encoder(est) -> bool:
    """A categorical encoder: faux's own two, or any other ``*Encoder`` (TargetEncoder...)."""
    return type(est).__name__.endswith("Encoder")


def parts(est) -> list:
    """The fitted steps inside a Pipeline, ColumnTransformer or FeatureUnion."""
    from sklearn.pipeline import FeatureUnion, Pipeline

    ColumnTransformer, _, _ = encoder_types()
    if isinstance(est, Pipeline):
        return [s for _, s in est.steps]
    if isinstance(est, ColumnTransformer):
        return [t for _, t, _ in getattr(est, "transformers_", est.transformers)]
    if isinstance(est, FeatureUnion):
        return [t for _, t in est.transformer_list]
    return []


def holds_encoder(est) -> bool:
    """``est`` is or holds (at any depth) a categorical encoder."""
    return names_encoder(est) or any(holds_encoder(p) for p in parts(est))


def identity(est) -> bool:
    """A step that passes its columns as they are (a ColumnTransformer's ``passthrough``
    becomes a FunctionTransformer without a function once fitted)."""
    from sklearn.preprocessing import FunctionTransformer

    if est is None or (isinstance(est, str) and est == "passthrough"):
        return True
    return isinstance(est, FunctionTransformer) and est.func is None


class Tracer:
    """Which raw column each output column of ``pre`` comes from, and the encoders on the
    way, read from the fitted structure; anything it cannot map is refused."""

    def __init__(self):
        self.uses: list[Use] = []

    def trace(self, est, cols: list[Col], ops: tuple, path: str) -> list[Col]:
        from sklearn.pipeline import FeatureUnion, Pipeline

        ColumnTransformer, OneHotEncoder, OrdinalEncoder = encoder_types()
        if identity(est):
            return list(cols)
        if isinstance(est, str) and est == "drop":
            return []
        if isinstance(est, Pipeline):
            for name, step in est.steps:
                cols = self.trace(step, cols, ops, f"{path} > {name}" if path else name)
                if not identity(step):
                    ops = (*ops, ("apply", step))
            return cols
        if isinstance(est, ColumnTransformer):
            return self._columns(est, cols, ops, path)
        if isinstance(est, FeatureUnion):
            if holds_encoder(est):
                raise refuse(path, est, "holds an encoder: the union's parts each read every "
                              "column, and faux cannot map its output to categories")
            out = []
            for name, t in est.transformer_list:
                if not (isinstance(t, str) and t == "drop"):
                    out += self.trace(t, cols, ops, f"{path} > {name}")
            return out
        if isinstance(est, OneHotEncoder | OrdinalEncoder):
            return self._encoder(est, cols, ops, path)
        if isinstance(est, columnwise()):
            return self._columnwise(est, cols, path)
        raise refuse(path, est, "is not a step faux can map back to the raw columns" +
                      (" (a categorical encoder it cannot read)" if names_encoder(est) else ""))

    def _columns(self, ct, cols, ops, path) -> list[Col]:
        n_out = max((sl.stop for sl in ct.output_indices_.values()), default=0)
        out: list[Col | None] = [None] * n_out
        for name, trans, _ in ct.transformers_:
            sl = ct.output_indices_.get(name, slice(0, 0))
            idx = [int(i) for i in ct._transformer_to_input_indices[name]]
            if not idx:  # an empty selection: not fitted, no output
                continue
            sub = self.trace(trans, [cols[i] for i in idx], (*ops, ("take", tuple(idx))),
                             f"{path} > {name}" if path else name)
            if len(sub) != sl.stop - sl.start:
                raise refuse(f"{path} > {name}" if path else name, trans,
                              f"outputs {sl.stop - sl.start} columns where faux reads "
                              f"{len(sub)}")
            out[sl] = sub
        if any(c is None for c in out):
            raise refuse(path, ct, "outputs columns faux cannot place")
        return out

    def _encoder(self, enc, cols, ops, path) -> list[Col]:
        _, OneHotEncoder, _ = encoder_types()
        if any(c.kind == "ind" for c in cols):
            raise refuse(path, enc, "reads a missing-value indicator "
                          "(SimpleImputer(add_indicator=True))")
        changed = [c.source for c in cols if c.kind != "raw"]
        if changed:
            raise refuse(path, enc, f"reads column {changed[0]!r} after an earlier step "
                          "changed its values")
        if not isinstance(enc, OneHotEncoder) and is_nan(getattr(
                enc, "encoded_missing_value", None)) and any(
                is_nan(v) for cats in enc.categories_ for v in cats):
            raise refuse(path, enc, "encodes missing values as NaN; fit it with "
                          "encoded_missing_value set to a number")
        if isinstance(enc, OneHotEncoder):
            inf = getattr(enc, "infrequent_categories_", None)
            drop = getattr(enc, "drop_idx_", None)
            counts = []
            for j, cats in enumerate(enc.categories_):
                k = len(cats)
                if inf is not None and inf[j] is not None and len(inf[j]) > 0:
                    k -= len(inf[j]) - 1  # the infrequent categories: one column
                if drop is not None and drop[j] is not None:
                    k -= 1
                counts.append(k)
        else:
            counts = [1] * len(enc.categories_)
        if sum(counts) != len(enc.get_feature_names_out()):
            raise refuse(path, enc, "outputs columns faux cannot place")
        self.uses.append(Use(enc, path, ops, [c.source for c in cols]))
        return [Col(c.source, "enc") for c, k in zip(cols, counts, strict=True)
                for _ in range(k)]

    def _columnwise(self, est, cols, path) -> list[Col]:
        from sklearn.impute import SimpleImputer

        if isinstance(est, SimpleImputer):
            out = list(cols)
            ind = getattr(est, "indicator_", None)
            if ind is not None:
                out += [Col(cols[int(i)].source, "ind") for i in ind.features_]
        else:
            out = [Col(c.source, "num" if c.kind == "raw" else c.kind) for c in cols]
        if len(out) != len(est.get_feature_names_out()):
            raise refuse(path, est, "outputs columns faux cannot place (a column empty in "
                          "training?)")
        return out
