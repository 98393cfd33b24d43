"""The Adel model's training module (alternating adversarial training) and its penalties."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from faux.metrics.fairness import either_direction, logistic_probe_auroc, mlp_probe_auroc
from faux.models.adel.net import AdelNet
from faux.models.adel.spec import AdelSpec
from faux.models.training import TabularModule

#: nats added to the validation loss of an epoch whose probe read above the target
#: (``probe_select``): more than any label-loss difference between epochs
SELECT_PENALTY = 10.0


def _sq_corr(h: torch.Tensor, s: torch.Tensor, rate: torch.Tensor | None = None
             ) -> torch.Tensor:
    """Sum over hidden units of the squared batch correlation with s (mean over s's columns).

    0 exactly when no unit correlates with s, i.e. when no linear function of h does. With
    ``rate`` (s's marginal rate per column) s is centred and scaled by it instead of by the
    batch's own mean and std, which are noisy when one group is rare (Bank: 2.8 %).
    """
    return (_corr(h, s, rate) ** 2).sum(0).mean()


def _corr(h: torch.Tensor, s: torch.Tensor, rate: torch.Tensor | None = None) -> torch.Tensor:
    """Batch correlation of each hidden unit with each column of s, (width, k) (see _sq_corr)."""
    s = s.reshape(s.shape[0], -1)
    hc = h - h.mean(0)
    if rate is None:
        sc, s_sd = s - s.mean(0), s.std(0, unbiased=False)
    else:
        sc, s_sd = s - rate, (rate * (1 - rate)).sqrt()
    cov = hc.T @ sc / h.shape[0]                               # (width, k)
    return cov / (hc.std(0, unbiased=False)[:, None] * s_sd + 1e-6)


def swap_columns(x: torch.Tensor, edits) -> tuple[torch.Tensor, torch.Tensor]:
    """The rows of ``x`` holding a column of an edit (one-hot == 1), and those rows with the
    edit's two columns exchanged (every edit applied in turn, rows pooled)."""
    rows, swapped = [], []
    for i, j in edits:
        sel = (x[:, i] == 1) | (x[:, j] == 1)
        xs = x[sel]
        xt = xs.clone()
        xt[:, [i, j]] = xs[:, [j, i]]
        rows.append(xs)
        swapped.append(xt)
    return torch.cat(rows), torch.cat(swapped)


def score_gap(logit0: torch.Tensor, logit1: torch.Tensor) -> torch.Tensor:
    """Squared gap between the two groups' mean logits, over the pooled variance of the logit.

    Unbiased for the squared gap of the two groups' means (the sampling variance of the
    difference, ``var0 / n0 + var1 / n1``, is subtracted: on 64-row draws it is as large as the
    gaps this term leaves, and its gradient would shrink the logits). The variance it is
    divided by is detached and floored at 1: scale-free for a trained score, while a
    scale-free ratio's gradients would grow without bound as the logits shrink (at
    initialisation they drowned the label loss). 0 when a group has fewer than 2 rows."""
    a, b = logit0.reshape(-1), logit1.reshape(-1)
    if a.numel() < 2 or b.numel() < 2:
        return a.new_zeros(())
    gap2 = (b.mean() - a.mean()) ** 2 - a.var() / a.numel() - b.var() / b.numel()
    scale = torch.cat([a, b]).detach().var().clamp_min(1.0)
    return gap2 / scale


def mmd2(h0: torch.Tensor, h1: torch.Tensor, scales=(0.25, 1.0, 4.0)) -> torch.Tensor:
    """Squared maximum mean discrepancy between two samples of hidden layers (unbiased U-statistic:
    the within-sample means leave out the diagonal, so equal distributions score ~0, maybe < 0).

    Both samples are standardised per unit by their pooled mean and std (so shrinking h does
    not lower it), and compared under a sum of Gaussian kernels ``exp(-d^2 / (k m))`` for k in
    ``scales``, m the median squared pairwise distance of the pooled sample (detached). With a
    characteristic kernel it is 0 exactly when the two distributions are equal, i.e. when no
    probe, linear or not, can tell the groups apart (Gretton et al. 2012; the penalty of
    Louizos et al.'s variational fair autoencoder). 0 when a sample has fewer than 2 rows.
    """
    if h0.shape[0] < 2 or h1.shape[0] < 2:
        return h0.new_zeros(())
    z = torch.cat([h0, h1])
    z = (z - z.mean(0)) / (z.std(0, unbiased=False) + 1e-6)
    d2 = torch.cdist(z, z).pow(2)
    med = d2.detach().median().clamp_min(1e-6)
    k = sum(torch.exp(-d2 / (s * med)) for s in scales)
    n0, n1 = h0.shape[0], h1.shape[0]
    k00 = (k[:n0, :n0].sum() - k[:n0, :n0].diagonal().sum()) / (n0 * (n0 - 1))
    k11 = (k[n0:, n0:].sum() - k[n0:, n0:].diagonal().sum()) / (n1 * (n1 - 1))
    return k00 + k11 - 2 * k[:n0, n0:].mean()


def _pair_penalty(net: nn.Module, x: torch.Tensor, edits, on: str = "logit",
                  h: torch.Tensor | None = None) -> torch.Tensor:
    """How much the declared edits move the model, over the edited rows of ``x`` (0 when the
    batch holds none). ``logit``: mean squared logit difference. ``hidden``: mean squared
    distance between the last hidden layers of a row and its swap, over the batch's total
    variance of the hidden layer (scale-free: shrinking h does not lower it). ``both``: the
    sum of the two. ``h``: ``net.hidden(x)`` when the caller has it."""
    xs, xt = swap_columns(x, edits)
    if xs.shape[0] == 0:
        return x.new_zeros(())
    out = x.new_zeros(())
    if on in ("logit", "both"):
        out = out + ((net(xs) - net(xt)) ** 2).mean()
    if on in ("hidden", "both"):
        h = net.hidden(x) if h is None else h
        spread = h.var(0, unbiased=False).sum() + 1e-6
        out = out + ((net.hidden(xs) - net.hidden(xt)) ** 2).sum(1).mean() / spread
    return out


class AdelModule(TabularModule):
    """LightningModule of the alternating adversarial training (:mod:`faux.models.adel`)."""

    def __init__(self, model: AdelNet, spec: AdelSpec, h_s: float, *,
                 s_rate: torch.Tensor | None = None, seed: int = 0, pair_edits: tuple = (),
                 mmd_pool: tuple | None = None, probe_data: tuple | None = None):
        """``spec``: the hyper-parameters; ``h_s``: the entropy (nats) of s's training
        marginal; ``s_rate``: s's marginal rate per column; ``pair_edits``: the column pairs
        of the counterfactual pairing; ``mmd_pool``: the training ``(x, s)`` the MMD and
        score-gap terms draw each group's rows from; ``probe_data``: ``(x_fit, s_fit, x_val,
        s_val)`` of the ``probe_target`` control."""
        super().__init__(lr=spec.lr)
        self.model = model
        self.h_s = float(h_s)
        self.alpha0 = float(spec.alpha)
        self.alpha_decay = float(spec.alpha_decay)
        self.alpha_min = float(spec.alpha_min)
        self.n_adv = int(spec.n_adv)
        self.cap = bool(spec.cap)
        self.alpha = self.alpha0
        self.flip = bool(spec.flip)
        self.interleave = bool(spec.interleave)
        self.pred_loss = str(spec.pred_loss)
        self.reinit = bool(spec.reinit)
        self.adv_steps = int(spec.adv_steps)
        self.adv_lr = float(spec.adv_lr) if spec.adv_lr is not None else float(spec.lr)
        self.seed = int(seed)
        self.decor = float(spec.decor)
        self.decor_momentum = float(spec.decor_momentum)
        self.pair = float(spec.pair)
        self.pair_on = str(spec.pair_on)
        self.pair_edits = tuple((int(a), int(b)) for a, b in pair_edits)
        self.mmd = float(spec.mmd)
        self.mmd_rows = int(spec.mmd_rows)
        self.mmd_on = str(spec.mmd_on)
        self.score_gap = float(spec.score_gap)
        # the training rows of each group of s, for the balanced draws of the MMD and score-gap
        # terms (plain attributes, not buffers: the best-epoch restore copies the state dict)
        self._groups = None
        if self.mmd > 0 or self.score_gap > 0:
            x_pool, s_pool = mmd_pool
            s_pool = s_pool.reshape(s_pool.shape[0], -1)[:, 0]
            self._groups = [x_pool[s_pool == 0], x_pool[s_pool == 1]]
            self._mmd_gen = torch.Generator().manual_seed(int(seed) * 7919 + 17)
        self.register_buffer("s_rate", torch.as_tensor(
            s_rate if s_rate is not None else 0.5, dtype=torch.float32).reshape(-1))
        self.register_buffer("corr_ema", torch.zeros(model.net.hidden_width,
                                                     self.s_rate.numel()))
        self.decor_whiten = bool(spec.decor_whiten)
        # probe_target: the alpha floor follows a validation probe (see _steer_floor)
        self.probe_target = None if spec.probe_target is None else float(spec.probe_target)
        self.probe_step = float(spec.probe_step)
        self.probe_kind = str(spec.probe_kind)
        self.probe_select = bool(spec.probe_select)
        self._over_target = False     # this epoch's validation probe read above the target
        self._probe_data = probe_data
        self._floor = min(self.alpha_min, self.alpha0)
        self.probe_history: list[dict] = []
        self._r_hh_seen = False
        if self.decor_whiten:
            self.register_buffer("r_hh_ema", torch.zeros(model.net.hidden_width,
                                                         model.net.hidden_width))

    def forward(self, x):
        return self.model(x)

    def on_fit_start(self):
        if self._groups is not None:
            self._groups = [g.to(self.device) for g in self._groups]

    def _group_hidden(self, h, s):
        """The hidden layers of the two groups of s. In training: ``mmd_rows`` rows of each
        group drawn from the training set (seeded, with replacement), so that a rare group
        (Bank: 2.8 %) is not a handful of rows; in validation: the batch's own groups
        (validation batches hold 4,096 rows)."""
        if self.training:
            hs = []
            for g in self._groups:
                idx = torch.randint(g.shape[0], (self.mmd_rows,), generator=self._mmd_gen)
                hs.append(self.model.hidden(g[idx.to(g.device)]))
            return hs
        s0 = s.reshape(s.shape[0], -1)[:, 0]
        return [h[s0 == 0], h[s0 == 1]]

    def _mmd_penalty(self, hs):
        """MMD^2 between the groups' hidden layers ``hs`` (see :func:`mmd2`)."""
        return mmd2(*(self._mmd_view(h) for h in hs))

    def _mmd_view(self, h):
        """What the MMD term compares: h (``mmd_on="hidden"``), or h less its component along
        the head's weights (``"residual"``, or ``hide_on="residual"``: the direction the score
        reads is left to the other terms, so the score may keep the part of c they allow
        while every other direction of h must be equally distributed in both groups)."""
        if self.mmd_on == "residual" or self.model.hide_on == "residual":
            return self.model.residual(h)
        return h

    def configure_optimizers(self):
        return (torch.optim.Adam(self.model.net.parameters(), lr=self.lr),
                torch.optim.Adam(self.model.adversary.parameters(), lr=self.adv_lr))

    def _adv_loss(self, h, s):
        return F.binary_cross_entropy_with_logits(self.model.adversary(
            self.model.adversary_input(h)), s)

    def _adv_gain(self, h, s):
        """What the frozen adversary gains over a constant guess (nats; the predictor's cost).

        ``bce``: ``H_s - L(a, s)`` (with ``flip``: the larger loss of ``a`` and ``-a``; with
        ``cap``: not below 0). ``prior``: the cross-entropy of the adversary's output against
        s's marginal rate minus ``H_s``, i.e. the mean KL(marginal || adversary) >= 0, which is
        0 exactly when the adversary outputs the marginal for every row.
        """
        a = self.model.adversary(self.model.adversary_input(h))
        if self.pred_loss == "prior":
            rate = self.s_rate.to(a.dtype).expand_as(a)
            return F.binary_cross_entropy_with_logits(a, rate) - self.h_s
        loss = F.binary_cross_entropy_with_logits(a, s)
        if self.flip:
            loss = torch.minimum(loss, F.binary_cross_entropy_with_logits(-a, s))
        if self.cap:
            loss = torch.clamp(loss, max=self.h_s)
        return self.h_s - loss

    def _adv_step(self, opt_adv, x, s):
        with torch.no_grad():
            h = self.model.hidden(x)
        loss = self._adv_loss(h, s)
        opt_adv.zero_grad(set_to_none=True)
        loss.backward()
        opt_adv.step()

    def _reinit_adversary(self, opt_adv):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed * 100003 + self.current_epoch + 1)
            for m in self.model.adversary.modules():
                if isinstance(m, nn.Linear):
                    m.reset_parameters()
        opt_adv.state.clear()

    def _train_adversary(self):
        """``n_adv`` epochs of the adversary on the frozen hidden layer (fresh with ``reinit``)."""
        _, opt_adv = self.optimizers(use_pl_optimizer=False)
        if self.reinit:
            self._reinit_adversary(opt_adv)
        data = self.trainer.train_dataloader
        for _ in range(self.n_adv):
            for batch in data:
                for x, _y, s in (batch if isinstance(batch, list) else [batch]):
                    self._adv_step(opt_adv, x, s)

    def on_train_epoch_start(self):
        self.alpha = max(self.alpha0 * self.alpha_decay ** self.current_epoch, self._floor)
        # with reinit the fresh adversary of an iteration is trained at the end of the previous
        # predictor epoch (below), so that validation and early stopping see a fresh adversary
        if self.n_adv > 0 and (not self.reinit or self.current_epoch == 0):
            self._train_adversary()

    def on_validation_epoch_start(self):
        # the weights validated are the epoch's final ones: probe them first, so that
        # ``probe_select`` can mark this epoch's validation loss
        self._over_target = False
        if self.probe_target is not None and not self.trainer.sanity_checking:
            self._steer_floor(self.current_epoch)

    def _steer_floor(self, epoch: int) -> None:
        """``probe_target``: once the decaying alpha has reached its floor, after each epoch a
        probe of s (``probe_kind``: logistic or MLP) is fitted on the standardised hidden layer
        of a fixed draw of training rows and scored on the validation rows (AUROC, either
        direction); above the target the floor is multiplied by ``probe_step``, at or below it
        divided (kept within [0.05, alpha]), and the epoch is marked for ``probe_select``. The
        fairness pressure then settles where this probe reads about the target, whatever the
        seed, instead of at a fixed weight."""
        if self.alpha0 * self.alpha_decay ** (epoch + 1) > self._floor:
            return                                          # still in the warm-up
        auc = val_probe_auroc(self.model, *self._probe_data, kind=self.probe_kind,
                              seed=self.seed + epoch)
        self._over_target = auc > self.probe_target
        self.probe_history.append({"epoch": int(epoch), "val_probe": auc,
                                   "floor": self._floor})
        step = self.probe_step if auc > self.probe_target else 1.0 / self.probe_step
        self._floor = min(max(self._floor * step, 0.05), self.alpha0)

    def on_train_batch_end(self, outputs, batch, batch_idx):
        if self.n_adv > 0 and self.reinit and batch_idx == self.trainer.num_training_batches - 1:
            self._train_adversary()

    def _objective(self, batch):
        x, y, s = batch
        h = self.model.hidden(x)
        l_y = F.binary_cross_entropy_with_logits(self.model.net.head(h).reshape(y.shape), y)
        if self.pair > 0 and self.pair_edits:
            l_y = l_y + self.pair * _pair_penalty(self.model.net, x, self.pair_edits,
                                                  self.pair_on, h)
        gain = self._adv_gain(h, s)
        if self.decor > 0:
            gain = gain + self.decor * self._decor_penalty(self.model.hide_view(h), s)
        if self.mmd > 0 or self.score_gap > 0:
            hs = self._group_hidden(h, s)
            if self.mmd > 0:
                gain = gain + self.mmd * self._mmd_penalty(hs)
            if self.score_gap > 0:
                head = self.model.net.head
                l_y = l_y + self.score_gap * score_gap(head(hs[0]), head(hs[1]))
        return l_y, gain

    def _decor_penalty(self, h, s):
        """sum_j corr(h_j, s)^2; in training with ``decor_momentum`` b > 0, the correlation is
        smoothed over batches (m <- b m + (1 - b) corr_batch) and the penalty is the surrogate
        ``sum 2 m corr_batch - m^2``: its value is sum m^2 when corr_batch = m, its gradient
        2 m d corr_batch, i.e. the gradient of the squared smoothed correlation (a batch of 64
        holds ~2 rows of Bank's rare group: sum_j corr_batch^2 is then mostly noise)."""
        rate = self.s_rate.to(h.dtype)
        if self.decor_whiten:
            return self._whitened_decor(h, s, rate)
        if not self.training or self.decor_momentum <= 0:
            return _sq_corr(h, s, rate)
        corr = _corr(h, s, rate)
        b = self.decor_momentum
        m = b * self.corr_ema + (1 - b) * corr.detach()
        self.corr_ema.copy_(m)
        return (2 * m * corr - m ** 2).sum(0).mean()

    def _whitened_decor(self, h, s, rate):
        """``decor_whiten``: r^T (R + eps I)^-1 r, r the units' correlations with s and R the
        units' correlation matrix: the squared multiple correlation of s with h, i.e. what the
        best *linear* probe of h explains of s (``sum_j r_j^2`` is that only when the units are
        uncorrelated; with correlated units a combination can read more than any unit, or less).
        In training R is a detached running mean over batches (momentum ``decor_momentum``, or
        0.95) and r smoothed as in the plain term (surrogate ``2 m^T P r - m^T P m``, P the
        inverse); in validation both are the batch's own. ``eps`` = 0.01 keeps dead units
        (zero variance) from making R singular."""
        corr = _corr(h, s, rate)                                       # (width, k)
        hc = h - h.mean(0)
        z = hc / (hc.std(0, unbiased=False) + 1e-6)
        r_hh = (z.T @ z / h.shape[0]).detach()
        eye = torch.eye(r_hh.shape[0], dtype=h.dtype, device=h.device)
        if not self.training:
            return (corr * torch.linalg.solve(r_hh + 0.01 * eye, corr)).sum(0).mean()
        b = self.decor_momentum if self.decor_momentum > 0 else 0.95
        if not self._r_hh_seen:
            self.r_hh_ema.copy_(r_hh)
            self._r_hh_seen = True
        self.r_hh_ema.mul_(b).add_((1 - b) * r_hh)
        m = b * self.corr_ema + (1 - b) * corr.detach()
        self.corr_ema.copy_(m)
        pm = torch.linalg.solve(self.r_hh_ema + 0.01 * eye, m)
        return (2 * pm * corr - pm * m).sum(0).mean()

    def train_minibatch(self, batch):
        opt, opt_adv = self.optimizers(use_pl_optimizer=False)
        self.model.adversary.requires_grad_(False)     # frozen for the predictor's step
        l_y, gain = self._objective(batch)
        loss = l_y + self.alpha * gain
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        self.model.adversary.requires_grad_(True)
        if self.interleave:
            x, _y, s = batch
            for _ in range(self.adv_steps):
                self._adv_step(opt_adv, x, s)
        return loss.detach()

    def val_loss(self, batch):
        l_y, gain = self._objective(batch)
        if self.probe_target is not None:
            # the steered floor holds s at the target; stop on y alone, and with probe_select
            # rank an epoch whose probe read above the target behind every epoch below it
            return l_y + (SELECT_PENALTY if self.probe_select and self._over_target else 0.0)
        return l_y + torch.relu(gain)


def val_probe_auroc(model: AdelNet, x_fit, s_fit, x_val, s_val, *, kind: str = "logistic",
                    seed: int = 0) -> float:
    """AUROC (either direction, >= 0.5) on ``x_val`` of a probe of s fitted on the hidden
    layer of ``x_fit``: ``kind="logistic"`` :func:`faux.metrics.fairness.logistic_probe_auroc`,
    ``"mlp"`` :func:`faux.metrics.fairness.mlp_probe_auroc` (seeded by ``seed``). A cheap
    validation stand-in for the fairness check, which takes the larger of both probes and
    reads the test rows."""
    with torch.no_grad():
        hf, hv = (model.hidden(a).detach().cpu().double().numpy() for a in (x_fit, x_val))
    sf, sv = (t.reshape(t.shape[0], -1)[:, 0].cpu().numpy() for t in (s_fit, s_val))
    if kind == "mlp":
        auc = mlp_probe_auroc(hf, sf, hv, sv, seed=seed)
    else:
        auc = logistic_probe_auroc(hf, sf, hv, sv)
    return either_direction(auc)
