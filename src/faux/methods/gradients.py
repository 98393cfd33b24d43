"""Gradient-based individual-fairness scorers: FTA, fAux (eq. 9), fAux+NG (eq. 10), fAux+IG.

``score(method, target, aux, x, options, **overrides) -> (n,)`` is the public entry point
(``faux.score`` delegates here). The models are ``nn.Module``s mapping a float tensor
``(n, d)`` to logits ``(n,)`` or ``(n, 1)``; ``aux`` may return ``(n, k)``, one logit per
protected attribute.

How gradients are taken
-----------------------
One autograd pass per model (per aux output) on the summed output, with respect to the
input only (``torch.autograd.grad``): rows of an MLP are independent, so
``d(sum_i f(x_i))/dx_i = df(x_i)/dx_i``. Parameters never accumulate ``.grad``. Scoring runs
under ``torch.enable_grad()`` (also inside ``no_grad``/``inference_mode``) with every
submodule temporarily in eval mode (dropout off, BatchNorm on running statistics, which
also keeps rows independent); each submodule's mode is restored afterwards. Rows are
processed in chunks of ``batch_size``. The dtype and device of ``x`` are kept; the models
must already live on ``x``'s device with ``x``'s dtype (a clear error says otherwise).

``output="prob"`` differentiates ``sigmoid(logit)``; ``"logit"`` the logit itself. Internally a
probability gradient is kept as ``sigma'(logit) * grad(logit)`` (a per-row factor times a
logit-range vector), so confident rows (sigma' ~ 1e-30 in float32) neither underflow in
squares nor lose digits; ``sigma'`` is computed as ``sigmoid(z) * sigmoid(-z)``.

Numerical safety and what is returned
-------------------------------------
- fAux rows whose aux gradient vanishes score 0 (the pseudo-inverse of a zero Jacobian);
  for k > 1 outputs, ``J^T (J J^T)^+`` uses an eigenvalue cut-off (``eps``), see
  ``faux_from_gradients``. fAux+NG rows where either gradient is zero score 0.
- Non-finite model outputs or gradients raise FauxError with the number of rows; so does a
  non-finite score (an overflow of the dtype). An aux whose gradient is zero on every row
  raises FauxError ("it ignores x; retrain it").

Defaults (and why)
------------------
- ``output="prob"`` for the target: the paper's predictions are probabilities.
- ``aux_output="logit"`` for the aux, whatever ``output`` is: probability gradients vanish
  on confident aux predictions and blow up ``1/||grad f_aux||^2``; the prototype measured
  the logit 0.03-0.12 AP better (DESIGN.md section 4). Pass ``aux_output="prob"`` to change.
- ``ng="feature"`` (fAux+NG): per-feature normalisation over the scored rows, then |cosine|
  (the prototype measured 0.55-0.80 AP against 0.47 for plain |cosine| on outer fusion).
- ``ig_baseline="zeros"``, ``ig_method="midpoint"`` (see ``faux.methods.ig``); every default
  is written in :class:`faux.methods.options.ScoreOptions`.
- ``eps``: relative eigenvalue cut-off of the k > 1 pseudo-inverse (see
  ``faux_from_gradients``).
"""

from __future__ import annotations

import torch
from torch import nn

from faux.errors import ConfigError, FauxError

# (duplicates) the helpers of the shared autograd core; ig.py, transparency.py import the same
# names from it, so these import lists repeat: a list of names, nothing to factor
from faux.methods.autograd import (  # noqa: F401  (public)
    DEFAULT_BATCH_SIZE,
    apply_weights,
    check_batch_size,
    check_model,
    check_output,
    check_x,
    input_gradients,
    input_grads,
    nonfinite_rows,
    scoring_mode,
)
from faux.methods.ig import ig_attributions
from faux.methods.options import ScoreOptions

METHODS = ("fta", "faux", "faux_ng", "faux_ig")
NG_READINGS = ("feature", "sample", "feature_rms")
#: results a target memo keeps (oldest dropped first)
MEMO_ENTRIES = 8

