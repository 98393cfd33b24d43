"""scikit-learn Pipelines that encode categorical columns themselves.

A Pipeline whose first steps are a ``ColumnTransformer``, ``OneHotEncoder`` or
``OrdinalEncoder`` (or hold one, in a nested Pipeline) takes the user's raw rows (strings
included). The audit splits it in two: the encoding steps (``pre``), applied to each batch as
it is read, and the rest (``rest``), the model the audit scores, on the encoded columns. The
encoders also say exactly which encoded columns are one categorical feature and which values
each level takes (:class:`faux.audit.sources.layout.Layout`), so a counterfactual swaps a category
(``relationship: Husband -> Wife``) and never moves a one-hot column fractionally.

The layout is read from the fitted objects, never from the column names: the structure
(ColumnTransformers, nested Pipelines, FeatureUnions) says which raw column each encoded
column comes from, and each categorical block's codes are what the fitted ``pre`` itself
outputs for each of the encoder's categories (so ``drop``, ``min_frequency``,
``max_categories`` and scalers after the encoder are, by construction, what the model sees).
What faux cannot map (a ``TargetEncoder``, a ``FunctionTransformer``, a ``KBinsDiscretizer``,
an encoder inside a FeatureUnion, a scaler before an encoder...) is refused in one line naming
the step, never approximated. Allowed around the encoders: ``SimpleImputer`` and the
column-wise scalers of :func:`faux.audit.loaders.encoder_steps.columnwise`.

A raw value that an encoder never saw in training (an unseen category, a missing value it was
not fitted on) is refused in one line naming the column, the value and the first row, unless
the encoder is set to accept it (``handle_unknown="ignore"``, ``"infrequent_if_exist"``,
``"warn"``, ``"use_encoded_value"``): the model then defines its encoding, the audit encodes it
as the model does and says so once (:class:`EncodedSource`). When that encoding is no known
level's code (all zeros), the block has a level of its own for it (``Block.unseen``), which a
row may hold and a counterfactual never moves to.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from faux.audit.loaders.encoder_steps import (
    SUPPORTED,
    Col,
    Tracer,
    Use,
    encoder_types,
    holds_encoder,
    is_nan,
    refuse,
)
from faux.audit.sources.array_source import ArraySource
from faux.audit.sources.columns import protected_list
from faux.audit.sources.file_source import FileSource
from faux.audit.sources.layout import Block, Layout, Units
from faux.audit.sources.source import Batch, Source
from faux.errors import ConfigError, DataError

#: the level of a one-hot block whose column is the encoder's infrequent categories
INFREQUENT = "infrequent_sklearn"
#: the level a block has for the values its encoder never saw, when the model encodes them as
#: no known level (``handle_unknown="ignore"``: all zeros)
UNSEEN = "(unseen)"


@dataclass
class Encoded:
    """A Pipeline split into its encoding steps and the model on their output."""

    pre: object
    rest: object
    raw_features: list[str]
    names: list[str]
    layout: Layout
    uses: tuple = ()  # the encoders inside ``pre`` (:class:`Use`), for the unseen values
    unseen_as: dict = field(default_factory=dict)  # raw column -> how an accepted unseen
    #                                                value is encoded (words)

    @property
    def text_columns(self) -> list[str]:
        """The raw columns an encoder knows as text categories: a CSV reader must keep them
        as text ("01" stays "01", not the number 1)."""
        return sorted({src for use in self.uses for j, src in enumerate(use.sources)
                       if any(isinstance(v, str) for v in use.est.categories_[j])})


def split(model) -> Encoded | None:
    """The split of ``model`` when it is a fitted Pipeline that starts with encoders of
    categorical columns (the steps up to the last one that is or holds an encoder, or is a
    ColumnTransformer), else None. A step faux cannot map is refused (ConfigError)."""
    from sklearn.pipeline import Pipeline

    if not isinstance(model, Pipeline) or len(model.steps) < 2:
        return None
    ColumnTransformer, _, _ = encoder_types()
    last = -1
    for i, (_, step) in enumerate(model.steps[:-1]):
        if isinstance(step, ColumnTransformer) or holds_encoder(step):
            last = i
    if last < 0:
        return None
    pre, rest = model[:last + 1], model[last + 1:]
    raw = getattr(pre, "feature_names_in_", None)
    if raw is None:
        raise DataError("the Pipeline's encoders were fitted without column names; fit the "
                        "Pipeline on a DataFrame so the audit can match the data's columns")
    raw = [str(c) for c in raw]
    layout, uses, unseen_as = _map(pre, raw)
    names = [str(n) for n in pre.get_feature_names_out()]
    return Encoded(pre, rest, raw, names, layout, tuple(uses), unseen_as)


def layout_of(pre, names=None) -> Layout:
    """The Layout of the encoded columns: a block per encoded raw column, the rest
    continuous."""
    layout = _map(pre, [str(c) for c in pre.feature_names_in_])[0]
    if names is not None and len(names) != layout.n_features:
        raise refuse("", pre, f"output {len(names)} columns where faux reads "
                      f"{layout.n_features}")
    return layout


def _dense(out) -> np.ndarray:
    if hasattr(out, "toarray"):
        out = out.toarray()
    return np.asarray(out)


def _pre_transform(pre, frame: pd.DataFrame):
    """``pre.transform``, without scikit-learn's warning on each batch about unknown
    categories an encoder accepts (the audit says so once)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*[Uu]nknown categor")
        return pre.transform(frame)


