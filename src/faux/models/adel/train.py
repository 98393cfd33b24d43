"""Training an Adel model from one ``AdelSpec``."""

from __future__ import annotations

import math
import time

import torch

from faux.errors import ConfigError, DataError
from faux.models.adel.module import AdelModule
from faux.models.adel.net import AdelNet
from faux.models.adel.spec import HIDE_ON, MMD_ON, PAIR_ON, PRED_LOSSES, PROBE_KINDS, AdelSpec
from faux.models.tensors import as_binary, as_features, n_params
from faux.models.training import fit


def train_adel(spec: AdelSpec, x, y, s, x_val=None, y_val=None, s_val=None, *,
               pair_edits=(), seed: int = 0, accelerator: str = "auto",
               extra_callbacks=()) -> tuple[AdelNet, dict]:
    """Train a classifier of ``y`` whose last hidden layer hides ``s`` (Adel et al. 2019),
    with the hyper-parameters of ``spec``.

    ``y`` and ``s`` are binary ((n,) or (n, k)). ``pair_edits``: the column-index pairs of the
    counterfactual pairing (``spec.pair``; the dataset's declared proxy edits). Returns
    ``(model, info)``: ``model(x)`` are the logits of y (model on the CPU, eval mode;
    ``model.hidden``/``model.adversary`` are available); ``info`` holds ``accuracy`` (y,
    validation), ``adv_accuracy`` (the jointly trained adversary on validation),
    ``adv_chance`` (majority rate of s on validation), ``n_params`` (predictor),
    ``n_params_adv``, ``train_time_s``, ``alpha_last``, ``probe_history``, ``epochs``,
    ``best_epoch``, ``best_val_loss``. Without validation data the training set is used for
    the reported accuracies and all ``spec.max_epochs`` run. ``extra_callbacks``: Lightning
    callbacks added to the fit (``scripts/research/adel_trajectory.py`` keeps every epoch's weights).
    """
    x = as_features(x, "x")
    y = as_binary(y, x.shape[0], "y")
    s = as_binary(s, x.shape[0], "s")
    val = None
    if x_val is not None:
        if y_val is None or s_val is None:
            raise DataError("x_val was given without y_val and s_val; pass all three or none")
        x_val = as_features(x_val, "x_val", d=x.shape[1])
        y_val = as_binary(y_val, x_val.shape[0], "y_val")
        s_val = as_binary(s_val, x_val.shape[0], "s_val")
        val = (x_val, y_val, s_val)
    _check_spec(spec)
    d_out = 1 if y.ndim == 1 else y.shape[1]
    d_adv = 1 if s.ndim == 1 else s.shape[1]
    if (spec.mmd > 0 or spec.score_gap > 0) and (d_adv != 1 or s.min() == s.max()):
        raise ConfigError("the MMD and score-gap terms compare the two groups of a single "
                          f"binary s; s has {d_adv} columns or one group only: set mmd=0 and "
                          "score_gap=0")
    probe_data = None
    if spec.probe_target is not None:
        if (val is None or not 0.5 < float(spec.probe_target) < 1
                or not float(spec.probe_step) > 1 or spec.probe_kind not in PROBE_KINDS):
            raise ConfigError("probe_target steers alpha by a validation probe: pass x_val, y_val "
                              f"and s_val, 0.5 < probe_target < 1, probe_step > 1 and probe_kind "
                              f"in {PROBE_KINDS} (got {spec.probe_target}, {spec.probe_step}, "
                              f"{spec.probe_kind!r})")
        n_fit = min(int(spec.probe_rows), x.shape[0])
        g = torch.Generator().manual_seed(int(seed) * 31 + 7)
        fit_rows = torch.randperm(x.shape[0], generator=g)[:n_fit]
        probe_data = (x[fit_rows], s[fit_rows], val[0], val[2])
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        model = AdelNet(x.shape[1], spec.width, spec.depth, d_out, d_adv, spec.adv_width,
                        spec.adv_depth, spec.adv_norm, spec.hide_on, spec.last_width)
    module = AdelModule(model, spec, _entropy(s), s_rate=s.reshape(s.shape[0], -1).mean(0),
                        seed=seed, pair_edits=_check_edits(pair_edits, x.shape[1]),
                        mmd_pool=(x, s) if spec.mmd > 0 or spec.score_gap > 0 else None,
                        probe_data=probe_data)
    alpha, decay, floor = spec.alpha, spec.alpha_decay, max(spec.alpha_min, 1.0)
    warm = (math.ceil(math.log(alpha / floor) / -math.log(decay))
            if alpha > floor and decay < 1 else 0)
    start = time.perf_counter()
    out = fit(module, (x, y, s), val, max_epochs=spec.max_epochs, patience=spec.patience,
              batch_size=spec.batch_size, seed=seed, accelerator=accelerator,
              warmup_epochs=warm, extra_callbacks=extra_callbacks)
    elapsed = time.perf_counter() - start
    xe, ye, se = val if val is not None else (x, y, s)
    with torch.no_grad():
        acc = _accuracy(model(xe), ye)
        adv_acc = _accuracy(model.adversary_logits(xe), se)
    p = se.reshape(se.shape[0], -1).mean(0)
    chance = float(torch.maximum(p, 1 - p).mean())
    info = {"accuracy": acc, "adv_accuracy": adv_acc, "adv_chance": chance,
            "n_params": n_params(model.net), "n_params_adv": n_params(model.adversary),
            "train_time_s": elapsed, "alpha_last": module.alpha,
            "probe_history": list(module.probe_history), **out}
    if not math.isfinite(info["best_val_loss"]) and val is not None:
        raise DataError("Adel training produced no finite validation loss; check the data")
    return model, info


