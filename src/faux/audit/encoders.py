"""scikit-learn Pipelines that encode categorical columns themselves.

A Pipeline whose first steps are a ``ColumnTransformer``, ``OneHotEncoder`` or
``OrdinalEncoder`` takes the user's raw rows (strings included). The audit splits it in two:
the encoding steps (``pre``), applied to each batch as it is read, and the rest (``rest``),
the model the audit scores, on the encoded columns. The encoders also say exactly which
encoded columns are one categorical feature and which values each level takes
(:class:`faux.audit.layout.Layout`), so a counterfactual swaps a category (``relationship:
Husband -> Wife``) and never moves a one-hot column fractionally.

A raw value that an encoder never saw in training (an unseen category, a missing value it was
not fitted on) is refused in one line naming the column, the value and the first row.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd

from faux.audit.data import ArraySource, Batch, FileSource, Source, protected_list
from faux.audit.layout import Block, Layout
from faux.errors import DataError


def _encoder_types():
    from sklearn.compose import ColumnTransformer
    from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder

    return ColumnTransformer, OneHotEncoder, OrdinalEncoder


@dataclass
class Encoded:
    """A Pipeline split into its encoding steps and the model on their output."""

    pre: object
    rest: object
    raw_features: list[str]
    names: list[str]
    layout: Layout


def split(model) -> Encoded | None:
    """The split of ``model`` when it is a fitted Pipeline that starts with encoders of
    categorical columns (the steps up to the last such encoder), else None."""
    from sklearn.pipeline import Pipeline

    if not isinstance(model, Pipeline) or len(model.steps) < 2:
        return None
    types = _encoder_types()
    last = -1
    for i, (_, step) in enumerate(model.steps[:-1]):
        if isinstance(step, types):
            last = i
    if last < 0:
        return None
    pre, rest = model[:last + 1], model[last + 1:]
    raw = getattr(pre, "feature_names_in_", None)
    if raw is None:
        raise DataError("the Pipeline's encoders were fitted without column names; fit the "
                        "Pipeline on a DataFrame so the audit can match the data's columns")
    names = [str(n) for n in pre.get_feature_names_out()]
    return Encoded(pre, rest, [str(c) for c in raw], names, layout_of(pre, names))


def _blocks_of_encoder(enc, inputs, start: int, names) -> tuple[list[Block], list[int]]:
    """The blocks an encoder's output columns form (they begin at column ``start``), and the
    number of output columns it has."""
    _, OneHotEncoder, OrdinalEncoder = _encoder_types()
    blocks, at = [], start
    for j, cats in enumerate(enc.categories_):
        levels = tuple(str(v) for v in cats)
        if isinstance(enc, OrdinalEncoder):
            blocks.append(Block(str(inputs[j]), (at,), levels,
                                tuple((float(i),) for i in range(len(levels)))))
            at += 1
            continue
        drop = None if getattr(enc, "drop_idx_", None) is None else enc.drop_idx_[j]
        keep = [i for i in range(len(levels)) if drop is None or i != drop]
        cols = tuple(range(at, at + len(keep)))
        codes = tuple(tuple(float(i == k) for k in keep) for i in range(len(levels)))
        blocks.append(Block(str(inputs[j]), cols, levels, codes))
        at += len(keep)
    return blocks, at - start


def _inputs(ct, trans, cols) -> list[str]:
    """The raw column names a ColumnTransformer's ``trans`` reads (``cols`` as it was given:
    names, positions, a mask or a slice)."""
    named = getattr(trans, "feature_names_in_", None)
    if named is not None:
        return [str(c) for c in named]
    if isinstance(cols, str):
        return [cols]
    sel = np.asarray(ct.feature_names_in_)[cols]
    return [str(c) for c in np.atleast_1d(sel)]


def layout_of(pre, names) -> Layout:
    """The Layout of the encoded columns: a block per encoded input column, the rest
    continuous."""
    ColumnTransformer, OneHotEncoder, OrdinalEncoder = _encoder_types()
    steps = pre.steps if hasattr(pre, "steps") else [("pre", pre)]
    blocks: list[Block] = []
    for _, step in steps:
        if isinstance(step, ColumnTransformer):
            blocks = []
            for name, trans, cols in step.transformers_:
                if not isinstance(trans, OneHotEncoder | OrdinalEncoder):
                    continue
                sl = step.output_indices_[name]
                bs, _ = _blocks_of_encoder(trans, _inputs(step, trans, cols), sl.start, names)
                blocks += bs
        elif isinstance(step, OneHotEncoder | OrdinalEncoder):
            blocks, _ = _blocks_of_encoder(step, list(step.feature_names_in_), 0, names)
    used = {c for b in blocks for c in b.columns}
    return Layout(len(names), tuple(blocks), tuple(j for j in range(len(names))
                                                   if j not in used))


def _check_known(pre, frame: pd.DataFrame, start: int) -> None:
    """DataError for the first raw value an encoder of ``pre`` never saw in training."""
    ColumnTransformer, OneHotEncoder, OrdinalEncoder = _encoder_types()
    steps = pre.steps if hasattr(pre, "steps") else [("pre", pre)]
    checks = []
    for _, step in steps[:1]:
        if isinstance(step, ColumnTransformer):
            for _, trans, cols in step.transformers_:
                if isinstance(trans, OneHotEncoder | OrdinalEncoder):
                    checks += list(zip(_inputs(step, trans, cols), trans.categories_,
                                       strict=True))
        elif isinstance(step, OneHotEncoder | OrdinalEncoder):
            checks += list(zip(step.feature_names_in_, step.categories_, strict=True))
    for col, cats in checks:
        values = frame[str(col)]
        known = pd.Series(values).isin(list(cats))
        if any(isinstance(v, float) and np.isnan(v) for v in cats):
            known |= pd.isna(values).to_numpy()
        if not known.all():
            i = int(np.flatnonzero(~np.asarray(known))[0])
            raise DataError(f"column {col!r} has the value {values.iloc[i]!r} in row "
                            f"{start + i}, which the model's encoder never saw in training "
                            f"(known: {', '.join(map(str, list(cats)[:8]))}"
                            f"{', ...' if len(cats) > 8 else ''}); fix or drop those rows")


def transform(enc: Encoded, frame: pd.DataFrame, start: int) -> np.ndarray:
    """The encoded rows (dense float64) of raw ``frame``, unseen values refused."""
    _check_known(enc.pre, frame, start)
    out = enc.pre.transform(frame[enc.raw_features])
    if hasattr(out, "toarray"):
        out = out.toarray()
    return np.asarray(out, dtype=np.float64)


class EncodedSource(Source):
    """The rows of ``raw`` (in memory or a file) as the Pipeline's encoders output them:
    ``columns`` are the encoded feature names, then the raw protected and label columns."""

    def __init__(self, raw: Source, enc: Encoded):
        missing = [c for c in enc.raw_features if c not in raw.columns]
        if missing:
            raise DataError(f"the model's Pipeline reads column(s) {missing[:5]} that the data "
                            f"do not have; pass data with the columns it was fitted on")
        self.raw, self.enc = raw, enc
        self.name, self.n_rows = raw.name, raw.n_rows
        self.columns = list(enc.names) + [c for c in raw.columns if c not in enc.raw_features]
        for attr in ("c_names", "y_name", "c_name"):
            if hasattr(raw, attr):
                setattr(self, attr, getattr(raw, attr))

    def _frames(self, want, batch_size) -> Iterator[tuple[int, pd.DataFrame, dict]]:
        raw = self.raw
        if isinstance(raw, ArraySource):
            for s in range(0, raw.n_rows, batch_size):
                part = raw.frame.iloc[s:s + batch_size]
                extra = {p: v[s:s + batch_size] for p, v in raw.cs.items()}
                if raw.y is not None:
                    extra["__y__"] = raw.y[s:s + batch_size]
                yield s, part, extra
            return
        if isinstance(raw, FileSource):
            start = 0
            for rb in raw._record_batches(want, [], batch_size):
                frame = rb.to_pandas()
                yield start, frame, {}
                start += len(frame)
            return
        raise DataError(f"cannot read categorical columns from a {type(raw).__name__}")

    def batches(self, features, protected, label, batch_size) -> Iterator[Batch]:
        prot = protected_list(protected)
        idx = [self.enc.names.index(f) for f in features]
        want = list(dict.fromkeys([*prot, *([label] if label else []),
                                   *self.enc.raw_features]))
        for start, frame, extra in self._frames(want, batch_size):
            if len(frame) == 0:
                continue
            x = transform(self.enc, frame, start)[:, idx]
            cs = {p: (extra[p] if p in extra else frame[p].to_numpy()) for p in prot}
            y = None
            if label:
                y = extra.get("__y__", frame[label].to_numpy() if label in frame else None)
            yield Batch(start, x, cs[prot[0]], y, cs)
