"""Decision trees checked before compiled code walks them.

scikit-learn's ``Tree`` (DecisionTree*, RandomForest*, ExtraTrees*, GradientBoosting*), its
histogram-boosting ``TreePredictor`` and LightGBM's trees are walked by C/Cython loops that
follow the stored child indices without bounds checks: a file whose children loop hangs the
process past SIGINT and SIGTERM, one whose child or feature indices point outside the arrays
reads foreign memory (a segfault at best). ``check_tree`` checks one tree in numpy, in time
linear in its nodes (plus a pointer-doubling pass for a tree whose children are not numbered
after their parents): child indices in range, every node but the root the child of exactly
one node (so the walk from the root never meets a node twice), no loop apart from the root,
split features in range, no NaN threshold, finite leaf values. The format adapters bring their
arrays to it: ``sklearn_tree``, ``hist_predictor`` and ``lightgbm_tree`` (a tree of a
LightGBM text model, ``faux.audit.loaders.lightgbm_file``); ``estimator_trees`` finds and checks every
tree of a loaded scikit-learn object graph (Pipelines, ColumnTransformers, ensembles,
calibrated classifiers, ...) together with the widths its walkers read. Anything wrong is a
``TreeError`` whose message names the tree and the node.
"""

from __future__ import annotations

import types

import numpy as np


class TreeError(ValueError):
    """A tree whose arrays a walker would follow out of range or round a loop."""


def _first(mask) -> int:
    return int(np.flatnonzero(mask)[0])


def check_tree(left, right, leaf, *, feature=None, n_features=None, threshold=None,
               value=None, name=None) -> None:
    """Check one tree of ``n = len(leaf)`` nodes, node 0 the root. ``left``/``right``: each
    node's children (read where ``leaf`` is False); ``feature``: the column each split reads,
    in ``[0, n_features)``; ``threshold``: what a split compares with (NaN refused; pass 0
    where a split does not compare); ``value``: per node (first axis), finite at the leaves;
    ``name(k)``: how the messages call node ``k`` (``"node k"``)."""
    name = name or (lambda k: f"node {k}")
    leaf = np.asarray(leaf, dtype=bool)
    n = leaf.shape[0]
    if n == 0:
        raise TreeError("it has no nodes")
    split = np.flatnonzero(~leaf)
    kids = [np.asarray(a)[split].astype(np.int64) for a in (left, right)]
    for side, ch in zip(("left", "right"), kids):
        bad = (ch < 0) | (ch >= n)
        if bad.any():
            k = _first(bad)
            raise TreeError(f"{name(split[k])}'s {side} child is {ch[k]}, outside the "
                            f"{n} nodes")
    child = np.concatenate(kids)
    parent = np.concatenate([split, split])
    count = np.bincount(child, minlength=n)
    if count[0]:
        raise TreeError(f"{name(parent[_first(child == 0)])} leads back to the root: a loop")
    if (count[1:] > 1).any():
        k = _first(count[1:] > 1) + 1
        a, b = sorted(parent[child == k][:2])
        raise TreeError(f"{name(k)} is the child of both {name(a)} and {name(b)}: a loop or "
                        "a branch walked twice")
    if (count[1:] == 0).any():
        raise TreeError(f"{name(_first(count[1:] == 0) + 1)} is no node's child")
    # every node but the root now has one parent, so the walk from the root cannot loop; a
    # loop among nodes it never reaches is still a malformed tree
    if (child <= parent).any():
        up = np.zeros(n, dtype=np.int64)
        up[child] = parent
        for _ in range(n.bit_length()):
            up = up[up]
        if (up != 0).any():
            raise TreeError(f"{name(_first(up != 0))} is on a loop the root does not reach")
    if feature is not None:
        f = np.asarray(feature)[split].astype(np.int64)
        bad = (f < 0) | (f >= n_features)
        if bad.any():
            k = _first(bad)
            raise TreeError(f"{name(split[k])} splits on feature {f[k]}, outside the "
                            f"{n_features} features")
    if threshold is not None:
        bad = np.isnan(np.asarray(threshold, dtype=np.float64)[split])
        if bad.any():
            raise TreeError(f"{name(split[_first(bad)])}'s threshold is NaN")
    if value is not None:
        v = np.asarray(value, dtype=np.float64)[leaf].reshape(int(leaf.sum()), -1)
        bad = ~np.isfinite(v).all(axis=1)
        if bad.any():
            raise TreeError(f"{name(np.flatnonzero(leaf)[_first(bad)])}'s value is not "
                            "finite")


# --------------------------------------------------------------------------- scikit-learn