def _check_spec(spec: AdelSpec) -> None:
    """One-line ConfigError for a spec the training cannot run."""
    if not spec.alpha >= 0 or not 0 < spec.alpha_decay <= 1 or spec.n_adv < 0:
        raise ConfigError(f"need alpha >= 0, 0 < alpha_decay <= 1, n_adv >= 0 (got "
                          f"{spec.alpha}, {spec.alpha_decay}, {spec.n_adv})")
    if (spec.pred_loss not in PRED_LOSSES or int(spec.adv_steps) < 0
            or not spec.alpha_min >= 0):
        raise ConfigError(f"need pred_loss in {PRED_LOSSES}, adv_steps >= 0, alpha_min >= 0 "
                          f"(got {spec.pred_loss!r}, {spec.adv_steps}, {spec.alpha_min})")
    if not spec.pair >= 0 or spec.pair_on not in PAIR_ON:
        raise ConfigError(f"need pair >= 0 (the weight of the counterfactual pairing) and "
                          f"pair_on in {PAIR_ON}; got {spec.pair}, {spec.pair_on!r}")
    if not spec.mmd >= 0 or int(spec.mmd_rows) < 2 or spec.mmd_on not in MMD_ON:
        raise ConfigError(f"need mmd >= 0 (the weight of the MMD term), mmd_rows >= 2 and "
                          f"mmd_on in {MMD_ON}; got {spec.mmd}, {spec.mmd_rows}, "
                          f"{spec.mmd_on!r}")
    if spec.hide_on not in HIDE_ON or not spec.score_gap >= 0:
        raise ConfigError(f"need hide_on in {HIDE_ON} and score_gap >= 0; got "
                          f"{spec.hide_on!r}, {spec.score_gap}")


def _entropy(s: torch.Tensor) -> float:
    """Mean over columns of the Bernoulli entropy (nats) of s's marginal."""
    p = s.reshape(s.shape[0], -1).float().mean(0).clamp(1e-6, 1 - 1e-6)
    return float((-(p * p.log() + (1 - p) * (1 - p).log())).mean())


def _accuracy(logits: torch.Tensor, t: torch.Tensor) -> float:
    return float(((logits > 0).float().reshape(t.shape) == t).float().mean())


def _check_edits(edits, d: int) -> tuple:
    """Edits as (i, j) column-index pairs inside ``[0, d)``; one-line error otherwise."""
    out = []
    for pair in edits or ():
        if (len(pair) != 2 or not all(0 <= int(k) < d for k in pair)
                or int(pair[0]) == int(pair[1])):
            raise ConfigError(f"a pairing edit is two distinct column indices below {d}; got "
                              f"{tuple(pair)!r} (name pairs: "
                              f"faux.studies.fairness_check.edit_columns)")
        out.append((int(pair[0]), int(pair[1])))
    return tuple(out)
