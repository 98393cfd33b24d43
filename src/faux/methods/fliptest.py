"""FlipTest (Black, Yeom & Fredrikson 2019): counterparts from Wasserstein GANs.

``fit(x, c)`` trains two generators (``faux.models.wgan``): ``G01`` maps group c=0 onto
group c=1 and ``G10`` the reverse. Each individual's counterpart is produced by the generator
of its own group, so every row gets one.

Per-point score (Table 1 ranks rows, so each row needs one; the choice is recorded in
docs/decisions.md, "Per-point scores"): ``|p(x) - p(G_c(x))|`` with ``p = sigmoid(f_tar)``
(``output="prob"``, default) or the logits themselves (``output="logit"``). FlipTest's
flipsets are the rows whose hard prediction changes; the continuous score ranks them like
the other scorers and a threshold at 0.5 crossing recovers them (``flipset``).

Groups at scoring time: pass ``c`` to ``score``/``transparency``/``counterparts``. When
``c`` is None, each row's group is the prediction of a logistic regression of c on x fitted
in ``fit`` (a fallback for callers that only have x; its accuracy is ``info["group_acc"]``).

``transparency(x0)`` returns ``x0 - G(x0)`` per row; FlipTest's transparency report (mean
and std per feature over a flipset, eq. 39) is computed from it elsewhere.
``quality(x, c)`` returns the GAN metrics of A.11.4 (see ``faux.models.wgan``).
"""

from __future__ import annotations

from dataclasses import asdict

import numpy as np
import torch
from sklearn.linear_model import LogisticRegression

from faux.errors import ConfigError, DataError
from faux.methods.autograd import check_model, check_output, check_x, forward_logits
from faux.models.tensors import as_binary, as_features
from faux.models.wgan import GANSpec, gan_quality, train_fliptest_gans_many


