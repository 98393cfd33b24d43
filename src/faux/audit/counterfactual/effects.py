"""Counterfactual effects: how much a row's predicted probability changes when its protected
attribute, and what the aux model reads it from, take another group's values.

The counterfactual of a row is reached by successive first-order steps along the aux's
minimum-norm inverse (eq. 23 applied K times, the paper's "successive first order
expansions"), in standardised feature units, until the aux's output has moved by the
difference that separates the groups on average:

- binary c: the aux's logit moves by ``gap = mean(a | c=1) - mean(a | c=0)`` (measured on the
  sample), down for a row of group 1 and up for a row of group 0. In a world where the
  features are ``proxy = s c + noise``, moving the logit by the gap moves the proxy by exactly
  ``s``: the row's own noise is held fixed, as a counterfactual holds it (mirroring the logit
  instead reflects the noise and flags several times more wrong rows; docs/audit.md);
- categorical c (k one-vs-rest logits): towards each other level j, the margin
  ``a_j - a_own`` moves by its average difference between the two groups; the effect is the
  largest over j;
- continuous c (the aux predicts standardised c): the prediction moves by the slope of the
  aux's output on c times one standard deviation, up and down; the effect is the larger.

Categorical features (one-hot blocks, and 0/1 columns) are never moved fractionally: before
the continuous path each block may swap to the level that moves the aux furthest towards the
other group (greedily, the largest move first, until the aux has moved far enough), and the
continuous features then cover what is left. A row whose continuous path leaves the sample's
per-feature range widened by ``margin`` of that range on each side is marked ``off_support``
(not clipped); a row the aux cannot move (no continuous gradient, no helpful swap) is marked
``unreachable``.

The model under test is only called, at each row and at its counterfactual: two calls per row
and aux model, whatever the model (black boxes included).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from faux.audit.counterfactual.swaps import swaps
from faux.audit.sources.layout import Layout, current_level
from faux.audit.verdict.effect_defaults import STEPS, SUPPORT_MARGIN
from faux.errors import ConfigError
from faux.methods.first_order import min_norm_step, outside, scalar_gradient, widened_range


@dataclass(frozen=True)
class Direction:
    """How to move one aux output: ``scalar(aux_out)`` -> (n,) the quantity moved, and the
    signed amount per row."""

    level: int | None      # the other level (categorical), None otherwise
    shift: torch.Tensor    # (n,) signed change of the scalar


def aux_scalar(out: torch.Tensor, own: torch.Tensor | None, level: int | None) -> torch.Tensor:
    """The scalar the path moves: the logit (binary), the prediction (continuous), or the
    margin of ``level`` over the row's own level (categorical)."""
    if out.ndim == 1 or level is None:
        return out.reshape(out.shape[0], -1)[:, 0]
    return out[:, level] - out.gather(1, own.reshape(-1, 1))[:, 0]


def directions(z: torch.Tensor, c_index: torch.Tensor, kind: str,
               gaps: dict | None = None) -> list[Direction]:
    """The counterfactual moves of rows ``z`` with protected levels ``c_index`` (binary 0/1,
    categorical level index, continuous standardised value). ``gaps``: the group differences
    measured on the sample (:func:`group_gaps`)."""
    n = z.shape[0]
    if kind == "binary":
        g = float(gaps["gap"])
        one = torch.ones(z.shape[0], dtype=z.dtype, device=z.device)
        return [Direction(None, torch.where(c_index > 0.5, -g * one, g * one))]
    if kind == "continuous":
        s = float(gaps["slope"])
        one = torch.ones(n, dtype=z.dtype, device=z.device)
        return [Direction(None, s * one), Direction(None, -s * one)]
    out = []
    margins = torch.as_tensor(gaps["margin"], dtype=z.dtype, device=z.device)  # (k, k)
    for j in range(margins.shape[0]):
        shift = margins[j, c_index.long()]          # mean margin gap of j over the own level
        shift = torch.where(c_index.long() == j, torch.zeros_like(shift), shift)
        out.append(Direction(j, shift))
    return out