def sklearn_tree(tree, n_features: int | None = None, n_outputs: int | None = None,
                 n_classes=None) -> None:
    """A ``sklearn.tree._tree.Tree``: its counts first (``node_count`` beyond the arrays
    would make every array read overrun), leaves marked ``-1`` on both sides, then
    ``check_tree``; ``n_features``/``n_outputs``/``n_classes``: what the estimator holding
    it says (its predict relies on them)."""
    count, capacity = int(tree.node_count), int(tree.capacity)
    if not 1 <= count <= capacity:
        raise TreeError(f"node_count is {count}, its arrays hold {capacity} nodes")
    width, outputs = int(tree.n_features), int(tree.n_outputs)
    if width < 1 or outputs < 1 or int(tree.max_n_classes) < 1:
        raise TreeError(f"it reads {width} features for {outputs} outputs")
    if n_features is not None and width != int(n_features):
        raise TreeError(f"it reads {width} features, its estimator {int(n_features)}")
    if n_outputs is not None and outputs != int(n_outputs):
        raise TreeError(f"it has {outputs} outputs, its estimator {int(n_outputs)}")
    if n_classes is not None and not np.array_equal(np.atleast_1d(n_classes),
                                                    tree.n_classes):
        raise TreeError(f"its classes per output {tree.n_classes.tolist()} are not its "
                        f"estimator's {np.atleast_1d(n_classes).tolist()}")
    value = tree.value
    if value.shape != (count, outputs, int(tree.max_n_classes)):
        raise TreeError(f"its values have shape {value.shape} for {count} nodes")
    left, right = tree.children_left, tree.children_right
    half = (left == -1) != (right == -1)
    if half.any():
        k = _first(half)
        raise TreeError(f"node {k} has children {left[k]} and {right[k]}: a leaf is -1 on "
                        "both sides")
    check_tree(left, right, left == -1, feature=tree.feature, n_features=width,
               threshold=tree.threshold, value=value)


def hist_predictor(pred, n_features: int | None, is_categorical=None) -> None:
    """A histogram-boosting ``TreePredictor``: its ``nodes`` records (``left``/``right``
    read where ``is_leaf`` is 0), the features within ``n_features``, and a categorical
    split's ``bitset_idx`` a row of both bitset arrays (8 words each: the walker indexes a
    category's word without checking) on a feature ``is_categorical`` marks."""
    from sklearn.ensemble._hist_gradient_boosting.common import PREDICTOR_RECORD_DTYPE

    nodes = getattr(pred, "nodes", None)
    if not isinstance(nodes, np.ndarray) or nodes.dtype != PREDICTOR_RECORD_DTYPE \
            or nodes.ndim != 1:
        raise TreeError("its nodes are not scikit-learn's node records")
    rows = []
    for k in ("raw_left_cat_bitsets", "binned_left_cat_bitsets"):
        bits = getattr(pred, k, None)
        if not isinstance(bits, np.ndarray) or bits.ndim != 2 or bits.shape[1] != 8 \
                or bits.dtype != np.uint32:
            raise TreeError(f"its {k} is not an (n, 8) array of uint32 words")
        rows.append(bits.shape[0])
    leaf = nodes["is_leaf"] != 0
    cat = ~leaf & (nodes["is_categorical"] != 0)
    width = np.iinfo(np.int64).max if n_features is None else int(n_features)
    check_tree(nodes["left"], nodes["right"], leaf, feature=nodes["feature_idx"],
               n_features=width, threshold=np.where(cat, 0.0, nodes["num_threshold"]),
               value=nodes["value"])
    if not cat.any():
        return
    idx = nodes["bitset_idx"].astype(np.int64)
    bad = cat & (idx >= min(rows))
    if bad.any():
        k = _first(bad)
        raise TreeError(f"node {k}'s bitset_idx is {idx[k]}, beyond its {min(rows)} category "
                        "bitsets")
    known = np.zeros(0, dtype=bool) if is_categorical is None else \
        np.asarray(is_categorical, dtype=bool)
    f = nodes["feature_idx"].astype(np.int64)
    inside = f[cat] < known.size
    bad = cat.copy()
    bad[cat] = ~inside | ~known[np.where(inside, f[cat], 0)] if known.size else True
    if bad.any():
        k = _first(bad)
        raise TreeError(f"node {k} splits on feature {f[k]} by category, which the model "
                        "does not treat as categorical")


# --------------------------------------------------------------------------- LightGBM