def _probe(pre, raw, base: dict, changes: list[tuple[str, object]], what: str) -> np.ndarray:
    """``pre``'s output (float) for rows of ``base`` values with one raw value changed each
    (``changes``), after a first row of ``base`` itself."""
    cols = {}
    for r in raw:
        v = [base[r]] + [val if c == r else base[r] for c, val in changes]
        dtype = np.asarray([base[r]]).dtype
        cols[r] = pd.Series(v, dtype=object if dtype.kind in "OUS" else None)
    frame = pd.DataFrame(cols)
    try:
        out = _dense(_pre_transform(pre, frame))
    except Exception as err:  # noqa: BLE001 - one line, whatever scikit-learn raised
        msg = " ".join(str(err).split())[:160]
        raise ConfigError(f"the model's encoding steps failed on {what} ({msg}); {SUPPORTED}"
                          ) from err
    try:
        return np.asarray(out, dtype=np.float64)
    except (TypeError, ValueError):  # a passthrough string column: only the blocks are read
        return np.array([[_float(v) for v in row] for row in out])


def _float(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return np.nan


def _same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a == b) | (np.isnan(a) & np.isnan(b))


def _unseen_value(cats):
    """A value of the categories' type that is none of them."""
    cats = np.asarray(cats)
    if cats.dtype.kind in "iufb":
        finite = cats[np.isfinite(cats.astype(np.float64))]
        return (finite.max() if len(finite) else 0) + 1
    return "\x00faux-unseen"


def _map(pre, raw: list[str]):
    """The Layout of ``pre``'s output, its encoders (:class:`Use`) and, per raw column whose
    unseen values its encoders accept, how they are encoded (words)."""
    tracer = Tracer()
    outs = tracer.trace(pre, [Col(r, "raw") for r in raw], (), "")
    n_out = len(pre.get_feature_names_out())
    if len(outs) != n_out:
        raise refuse("", pre, f"output {n_out} columns where faux reads {len(outs)}")
    cats: dict[str, tuple[Use, int]] = {}
    for use in tracer.uses:
        for j, src in enumerate(use.sources):
            if src in cats:
                other, k = cats[src]
                a, b = list(other.est.categories_[k]), list(use.est.categories_[j])
                if len(a) != len(b) or not all(x == y or (is_nan(x) and is_nan(y))
                                               for x, y in zip(a, b)):
                    raise refuse(use.path, use.est, f"encodes column {src!r} with other "
                                  f"categories than step {other.path!r} does")
            else:
                cats[src] = (use, j)
    for c in outs:
        if c.kind == "ind" and c.source in cats:
            raise refuse("", pre, f"add a missing-value indicator of the categorical column "
                          f"{c.source!r} (SimpleImputer(add_indicator=True))")
    cols = {s: [k for k, c in enumerate(outs) if c.source == s] for s in cats}
    base = {r: (cats[r][0].est.categories_[cats[r][1]][0] if r in cats else 1.0)
            for r in raw}
    order = [s for s in raw if s in cats]
    changes = [(s, v) for s in order for v in cats[s][0].est.categories_[cats[s][1]]]
    out = _probe(pre, raw, base, changes, "its own categories")
    codes: dict[str, np.ndarray] = {}
    at = 1
    for s in order:
        n = len(cats[s][0].est.categories_[cats[s][1]])
        rows = out[at:at + n]
        at += n
        moved = ~_same(rows, out[0][None]).all(axis=0)
        if set(np.flatnonzero(moved)) - set(cols[s]):
            raise refuse("", pre, f"mix column {s!r} into others")
        codes[s] = rows[:, cols[s]]
        if not np.isfinite(codes[s]).all():
            raise refuse("", pre, f"encode a category of column {s!r} as NaN")
    accepted = [s for s in order if cols[s] and not any(
        u.checked for u in tracer.uses if s in u.sources)]
    unseen_codes = {}
    if accepted:
        probe = _probe(pre, raw, base, [(s, _unseen_value(cats[s][0].est.categories_[
            cats[s][1]])) for s in accepted], "a category they never saw")
        unseen_codes = {s: probe[1 + i, cols[s]] for i, s in enumerate(accepted)}
    blocks, unseen_as = [], {}
    for s in order:
        if not cols[s]:  # no output column depends on it (one category, dropped)
            continue
        use, j = cats[s]
        block = _block(s, cols[s], use.est, j, codes[s], unseen_codes.get(s))
        blocks.append(block)
        if s in unseen_codes:
            unseen_as[s] = (f"a level of their own, {UNSEEN!r}" if block.unseen
                            else f"the level {block.levels[block.level_of(unseen_codes[s])]!r}")
    used = {c for b in blocks for c in b.columns}
    cont = tuple(j for j in range(n_out) if j not in used)
    layout = Layout(n_out, tuple(sorted(blocks, key=lambda b: b.columns[0])), cont,
                    _units(pre, raw, base, [(j, outs[j]) for j in cont]))
    return layout, tracer.uses, unseen_as


