"""Adversarially fair classifier, after Adel et al. (2019), "One-network adversarial fairness".

Model (:class:`AdelNet`): an MLP trunk whose last hidden layer h feeds a linear head (the
logit of the label y) and, separately, an adversary (a small MLP) that predicts the protected
attribute s from h. Used twice in the paper (A.11.1, A.11.2): the fair models on the real
datasets (predict y, hide c) and the real-data fAux auxiliary model (predict c while the
adversary is kept from reading y): ``train_adel(spec, x, y, c, ...)`` and
``train_adel(spec, x, c, y, ...)``.

Objective and schedule (:class:`AdelModule`, manual optimisation, two Adam optimisers):

* one iteration is one predictor epoch. Before it the adversary trains ``n_adv`` epochs on
  the current, frozen hidden layer; then the predictor (trunk + head) trains one epoch on
  ``L_y + alpha_e * gain`` with the adversary frozen for that step (with ``interleave`` the
  adversary also takes ``adv_steps`` steps after each predictor mini-batch);
* ``alpha_e = max(alpha * alpha_decay**e, alpha_min)``;
* ``gain`` is what the frozen adversary gains over a constant guess (nats): ``H_s - L(a, s)``
  with ``L`` the larger loss of the logits a and -a (``flip``), capped at the entropy ``H_s``
  of s's marginal (``cap``); ``pred_loss="prior"``: KL(marginal of s || adversary) instead;
* added to ``gain`` (times alpha): ``decor * sum_j corr(h_j, s)^2`` (:func:`_sq_corr`;
  smoothed over batches with ``decor_momentum``), ``mmd * MMD^2`` between the two groups'
  hidden layers (:func:`mmd2`); added to ``L_y``: ``pair`` times how much the declared proxy
  edits move the logit or the hidden layer (:func:`swap_columns`), ``score_gap`` times the
  groups' squared mean-logit gap (:func:`score_gap`);
* with ``adv_norm`` the adversary reads h standardised per unit over the batch; with
  ``hide_on="residual"`` the adversary, decorrelation and MMD read h less the head's
  direction;
* early stopping monitors ``val_loss = L_y + max(0, gain)`` on the validation rows (the
  training objective at alpha = 1); patience counts only once alpha has decayed to
  ``max(1, alpha_min)``; the best epoch's weights are restored. With ``probe_target`` the
  alpha floor is steered by a validation probe of s instead (:func:`val_probe_auroc`) and
  early stopping follows the label loss.

Every parameter, with its default: :class:`AdelSpec`. How the recipe was arrived at, with
measurements: docs/notebook/adel_notes.md and docs/notebook/decisions_fair.md.
"""

from faux.models.adel.module import (
    SELECT_PENALTY,
    AdelModule,
    mmd2,
    score_gap,
    swap_columns,
    val_probe_auroc,
)
from faux.models.adel.net import AdelNet
from faux.models.adel.spec import GUARDS, AdelSpec
from faux.models.adel.train import train_adel

__all__ = ["GUARDS", "SELECT_PENALTY", "AdelModule", "AdelNet", "AdelSpec", "mmd2",
           "score_gap", "swap_columns", "train_adel", "val_probe_auroc"]