def lightgbm_tree(num_leaves: int, left_child, right_child, split_feature, n_features: int,
                  threshold, decision_type, leaf_value, cat_boundaries=None,
                  cat_threshold=None) -> None:
    """One tree of a LightGBM text model: ``num_leaves - 1`` splits whose children are a
    split's index or ``~leaf`` (negative); the walk from split 0 must meet every split and
    leaf once. A categorical split (``decision_type`` bit 1, read only when the tree has
    ``cat_boundaries``) holds in its threshold the index of its category bitset, the words
    ``cat_threshold[cat_boundaries[i]:cat_boundaries[i + 1]]``."""
    m = int(num_leaves) - 1
    lc, rc = (np.asarray(a, dtype=np.int64) for a in (left_child, right_child))

    def unified(c):  # splits 0..m-1, then leaves m..2m
        return np.where(c >= 0, c, m + ~c)

    thr = np.asarray(threshold, dtype=np.float64)
    cat = (np.asarray(decision_type, dtype=np.int64) & 1) != 0
    if cat_boundaries is None and cat.any():
        raise TreeError(f"split {_first(cat)} is marked categorical in a tree without "
                        "categories")
    if cat_boundaries is not None:
        bounds = np.asarray(cat_boundaries, dtype=np.int64)
        if bounds[0] != 0 or (np.diff(bounds) < 0).any() \
                or bounds[-1] != len(cat_threshold):
            raise TreeError("cat_boundaries do not cut cat_threshold into pieces in order")
        n_cat = bounds.size - 1
        bad = cat & ((thr != np.floor(thr)) | (thr < 0) | (thr >= n_cat))
        if bad.any():
            k = _first(bad)
            raise TreeError(f"categorical split {k} names category set {thr[k]:g}, not one "
                            f"of its {n_cat}")

    def name(k):
        return f"split {k}" if k < m else f"leaf {k - m}"

    zeros = np.zeros(m + 1, dtype=np.int64)
    check_tree(np.concatenate([unified(lc), zeros]), np.concatenate([unified(rc), zeros]),
               np.arange(2 * m + 1) >= m,
               feature=np.concatenate([np.asarray(split_feature, dtype=np.int64), zeros]),
               n_features=n_features,
               threshold=np.concatenate([np.where(cat, 0.0, thr), zeros]),
               value=np.concatenate([np.zeros(m), np.asarray(leaf_value, dtype=np.float64)]),
               name=name)


# --------------------------------------------------------------------------- object graphs


def _width(est) -> int | None:
    w = getattr(est, "n_features_in_", None)
    return None if w is None else int(w)


def _hist_width(est) -> tuple[int | None, np.ndarray | None]:
    """The width of the rows a histogram-boosting model's predictors read, and which of
    those columns are categorical. Without a ``_preprocessor`` the rows are validated
    against ``n_features_in_``; with one, they are its output, which is only known for the
    encoder + passthrough ColumnTransformer scikit-learn builds."""
    mapper = getattr(est, "_bin_mapper", None)
    cats = getattr(mapper, "is_categorical_", None)
    width = _width(est)
    if width is None:
        raise TreeError("it does not say how many features it reads (n_features_in_)")
    if cats is not None:
        cats = np.asarray(cats)
        if cats.ndim != 1 or cats.size != width:
            raise TreeError(f"_bin_mapper.is_categorical_ has {cats.size} entries for "
                            f"{width} features")
    pre = getattr(est, "_preprocessor", None)
    if pre is not None and _encoder_width(pre) != width:
        raise TreeError("its _preprocessor is not the column encoder scikit-learn builds "
                        f"for its {width} features")
    return width, cats


def _encoder_width(pre) -> int | None:
    """The columns out of the preprocessor scikit-learn's histogram boosting builds
    (``OrdinalEncoder`` on a column mask, ``check_array`` on the rest, the remainder
    dropped); None for anything else."""
    import functools

    from sklearn.compose import ColumnTransformer
    from sklearn.preprocessing import FunctionTransformer, OrdinalEncoder
    from sklearn.utils.validation import check_array

    if not isinstance(pre, ColumnTransformer) or pre.transformer_weights:
        return None
    n_in, out = _width(pre), 0
    indices = getattr(pre, "_transformer_to_input_indices", None) or {}
    for name, trans, cols in getattr(pre, "transformers_", ()):
        cols = np.asarray(cols)
        if cols.dtype != bool or cols.shape != (n_in,) or (
                name in indices and not np.array_equal(indices[name], np.flatnonzero(cols))):
            return None
        if isinstance(trans, str) and trans == "drop":
            continue
        ok = isinstance(trans, OrdinalEncoder) and _width(trans) == int(cols.sum())
        func = getattr(trans, "func", None)
        ok = ok or (isinstance(trans, FunctionTransformer)
                    and isinstance(func, functools.partial) and func.func is check_array)
        if not ok:
            return None
        out += int(cols.sum())
    return out


