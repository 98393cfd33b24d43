"""The Adel model's hyper-parameters: one ``AdelSpec`` with one default per parameter."""

from __future__ import annotations

from dataclasses import dataclass

#: the predictor's adversarial cost (``AdelSpec.pred_loss``)
PRED_LOSSES = ("bce", "prior")
#: what the counterfactual pairing compares (``AdelSpec.pair_on``)
PAIR_ON = ("logit", "hidden", "both")
#: what the MMD term compares (``AdelSpec.mmd_on``)
MMD_ON = ("hidden", "residual")
#: what the adversary, the decorrelation and the MMD read (``AdelSpec.hide_on``)
HIDE_ON = ("hidden", "residual")
#: the validation probe ``probe_target`` steers by (``AdelSpec.probe_kind``)
PROBE_KINDS = ("logistic", "mlp")


@dataclass(frozen=True)
class AdelSpec:
    """Hyper-parameters of :func:`faux.models.adel.train_adel` (Hydra ``_target_`` of
    conf/model/{aux,fair}/adel.yaml).

    The defaults are the fair model's recipe (the guards, ``adv_norm``, ``decor`` smoothed by
    ``decor_momentum``, the ``alpha_min`` floor, ``pair`` on the logit and the hidden layer
    and ``mmd``). :data:`GUARDS` is the first implementation's recipe (the guards ``flip``,
    ``cap`` and ``interleave`` alone), the real-data aux's. Objective and schedule: see
    :mod:`faux.models.adel`.
    """

    # predictor: an MLP of ``depth`` hidden layers of ``width`` units (the last one
    # ``last_width``, None: ``width``) and a linear head
    width: int = 64
    depth: int = 2
    last_width: int | None = None
    # adversarial weight of epoch e: max(alpha * alpha_decay**e, alpha_min)
    alpha: float = 100.0
    alpha_decay: float = 0.9
    alpha_min: float = 1.0
    # adversary: an MLP (``adv_depth`` x ``adv_width``) of s on the hidden layer, trained
    # ``n_adv`` epochs before each predictor epoch (and ``adv_steps`` steps after each
    # predictor mini-batch with ``interleave``) at ``adv_lr`` (None: ``lr``)
    n_adv: int = 3
    adv_width: int = 32
    adv_depth: int = 1
    adv_steps: int = 1
    adv_lr: float | None = None
    # the guards of the predictor's cost ``alpha * gain`` (``pred_loss="bce"``): ``flip``
    # takes the larger loss of a and -a, ``cap`` bounds the loss at the entropy of s;
    # ``pred_loss="prior"``: KL(marginal of s || adversary) instead
    pred_loss: str = "bce"
    cap: bool = True
    flip: bool = True
    interleave: bool = True
    # a fresh (re-initialised) adversary every predictor epoch, trained before validation
    reinit: bool = False
    # the adversary reads h standardised per unit over the batch
    adv_norm: bool = True
    # weight (times alpha) of sum_j corr(h_j, s)^2, its correlation smoothed over batches
    # with ``decor_momentum`` > 0; ``decor_whiten``: the squared multiple correlation instead
    decor: float = 1.0
    decor_momentum: float = 0.95
    decor_whiten: bool = False
    # weight of the counterfactual pairing on the declared proxy edits (``pair_edits`` of
    # train_adel), on the logit, the hidden layer or both (PAIR_ON)
    pair: float = 1.0
    pair_on: str = "both"
    # weight (times alpha) of MMD^2 between the two groups' hidden layers (``mmd_rows`` rows
    # of each group per step), on the whole layer or its residual (MMD_ON)
    mmd: float = 30.0
    mmd_rows: int = 64
    mmd_on: str = "hidden"
    # what the adversary, the decorrelation and the MMD read: h, or h less the head's
    # direction (HIDE_ON)
    hide_on: str = "hidden"
    # weight of the squared gap of the two groups' mean logits (score_gap)
    score_gap: float = 0.0
    # a validation probe AUROC of s that steers the alpha floor (None: off): the floor is
    # multiplied by ``probe_step`` after an epoch whose probe (``probe_kind``, fitted on
    # ``probe_rows`` training rows) reads above it, divided otherwise; ``probe_select``:
    # the best epoch is chosen among those whose probe read at or below it
    probe_target: float | None = None
    probe_step: float = 1.25
    probe_rows: int = 4000
    probe_kind: str = "logistic"
    probe_select: bool = False
    # training loop: Adam at ``lr``, mini-batches of ``batch_size``, early stopping on the
    # validation loss with ``patience`` (None: all ``max_epochs`` run)
    max_epochs: int = 100
    patience: int | None = 10
    batch_size: int = 64
    lr: float = 1e-3


#: the first implementation's recipe: the guards ``flip``, ``cap`` and ``interleave``, the
#: adversary kept, no standardised adversary input, decorrelation, alpha floor, pairing or
#: MMD. The real-data aux's recipe (conf/model/aux/adel.yaml) and the base of
#: scripts/research/fair_recipes.py's named recipes; every other field is AdelSpec's default.
GUARDS = AdelSpec(alpha_min=0.0, adv_norm=False, decor=0.0, decor_momentum=0.0, pair=0.0,
                  pair_on="logit", mmd=0.0)