def _units(pre, raw: list[str], base: dict, cont: list) -> tuple[Units, ...]:
    """The continuous output columns that are an affine function of one raw column (passed
    through, or by a scaler: ``pre``'s output at the raw values 1, 2 and 11 on a line), so
    that their values can be shown in the raw column's units; a column that is not (a
    ``QuantileTransformer``'s), or whose probe fails, is left in the model's units."""
    out = []
    for src in dict.fromkeys(c.source for _, c in cont if c.kind in ("raw", "num")):
        try:
            rows = _probe(pre, raw, dict(base, **{src: 1.0}), [(src, 2.0), (src, 11.0)],
                          f"values of column {src!r}")
        except ConfigError:
            continue
        for j, c in cont:
            if c.source != src or c.kind not in ("raw", "num"):
                continue
            f1, f2, f11 = rows[:, j]
            slope = f2 - f1
            if np.isfinite([f1, f2, f11]).all() and slope != 0 and np.isclose(
                    f11, f1 + 10 * slope, rtol=1e-7, atol=1e-9 * abs(slope)):
                out.append(Units(j, src, float(slope), float(f1 - slope)))
    return tuple(out)


def _block(name: str, cols: list[int], enc, j: int, codes: np.ndarray, unseen) -> Block:
    """The block of raw column ``name``: one level per distinct code its categories take (the
    infrequent categories share one, :data:`INFREQUENT`), in the categories' order, and
    :data:`UNSEEN` last when the model encodes an unseen value as no level's code."""
    cats = list(enc.categories_[j])
    inf = getattr(enc, "infrequent_categories_", None)
    infrequent = set() if inf is None or inf[j] is None else {str(v) for v in inf[j]}
    groups: dict[tuple, list] = {}
    for v, code in zip(cats, codes, strict=True):
        groups.setdefault(tuple(float(x) for x in code), []).append(v)
    levels, level_codes = [], []
    for code, members in groups.items():
        if len(members) == 1:
            levels.append(str(members[0]))
        elif {str(v) for v in members} <= infrequent:
            levels.append(INFREQUENT)
        else:
            levels.append(" | ".join(str(v) for v in members))
        level_codes.append(code)
    extra = False
    if unseen is not None:
        u = tuple(float(x) for x in unseen)
        if u not in groups:
            levels.append(UNSEEN)
            level_codes.append(u)
            extra = True
    return Block(name, tuple(cols), tuple(levels), tuple(level_codes), unseen=extra)


