"""Biased synthetic data with per-individual counterfactuals (paper Algorithm 2, A.7).

One CVAE per source dataset (``Γ_y`` from the xy dataset, ``Γ_c`` from the xc dataset) is
trained once and cached. ``SyntheticGenerator.sample`` then draws ``(y, c) ~ P_bias``,
latents ``ẑ, z̃ ~ N(0, I)`` and decoding noise, decodes ``x̂ = Γ_y(ẑ, y)``,
``x̃ = Γ_c(z̃, c)``, fuses ``x = F(x̂, x̃)``, and also returns the counterfactual
``x' = F(x̂, Γ_c(z̃, 1 - c))`` with the same latents and the same noise, and ``dx/dc``: the
derivative of the fused x with respect to a continuous c through the c-side decoder,
latent and noise held fixed, at ``c = 0.5`` (``dxdc_at="mid"``) or at the observed c.

``c_path`` (``faux.synth.cvae.C_PATHS``) is how c enters the c-side CVAE's decoder: as an
input beside z (``decoder_input``, the default) or as ``c * b`` added to its pre-softmax
outputs (``logit_bias``); x(c), dx/dc and the counterfactual all follow that decoder. The
y-side CVAE keeps its own configuration. A generator configuration holds ``c_path`` only
when it is not the default, so a default generator's cache key is what it always was.
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass, field

import numpy as np
import torch

from faux.errors import ConfigError
from faux.harness.cache import Cache, code_version, data_checksum, torch_dumps, torch_loads
from faux.kernels import cpu_kernels  # noqa: F401  (re-exported: callers name it here)
from faux.synth.bias import mutual_information, p_bias, sample_joint
from faux.synth.cvae import (
    C_PATHS,
    CVAE,
    DECODINGS,
    cvae_from_state,
    cvae_state,
    gumbel_noise,
    train_cvae,
)
from faux.synth.encoding import ModeEncoder
from faux.synth.fusion import FUSIONS, fuse, projections

log = logging.getLogger("faux.synth")

#: the modules whose source decides what a trained generator is (data loading, encoding,
#: CVAE, training loop, this builder): any edit to one of them makes cached generators stale
GENERATOR_MODULES = ("faux.data.pmlb_data", "faux.synth.encoding", "faux.synth.cvae",
                     "faux.models.training", "faux.synth.sampler")

#: a hash of GENERATOR_MODULES' sources and the numeric libraries' versions (not bumped by
#: hand); keys of artifacts made from generators (targets, aux models) include it
GENERATOR_VERSION = code_version(*GENERATOR_MODULES)

#: defaults for any dataset; per-dataset values below (Table 2: components, hidden, depth)
GENERATOR_DEFAULT: dict = {
    "n_components": 3,
    "reg_covar": 1e-6,
    "on_excess": "reduce",
    "hidden": 256,
    "depth": 2,
    "latent_dim": 4,
    "beta": 0.2,
    "lr": 1e-3,
    "epochs": 300,
    "max_steps": 3000,
    "batch_size": 64,
    "patience": 30,
    "val_fraction": 0.1,
}

#: per-dataset overrides; mirrored by conf/generator/<name>.yaml (a test checks they agree)
GENERATOR_CFGS: dict[str, dict] = {
    "backache": {"n_components": 3, "hidden": 186, "depth": 6},
    "credit_g": {"n_components": 7, "hidden": 874, "depth": 3, "reg_covar": 1e-3},
    "australian": {"n_components": 5, "hidden": 977, "depth": 5},
    "wdbc": {"n_components": 4, "hidden": 367, "depth": 1},
    "magic": {"n_components": 2, "hidden": 624, "depth": 2, "batch_size": 256, "latent_dim": 8},
}

#: Table 2's model scores, for reports
PAPER_MODEL_SCORE = {"backache": 0.545, "credit_g": 0.657, "australian": 0.721, "wdbc": 0.815,
                     "magic": 0.987}


#: generator options besides GENERATOR_DEFAULT's that a config holds only when set to
#: something other than their default (so the default's cache key never names them)
GENERATOR_OPTIONAL: dict = {"c_path": C_PATHS[0]}


def generator_config(name: str, overrides: dict | None = None) -> dict:
    """Defaults, then the dataset's Table 2 values, then ``overrides`` (unknown keys rejected;
    an optional key at its default is dropped: :data:`GENERATOR_OPTIONAL`)."""
    cfg = {**GENERATOR_DEFAULT, **GENERATOR_CFGS.get(name, {})}
    for k, v in (overrides or {}).items():
        if k in GENERATOR_OPTIONAL:
            if v not in C_PATHS:
                raise ConfigError(f"generator option c_path for '{name}' must be one of "
                                  f"{', '.join(C_PATHS)}, got {v!r}")
            if v == GENERATOR_OPTIONAL[k]:
                cfg.pop(k, None)
                continue
        elif k not in GENERATOR_DEFAULT:
            raise ConfigError(f"unknown generator option {k!r} for '{name}'; known: "
                              f"{', '.join(sorted([*GENERATOR_DEFAULT, *GENERATOR_OPTIONAL]))}")
        cfg[k] = v
    return cfg


@dataclass
class DatasetGenerator:
    """A fitted mode encoder + CVAE for one source dataset, and its label frequency."""

    name: str
    encoder: ModeEncoder
    cvae: CVAE
    p_label: float
    cfg: dict
    info: dict = field(default_factory=dict)
    #: the generator's cache key: dataset, data checksum, code version, config, seed
    key: dict = field(default_factory=dict)

    @property
    def dim(self) -> int:
        return self.cvae.dim

    @property
    def n_features(self) -> int:
        return len(self.cvae.block_sizes)

    def noise(self, n: int, generator: torch.Generator) -> torch.Tensor:
        return gumbel_noise((n, self.dim), generator)

    def decode(self, z: torch.Tensor, c: torch.Tensor, noise: torch.Tensor | None,
               tau: float) -> torch.Tensor:
        return self.cvae.decode(z, c, noise, tau)

    def real_encoded(self, root=None) -> tuple[np.ndarray, np.ndarray]:
        """The real dataset, encoded with this generator's GMMs: ``(x, y)``."""
        from faux.data.pmlb_data import load_pmlb

        data = load_pmlb(self.name, root)
        return self.encoder.transform(data.X), data.y

    def sample(self, n: int, *, labels: np.ndarray | None = None, decoding: str = "gumbel",
               tau: float = 0.3, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
        """``n`` synthetic rows of this dataset alone; labels ~ Bernoulli(p_label) if not given."""
        g = torch.Generator().manual_seed(int(seed))
        if labels is None:
            labels = (torch.rand(n, generator=g, dtype=torch.float64) < self.p_label).long()
        labels = torch.as_tensor(labels).long()
        z = torch.randn(n, self.cvae.latent_dim, generator=g)
        noise = self.noise(n, g) if decoding == "gumbel" else None
        with torch.no_grad():
            x = self.decode(z, labels.float(), noise, tau)
        return x, labels


def check_synthetic_options(*, xc: str, xy: str, bias, fusion: str, decoding: str = "gumbel",
                            tau=0.3, dxdc_at: str = "mid", generator_cfgs: dict | None = None,
                            root=None) -> dict:
    """Validate a synthetic column's options before anything is trained (one-line
    ConfigError naming the fix); returns them normalised (bias and tau as floats, full
    generator configs per dataset)."""
    from faux.data.pmlb_data import KNOWN_PMLB, pmlb_path

    for role, name in (("xc", xc), ("xy", xy)):
        if not isinstance(name, str) or not name or "/" in name:
            raise ConfigError(f"{role} must be a PMLB dataset name, got {name!r}")
        if name not in KNOWN_PMLB and not pmlb_path(name, root).is_file():
            import pmlb

            if name not in pmlb.dataset_names:
                raise ConfigError(f"{role}: unknown dataset {name!r}; known: "
                                  f"{', '.join(KNOWN_PMLB)} (or any PMLB dataset name)")
    if isinstance(bias, bool) or not isinstance(bias, int | float) or not 0.0 <= bias <= 1.0:
        raise ConfigError(f"bias must be a number in [0, 1], got {bias!r}")
    if fusion not in FUSIONS:
        raise ConfigError(f"unknown fusion {fusion!r}; choose one of {', '.join(FUSIONS)}")
    _check_decoding(decoding)
    _check_dxdc_at(dxdc_at)
    if isinstance(tau, bool) or not isinstance(tau, int | float) or not tau > 0:
        raise ConfigError(f"tau must be a number > 0, got {tau!r}")
    cfgs = dict(generator_cfgs or {})
    unknown = set(cfgs) - {xc, xy}
    if unknown:
        raise ConfigError(f"generator_cfgs has entries {sorted(unknown)} that are not in the "
                          f"pair ({xc}, {xy}); remove them")
    full = {}
    for name in dict.fromkeys((xc, xy)):
        cfg = generator_config(name, cfgs.get(name))
        for k in ("n_components", "hidden", "latent_dim", "epochs", "batch_size"):
            if isinstance(cfg[k], bool) or not isinstance(cfg[k], int) or cfg[k] < 1:
                raise ConfigError(f"generator option {k} for '{name}' must be an integer >= 1, "
                                  f"got {cfg[k]!r}")
        if isinstance(cfg["depth"], bool) or not isinstance(cfg["depth"], int) or cfg["depth"] < 0:
            raise ConfigError(f"generator option depth for '{name}' must be an integer >= 0, "
                              f"got {cfg['depth']!r}")
        if cfg["on_excess"] not in ("reduce", "error"):
            raise ConfigError(f"generator option on_excess for '{name}' must be 'reduce' or "
                              f"'error', got {cfg['on_excess']!r}")
        full[name] = cfg
    return {"xc": xc, "xy": xy, "bias": float(bias), "fusion": fusion, "decoding": decoding,
            "tau": float(tau), "dxdc_at": dxdc_at, "generator_cfgs": full}


def _check_decoding(decoding: str) -> str:
    if decoding not in DECODINGS:
        raise ConfigError(f"decoding must be one of {', '.join(DECODINGS)}, got {decoding!r}")
    return decoding


def build_dataset_generator(name: str, cfg: dict | None = None, *, seed: int = 0,
                            cache: Cache | None = None, root=None) -> DatasetGenerator:
    """Train (or load from the cache) the mode encoder and CVAE of PMLB dataset ``name``."""
    from faux.data.pmlb_data import PAPER_PMLB, load_pmlb

    cfg = generator_config(name, cfg)
    data = load_pmlb(name, root)  # raises DataError for unknown / non-binary datasets
    key = generator_cache_key(name, cfg, seed=seed, root=root)

    def build() -> dict:
        if name not in PAPER_PMLB:
            log.info("dataset '%s' is not one of the paper's (%s); using the default generator "
                     "settings unless overridden", name, ", ".join(PAPER_PMLB))
        enc = ModeEncoder(n_components=int(cfg["n_components"]), reg_covar=float(cfg["reg_covar"]),
                          on_excess=cfg["on_excess"], seed=seed)
        x = enc.fit_transform(data.X, data.feature_names)
        cvae, info = train_cvae(
            x, data.y, enc.block_sizes, hidden=cfg["hidden"], depth=cfg["depth"],
            latent_dim=cfg["latent_dim"], beta=cfg["beta"], lr=cfg["lr"], epochs=cfg["epochs"],
            max_steps=cfg["max_steps"], batch_size=cfg["batch_size"], patience=cfg["patience"],
            val_fraction=cfg["val_fraction"], seed=seed,
            c_path=cfg.get("c_path", C_PATHS[0]))
        # plain data only (arrays, numbers, a state dict): the cache never unpickles code
        return {"encoder": enc.to_state(), "cvae": cvae_state(cvae),
                "p_label": float(data.y.mean()), "info": info}

    cache = cache if cache is not None else Cache()
    bundle = cache.get_or_build("generator", key, build, dumps=torch_dumps, loads=torch_loads)
    cvae = cvae_from_state(bundle["cvae"])
    for p in cvae.parameters():
        p.requires_grad_(False)
    return DatasetGenerator(name=name, encoder=ModeEncoder.from_state(bundle["encoder"]),
                            cvae=cvae, p_label=float(bundle["p_label"]), cfg=copy.deepcopy(cfg),
                            info=bundle["info"], key=key)


def generator_cache_key(name: str, cfg: dict, *, seed: int = 0, root=None) -> dict:
    """The cache key of dataset ``name``'s generator under the full config ``cfg``.

    Holds the SHA-256 of the data file it trains on and the code version of
    GENERATOR_MODULES, so a changed row or a changed line of code makes a new key; and the
    CPU kernels torch uses (``cpu``), since AVX2 and AVX-512 kernels round differently and
    a CVAE trained on one is not bit-identical to one trained on the other."""
    from faux.data.pmlb_data import pmlb_path

    return {"what": "dataset_generator", "code": GENERATOR_VERSION, "dataset": name,
            "data_sha256": data_checksum(pmlb_path(name, root)), "cfg": dict(cfg),
            "seed": int(seed), "cpu": cpu_kernels()}


@dataclass
class SyntheticSet:
    """One synthetic sample with its ground truth; tensors are float32, y/c int64."""

    x: torch.Tensor
    x_cf: torch.Tensor
    y: torch.Tensor
    c: torch.Tensor
    x_hat: torch.Tensor
    x_tilde: torch.Tensor
    x_tilde_cf: torch.Tensor
    dx_dc: torch.Tensor
    w_hat: torch.Tensor
    w_tilde: torch.Tensor
    fusion: str
    bias: float
    joint: np.ndarray
    dxdc_at: str

    def __len__(self) -> int:
        return int(self.x.shape[0])

    @property
    def dim(self) -> int:
        return int(self.x.shape[1])


class SyntheticGenerator:
    """Both CVAEs of a pair (xc: the dataset whose label is c; xy: whose label is y).

    ``generator_cfgs`` maps dataset name to overrides of :func:`generator_config`.
    ``c_path`` (``faux.synth.cvae.C_PATHS``) is how c enters the c-side CVAE's decoder; it
    is added to the xc dataset's overrides only, so with ``xc == xy`` and a non-default
    ``c_path`` the two sides are two CVAEs.
    """

    def __init__(self, xc: str, xy: str, generator_cfgs: dict | None = None, cache_dir=None,
                 seed: int = 0, decoding: str = "gumbel", tau: float = 0.3,
                 dxdc_at: str = "mid", root=None, c_path: str = C_PATHS[0]):
        self.xc, self.xy = xc, xy
        self.decoding = _check_decoding(decoding)
        if not tau > 0:
            raise ConfigError(f"tau must be > 0, got {tau}")
        self.tau = float(tau)
        self.dxdc_at = _check_dxdc_at(dxdc_at)
        self.seed = int(seed)
        cfgs = generator_cfgs or {}
        unknown = set(cfgs) - {xc, xy}
        if unknown:
            raise ConfigError(f"generator_cfgs has entries {sorted(unknown)} that are not in the "
                              f"pair ({xc}, {xy}); remove them")
        self.cache = Cache(cache_dir)
        cfg_c = generator_config(xc, {**(cfgs.get(xc) or {}), "c_path": c_path})
        cfg_y = generator_config(xy, cfgs.get(xy))
        self.c_path = cfg_c.get("c_path", C_PATHS[0])
        self.gen_c = build_dataset_generator(xc, cfg_c, seed=seed, cache=self.cache, root=root)
        self.gen_y = (self.gen_c if (xy, cfg_y) == (xc, cfg_c) else
                      build_dataset_generator(xy, cfg_y, seed=seed, cache=self.cache, root=root))

    @property
    def key(self) -> dict:
        """What this pair's samples depend on: both generators' keys (data checksums, code
        version, configs, seed) and the decoding options. Keys of artifacts trained on its
        samples (targets, aux models) should hold it."""
        return {"c": self.gen_c.key, "y": self.gen_y.key, "decoding": self.decoding,
                "tau": self.tau, "dxdc_at": self.dxdc_at}

    @property
    def p_c1(self) -> float:
        return self.gen_c.p_label

    @property
    def p_y1(self) -> float:
        return self.gen_y.p_label

    def joint(self, bias: float) -> np.ndarray:
        """``P_bias[c, y]``."""
        return p_bias(self.p_c1, self.p_y1, bias)

    def mutual_information(self, bias: float) -> float:
        return mutual_information(self.joint(bias))

    def projections(self, fusion: str) -> tuple[torch.Tensor, torch.Tensor]:
        return projections(self.gen_y.dim, self.gen_c.dim, fusion,
                           s_hat=self.gen_y.n_features, s_tilde=self.gen_c.n_features)

    def _fused_c_side(self, x_hat, z_tilde, noise_tilde, fusion):
        def f(c: torch.Tensor) -> torch.Tensor:
            return fuse(x_hat, self.gen_c.decode(z_tilde, c, noise_tilde, self.tau), fusion)
        return f

    def _draw(self, n: int, bias: float, seed: int) -> dict:
        """Labels, latents and decoding noise of ``n`` rows; all randomness of a sample."""
        P = self.joint(bias)
        rng = np.random.default_rng(seed)
        c_np, y_np = sample_joint(P, n, rng)
        g = torch.Generator().manual_seed(int(rng.integers(2**62)))
        gumbel = self.decoding == "gumbel"
        d = {"P": P, "y": torch.from_numpy(y_np), "c": torch.from_numpy(c_np),
             "z_hat": torch.randn(n, self.gen_y.cvae.latent_dim, generator=g),
             "z_tilde": torch.randn(n, self.gen_c.cvae.latent_dim, generator=g)}
        d["noise_hat"] = self.gen_y.noise(n, g) if gumbel else None
        d["noise_tilde"] = self.gen_c.noise(n, g) if gumbel else None
        with torch.no_grad():
            d["x_hat"] = self.gen_y.decode(d["z_hat"], d["y"].float(), d["noise_hat"], self.tau)
        return d

    def sample(self, n: int, bias: float, fusion: str = "outer", seed: int = 1,
               dxdc_at: str | None = None) -> SyntheticSet:
        """``n`` draws of Algorithm 2 with counterfactuals and ``dx/dc``; deterministic in seed."""
        if int(n) < 1:
            raise ConfigError(f"n must be >= 1, got {n}")
        if fusion not in FUSIONS:
            raise ConfigError(f"unknown fusion {fusion!r}; choose one of {', '.join(FUSIONS)}")
        dxdc_at = _check_dxdc_at(dxdc_at or self.dxdc_at)
        n = int(n)
        d = self._draw(n, bias, seed)
        cf = d["c"].float()
        x_hat, z_tilde, noise_tilde = d["x_hat"], d["z_tilde"], d["noise_tilde"]
        with torch.no_grad():
            x_tilde = self.gen_c.decode(z_tilde, cf, noise_tilde, self.tau)
            x_tilde_cf = self.gen_c.decode(z_tilde, 1.0 - cf, noise_tilde, self.tau)
            x = fuse(x_hat, x_tilde, fusion)
            x_cf = fuse(x_hat, x_tilde_cf, fusion)
        c_eval = torch.full((n,), 0.5) if dxdc_at == "mid" else cf.clone()
        f = self._fused_c_side(x_hat, z_tilde, noise_tilde, fusion)
        _, dx_dc = torch.func.jvp(f, (c_eval,), (torch.ones(n),))
        w_hat, w_tilde = self.projections(fusion)
        return SyntheticSet(x=x, x_cf=x_cf, y=d["y"], c=d["c"], x_hat=x_hat, x_tilde=x_tilde,
                            x_tilde_cf=x_tilde_cf, dx_dc=dx_dc.detach(), w_hat=w_hat,
                            w_tilde=w_tilde, fusion=fusion, bias=float(bias), joint=d["P"],
                            dxdc_at=dxdc_at)

    def fused_of_c(self, n: int, bias: float, fusion: str, seed: int):
        """The map ``c -> fused x`` for the rows ``sample(n, bias, fusion, seed)`` draws, with
        their latents and noise fixed (for finite-difference checks and diagnostics)."""
        d = self._draw(int(n), bias, seed)
        return self._fused_c_side(d["x_hat"], d["z_tilde"], d["noise_tilde"], fusion)


def _check_dxdc_at(v: str) -> str:
    if v not in ("mid", "observed"):
        raise ConfigError(f"dxdc_at must be 'mid' or 'observed', got {v!r}")
    return v



def generator_scores(gen: DatasetGenerator, *, decoding: str = "gumbel", tau: float = 0.3,
                     n: int = 5000, seed: int = 0, root=None) -> dict:
    """How well a generator keeps its dataset's label relationship (paper A.7.3).

    ``model_score_*``: a logistic regression trained on ``n`` sampled ``(x, label)`` pairs
    (labels at the real frequency), evaluated on the real encoded data (accuracy, balanced
    accuracy, ROC AUC). ``sep_synth_auc`` / ``sep_real_auc``: 5-fold cross-validated ROC AUC
    of a logistic regression on synthetic / real encoded data (label separability).
    ``synth_on_synth_acc``: accuracy of the synthetic-trained classifier on fresh samples.
    ``mlp_synth_auc`` / ``mlp_real_auc`` (and ``_acc``): a small MLP (sklearn, 64x64, early
    stopping) trained on 70% and tested on 30% of synthetic / real data: how readable the
    label is to a nonlinear model such as the auxiliary and target models.
    ``peak_synth`` / ``peak_real``: mean over features of the mean largest mode probability
    of a block (how one-hot the rows are), a check of the decoded marginal shape.
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import accuracy_score, balanced_accuracy_score, roc_auc_score
    from sklearn.model_selection import StratifiedKFold, cross_val_predict

    _check_decoding(decoding)
    xr, yr = gen.real_encoded(root)
    xs, ys = gen.sample(n, decoding=decoding, tau=tau, seed=seed)
    xs2, ys2 = gen.sample(n, decoding=decoding, tau=tau, seed=seed + 1)
    xs, ys, xs2, ys2 = xs.numpy(), ys.numpy(), xs2.numpy(), ys2.numpy()
    clf = LogisticRegression(max_iter=2000).fit(xs, ys)
    p_real = clf.predict_proba(xr)[:, 1]
    cv = StratifiedKFold(5, shuffle=True, random_state=seed)

    def cv_auc(x, y):
        p = cross_val_predict(LogisticRegression(max_iter=2000), x, y, cv=cv,
                              method="predict_proba")[:, 1]
        return float(roc_auc_score(y, p))

    def mlp_scores(x, y):
        from sklearn.model_selection import train_test_split
        from sklearn.neural_network import MLPClassifier

        xa, xb, ya, yb = train_test_split(x, y, test_size=0.3, stratify=y, random_state=seed)
        m = MLPClassifier((64, 64), early_stopping=True, max_iter=300, random_state=seed)
        m.fit(xa, ya)
        pb = m.predict_proba(xb)[:, 1]
        return float(accuracy_score(yb, pb > 0.5)), float(roc_auc_score(yb, pb))

    def peak(x):
        from faux.synth.encoding import block_bounds

        return float(np.mean([x[:, a:b].max(1).mean() for a, b in
                              block_bounds(gen.encoder.block_sizes)]))

    mlp_synth = mlp_scores(xs, ys)
    mlp_real = mlp_scores(xr, yr)
    with torch.no_grad():
        kl = gen.cvae.kl_nats(torch.from_numpy(xr).float(), torch.from_numpy(yr).float())
    return {
        "dataset": gen.name, "decoding": decoding, "tau": tau, "beta": gen.cfg["beta"],
        "model_score_acc": float(accuracy_score(yr, p_real > 0.5)),
        "model_score_bal_acc": float(balanced_accuracy_score(yr, p_real > 0.5)),
        "model_score_auc": float(roc_auc_score(yr, p_real)),
        "synth_on_synth_acc": float(accuracy_score(ys2, clf.predict(xs2))),
        "sep_synth_auc": cv_auc(xs, ys), "sep_real_auc": cv_auc(xr, yr),
        "mlp_synth_acc": mlp_synth[0], "mlp_synth_auc": mlp_synth[1],
        "mlp_real_acc": mlp_real[0], "mlp_real_auc": mlp_real[1],
        "peak_synth": peak(xs), "peak_real": peak(xr),
        "kl_nats": kl, "paper_model_score": PAPER_MODEL_SCORE.get(gen.name),
    }


def main(argv=None) -> None:
    """``python -m faux.synth.sampler DATASET [--beta B] [--decoding D] ...``: print scores."""
    import argparse
    import json

    ap = argparse.ArgumentParser(description="Train/load a dataset's CVAE and print its scores")
    ap.add_argument("dataset")
    ap.add_argument("--decoding", default="gumbel", choices=DECODINGS)
    ap.add_argument("--tau", type=float, default=0.3)
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                    help="generator config overrides, e.g. beta=0.2 max_steps=1000")
    args = ap.parse_args(argv)
    over = {}
    for kv in args.set:
        k, _, v = kv.partition("=")
        over[k] = json.loads(v) if v not in ("reduce", "error") else v
    gen = build_dataset_generator(args.dataset, over, seed=args.seed)
    out = generator_scores(gen, decoding=args.decoding, tau=args.tau, n=args.n, seed=args.seed)
    out["train_info"] = gen.info
    print(json.dumps(out))


if __name__ == "__main__":
    main()