class FlipTest:
    """``FlipTest(**GANSpec fields, output=..., accelerator=...)``."""

    def __init__(self, width: int = 128, depth: int = 2, critic_width: int | None = None,
                 critic_depth: int | None = None, n_critic: int = 5, batch_size: int = 64,
                 gen_steps: int = 2000, lr: float = 5e-5, clip: float = 0.01,
                 transport_weight: float = 1e-5, output: str = "prob",
                 accelerator: str = "auto"):
        self.spec = GANSpec(width=width, depth=depth, critic_width=critic_width,
                            critic_depth=critic_depth, n_critic=n_critic,
                            batch_size=batch_size, gen_steps=gen_steps, lr=lr, clip=clip,
                            transport_weight=transport_weight)
        self.output = check_output(output)
        self.accelerator = accelerator
        self.gen01 = self.gen10 = None
        self.group_clf: LogisticRegression | None = None
        self.info: dict = {}

    @classmethod
    def from_spec(cls, spec: GANSpec, **kw) -> FlipTest:
        return cls(**asdict(spec), **kw)

    def fit(self, x, c, y=None, seed: int = 0) -> FlipTest:
        """Train both GANs on ``(x, c)`` (c binary, both groups present); ``y`` is unused."""
        return self.fit_many(x, c, [seed])[0]

    def fit_many(self, x, c, seeds) -> list[FlipTest]:
        """One fitted FlipTest per seed, all trained together as one stack of networks
        (``train_fliptest_gans_many``); seed ``s`` gives what ``fit(x, c, seed=s)`` gives.
        The first is ``self``; the others are copies with the same settings."""
        x = as_features(x, "x")
        c = as_binary(c, x.shape[0], "c")
        if c.ndim != 1:
            raise DataError("FlipTest needs one binary protected attribute c of shape (n,)")
        trained = train_fliptest_gans_many(x, c, self.spec, seeds=list(seeds),
                                           accelerator=self.accelerator)
        xn, cn = x.double().numpy(), c.numpy().astype(int)   # CPU tensors (as_features)
        group_clf = LogisticRegression(max_iter=1000).fit(xn, cn)
        group_acc = float(group_clf.score(xn, cn))
        out = []
        for i, (g01, g10, info) in enumerate(trained):
            ft = self if i == 0 else FlipTest.from_spec(self.spec, output=self.output,
                                                        accelerator=self.accelerator)
            ft.gen01, ft.gen10, ft.info = g01, g10, {**info, "group_acc": group_acc}
            ft.group_clf, ft.d = group_clf, x.shape[1]
            out.append(ft)
        return out

    # ------------------------------------------------------------------ helpers
    def _check(self, x) -> torch.Tensor:
        if self.gen01 is None:
            raise ConfigError("FlipTest used before fit; call fit(x, c) first")
        x = check_x(x)
        if x.shape[1] != self.d:
            raise DataError(f"x has {x.shape[1]} columns but the GANs were trained on "
                            f"{self.d}; pass the features used in fit")
        return x

    def groups(self, x, c=None) -> torch.Tensor:
        """Group of each row: ``c`` when given, else the fitted logistic regression's guess."""
        x = self._check(x)
        if c is None:
            pred = self.group_clf.predict(x.detach().cpu().double().numpy())
            return torch.as_tensor(pred.astype(np.float32), device=x.device)
        c = torch.as_tensor(c).to(x.device).reshape(-1)
        if c.shape[0] != x.shape[0]:
            raise DataError(f"c has {c.shape[0]} values but x has {x.shape[0]} rows")
        if not bool(((c == 0) | (c == 1)).all()):
            raise DataError("c must be binary 0/1 for FlipTest")
        return c.float()

    def counterparts(self, x, c=None) -> torch.Tensor:
        """``G_c(x)`` per row: ``G01`` for rows of group 0, ``G10`` for group 1 (detached)."""
        x = self._check(x)
        grp = self.groups(x, c).bool()
        out = torch.empty_like(x)
        with torch.no_grad():
            for gen, rows in ((self.gen01, ~grp), (self.gen10, grp)):
                if bool(rows.any()):
                    gen = gen.to(device=x.device, dtype=x.dtype)
                    out[rows] = gen(x[rows])
        return out

    # ------------------------------------------------------------------ public API
    def score(self, target: torch.nn.Module, x, y=None, c=None) -> torch.Tensor:
        """``|p(x) - p(G_c(x))|`` per row (n,); ``y`` unused."""
        x = self._check(x)
        check_model(target, x, "target")
        xc = self.counterparts(x, c)
        with torch.no_grad():
            a = forward_logits(target, x, "target", x.shape[1])
            b = forward_logits(target, xc, "target", x.shape[1])
        if a.shape[1] != 1:
            raise ConfigError("the target model must return one logit per row")
        if self.output == "prob":
            a, b = torch.sigmoid(a), torch.sigmoid(b)
        return (a - b).abs()[:, 0]

    def flipset(self, target: torch.nn.Module, x, c=None) -> torch.Tensor:
        """Boolean (n,): rows whose hard prediction differs from their counterpart's."""
        x = self._check(x)
        xc = self.counterparts(x, c)
        with torch.no_grad():
            a = forward_logits(target, x, "target", x.shape[1])[:, 0] > 0
            b = forward_logits(target, xc, "target", x.shape[1])[:, 0] > 0
        return a != b

    def transparency(self, x0, c=None) -> torch.Tensor:
        """``x0 - G(x0)`` per row (n, d)."""
        x0 = self._check(x0)
        return x0 - self.counterparts(x0, c)

    def quality(self, x, c) -> dict:
        """GAN metrics on ``(x, c)``: ``ks``, ``mse``, ``mse_real`` (means of the two
        directions) and per direction (``ks_01``: G01(x[c=0]) against x[c=1], ...)."""
        x = self._check(x)
        c = as_binary(c, x.shape[0], "c").to(x.device).bool()
        gen = self.gen01
        mean, std = gen.mean[0].to(x), gen.std[0].to(x)
        with torch.no_grad():
            q01 = gan_quality(x[c], self.counterparts(x[~c], torch.zeros(int((~c).sum()))),
                              mean, std)
            q10 = gan_quality(x[~c], self.counterparts(x[c], torch.ones(int(c.sum()))),
                              mean, std)
        out = {k: 0.5 * (q01[k] + q10[k]) for k in q01}
        out.update({f"{k}_01": v for k, v in q01.items()})
        out.update({f"{k}_10": v for k, v in q10.items()})
        return out