@torch.no_grad()
def group_gaps(aux: nn.Module, z: torch.Tensor, c_index: np.ndarray, kind: str) -> dict:
    """The aux's average difference between the groups on the sample: ``gap`` (binary: mean
    logit of group 1 minus group 0), ``slope`` (continuous: least-squares slope of the
    prediction on standardised c, i.e. the change per standard deviation), ``margin[j, i]``
    (categorical: mean of ``a_j - a_i`` over level j's rows minus over level i's rows)."""
    out = aux(z)
    c = np.asarray(c_index)
    if kind == "binary":
        a = out.reshape(-1).double().cpu().numpy()
        if not (c == 1).any() or not (c == 0).any():
            raise ConfigError("the sample holds one group only; the counterfactual needs both")
        return {"gap": float(a[c == 1].mean() - a[c == 0].mean())}
    if kind == "continuous":
        a = out.reshape(-1).double().cpu().numpy()
        cc = c.astype(np.float64)
        var = float(np.var(cc))
        return {"slope": float(np.cov(a, cc, bias=True)[0, 1] / var) if var > 0 else 0.0}
    a = out.double().cpu().numpy()
    k = a.shape[1]
    means = np.stack([a[c == i].mean(axis=0) if (c == i).any() else np.full(k, np.nan)
                      for i in range(k)])   # means[i, j]: mean a_j over level i's rows
    margin = np.zeros((k, k))
    for j in range(k):
        for i in range(k):
            # a_j - a_i averaged over level j's rows minus over level i's rows
            margin[j, i] = ((means[j, j] - means[j, i]) - (means[i, j] - means[i, i]))
    return {"margin": np.nan_to_num(margin)}


#: a level counts as carrying a group when its share in that group exceeds its share in the
#: other by this many standard errors (two-proportion z statistic)
Z_LEVEL = 2.0


def level_contrasts(z: torch.Tensor, c_index, kind: str, layout: Layout, x_mean,
                    x_scale) -> list[np.ndarray] | None:
    """Per categorical block, ``zs[l, g, h]``: the two-proportion z statistic of level l's
    share among group g's sample rows over its share among group h's. A row of group g may
    leave its level only if that level is over-represented in g against the other group h,
    and only for a level over-represented in h (:data:`Z_LEVEL`): a category as common in
    both groups stays what it is. None for a continuous attribute (no groups)."""
    if kind == "continuous" or not layout.blocks:
        return None
    c = np.asarray(c_index).astype(int)
    k = int(c.max()) + 1 if kind == "categorical" else 2
    xm = torch.as_tensor(x_mean, dtype=z.dtype, device=z.device)
    xs = torch.as_tensor(x_scale, dtype=z.dtype, device=z.device)
    out = []
    for block in layout.blocks:
        lev = current_level(z, block, xm, xs).cpu().numpy()
        L = len(block.levels)
        n = np.array([(c == g).sum() for g in range(k)], dtype=float)
        cnt = np.array([[((lev == li) & (c == g)).sum() for g in range(k)] for li in range(L)],
                       dtype=float)
        share = cnt / np.maximum(n, 1)[None]
        zs = np.zeros((L, k, k))
        for g in range(k):
            for h in range(k):
                if g == h or n[g] == 0 or n[h] == 0:
                    continue
                pooled = (cnt[:, g] + cnt[:, h]) / (n[g] + n[h])
                se = np.sqrt(pooled * (1 - pooled) * (1 / n[g] + 1 / n[h]))
                with np.errstate(invalid="ignore", divide="ignore"):
                    zs[:, g, h] = np.where(se > 0, (share[:, g] - share[:, h]) / se, 0.0)
        out.append(zs)
    return out


def _scalar_of(aux, z, own, level):
    return aux_scalar(aux(z), own, level)


