"""The scores of the gradient tests as pure functions of gradients: FTA's norm, eq. 9 (fAux)
and eq. 10 (fAux+NG).

A gradient arrives as a per-row factor times a vector in the logit's range, ``w[..., None] *
g`` (``faux.methods.autograd.input_grads``: ``w`` is the sigmoid's slope when a probability
is differentiated, None for a logit; :func:`row_factor` factors any gradient so). Squares
are taken of the O(1) vector only, so a confident row (sigmoid' ~ 1e-30 in float32) neither
underflows nor loses digits, and the factor is applied once at the end. Rows where a
gradient vanishes score 0, as the pseudo-inverse of a zero Jacobian is zero.

The method classes (``faux.methods.builtin``) call these on the gradients of their models;
``faux_from_gradients`` and ``ng_from_gradients`` take plain gradients (the audit's black-box
scorers build them from finite differences).
"""

from __future__ import annotations

import torch

from faux.errors import ConfigError, FauxError
from faux.methods.autograd import apply_weights
from faux.methods.options import NG_READINGS, NGReading, ScoreOptions


def _safe(v: torch.Tensor) -> torch.Tensor:
    return torch.where(v > 0, v, torch.ones_like(v))


def as_target_gradient(g_t: torch.Tensor) -> torch.Tensor:
    """The target's gradient as ``(n, d)``: a ``(n, 1, d)`` one is squeezed; a target with
    several outputs is a FauxError (it must return one logit per row)."""
    if g_t.ndim == 3:
        if g_t.shape[1] != 1:
            raise FauxError(f"the target model returned {g_t.shape[1]} outputs per row; it must "
                            "return one logit per row, shape (n,) or (n, 1)")
        g_t = g_t[:, 0]
    return g_t


def as_aux_jacobian(g_a: torch.Tensor) -> torch.Tensor:
    """The aux's gradients as ``(n, k, d)`` (one row of J per aux output)."""
    return g_a.unsqueeze(1) if g_a.ndim == 2 else g_a


def check_aux_not_constant(g_a: torch.Tensor, w_a: torch.Tensor | None = None,
                           what: str = "gradient") -> None:
    """FauxError when the aux model's gradient (``w_a * g_a``) is zero on every row."""
    if int(torch.count_nonzero(g_a)) == 0 or (w_a is not None
                                               and int(torch.count_nonzero(w_a)) == 0):
        raise FauxError(f"aux model's {what} is zero everywhere: it ignores x; retrain it "
                        "(or check that it reads these features)")


def check_ng(ng: str) -> None:
    """ConfigError unless ``ng`` is one of :data:`faux.methods.options.NG_READINGS`."""
    if ng not in NG_READINGS:
        raise ConfigError(f"ng={ng!r} is not one of {list(NG_READINGS)}")