# --------------------------------------------------------------------------- combiners


def _target_single(g_t: torch.Tensor) -> torch.Tensor:
    if g_t.ndim == 3:
        if g_t.shape[1] != 1:
            raise FauxError(f"the target model returned {g_t.shape[1]} outputs per row; it must "
                            "return one logit per row, shape (n,) or (n, 1)")
        g_t = g_t[:, 0]
    return g_t


def _aux_3d(g_a: torch.Tensor) -> torch.Tensor:
    return g_a.unsqueeze(1) if g_a.ndim == 2 else g_a


def check_aux_not_constant(g_a: torch.Tensor, w_a: torch.Tensor | None = None,
                           what: str = "gradient") -> None:
    """FauxError when the aux model's gradient (``w_a * g_a``) is zero on every row."""
    if int(torch.count_nonzero(g_a)) == 0 or (w_a is not None
                                               and int(torch.count_nonzero(w_a)) == 0):
        raise FauxError(f"aux model's {what} is zero everywhere: it ignores x; retrain it "
                        "(or check that it reads these features)")


def _safe(v: torch.Tensor) -> torch.Tensor:
    return torch.where(v > 0, v, torch.ones_like(v))


def _row_factor(g: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``g = w[..., None] * h`` with ``w`` the max |entry| of each vector (0 for zero vectors,
    whose ``h`` is 0), so that ``h`` is O(1) and squares neither underflow nor overflow."""
    lo, hi = torch.aminmax(g, dim=-1)
    w = torch.maximum(hi, -lo)
    return g / _safe(w).unsqueeze(-1), w


def _faux_core(g_t: torch.Tensor, w_t: torch.Tensor | None, J: torch.Tensor,
               w_a: torch.Tensor | None, eps: float) -> torch.Tensor:
    """Eq. 9 for target gradient ``w_t * g_t`` (n, d) and aux Jacobian ``w_a * J`` (n, k, d)."""
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
        Jh, m = _row_factor(apply_weights(J, w_a).flatten(1))
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


def faux_from_gradients(g_tar: torch.Tensor, g_aux: torch.Tensor,
                        eps: float = 1e-12) -> torch.Tensor:
    """Eq. 9 from gradients: ``|g_tar J^T (J J^T)^-1|_inf`` per row.

    ``g_tar``: ``(n, d)``; ``g_aux``: ``(n, d)`` or ``(n, k, d)`` (rows of J). For k = 1 this is
    ``|g_tar . g_aux| / ||g_aux||^2``, exactly.

    Numerical safety: gradients are handled as a per-row factor times an O(1) vector (the
    sigmoid's slope when scoring probabilities, else the row's largest entry), so squares
    neither underflow nor overflow. Rows where the aux gradient vanishes score exactly 0
    (the pseudo-inverse of a zero Jacobian is zero). For k > 1, ``(J J^T)^-1`` is the
    pseudo-inverse from its eigendecomposition, eigenvalues below ``max(eps, 100 * machine
    eps of the dtype)`` times the largest being dropped (``J^T (J J^T)^+`` is then the
    Moore-Penrose pseudo-inverse of J). A ridge ``J J^T + lam I`` was tried first: with
    ``lam = 1e-12`` relative it lost 4 digits on a rank-deficient J (condition 1e12), so a
    spectral cut-off is used instead.
    """
    g_t, w_t = _row_factor(_target_single(g_tar))
    J, w_a = _row_factor(_aux_3d(g_aux))
    return _faux_core(g_t, w_t, J, w_a, eps)


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


def _check_ng(ng: str) -> None:
    if ng not in NG_READINGS:
        raise ConfigError(f"ng={ng!r} is not one of {list(NG_READINGS)}")


def _ng_core(g_t: torch.Tensor, w_t: torch.Tensor | None, J: torch.Tensor,
             w_a: torch.Tensor | None, ng: str, inplace: bool = False) -> torch.Tensor:
    """Eq. 10 for target gradient ``w_t * g_t`` (n, d) and aux gradients ``w_a * J`` (n, k, d).

    The per-row factors cancel in the cosine (only their zeros matter); the per-feature
    readings divide each column by the spread of the full gradients over the rows.
    ``inplace`` lets it divide ``g_t``/``J`` in place (internal buffers only).
    """
    _check_ng(ng)
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


def normalise_gradients(g: torch.Tensor, ng: str = "feature") -> torch.Tensor:
    """The ``norm(.)`` of eq. 10 applied to gradients ``(n, d)`` or ``(n, k, d)``.

    "sample": each row (and each aux output) scaled to unit l2 norm (zero rows stay zero).
    "feature"/"feature_rms": each feature's gradient is first divided by its std / RMS over
    the rows given (so the result depends on the whole scored set), then rows are unit-scaled.
    """
    _check_ng(ng)
    h, w = _row_factor(g)
    if ng != "sample":
        sc = _feature_scale(h, w, ng)
        h = h / (sc / sc.amax(dim=-1, keepdim=True))  # relative scales: h stays O(1)
    return h / _safe(torch.linalg.vector_norm(h, dim=-1, keepdim=True))


def ng_from_gradients(g_tar: torch.Tensor, g_aux: torch.Tensor,
                      ng: str = "feature") -> torch.Tensor:
    """Eq. 10 from gradients: ``max_k |norm(g_tar) . norm(g_aux_k)|``; 0 for zero-norm rows."""
    g_t, w_t = _row_factor(_target_single(g_tar))
    J, w_a = _row_factor(_aux_3d(g_aux))
    return _ng_core(g_t, w_t, J, w_a, ng)


# --------------------------------------------------------------------------- public score


def _resolve_options(method: str, options: ScoreOptions) -> dict:
    if method not in METHODS:
        raise ConfigError(f"unknown gradient method {method!r}; valid: {', '.join(METHODS)}")
    o = options.as_dict()
    check_output(o["output"], "output")
    if o["aux_output"] is None:
        o["aux_output"] = "logit"
    check_output(o["aux_output"], "aux_output")
    o["batch_size"] = check_batch_size(o["batch_size"])
    if o["ng"] not in NG_READINGS:
        raise ConfigError(f"ng={o['ng']!r} is not one of {list(NG_READINGS)}")
    try:
        o["p"] = float(o["p"])
    except (TypeError, ValueError):
        o["p"] = -1.0
    if not o["p"] > 0:
        raise ConfigError(f"p must be a positive number (or inf), got {options.p!r}")
    if not (isinstance(o["eps"], int | float) and o["eps"] >= 0):
        raise ConfigError(f"eps must be a non-negative number, got {o['eps']!r}")
    return o


def _memo_target(memo: dict | None, target: nn.Module, x: torch.Tensor, o: dict, ig: bool,
                 compute) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``compute()`` (the target's factored gradients), or a copy of a stored result for the
    same target object with the same weights, the same ``x`` tensor (unchanged since: the
    tensors' version counters, which in-place updates such as an optimiser step advance) and
    the options the target part reads."""
    if memo is None:
        return compute()
    opts = ("ig", o["output"], o["ig_steps"], o["ig_method"], _baseline_key(o["ig_baseline"]),
            o["batch_size"]) if ig else ("grad", o["output"], o["batch_size"])
    weights = tuple(p._version for p in target.parameters())
    key = (id(target), id(x), x._version, weights, opts)
    hit = memo.get(key)
    if hit is None or hit[0] is not target or hit[1] is not x:
        g, w = compute()
        while len(memo) >= MEMO_ENTRIES:      # a caller scoring batch after batch (the audit)
            memo.pop(next(iter(memo)))        # keeps only the latest few
        memo[key] = hit = (target, x, g, w)   # the objects kept alive: their ids stay theirs
    g, w = hit[2], hit[3]
    return g.clone(), (None if w is None else w.clone())


def _baseline_key(baseline):
    if isinstance(baseline, torch.Tensor):
        return ("tensor", id(baseline), baseline._version)
    return baseline


def score(method: str, target: nn.Module, aux: nn.Module | None, x: torch.Tensor,
          options: ScoreOptions | dict | None = None, *, target_memo: dict | None = None,
          **overrides) -> torch.Tensor:
    """Per-individual unfairness scores of ``target``, shape ``(n,)``, dtype/device of ``x``.

    Methods: ``fta`` (p-norm of grad f_tar; ``aux`` unused, may be None), ``faux`` (eq. 9),
    ``faux_ng`` (eq. 10), ``faux_ig`` (eq. 9 with integrated gradients of both models).

    ``options`` (a :class:`ScoreOptions` or a dict of its fields) with ``overrides`` (its
    fields as keywords) on top; an unknown name is a ConfigError naming the known ones.
    Fields (defaults in ``ScoreOptions``): ``output`` ("prob"|"logit", target), ``aux_output``
    (default "logit"), ``p`` (fta norm, default 2), ``ng`` ("feature"|"sample"|"feature_rms",
    faux_ng), ``ig_steps``, ``ig_baseline`` ("zeros"|"mean"|tensor (d,)/(n, d)),
    ``ig_method`` ("midpoint"|"trapezoid"|"gausslegendre"), ``eps`` (relative eigenvalue cut-off
    of the pseudo-inverse for k > 1 aux outputs), ``batch_size`` (rows per chunk).

    ``target_memo``: a dict the caller keeps across calls that score the same ``target`` on the
    same ``x`` with several aux models (one per seed): the target's gradients or IG
    attributions are computed once and reused (copies: the cores work in place), with results
    bit for bit those of separate calls.

    Raises ConfigError for an unknown method/option, DataError for bad ``x``, FauxError for a
    model on another device/dtype/width, non-finite outputs or gradients, or an aux whose
    gradient is zero everywhere.
    """
    o = _resolve_options(method, ScoreOptions.of(options, **overrides))
    x = check_x(x)
    check_model(target, x, "target")
    if method != "fta":
        if aux is None:
            raise ConfigError(f"method {method!r} needs an aux model (only 'fta' runs without)")
        check_model(aux, x, "aux")
    b = o["batch_size"]
    w_t = w_a = None
    with scoring_mode(target, aux if method != "fta" else None):
        if method == "faux_ig":
            g_t, w_t = _memo_target(target_memo, target, x, o, True, lambda: _row_factor(
                _target_single(ig_attributions(target, x, o["ig_baseline"], o["ig_steps"],
                                               o["output"], o["ig_method"], b, "target")[0])))
            g_a, any_grad = ig_attributions(aux, x, o["ig_baseline"], o["ig_steps"],
                                            o["aux_output"], o["ig_method"], b, "aux")
            if not any_grad:
                check_aux_not_constant(torch.zeros(1))
            g_a, w_a = _row_factor(g_a)
        else:
            def target_grads():
                g, w = input_grads(target, x, o["output"], b, "target")
                return _target_single(g), (None if w is None else w[:, 0])

            g_t, w_t = _memo_target(target_memo, target, x, o, False, target_grads)
            if method != "fta":
                g_a, w_a = input_grads(aux, x, o["aux_output"], b, "aux")
                check_aux_not_constant(g_a, w_a)
    if method == "fta":
        s = torch.linalg.vector_norm(g_t, ord=o["p"], dim=1)
        if w_t is not None:
            s = s * w_t
    elif method == "faux_ng":
        s = _ng_core(g_t, w_t, g_a, w_a, o["ng"], inplace=True)
    else:
        s = _faux_core(g_t, w_t, g_a, w_a, o["eps"])
    s = s.detach()
    n_bad = nonfinite_rows(s)
    if n_bad:
        raise FauxError(f"non-finite {method} scores at {n_bad} rows; check inputs/model "
                        "(the score overflows the dtype: try float64 or aux_output='logit')")
    return s