def _ensemble(est) -> None:
    """A forest or gradient boosting calls its trees without checking the rows again: they
    must read the ensemble's width; gradient boosting adds each tree's single value into
    column k of an array ``n_trees_per_iteration_`` wide."""
    from sklearn.base import is_classifier
    from sklearn.ensemble._forest import BaseForest
    from sklearn.ensemble._gb import BaseGradientBoosting

    if not isinstance(est, BaseForest | BaseGradientBoosting) \
            or not hasattr(est, "estimators_"):
        return
    width = _width(est)
    if width is None:
        raise TreeError("it does not say how many features it reads (n_features_in_)")
    subs = np.asarray(est.estimators_, dtype=object)
    if isinstance(est, BaseGradientBoosting):
        k = int(getattr(est, "n_trees_per_iteration_", -1))
        multi = is_classifier(est) and int(getattr(est, "n_classes_", 2)) > 2
        if subs.ndim != 2 or subs.shape[1] != k or (k != 1 and not multi):
            raise TreeError(f"estimators_ has shape {subs.shape} for "
                            f"{k} trees per iteration")
    for i, sub in np.ndenumerate(subs):
        w = _width(sub)
        if w != width:
            raise TreeError(f"estimators_[{', '.join(map(str, i))}] reads {w} "
                            f"features, the ensemble {width}")
        tree = getattr(sub, "tree_", None)
        if isinstance(est, BaseGradientBoosting) and tree is not None and (
                int(tree.n_outputs) != 1 or int(tree.max_n_classes) != 1):
            raise TreeError(f"estimators_[{', '.join(map(str, i))}] is not a "
                            "single-value regression tree")


def _children(obj, where: str):
    """``(child, where)`` for what a loaded object holds: container items, object arrays'
    entries, instance attributes."""
    if isinstance(obj, dict):
        return [(v, f"{where}[{k!r}]") for k, v in obj.items()]
    if isinstance(obj, list | tuple | set | frozenset):
        return [(v, f"{where}[{i}]") for i, v in enumerate(obj)]
    if isinstance(obj, np.ndarray):
        if obj.dtype != object:
            return []
        return [(v, f"{where}[{', '.join(map(str, i))}]") for i, v in np.ndenumerate(obj)]
    if isinstance(obj, type | types.ModuleType | types.FunctionType | types.BuiltinFunctionType
                  | str | bytes | int | float | complex | bool) or obj is None:
        return []
    attrs = getattr(obj, "__dict__", None)
    if not isinstance(attrs, dict):
        return []
    return [(v, f"{where}.{k}") for k, v in attrs.items()]


def estimator_trees(est, where: str | None = None) -> int:
    """Check every ``Tree`` and ``TreePredictor`` reachable from ``est`` (each with what its
    estimator says of the rows it reads); the number checked. ``TreeError`` names the path
    to the tree (``RandomForestClassifier.estimators_[3].tree_``) and what is wrong."""
    from sklearn.ensemble._hist_gradient_boosting.gradient_boosting import (
        BaseHistGradientBoosting,
    )
    from sklearn.ensemble._hist_gradient_boosting.predictor import TreePredictor
    from sklearn.tree._tree import Tree

    seen: set[int] = set()
    stack = [(est, where or type(est).__name__)]
    checked = 0

    def check(what, at, fn, *args):
        nonlocal checked
        seen.add(id(what))
        try:
            fn(what, *args)
        except TreeError as err:
            raise TreeError(f"{at}: {err}") from None
        checked += 1

    while stack:
        obj, at = stack.pop()
        if id(obj) in seen:
            continue
        if isinstance(obj, Tree):  # one not held as an estimator's tree_
            check(obj, at, sklearn_tree)
            continue
        if isinstance(obj, TreePredictor):  # one outside a boosting model's _predictors
            check(obj, at, hist_predictor, None)
            continue
        seen.add(id(obj))
        attrs = getattr(obj, "__dict__", None)
        tree = attrs.get("tree_") if isinstance(attrs, dict) else None
        if isinstance(tree, Tree):
            if _width(obj) is None:
                raise TreeError(f"{at}: it holds a tree but does not say how many features "
                                "it reads (n_features_in_)")
            check(tree, f"{at}.tree_", sklearn_tree, _width(obj),
                  getattr(obj, "n_outputs_", None), getattr(obj, "n_classes_", None))
        try:
            _ensemble(obj)
            hist = _hist_width(obj) if isinstance(obj, BaseHistGradientBoosting) \
                and getattr(obj, "_predictors", None) is not None else None
        except TreeError as err:
            raise TreeError(f"{at}: {err}") from None
        if hist is not None:
            for i, row in enumerate(getattr(obj, "_predictors", None) or ()):
                for k, pred in enumerate(row):
                    if isinstance(pred, TreePredictor):
                        check(pred, f"{at}._predictors[{i}][{k}]", hist_predictor, *hist)
        stack.extend(reversed(_children(obj, at)))
    return checked
