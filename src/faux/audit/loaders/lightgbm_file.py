"""A LightGBM text model checked for shape before LightGBM's own parser sees it.

LightGBM's C++ parser trusts its input: a 6-byte file ``tree\\n\\0`` spins it forever (and
Ctrl-C cannot stop C code), a truncated model aborts the whole process, and a malformed one
prints ``[LightGBM] [Fatal] ...`` on stderr; its predictions follow the children it stored
unchecked. ``check_text`` therefore reads the file the way ``Booster.save_model`` writes it
-- the ``tree`` line, the header keys (``version``, ``num_class``,
``num_tree_per_iteration``, ``max_feature_idx``, ``feature_names``), the ``Tree=0 ..
Tree=n-1`` blocks with arrays of the lengths ``num_leaves`` implies and indices in range,
each tree's shape (``faux.audit.loaders.tree_check.lightgbm_tree``: no loop, every split and leaf
reached once from the root, categorical bitsets in range, finite leaf values), the
``tree_sizes`` byte counts LightGBM seeks by, and the ``end of trees`` marker -- and refuses
anything else in one line. ``load_booster`` then hands the checked text (not the path) to
``lightgbm.Booster(model_str=...)`` with LightGBM's C-level log lines kept off the terminal.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import sys
import tempfile

from faux.audit.loaders.tree_check import TreeError, lightgbm_tree
from faux.errors import DataError

_KEY = re.compile(r"([a-z_]+)=(.*)\Z")
_TREE = re.compile(r"Tree=([0-9]+)\Z")
_SPLIT_ARRAYS = ("split_feature", "threshold", "decision_type", "left_child", "right_child")


class Malformed(ValueError):
    """The text is not a model ``Booster.save_model`` writes."""


def _ints(value: str, n: int | None, what: str, lo: int, hi: int) -> list[int]:
    try:
        out = [int(t) for t in value.split()]
    except ValueError as err:
        raise Malformed(f"{what} is not a list of integers") from err
    if n is not None and len(out) != n:
        raise Malformed(f"{what} has {len(out)} entries, not {n}")
    if any(v < lo or v > hi for v in out):
        raise Malformed(f"{what} has an entry outside [{lo}, {hi}]")
    return out


def _floats(value: str, n: int, what: str) -> list[float]:
    try:
        out = [float(t) for t in value.split()]
    except ValueError as err:
        raise Malformed(f"{what} is not a list of numbers") from err
    if len(out) != n:
        raise Malformed(f"{what} has {len(out)} entries, not {n}")
    return out


def _keys(lines: list[str], where: str) -> dict[str, str]:
    out = {}
    for line in lines:
        if not line or line == "average_output":
            continue
        m = _KEY.match(line)
        if not m:
            raise Malformed(f"{where} has a line that is not key=value: {line[:40]!r}")
        out[m.group(1)] = m.group(2)
    return out


def _header(lines: list[str]) -> dict[str, int]:
    keys = _keys(lines, "the header")
    for k in ("version", "num_class", "num_tree_per_iteration", "max_feature_idx",
              "feature_names"):
        if k not in keys:
            raise Malformed(f"the header has no {k}")
    if keys["version"] not in ("v2", "v3", "v4"):
        raise Malformed(f"version {keys['version'][:20]!r} is not v2, v3 or v4")
    (n_class,) = _ints(keys["num_class"], 1, "num_class", 1, 100_000)
    (per_iter,) = _ints(keys["num_tree_per_iteration"], 1, "num_tree_per_iteration", 1,
                        100_000)
    (max_feat,) = _ints(keys["max_feature_idx"], 1, "max_feature_idx", 0, 10_000_000)
    if len(keys["feature_names"].split()) != max_feat + 1:
        raise Malformed(f"feature_names does not name {max_feat + 1} features")
    sizes = None
    if "tree_sizes" in keys:
        sizes = _ints(keys["tree_sizes"], None, "tree_sizes", 1, 1 << 40)
    return {"per_iter": per_iter, "max_feat": max_feat, "sizes": sizes}


def _tree(lines: list[str], i: int, max_feat: int) -> None:
    keys = _keys(lines, f"Tree={i}")
    if "num_leaves" not in keys:
        raise Malformed(f"Tree={i} has no num_leaves")
    (leaves,) = _ints(keys["num_leaves"], 1, f"Tree={i} num_leaves", 1, 1 << 31)
    values = _floats(keys.get("leaf_value", ""), leaves, f"Tree={i} leaf_value")
    if "shrinkage" in keys:
        _floats(keys["shrinkage"], 1, f"Tree={i} shrinkage")
    if leaves == 1:
        if not math.isfinite(values[0]):
            raise Malformed(f"Tree={i} leaf 0's value is not finite")
        return
    for k in _SPLIT_ARRAYS:
        if k not in keys:
            raise Malformed(f"Tree={i} has no {k}")
    arrays = {"split_feature": _ints(keys["split_feature"], leaves - 1,
                                     f"Tree={i} split_feature", 0, max_feat),
              "threshold": _floats(keys["threshold"], leaves - 1, f"Tree={i} threshold"),
              "decision_type": _ints(keys["decision_type"], leaves - 1,
                                     f"Tree={i} decision_type", 0, 255)}
    for k in ("left_child", "right_child"):
        arrays[k] = _ints(keys[k], leaves - 1, f"Tree={i} {k}", -leaves, leaves - 2)
    (n_cat,) = _ints(keys.get("num_cat", "0"), 1, f"Tree={i} num_cat", 0, leaves)
    if n_cat:
        arrays["cat_boundaries"] = _ints(keys.get("cat_boundaries", ""), n_cat + 1,
                                         f"Tree={i} cat_boundaries", 0, 1 << 31)
        arrays["cat_threshold"] = _ints(keys.get("cat_threshold", ""),
                                        arrays["cat_boundaries"][-1],
                                        f"Tree={i} cat_threshold", 0, (1 << 32) - 1)
    try:  # the walk from the root: no loop, every split and leaf met once, indices in range
        lightgbm_tree(leaves, n_features=max_feat + 1, leaf_value=values, **arrays)
    except TreeError as err:
        raise Malformed(f"Tree={i} {err}") from None
    if keys.get("is_linear", "0") != "0":  # a linear model in each leaf
        coef = _floats(keys.get("leaf_const", ""), leaves, f"Tree={i} leaf_const")
        counts = _ints(keys.get("num_features", ""), leaves, f"Tree={i} num_features", 0,
                       max_feat + 1)
        _ints(keys.get("leaf_features", ""), sum(counts), f"Tree={i} leaf_features", 0,
              max_feat)
        coef += _floats(keys.get("leaf_coeff", ""), sum(counts), f"Tree={i} leaf_coeff")
        if not all(map(math.isfinite, coef)):
            raise Malformed(f"Tree={i} has a leaf_const or leaf_coeff that is not finite")


def check_text(data: bytes) -> str:
    """The model text of ``data`` when it is well formed (``\\r\\n`` read as ``\\n``);
    raises ``Malformed`` naming the first thing wrong."""
    if b"\0" in data:
        raise Malformed("it holds NUL bytes")
    try:
        text = data.decode("utf-8").replace("\r\n", "\n")
    except UnicodeDecodeError as err:
        raise Malformed("it is not UTF-8 text") from err
    if not text.startswith("tree\n"):
        raise Malformed("it does not start with the line 'tree'")
    lines = text.split("\n")
    starts = [k for k, ln in enumerate(lines) if ln.startswith("Tree=")]
    if "end of trees" not in lines:
        raise Malformed("it has no 'end of trees' line (truncated?)")
    end = lines.index("end of trees")
    starts = [k for k in starts if k < end]
    if not starts:
        raise Malformed("it holds no Tree= block")
    head = _header(lines[1:starts[0]])
    if len(starts) % head["per_iter"]:
        raise Malformed(f"{len(starts)} trees are not a multiple of num_tree_per_iteration")
    if head["sizes"] is not None and len(head["sizes"]) != len(starts):
        raise Malformed(f"tree_sizes lists {len(head['sizes'])} trees, the file holds "
                        f"{len(starts)}")
    bounds = [*starts, end]
    for i, (a, b) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
        m = _TREE.match(lines[a])
        if not m or int(m.group(1)) != i:
            raise Malformed(f"block {i} is headed {lines[a][:30]!r}, not Tree={i}")
        if head["sizes"] is not None:  # LightGBM seeks by these byte counts
            size = sum(len(ln.encode()) + 1 for ln in lines[a:b])
            if size != head["sizes"][i]:
                raise Malformed(f"Tree={i} is {size} bytes, tree_sizes says "
                                f"{head['sizes'][i]}")
        _tree(lines[a + 1:b], i, head["max_feat"])
    return text


@contextlib.contextmanager
def _quiet_stderr():
    """Send what C code writes to file descriptor 2 elsewhere for the duration."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):
        yield
        return
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def load_booster(path) -> object:
    """A ``lightgbm.Booster`` of the checked text model at ``path``; ``DataError`` (one
    line) for anything malformed or anything LightGBM then rejects."""
    with open(path, "rb") as f:
        data = f.read()
    try:
        text = check_text(data)
    except Malformed as err:
        raise DataError(f"{os.path.basename(path)} is not a well-formed LightGBM model file: "
                        f"{err}; save it again with Booster.save_model") from err
    import lightgbm

    try:
        with _quiet_stderr():
            return lightgbm.Booster(model_str=text)
    except Exception as err:
        msg = " ".join(str(err).split())[:160]
        raise DataError(f"LightGBM cannot read {os.path.basename(path)} ({msg}); save it "
                        "again with Booster.save_model") from err
