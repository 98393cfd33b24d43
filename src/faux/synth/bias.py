"""The bias parameter (paper A.7.1, eqs. 25-31).

Joints are 2x2 numpy arrays indexed ``P[c, y]``. ``P_min`` is the product of the marginals;
``P_max`` is the joint with the same marginals that maximises ``KL(P || P_min)`` (the mutual
information of C and Y), found by a search over the one free parameter
``q = P(C=1, Y=1)`` on its feasible interval ``[max(0, pc+py-1), min(pc, py)]``. The KL is
convex in ``q`` so the maximiser is an end of the interval; the search evaluates a grid that
includes both ends and keeps the best, which also makes that fact testable.

Zero cells: ``P_max`` (and so ``P_bias`` at bias 1) has a zero cell. Sampling draws cells
from the categorical over the four cells, which never returns a zero-probability cell; the
counterfactual of a sampled point may still land in a zero cell (x' need not be a likely
point of the biased distribution), which is well defined since the generators are
conditioned on c directly.
"""

from __future__ import annotations

import numpy as np

from faux.errors import ConfigError, DataError


def _check_marginal(p: float, what: str) -> float:
    p = float(p)
    if not (0.0 < p < 1.0):
        raise DataError(f"P({what}=1) = {p} is not strictly between 0 and 1; the {what} label "
                        f"must take both values (choose a dataset with a binary label)")
    return p


def joint_from_q(pc: float, py: float, q: float) -> np.ndarray:
    """The 2x2 joint ``P[c, y]`` with marginals ``pc``, ``py`` and ``P(C=1, Y=1) = q``."""
    return np.array([[1.0 - pc - py + q, py - q], [pc - q, q]], dtype=np.float64)


def feasible_interval(pc: float, py: float) -> tuple[float, float]:
    pc, py = _check_marginal(pc, "C"), _check_marginal(py, "Y")
    return max(0.0, pc + py - 1.0), min(pc, py)


def kl_divergence(P: np.ndarray, Q: np.ndarray) -> float:
    """``sum P log(P/Q)`` with ``0 log 0 = 0`` (eq. 25)."""
    P, Q = np.asarray(P, dtype=np.float64), np.asarray(Q, dtype=np.float64)
    m = P > 0
    return float(np.sum(P[m] * np.log(P[m] / Q[m])))


def mutual_information(P: np.ndarray) -> float:
    """Mutual information of C and Y under the joint ``P[c, y]`` (nats)."""
    P = np.asarray(P, dtype=np.float64)
    return kl_divergence(P, np.outer(P.sum(axis=1), P.sum(axis=0)))


def p_min(pc: float, py: float) -> np.ndarray:
    pc, py = _check_marginal(pc, "C"), _check_marginal(py, "Y")
    return np.outer([1.0 - pc, pc], [1.0 - py, py])


def p_max(pc: float, py: float, n_grid: int = 1001) -> np.ndarray:
    """Argmax of ``KL(P || P_min)`` over joints with the given marginals (eq. 26-30)."""
    lo, hi = feasible_interval(pc, py)
    pmin = p_min(pc, py)
    grid = np.linspace(lo, hi, max(int(n_grid), 2))
    cells = np.clip(np.stack([1.0 - pc - py + grid, py - grid, pc - grid, grid]), 0.0, None)
    ref = pmin.reshape(4, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(cells > 0, cells * np.log(cells / ref), 0.0)
    best = float(grid[int(np.argmax(terms.sum(axis=0)))])
    P = joint_from_q(pc, py, best)
    P[np.abs(P) < 1e-12] = 0.0  # the endpoint's zero cell, exactly (float rounding)
    return P / P.sum()


def p_bias(pc: float, py: float, bias: float) -> np.ndarray:
    """``(1 - bias) P_min + bias P_max`` (eq. 31)."""
    b = float(bias)
    if not (0.0 <= b <= 1.0):
        raise ConfigError(f"bias must be in [0, 1], got {bias}")
    return (1.0 - b) * p_min(pc, py) + b * p_max(pc, py)


def sample_joint(P: np.ndarray, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Draw ``n`` pairs ``(c, y)`` from the 2x2 joint ``P[c, y]``; returns int64 arrays."""
    P = np.asarray(P, dtype=np.float64)
    if P.shape != (2, 2) or (P < -1e-12).any() or not np.isclose(P.sum(), 1.0):
        raise ConfigError(f"joint must be a 2x2 probability table, got {P.tolist()}")
    p = np.clip(P.reshape(-1), 0.0, None)
    cells = rng.choice(4, size=int(n), p=p / p.sum())
    return (cells // 2).astype(np.int64), (cells % 2).astype(np.int64)