def _path(aux, z, own, level, target, steps, mask, reach=None):
    """K first-order steps of the continuous features towards ``target``; the rows whose
    continuous aux gradient vanishes stay (returned as ``stuck``). ``reach`` (n,): the
    longest path a row may take in standardised units (None: no limit); a row stops where
    its steps add up to it."""
    stuck = torch.zeros(z.shape[0], dtype=torch.bool, device=z.device)
    left = None if reach is None else reach.clone().to(z.dtype)
    with torch.no_grad():
        start = _scalar_of(aux, z, own, level)
    step = (target - start) / steps
    for _ in range(steps):
        g = scalar_gradient(lambda t: _scalar_of(aux, t, own, level), z)
        g = torch.where(mask, g, torch.zeros_like(g))
        ok = (g * g).sum(dim=1) > 1e-12
        stuck |= ~ok & (step != 0)
        move = min_norm_step(g, step, ok)
        if left is not None:
            size = move.norm(dim=1)
            scale = torch.where(size > left, left / torch.where(size > 0, size, 1.0), 1.0)
            move = move * scale[:, None]
            left = (left - size * scale).clamp_min(0)
        z = z.detach() + move
    return z.detach(), stuck


def group_reach(z: torch.Tensor, c_index, kind: str, layout: Layout):
    """How far the groups' means lie apart in the continuous features (standardised units):
    the binary attribute's ``|mean(z | 1) - mean(z | 0)|``, ``reach[j, i]`` between levels j
    and i of a categorical one, a continuous one's change of the means per standard
    deviation. The counterfactual's continuous path is never longer (:func:`_path`): a
    feature moves at most as far as the groups differ on it."""
    cont = list(layout.continuous)
    if not cont:
        return None
    zc = z[:, cont].double().cpu().numpy()
    c = np.asarray(c_index, dtype=np.float64)
    if kind == "continuous":
        cc = c - c.mean()
        var = float((cc ** 2).mean())
        slope = (cc[:, None] * (zc - zc.mean(axis=0))).mean(axis=0) / var if var > 0 else 0.0
        return float(np.linalg.norm(slope))
    ci = c.astype(int)
    k = int(ci.max()) + 1 if kind == "categorical" else 2
    means = np.stack([zc[ci == g].mean(axis=0) if (ci == g).any() else np.full(len(cont), np.nan)
                      for g in range(k)])
    dist = np.linalg.norm(means[:, None, :] - means[None, :, :], axis=2)
    return float(dist[0, 1]) if kind == "binary" else np.nan_to_num(dist)


@dataclass
class Counterfactual:
    """One aux model's counterfactual of a batch: the rows in standardised units, the new level
    of each categorical block (-1 unchanged), and the rows' flags."""

    z: torch.Tensor
    moved: torch.Tensor
    off_support: torch.Tensor
    unreachable: torch.Tensor


def _allowed(contrasts, c_index, kind: str, d: Direction):
    """The swap rule of :func:`level_contrasts` for rows of groups ``c_index`` moving
    towards the other group (binary) or level ``d.level`` (categorical); None: no rule."""
    if contrasts is None:
        return None
    g = c_index.long().clamp_min(0)
    h = (1 - g) if kind == "binary" else torch.full_like(g, int(d.level))
    g_np, h_np = g.cpu().numpy(), h.cpu().numpy()

    def rule(bi, current, candidate):
        zs = contrasts[bi]
        cur = current.cpu().numpy()
        leave = zs[cur, g_np, h_np] > Z_LEVEL
        enter = zs[candidate, h_np, g_np] > Z_LEVEL
        return torch.as_tensor(leave & enter, device=current.device)

    return rule


def _reach_of(reach, c_index, kind: str, d: Direction, z: torch.Tensor):
    """Each row's path limit from :func:`group_reach` (None: no limit)."""
    if reach is None:
        return None
    if np.ndim(reach) == 0:
        return torch.full((z.shape[0],), float(reach), dtype=z.dtype, device=z.device)
    g = c_index.long().cpu().numpy()
    return torch.as_tensor(np.asarray(reach)[int(d.level), g], dtype=z.dtype, device=z.device)