def _encode(enc: Encoded, frame: pd.DataFrame, start: int) -> tuple[np.ndarray, dict]:
    """The encoded rows of raw ``frame`` and, per raw column, the rows holding a value its
    encoder never saw but accepts; a value it refuses is a DataError."""
    unseen: dict[str, np.ndarray] = {}
    raw = frame[enc.raw_features]
    for use in enc.uses:
        for j, bad in use.unknown(raw):
            if not bad.any():
                continue
            col = use.sources[j]
            if not use.checked:
                unseen[col] = unseen[col] | bad if col in unseen else bad
                continue
            cats = list(use.est.categories_[j])
            i = int(np.flatnonzero(bad)[0])
            raise DataError(f"column {col!r} has the value {frame[col].iloc[i]!r} in row "
                            f"{start + i}, which the model's encoder never saw in training "
                            f"(known: {', '.join(map(str, cats[:8]))}"
                            f"{', ...' if len(cats) > 8 else ''}); fix or drop those rows")
    out = _dense(_pre_transform(enc.pre, raw))
    return np.asarray(out, dtype=np.float64), unseen


def transform(enc: Encoded, frame: pd.DataFrame, start: int) -> np.ndarray:
    """The encoded rows (dense float64) of raw ``frame``, unseen values refused (or, where the
    model's encoder accepts them, encoded as it does)."""
    return _encode(enc, frame, start)[0]


class EncodedSource(Source):
    """The rows of ``raw`` (in memory or a file) as the Pipeline's encoders output them:
    ``columns`` are the encoded feature names, then the raw protected and label columns. The
    first complete pass over the rows counts the values an encoder never saw but accepts, and
    warns once per column."""

    def __init__(self, raw: Source, enc: Encoded):
        missing = [c for c in enc.raw_features if c not in raw.columns]
        if missing:
            raise DataError(f"the model's Pipeline reads column(s) {missing[:5]} that the data "
                            f"do not have; pass data with the columns it was fitted on")
        self.raw, self.enc = raw, enc
        self.name, self.n_rows = raw.name, raw.n_rows
        # the raw columns stay readable beside the encoded ones (a protected column the
        # model encodes itself is still the attribute's values)
        self.columns = list(enc.names) + [c for c in raw.columns if c not in enc.names]
        for attr in ("c_names", "y_name", "c_name"):
            if hasattr(raw, attr):
                setattr(self, attr, getattr(raw, attr))
        self._warned = False

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
            text = self.enc.text_columns
            for rb in raw._record_batches(want, [], batch_size, text=text):
                frame = rb.to_pandas()
                for col in text:  # a file's null is a missing value, as NaN is in memory
                    frame[col] = frame[col].astype(object).where(frame[col].notna(), np.nan)
                yield start, frame, {}
                start += len(frame)
            return
        raise DataError(f"cannot read categorical columns from a {type(raw).__name__}")

    def _warn_unseen(self, seen: dict) -> None:
        from faux.audit.notices import warn

        self._warned = True
        for col, (n, row, value) in seen.items():
            how = getattr(next(u.est for u in self.enc.uses if col in u.sources),
                          "handle_unknown", "?")
            warn(f"column {col!r} has {n} value{'s' if n != 1 else ''} the model's encoder "
                 f"never saw in training (first: {value!r} in row {row}); its encoder is set "
                 f"to handle_unknown={how!r}, so the audit encodes them as the model does "
                 f"({self.enc.unseen_as.get(col, 'as its encoder outputs them')}), and a "
                 "counterfactual may swap them to a known category")

    def batches(self, features, protected, label, batch_size) -> Iterator[Batch]:
        prot = protected_list(protected)
        idx = [self.enc.names.index(f) for f in features]
        want = list(dict.fromkeys([*prot, *([label] if label else []),
                                   *self.enc.raw_features]))
        seen: dict[str, list] = {}
        for start, frame, extra in self._frames(want, batch_size):
            if len(frame) == 0:
                continue
            x, unseen = _encode(self.enc, frame, start)
            for col, bad in unseen.items():
                if col not in seen:
                    i = int(np.flatnonzero(bad)[0])
                    seen[col] = [0, start + i, frame[col].iloc[i]]
                seen[col][0] += int(bad.sum())
            x = x[:, idx]
            cs = {p: (extra[p] if p in extra else frame[p].to_numpy()) for p in prot}
            y = None
            if label:
                y = extra.get("__y__", frame[label].to_numpy() if label in frame else None)
            yield Batch(start, x, cs[prot[0]], y, cs, raw=frame[self.enc.raw_features])
        if not self._warned:  # the first pass over every row
            self._warn_unseen(seen)
