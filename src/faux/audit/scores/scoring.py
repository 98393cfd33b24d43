"""Scores of one batch of rows, for a differentiable model (autograd) or a black box.

Everything is computed in standardised feature units ``z = (x - mean) / scale`` (one unit =
one standard deviation of the feature in the sample; 0/1 columns unscaled), the space the
aux model is trained in, so that eq. 9's pseudo-inverse and eq. 10's cosine do not depend
on the units the features happen to be recorded in.

Which methods an audit offers, their default thresholds and how each is scored are class
attributes of the registered methods (``faux.methods.protocol.Base``: ``audit_threshold``,
``audit_options``, ``black_box``).

- torch models (and scikit-learn models converted to torch, ``faux.audit.loaders.exact``): the
  method's own ``score`` (for the gradient tests ``faux.score``) on
  ``target(mean + scale * z)`` and the aux, the same code as Table 1's, on the GPU when
  one is available, with the method's ``audit_options`` (fAux+NG: the per-sample reading,
  ``ng="sample"``: the per-feature reading divides by spreads over the rows scored
  *together*, so a row's score would depend on the batch it falls in).
- black boxes (anything else): the model is only called; a method's ``black_box`` names
  its estimate. ``pinv_directions``: fAux (eq. 9) is the derivative of
  the model's probability along each pseudo-inverse direction ``p_j`` of the aux Jacobian
  ``J`` (rows of ``J^T (J J^T)^+``), by central differences with step ``h`` (in standard
  deviations, along the unit vector of ``p_j``): 2 k model calls per row. The derivatives
  ``d_j`` give the projection ``sum_j d_j J_j`` of the model's gradient onto J's row space,
  and eq. 9 of that (``faux_from_gradients``) is ``max_j |d_j|``. ``gradient_cosine``
  (fAux+NG) and ``gradient_norm`` (FTA) use a central-difference gradient (2 d calls per
  row, shared) in eq. 10 (``ng_from_gradients``, per-sample reading) or its l2 norm.

The central-difference gradient of a black box depends on the model, the rows, the step and
the standardisation only, not on the aux model: an audit scores its sample rows under the
aux, its null models, its other seeds and FTA, all with one gradient. A ``GradientMemo`` keeps
the last ``FD_MEMO_ENTRIES`` gradients per model, keyed by a digest of the standardised rows
(a hit returns the very numbers a new computation would). It belongs to one audit: the
audit's first ``Scorer`` makes it, and the scorers made from that one (``Scorer.like``: the
null models', the other seeds' and views', the baselines') share it; nothing of it outlives
the audit.
"""

from __future__ import annotations

import copy
import hashlib
import weakref
from collections import OrderedDict

import numpy as np
import torch
from torch import nn

from faux.audit.loaders.target import TargetModel
from faux.audit.scores.aux import Unstandardised
from faux.audit.scores.methods import audit_methods
from faux.errors import ConfigError
from faux.methods import registry
from faux.methods.alignment import faux_from_gradients, ng_from_gradients
from faux.methods.autograd import input_gradients
from faux.methods.options import DEFAULT_BATCH_SIZE
from faux.methods.protocol import Batch, MethodConfig, TrainData

FD_ROWS = 1 << 16  # model rows per black-box call (bounds the perturbation arrays)
#: the black-box estimates (``Base.black_box``) that read the central-difference gradient
FD_GRADIENT = ("gradient_cosine", "gradient_norm")
BLACK_BOX = ("pinv_directions", *FD_GRADIENT)
FD_MEMO_ENTRIES = 4  # gradients kept per model (the sample's batches, the pass's batch)


class GradientMemo:
    """Per model (by identity, held weakly), its last ``FD_MEMO_ENTRIES`` finite-difference
    gradients, keyed by a digest of the standardised rows, the standardisation and the step."""

    def __init__(self):
        self._by_model: dict[int, tuple[weakref.ref, OrderedDict]] = {}

    def _entries(self, model) -> OrderedDict:
        hit = self._by_model.get(id(model))
        if hit is None or hit[0]() is not model:
            for k in [k for k, (ref, _) in self._by_model.items() if ref() is None]:
                del self._by_model[k]
            hit = (weakref.ref(model), OrderedDict())
            self._by_model[id(model)] = hit
        return hit[1]

    @staticmethod
    def key(zn: np.ndarray, mean: np.ndarray, scale: np.ndarray, h: float) -> tuple:
        d = hashlib.blake2b(digest_size=20)
        for a in (zn, mean, scale):
            d.update(np.ascontiguousarray(a).view(np.uint8).reshape(-1))
        return zn.shape, h, d.hexdigest()

    def get(self, model, key):
        entries = self._entries(model)
        g = entries.get(key)
        if g is not None:
            entries.move_to_end(key)
        return g

    def put(self, model, key, g) -> None:
        entries = self._entries(model)
        entries[key] = g
        while len(entries) > FD_MEMO_ENTRIES:
            entries.popitem(last=False)

    def clear(self) -> None:
        self._by_model.clear()


