"""One dataset's generator: a fitted mode encoder and CVAE, trained once and cached.

:func:`build_dataset_generator` encodes a PMLB dataset (``faux.synth.encoding``), trains its
CVAE (``faux.synth.cvae``) and caches both under :func:`generator_cache_key`: the dataset,
its data checksum, the code version of :data:`GENERATOR_MODULES`, the config, the seed and
the CPU kernels. The cache stores plain data only (arrays, numbers, a state dict).
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass, field

import numpy as np
import torch

from faux.harness.cache import Cache, code_version, data_checksum, torch_dumps, torch_loads
from faux.kernels import cpu_kernels
from faux.synth.cvae import CVAE, cvae_from_state, cvae_state, gumbel_noise, train_cvae
from faux.synth.encoding import ModeEncoder
from faux.synth.generator_settings import C_PATHS, generator_config

log = logging.getLogger("faux.synth")

#: the modules whose source decides what a trained generator is (data loading, encoding,
#: CVAE, training loop, its settings and this builder) and what a sample of it is (the
#: sampler): any edit to one of them makes cached generators and their samples stale
GENERATOR_MODULES = ("faux.data.pmlb_data", "faux.synth.encoding", "faux.synth.cvae",
                     "faux.models.training", "faux.synth.generator_settings",
                     "faux.synth.dataset_generator", "faux.synth.sampler")

#: a hash of GENERATOR_MODULES' sources and the numeric libraries' versions (not bumped by
#: hand); keys of artifacts made from generators (targets, aux models) include it
GENERATOR_VERSION = code_version(*GENERATOR_MODULES)


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

