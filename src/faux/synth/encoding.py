"""GMM mode encoding of continuous features (paper A.7.3).

Each continuous feature is standardised, a 1-D Gaussian mixture is fitted to it, and a value
is replaced by the vector of its mode posterior probabilities. The encoded row is the
concatenation of these blocks, so every row sums to the number of features.

Components larger than a feature's number of distinct values (credit_g has 2- and 4-valued
"continuous" columns while Table 2 asks for 7 components) are handled by ``on_excess``:
``"reduce"`` (default) fits as many components as there are distinct values and logs it;
``"error"`` raises :class:`~faux.errors.ConfigError`. Blocks may therefore differ in size;
``block_sizes`` says how.
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass, field

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.mixture import GaussianMixture
from threadpoolctl import threadpool_limits

from faux.errors import ConfigError, DataError

log = logging.getLogger("faux.synth")


@dataclass
class ModeEncoder:
    """Per-feature Gaussian mixtures; ``transform`` maps ``(n, d)`` raw values to mode posteriors."""

    n_components: int = 3
    reg_covar: float = 1e-6
    on_excess: str = "reduce"
    seed: int = 0
    mean_: np.ndarray | None = None
    scale_: np.ndarray | None = None
    gmms_: list = field(default_factory=list)
    reductions_: dict = field(default_factory=dict)

    @property
    def block_sizes(self) -> tuple[int, ...]:
        self._check_fitted()
        return tuple(int(g.n_components) for g in self.gmms_)

    @property
    def n_features(self) -> int:
        return len(self.block_sizes)

    @property
    def dim(self) -> int:
        return int(sum(self.block_sizes))

    def _check_fitted(self) -> None:
        if not self.gmms_:
            raise ConfigError("ModeEncoder is not fitted; call fit(X) first")

    def fit(self, X: np.ndarray, feature_names=None) -> ModeEncoder:
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[0] < 2 or X.shape[1] < 1:
            raise DataError(f"ModeEncoder.fit needs a 2-D array with >= 2 rows, got shape {X.shape}")
        if not np.isfinite(X).all():
            raise DataError("ModeEncoder.fit got NaN/inf values; drop or impute them first")
        if int(self.n_components) < 1:
            raise ConfigError(f"n_components must be >= 1, got {self.n_components}")
        if self.on_excess not in ("reduce", "error"):
            raise ConfigError(f"on_excess must be 'reduce' or 'error', got {self.on_excess!r}")
        names = list(feature_names) if feature_names is not None else [
            f"x{j}" for j in range(X.shape[1])]
        self.mean_ = X.mean(axis=0)
        scale = X.std(axis=0)
        self.scale_ = np.where(scale > 0, scale, 1.0)
        Z = (X - self.mean_) / self.scale_
        self.gmms_, self.reductions_ = [], {}
        for j in range(X.shape[1]):
            n_distinct = len(np.unique(Z[:, j]))
            k = int(self.n_components)
            if k > n_distinct:
                if self.on_excess == "error":
                    raise ConfigError(
                        f"feature '{names[j]}' has {n_distinct} distinct values but n_components="
                        f"{k}; lower n_components or set on_excess='reduce'")
                log.info("feature '%s': %d distinct values < %d GMM components; using %d",
                         names[j], n_distinct, k, n_distinct)
                self.reductions_[names[j]] = (k, n_distinct)
                k = n_distinct
            gmm = GaussianMixture(n_components=k, reg_covar=float(self.reg_covar),
                                  random_state=int(self.seed) + j, n_init=1)
            # one BLAS / OpenMP thread: k-means' initialisation sums in another order under
            # two threads than under one (last bits of the mixture), and a cached generator
            # must not depend on the machine's thread count, which its key does not hold
            with warnings.catch_warnings(), threadpool_limits(limits=1):
                warnings.simplefilter("ignore", ConvergenceWarning)
                gmm.fit(Z[:, j : j + 1])
            # order modes by their mean so block columns are interpretable and stable
            order = np.argsort(gmm.means_[:, 0])
            gmm.weights_ = gmm.weights_[order]
            gmm.means_ = gmm.means_[order]
            gmm.covariances_ = gmm.covariances_[order]
            gmm.precisions_ = gmm.precisions_[order]
            gmm.precisions_cholesky_ = gmm.precisions_cholesky_[order]
            self.gmms_.append(gmm)
        return self

    def transform(self, X: np.ndarray) -> np.ndarray:
        self._check_fitted()
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != len(self.gmms_):
            raise DataError(f"ModeEncoder.transform expects {len(self.gmms_)} columns, got shape "
                            f"{X.shape}")
        Z = (X - self.mean_) / self.scale_
        blocks = [g.predict_proba(Z[:, j : j + 1]) for j, g in enumerate(self.gmms_)]
        out = np.concatenate(blocks, axis=1)
        # predict_proba is normalised; renormalise to remove any float drift
        for a, b in block_bounds(self.block_sizes):
            out[:, a:b] /= out[:, a:b].sum(axis=1, keepdims=True)
        return out

    def fit_transform(self, X: np.ndarray, feature_names=None) -> np.ndarray:
        return self.fit(X, feature_names).transform(X)

    def to_state(self) -> dict:
        """The fitted encoder as plain data (numbers and arrays; no pickled objects)."""
        self._check_fitted()
        return {
            "n_components": int(self.n_components), "reg_covar": float(self.reg_covar),
            "on_excess": str(self.on_excess), "seed": int(self.seed),
            "mean": np.asarray(self.mean_, dtype=np.float64),
            "scale": np.asarray(self.scale_, dtype=np.float64),
            "reductions": {str(k): [int(a), int(b)] for k, (a, b) in self.reductions_.items()},
            "gmms": [{name: np.asarray(getattr(g, f"{name}_"), dtype=np.float64)
                      for name in _GMM_ARRAYS} for g in self.gmms_],
        }

    @classmethod
    def from_state(cls, state: dict) -> ModeEncoder:
        """Inverse of :meth:`to_state` (arrays may come back as tensors)."""
        enc = cls(n_components=int(state["n_components"]), reg_covar=float(state["reg_covar"]),
                  on_excess=str(state["on_excess"]), seed=int(state["seed"]))
        enc.mean_, enc.scale_ = _array(state["mean"]), _array(state["scale"])
        enc.reductions_ = {k: (int(a), int(b)) for k, (a, b) in state["reductions"].items()}
        enc.gmms_ = [_gmm_from_arrays({k: _array(v) for k, v in g.items()}, enc.reg_covar)
                     for g in state["gmms"]]
        if enc.mean_.shape != enc.scale_.shape or enc.mean_.shape[0] != len(enc.gmms_):
            raise DataError("ModeEncoder state is inconsistent (mean/scale/mixtures differ in "
                            "length); rebuild the generator")
        return enc


#: fitted attributes of a 1-D full-covariance GaussianMixture that ``predict_proba`` uses
_GMM_ARRAYS = ("weights", "means", "covariances", "precisions", "precisions_cholesky")


def _array(v) -> np.ndarray:
    if hasattr(v, "detach"):
        v = v.detach().cpu().numpy()
    return np.array(v, dtype=np.float64)


def _gmm_from_arrays(arrays: dict, reg_covar: float) -> GaussianMixture:
    """A fitted GaussianMixture rebuilt from its parameter arrays (no unpickling)."""
    k = int(arrays["weights"].shape[0])
    if arrays["means"].shape != (k, 1) or arrays["covariances"].shape != (k, 1, 1):
        raise DataError(f"GMM arrays have shapes {arrays['means'].shape} / "
                        f"{arrays['covariances'].shape}; rebuild the generator")
    gmm = GaussianMixture(n_components=k, covariance_type="full", reg_covar=float(reg_covar))
    for name in _GMM_ARRAYS:
        setattr(gmm, f"{name}_", arrays[name])
    gmm.n_features_in_ = 1
    gmm.converged_ = True
    return gmm


def block_bounds(block_sizes) -> list[tuple[int, int]]:
    """``[(start, stop), ...]`` column ranges of each feature block."""
    bounds, a = [], 0
    for k in block_sizes:
        bounds.append((a, a + int(k)))
        a += int(k)
    return bounds