def score_rows(scorer: Scorer, x: np.ndarray, batch_size: int) -> dict[str, np.ndarray]:
    """Every method's scores of rows ``x`` in batches of ``batch_size`` (the batches the
    audit's other scorers of the sample use, so that their shared ``GradientMemo`` serves
    their gradients)."""
    parts = [scorer.score(x[s:s + batch_size]) for s in range(0, len(x), batch_size)]
    return {m: np.concatenate([p[m] for p in parts]) for m in scorer.methods}


def check_methods_for(target: TargetModel, methods) -> None:
    """ConfigError naming the choices when a method cannot run on this kind of model."""
    allowed = audit_methods(target.differentiable)
    for m in methods:
        if m not in allowed:
            kind = "a differentiable (torch)" if target.differentiable else "a black-box"
            raise ConfigError(f"method {m!r} is not available for {kind} model; choose "
                              f"from {', '.join(allowed)}")


class Scorer:
    """Scores and per-feature contributions of batches of raw rows ``x`` (numpy (m, d)).
    ``memo``: the black box's finite-difference gradients already computed (a
    ``GradientMemo``, shared by the scorers of one audit; None: a new one of its own)."""

    def __init__(self, target: TargetModel, aux_z: nn.Module, mean, scale, methods, *,
                 fd_step: float = 0.1, batch_size: int = DEFAULT_BATCH_SIZE,
                 memo: GradientMemo | None = None):
        check_methods_for(target, methods)
        if not fd_step > 0:
            raise ConfigError(f"fd_step must be positive, got {fd_step}")
        self.target, self.aux = target, aux_z
        self.mean = np.asarray(mean, dtype=np.float64)
        self.scale = np.asarray(scale, dtype=np.float64)
        self.methods = list(methods)
        self.kinds = {m: registry.get(m) for m in self.methods}
        for m, kind in self.kinds.items():
            if not target.differentiable and kind.black_box not in BLACK_BOX:
                raise ConfigError(f"method {m!r}: unknown black_box estimate "
                                  f"{kind.black_box!r}; one of {', '.join(BLACK_BOX)}")
        self.h = float(fd_step)
        self.batch_size = int(batch_size)
        self.memo = GradientMemo() if memo is None else memo
        self.target_z = (Unstandardised(target.module, self.mean, self.scale)
                         if target.differentiable else None)
        # torch models are scored on the GPU when there is one (black boxes stay on the CPU)
        self.device = torch.device("cpu")
        if target.differentiable and torch.cuda.is_available():
            self.device = torch.device("cuda")
            self.target_z = copy.deepcopy(self.target_z).to(self.device)
            self.aux = copy.deepcopy(aux_z).to(self.device)
        self.fitted = {}
        # the target's output differentiated: the probability sigmoid(logit), or for a
        # module returning the audited value itself (a converted regressor) that value, as
        # the finite differences of a black box do
        self._output = "logit" if getattr(target, "output", "logit") == "value" else "prob"
        if target.differentiable:
            data = TrainData(None, None, aux=lambda seed: (self.aux, {"accuracy": None,
                                                                     "n_params": None}))
            for m, kind in self.kinds.items():
                config = MethodConfig(dict(kind.audit_options, batch_size=self.batch_size,
                                           output=self._output))
                self.fitted[m] = kind.build(config).fit(data, 0)
            # one memo for all: the target's and the aux's gradients of a batch are computed
            # once for every method (cleared per batch, so that it holds one batch at most)
            self._memo: dict = {}
            for fitted in self.fitted.values():
                if hasattr(fitted, "memo"):
                    fitted.memo = self._memo

    def like(self, aux_z: nn.Module, methods=None) -> Scorer:
        """A scorer of the same model, standardisation, step and batch size under another
        aux model (of ``methods``, else this one's), sharing this one's gradient memo."""
        return Scorer(self.target, aux_z, self.mean, self.scale,
                      self.methods if methods is None else methods, fd_step=self.h,
                      batch_size=self.batch_size, memo=self.memo)

    # ------------------------------------------------------------------ helpers
    def z_of(self, x: np.ndarray) -> torch.Tensor:
        z = torch.as_tensor((x - self.mean) / self.scale, dtype=torch.float32)
        return z.to(self.device) if self.target.differentiable else z

    def _f(self, z: np.ndarray) -> np.ndarray:
        """Black-box probability of standardised rows, in chunks of FD_ROWS."""
        out = np.empty(z.shape[0])
        for s in range(0, z.shape[0], FD_ROWS):
            zc = z[s:s + FD_ROWS]
            out[s:s + FD_ROWS] = self.target.proba(self.mean + self.scale * zc)
        return out

    def _aux_jacobian(self, z: torch.Tensor) -> torch.Tensor:
        g = input_gradients(self.aux, z, "logit", self.batch_size)
        return g.unsqueeze(1) if g.ndim == 2 else g  # (m, k, d)

    def fd_gradient(self, z: torch.Tensor) -> torch.Tensor:
        """Central-difference gradient of the probability, (m, d): 2 d calls per row, none
        when the model's gradient at these rows is in the memo."""
        zn = z.double().numpy()
        key = self.memo.key(zn, self.mean, self.scale, self.h)
        g = self.memo.get(self.target, key)
        if g is None:
            g = self._fd_gradient(zn)
            self.memo.put(self.target, key, g)
        return g.clone()

    def _fd_gradient(self, zn: np.ndarray) -> torch.Tensor:
        m, d = zn.shape
        g = np.empty((m, d))
        rows = max(1, FD_ROWS // (2 * d))
        eye = np.eye(d) * self.h
        for s in range(0, m, rows):
            zc = zn[s:s + rows]
            pert = np.concatenate([zc[:, None, :] + eye, zc[:, None, :] - eye], axis=1)
            f = self._f(pert.reshape(-1, d)).reshape(zc.shape[0], 2, d)
            g[s:s + rows] = (f[:, 0] - f[:, 1]) / (2 * self.h)
        return torch.as_tensor(g, dtype=torch.float32)

    def _pinv_directions(self, J: torch.Tensor) -> torch.Tensor:
        """Columns of ``J^T (J J^T)^+`` as (m, k, d)."""
        return torch.linalg.pinv(J.double()).transpose(1, 2).float()

    def fd_faux(self, z: torch.Tensor, J: torch.Tensor) -> torch.Tensor:
        """eq. 9 by central differences along the pseudo-inverse directions (2 k calls/row)."""
        P = self._pinv_directions(J)  # (m, k, d)
        norms = torch.linalg.vector_norm(P, dim=2, keepdim=True)  # (m, k, 1)
        v = torch.where(norms > 0, P / torch.where(norms > 0, norms, 1), 0).double().numpy()
        zn = z.double().numpy()[:, None, :]
        m, k, d = v.shape
        pert = np.concatenate([zn + self.h * v, zn - self.h * v], axis=1)  # (m, 2k, d)
        f = self._f(pert.reshape(-1, d)).reshape(m, 2, k)
        dv = (f[:, 0] - f[:, 1]) / (2 * self.h)  # derivative along unit v_j, (m, k)
        dj = torch.as_tensor(dv, dtype=torch.float32) * norms[..., 0]  # along p_j
        g_hat = torch.einsum("mk,mkd->md", dj, J)
        return faux_from_gradients(g_hat, J)

    # ------------------------------------------------------------------ public
    def _black_boxes(self) -> set:
        return {kind.black_box for kind in self.kinds.values()}

    def calls_per_row(self, k: int, d: int) -> int:
        if self.target.differentiable:
            return 0
        n = 0
        if "pinv_directions" in self._black_boxes():
            n += 2 * k
        if self._black_boxes() & set(FD_GRADIENT):
            n += 2 * d
        return n

    def score(self, x: np.ndarray) -> dict[str, np.ndarray]:
        z = self.z_of(x)
        out = {}
        if self.target.differentiable:
            batch = Batch(z)
            self._memo.clear()
            for m in self.methods:
                s = torch.as_tensor(self.fitted[m].score(self.target_z, batch)).detach()
                out[m] = s.double().cpu().numpy()
            return out
        J = self._aux_jacobian(z)
        g = self.fd_gradient(z) if self._black_boxes() & set(FD_GRADIENT) else None
        for m, kind in self.kinds.items():
            if kind.black_box == "pinv_directions":
                s = self.fd_faux(z, J)
            elif kind.black_box == "gradient_cosine":
                s = ng_from_gradients(g, J, ng="sample")
            else:
                s = torch.linalg.vector_norm(g, dim=1)
            out[m] = s.double().numpy()
        return out

    def contributions(self, x: np.ndarray) -> np.ndarray:
        """Per-feature terms of eq. 9, (m, d): ``grad f_j * p_j`` for the aux output that
        attains the max; they sum to the signed fAux score of each row."""
        z = self.z_of(x)
        if self.target.differentiable:
            g = input_gradients(self.target_z, z, self._output, self.batch_size)
        else:
            g = self.fd_gradient(z)
        J = self._aux_jacobian(z)
        P = self._pinv_directions(J)  # (m, k, d)
        terms = (g[:, None, :] * P).cpu()  # (m, k, d)
        best = terms.sum(dim=2).abs().argmax(dim=1)
        return terms[torch.arange(terms.shape[0]), best].double().numpy()