def row_factor(g: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``g = w[..., None] * h`` with ``w`` the max |entry| of each vector (0 for zero vectors,
    whose ``h`` is 0), so that ``h`` is O(1) and squares neither underflow nor overflow."""
    lo, hi = torch.aminmax(g, dim=-1)
    w = torch.maximum(hi, -lo)
    return g / _safe(w).unsqueeze(-1), w


def fta_scores(g_t: torch.Tensor, w_t: torch.Tensor | None, p: float) -> torch.Tensor:
    """FTA: the ``p``-norm of the target's gradient ``w_t * g_t`` (n, d), per row."""
    s = torch.linalg.vector_norm(g_t, ord=p, dim=1)
    return s if w_t is None else s * w_t


def faux_scores(g_t: torch.Tensor, w_t: torch.Tensor | None, J: torch.Tensor,
                w_a: torch.Tensor | None, eps: float) -> torch.Tensor:
    """Eq. 9, ``|g_t J^T (J J^T)^-1|_inf`` per row, for the target gradient ``w_t * g_t``
    (n, d) and the aux Jacobian ``w_a * J`` (n, k, d).

    For k = 1 this is ``|g_t . a| / ||a||^2``, exactly. For k > 1, ``(J J^T)^-1`` is the
    pseudo-inverse from the eigendecomposition of ``J J^T``, eigenvalues below ``max(eps,
    100 * machine eps of the dtype)`` times the largest dropped, so that ``J^T (J J^T)^+`` is
    the Moore-Penrose pseudo-inverse of J; a spectral cut-off rather than a ridge, which
    loses digits on a rank-deficient J (docs/notebook/methods_notes.md).
    """
    k = J.shape[1]
    if k == 1:
        a = J[:, 0]
        na = torch.linalg.vector_norm(a, dim=1)
        dot = torch.einsum("nd,nd->n", g_t, a).abs()
        ok = na > 0
        s = dot / _safe(na) / _safe(na)
        if w_a is not None:
            wa = w_a[:, 0]
            ok &= wa > 0
            s = s / _safe(wa)
    else:
        Jh, m = row_factor(apply_weights(J, w_a).flatten(1))
        Jh = Jh.view_as(J)
        ok = m > 0
        rel = max(float(eps), 100.0 * torch.finfo(J.dtype).eps)
        G = Jh @ Jh.transpose(1, 2)  # (n, k, k), symmetric PSD
        L, V = torch.linalg.eigh(G)  # ascending eigenvalues
        keep = (L > rel * L[:, -1:].clamp_min(0)) & (L > 0)
        inv = torch.where(keep, 1.0 / _safe(L), torch.zeros_like(L))
        v = torch.einsum("nkd,nd->nk", Jh, g_t)  # J g
        u = torch.einsum("nij,nj->ni", V, inv * torch.einsum("nji,nj->ni", V, v))
        s = u.abs().amax(dim=1) / _safe(m)
    if w_t is not None:
        s = s * w_t
    return torch.where(ok, s, torch.zeros_like(s))


def _feature_scale(g: torch.Tensor, w: torch.Tensor | None, reading: str) -> torch.Tensor:
    """Per-feature scale over rows (dim 0) of the gradients ``w[..., None] * g``.

    "feature": population std; a column whose std is below sqrt(machine eps) times its RMS
    (a constant gradient, e.g. a linear model's logit, or a single row) falls back to its
    RMS. "feature_rms": RMS (the column's l2 norm / sqrt(n)). All-zero columns get scale 1.
    """
    std, mean = torch.std_mean(apply_weights(g, w), dim=0, correction=0)
    rms = torch.hypot(std, mean)
    if reading == "feature_rms":
        scale = rms
    else:
        tol = torch.finfo(g.dtype).eps ** 0.5
        scale = torch.where(std > tol * rms, std, rms)
    return _safe(scale)


def ng_scores(g_t: torch.Tensor, w_t: torch.Tensor | None, J: torch.Tensor,
              w_a: torch.Tensor | None, ng: NGReading, inplace: bool = False) -> torch.Tensor:
    """Eq. 10, ``max_k |norm(g_t) . norm(J_k)|``, for the target gradient ``w_t * g_t`` (n, d)
    and the aux gradients ``w_a * J`` (n, k, d); 0 where either gradient is zero.

    The per-row factors cancel in the cosine (only their zeros matter); the per-feature
    readings divide each column by the spread of the full gradients over the rows.
    ``inplace`` lets it divide ``g_t``/``J`` in place (internal buffers only).
    """
    check_ng(ng)
    if ng != "sample":
        # only relative column scales matter to a cosine: divide by scale / max(scale), which
        # keeps the O(1) logit-range gradients O(1) even when the row factors are tiny
        st, sa = _feature_scale(g_t, w_t, ng), _feature_scale(J, w_a, ng)
        st, sa = st / st.amax(), sa / sa.amax(dim=-1, keepdim=True)
        g_t = g_t.div_(st) if inplace else g_t / st
        J = J.div_(sa) if inplace else J / sa
    nt = torch.linalg.vector_norm(g_t, dim=1)  # (n,)
    na = torch.linalg.vector_norm(J, dim=2)  # (n, k)
    dot = torch.einsum("nd,nkd->nk", g_t, J)
    ok = (nt.unsqueeze(1) > 0) & (na > 0)
    if w_t is not None:
        ok &= (w_t > 0).unsqueeze(1)
    if w_a is not None:
        ok &= w_a > 0
    cos = torch.where(ok, dot / _safe(nt).unsqueeze(1) / _safe(na), torch.zeros_like(dot))
    return cos.abs().amax(dim=1)


def normalise_gradients(g: torch.Tensor, ng: NGReading = ScoreOptions.ng) -> torch.Tensor:
    """The ``norm(.)`` of eq. 10 applied to gradients ``(n, d)`` or ``(n, k, d)``.

    "sample": each row (and each aux output) scaled to unit l2 norm (zero rows stay zero).
    "feature"/"feature_rms": each feature's gradient is first divided by its std / RMS over
    the rows given (so the result depends on the whole scored set), then rows are unit-scaled.
    """
    check_ng(ng)
    h, w = row_factor(g)
    if ng != "sample":
        sc = _feature_scale(h, w, ng)
        h = h / (sc / sc.amax(dim=-1, keepdim=True))  # relative scales: h stays O(1)
    return h / _safe(torch.linalg.vector_norm(h, dim=-1, keepdim=True))


def faux_from_gradients(g_tar: torch.Tensor, g_aux: torch.Tensor,
                        eps: float = ScoreOptions.eps) -> torch.Tensor:
    """Eq. 9 from gradients: ``|g_tar J^T (J J^T)^-1|_inf`` per row (:func:`faux_scores`).

    ``g_tar``: ``(n, d)``; ``g_aux``: ``(n, d)`` or ``(n, k, d)`` (rows of J). Both are
    factored by :func:`row_factor` first.
    """
    g_t, w_t = row_factor(as_target_gradient(g_tar))
    J, w_a = row_factor(as_aux_jacobian(g_aux))
    return faux_scores(g_t, w_t, J, w_a, eps)


def ng_from_gradients(g_tar: torch.Tensor, g_aux: torch.Tensor,
                      ng: NGReading = ScoreOptions.ng) -> torch.Tensor:
    """Eq. 10 from gradients: ``max_k |norm(g_tar) . norm(g_aux_k)|``; 0 for zero-norm rows."""
    g_t, w_t = row_factor(as_target_gradient(g_tar))
    J, w_a = row_factor(as_aux_jacobian(g_aux))
    return ng_scores(g_t, w_t, J, w_a, ng)