@dataclass(frozen=True, eq=False)
class Space:
    """Where and how a counterfactual path runs: the attribute's ``kind`` (binary,
    categorical, continuous), the features' ``layout``, the standardisation (``x_mean``,
    ``x_scale``), ``steps`` first-order steps, the support box of the continuous features in
    standardised units (``lo``/``hi``; None: no support check), the swap rule of
    :func:`level_contrasts` (None: none) and the path's limit from :func:`group_reach`
    (None: none)."""

    kind: str
    layout: Layout
    x_mean: Any
    x_scale: Any
    steps: int = STEPS
    lo: Any = None
    hi: Any = None
    contrasts: Any = None
    reach: Any = None


def counterfactual(aux: nn.Module, z: torch.Tensor, c_index: torch.Tensor, gaps: dict,
                   space: Space, direction: Direction | None = None) -> Counterfactual:
    """The counterfactual of rows ``z`` in ``space`` along one direction (the first of
    :func:`directions` unless given)."""
    kind, layout, steps = space.kind, space.layout, space.steps
    lo, hi, contrasts, reach = space.lo, space.hi, space.contrasts, space.reach
    x_mean, x_scale = space.x_mean, space.x_scale
    if int(steps) < 1:
        raise ConfigError(f"the counterfactual path needs at least 1 step, got {steps}")
    d = direction if direction is not None else directions(z, c_index, kind, gaps)[0]
    own = c_index.long() if kind == "categorical" else None
    xm = torch.as_tensor(x_mean, dtype=z.dtype, device=z.device)
    xs = torch.as_tensor(x_scale, dtype=z.dtype, device=z.device)
    with torch.no_grad():
        start = _scalar_of(aux, z, own, d.level)
    target = start + d.shift
    sign = torch.sign(d.shift)
    def scalar_at(rows, idx):   # the aux's scalar at changed rows, the rows ``idx`` of z
        return _scalar_of(aux, rows, None if own is None else own[idx], d.level)

    z1, moved = swaps(scalar_at, z, target, sign, layout, xm, xs,
                      _allowed(contrasts, c_index, kind, d))
    with torch.no_grad():
        now = _scalar_of(aux, z1, own, d.level)
    left = torch.where(sign * (target - now) > 0, target, now)   # never walk back
    mask = layout.mask(z.device)
    z2, stuck = _path(aux, z1, own, d.level, left, int(steps), mask,
                      _reach_of(reach, c_index, kind, d, z)) if mask.any() else (
        z1, sign * (target - now) > 0)
    off = torch.zeros(z.shape[0], dtype=torch.bool, device=z.device)
    if lo is not None and mask.any():
        off = outside(z2, torch.as_tensor(lo, dtype=z.dtype, device=z.device),
                      torch.as_tensor(hi, dtype=z.dtype, device=z.device), mask)
    return Counterfactual(z2, moved, off, stuck & (d.shift != 0))


def support_box(z_sample: np.ndarray, margin: float = SUPPORT_MARGIN):
    """Per-feature [min, max] of the sample in standardised units, widened by ``margin`` of
    the range on each side."""
    return widened_range(z_sample.min(axis=0), z_sample.max(axis=0), margin)


def effects(proba, auxes, gaps, z: torch.Tensor, c_index: torch.Tensor, space: Space,
            x=None) -> dict:
    """The model's probability at rows ``z`` and at their counterfactual (in ``space``) under
    each aux model.

    ``proba``: raw rows (numpy (m, d)) -> probability (m,), called once for the rows and their
    counterfactuals together. ``x``: the rows as read (float64); the model then sees them
    exactly, and each counterfactual is the row plus its move (:func:`exact_rows`), so a
    feature the counterfactual did not move keeps its exact value (without ``x``: the rows
    rebuilt from ``z``). ``auxes``/``gaps``: the aux models and their
    :func:`group_gaps`. Returns ``p`` (n,), ``p_cf`` (S, n) (for several directions, the one
    with the largest change), and from the first aux: ``z_cf``, ``moved`` (n, blocks),
    ``level`` (the other level chosen, categorical), ``off_support``, ``unreachable``.
    """
    kind, layout = space.kind, space.layout
    xm = np.asarray(space.x_mean, dtype=np.float64)
    xs = np.asarray(space.x_scale, dtype=np.float64)
    n = z.shape[0]
    cfs = []
    for aux, gap in zip(auxes, gaps, strict=True):
        cfs.append([counterfactual(aux, z, c_index, gap, space, direction=d)
                    for d in directions(z, c_index, kind, gap)])
    z0 = z.double().cpu().numpy()
    base = z0 * xs + xm if x is None else np.asarray(x, dtype=np.float64)
    rows = [base] + [exact_rows(base, cf.z.double().cpu().numpy() - z0, xs, layout)
                     for per in cfs for cf in per]
    f = np.asarray(proba(np.concatenate(rows)), dtype=np.float64).reshape(-1)
    p = f[:n]
    f_cf = f[n:].reshape(len(auxes), -1, n)                 # (S, directions, n)
    pick = np.abs(f_cf - p).argmax(axis=1)                  # (S, n)
    p_cf = np.take_along_axis(f_cf, pick[:, None, :], axis=1)[:, 0]
    first = cfs[0]
    j0 = pick[0]
    take = lambda attr: torch.stack([getattr(cf, attr) for cf in first])[  # noqa: E731
        torch.as_tensor(j0), torch.arange(n)]
    return {"p": p, "p_cf": p_cf, "z_cf": take("z").double().cpu().numpy(),
            "moved": take("moved").cpu().numpy(),
            "level": j0 if kind == "categorical" else None,
            "off_support": take("off_support").cpu().numpy(),
            "unreachable": take("unreachable").cpu().numpy()}


def exact_rows(x: np.ndarray, dz: np.ndarray, x_scale, layout: Layout) -> np.ndarray:
    """Rows ``x`` moved by ``dz`` (standardised units), each categorical block set exactly to
    its nearest level's code: an unmoved feature keeps its value bit for bit, so a model
    whose splits fall between rounded values (trees) sees the row as read."""
    out = x + dz * np.asarray(x_scale, dtype=np.float64)
    out[dz == 0] = x[dz == 0]
    for block in layout.blocks:
        cols = list(block.columns)
        codes = np.asarray(block.codes, dtype=np.float64)
        moved = np.any(dz[:, cols] != 0, axis=1)
        if moved.any():
            near = ((out[moved][:, None, cols] - codes[None]) ** 2).sum(axis=2).argmin(axis=1)
            out[np.ix_(np.flatnonzero(moved), cols)] = codes[near]
    return out


def verdict(p: np.ndarray, p_cf: np.ndarray, threshold: float = 0.5,
            materiality: float | None = None) -> dict:
    """Per row: the effect (median over the aux models of ``p_cf - p``) with its range over
    them, and ``flagged``: the decision at ``threshold`` changes under every aux model, or,
    with ``materiality`` δ, ``|p_cf - p| >= δ`` under every aux model with one sign."""
    dp = np.asarray(p_cf, dtype=np.float64) - np.asarray(p, dtype=np.float64)[None]
    if materiality is None:
        changes = (p_cf >= threshold) != (p >= threshold)[None]
        flagged = changes.all(axis=0)
    else:
        same = (np.sign(dp) == np.sign(dp[:1])).all(axis=0)
        flagged = (np.abs(dp) >= float(materiality)).all(axis=0) & same
    return {"effect": np.median(dp, axis=0), "effect_lo": dp.min(axis=0),
            "effect_hi": dp.max(axis=0), "flagged": flagged}
