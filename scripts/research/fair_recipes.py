"""Train the unfair target and named Adel recipes on Adult and Bank; run the fairness check.

Issue 14: which Adel recipe gives a fair model that is fair by a test-independent check
(``faux.studies.fairness_check``: fresh probe AUROC of c on the hidden layer, counterfactual
proxy swap, parity gap, accuracy)? Targets per dataset: probe AUROC <= 0.60, proxy swap of the
fair model <= half the unfair model's, accuracy within 2 points of the unfair model.

Data and sizes are the real study's quick profile: ``faux.data.real.load_real(name, seed)``,
the training split subsampled to ``--max-train-rows`` (8,000; the study's seeded draw),
early stopping on the validation split (``--max-epochs`` 30, patience 5), checks on the
test split. Each recipe is a set of ``AdelSpec`` overrides (:data:`RECIPES`). ``--aux R``
also trains the A.11.2 aux (Adel of c, adversary against y) with recipe R and reports
its probe AUROC for y (and its own test AUROC for c).

    FAUX_DATA_DIR=/work/shared/data OMP_NUM_THREADS=1 .venv/bin/python scripts/research/fair_recipes.py \\
        --recipes guards,default --aux guards --seeds 0,1 --out /tmp/fair_recipes

Writes ``<out>/fair_recipes.csv`` (one row per dataset, seed, model) and ``fair_recipes.md``
(mean over seeds per dataset and recipe, with the targets marked).
"""

from __future__ import annotations

import argparse
import copy
import os
import time
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import pandas as pd

from faux.models.adel import GUARDS

#: named Adel recipes: AdelSpec field overrides of ``GUARDS`` (faux.models.adel: the first
#: implementation's recipe); ``default`` is AdelSpec() itself
RECIPES: dict[str, dict] = {
    "default": {},
    # the guards of the first implementation (flip, cap, interleave), adversary kept
    "guards": {"pred_loss": "bce", "flip": True, "cap": True, "interleave": True,
               "reinit": False, "adv_steps": 1, "adv_width": 32, "adv_depth": 1,
               "alpha_min": 0.0, "adv_norm": False},
    # literal A.11.1 loss L_y - alpha L_adv (no guards)
    "literal": {"pred_loss": "bce", "flip": False, "cap": False, "interleave": False,
                "reinit": False, "adv_steps": 1, "adv_width": 32, "adv_depth": 1,
                "alpha_min": 0.0, "adv_norm": False},
    # guards plus a fresh adversary every iteration
    "guards_fresh": {"pred_loss": "bce", "flip": True, "cap": True, "interleave": True,
                     "reinit": True, "adv_steps": 1, "adv_width": 32, "adv_depth": 1,
                     "alpha_min": 0.0},
    # predictor pushes the adversary to s's marginal rate; fresh adversary every iteration
    "prior_fresh": {"pred_loss": "prior", "interleave": True, "reinit": True, "adv_steps": 1,
                    "adv_width": 32, "adv_depth": 1, "alpha_min": 0.0},
    "prior_fresh_wide": {"pred_loss": "prior", "interleave": True, "reinit": True,
                         "adv_steps": 3, "adv_width": 64, "adv_depth": 2, "alpha_min": 0.0},
    "prior_norm_decor": {"pred_loss": "prior", "reinit": True, "adv_norm": True, "decor": 1.0},
    "guards_norm_decor": {"reinit": True, "adv_norm": True, "decor": 1.0},
    # the default since round 3: adversary kept, adv_norm, decor, alpha floor 1
    "norm_decor": {"adv_norm": True, "decor": 1.0, "alpha_min": 1.0},
    # ... with the correlation smoothed over batches (better on Bank, worse swap on Adult)
    "norm_decor_smooth": {"adv_norm": True, "decor": 1.0, "alpha_min": 1.0,
                          "decor_momentum": 0.95},
    # ... with counterfactual logit pairing on the declared proxy edits (round 5)
    "norm_decor_pair": {"adv_norm": True, "decor": 1.0, "alpha_min": 1.0, "pair": 1.0},
    "norm_decor_smooth_pair": {"adv_norm": True, "decor": 1.0, "alpha_min": 1.0,
                               "decor_momentum": 0.95, "pair": 1.0},
    "norm_decor_hpair": {"adv_norm": True, "decor": 1.0, "alpha_min": 1.0, "pair": 1.0,
                         "pair_on": "hidden"},
    "norm_decor_smooth_hpair": {"adv_norm": True, "decor": 1.0, "alpha_min": 1.0,
                                "decor_momentum": 0.95, "pair": 1.0, "pair_on": "hidden"},
    "norm_decor_bpair": {"adv_norm": True, "decor": 1.0, "alpha_min": 1.0, "pair": 1.0,
                         "pair_on": "both"},
    "norm_decor_smooth_bpair": {"adv_norm": True, "decor": 1.0, "alpha_min": 1.0,
                                "decor_momentum": 0.95, "pair": 1.0, "pair_on": "both"},
    # ... plus the MMD term between the groups' hidden layers (round 8; = default now)
    "norm_decor_smooth_bpair_mmd": {"adv_norm": True, "decor": 1.0, "alpha_min": 1.0,
                                    "decor_momentum": 0.95, "pair": 1.0, "pair_on": "both",
                                    "mmd": 30.0},
    "guards_norm_decor_s3": {"reinit": True, "adv_norm": True, "decor": 1.0, "adv_steps": 3},
    # ... with the adversary reading the batch-standardised hidden layer (adv_norm)
    "prior_norm": {"pred_loss": "prior", "interleave": True, "reinit": True, "adv_steps": 1,
                   "adv_width": 32, "adv_depth": 1, "alpha_min": 0.0, "adv_norm": True},
    "guards_norm": {"pred_loss": "bce", "flip": True, "cap": True, "interleave": True,
                    "reinit": True, "adv_steps": 1, "adv_width": 32, "adv_depth": 1,
                    "alpha_min": 0.0, "adv_norm": True},
}


def parse_recipe(text: str) -> tuple[str, dict]:
    """``name`` from RECIPES, or ``name:key=value;key=value`` (a named recipe plus overrides)."""
    import yaml

    name, _, rest = text.partition(":")
    if name not in RECIPES:
        raise SystemExit(f"unknown recipe {name!r}; known: {', '.join(RECIPES)}")
    kw = {} if name == "default" else {**asdict(GUARDS), **RECIPES[name]}
    for item in filter(None, rest.split(";")):
        k, _, v = item.partition("=")
        kw[k] = yaml.safe_load(v)
    return text, kw


def rows_for(name: str, seed: int, max_rows: int | None):
    from faux.data.real import load_real

    d = load_real(name, seed=seed)
    n = len(d.y_train)
    if max_rows is None or max_rows >= n:
        tr = np.arange(n)
    else:
        tr = np.sort(np.random.default_rng(seed).choice(n, size=max_rows, replace=False))
    return d, tr


def refit_head(model, x, y, *, l2: float = 1e-4, max_iter: int = 200):
    """Refit the head (the last linear layer) of a trained model on its frozen hidden layer.

    Full-batch L-BFGS of ``BCE(head(h), y) + l2 |W|^2`` from the head's current weights, on
    ``h = model.hidden(x)``; every other weight (and so the hidden layer a probe reads) is left
    as it is. In place; returns ``model``. Last-layer retraining: it asks whether the joint
    training left accuracy in the head (docs/notebook/adel_notes.md: on Adult it did not, so
    no recipe uses it). Only ``--also-refit`` uses it, so it lives here.
    """
    import torch
    from torch.nn import functional as F

    from faux.models.tensors import as_binary, as_features

    x = as_features(x, "x")
    y = as_binary(y, x.shape[0], "y")
    head = model.net.head
    with torch.no_grad():
        h = model.hidden(x).to(head.weight.dtype)
    w = head.weight.detach().clone().requires_grad_(True)
    b = head.bias.detach().clone().requires_grad_(True)
    t = y.reshape(y.shape[0], -1).to(h.dtype)
    opt = torch.optim.LBFGS([w, b], lr=1.0, max_iter=int(max_iter),
                            line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = F.binary_cross_entropy_with_logits(h @ w.T + b, t) + float(l2) * (w ** 2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    with torch.no_grad():
        head.weight.copy_(w)
        head.bias.copy_(b)
    return model


def main(argv=None) -> int:
    import torch
    from sklearn.metrics import roc_auc_score

    from faux.models.adel import AdelSpec, train_adel
    from faux.models.mlp import MLPSpec
    from faux.studies.fairness_check import edit_columns, fairness_check, proxy_edits

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", default="adult,bank")
    ap.add_argument("--seeds", default="0,1")
    ap.add_argument("--recipes", default="guards,default",
                    help="comma-separated; each NAME or NAME:key=value;key=value")
    ap.add_argument("--max-train-rows", type=int, default=8000)
    ap.add_argument("--max-epochs", type=int, default=30)
    ap.add_argument("--patience", type=int, default=5)
    ap.add_argument("--aux", default="",
                    help="a recipe (NAME or NAME:overrides) with which the A.11.2 aux (Adel of c, "
                         "adversary against y) is also trained and checked (probe of y)")
    ap.add_argument("--out", default="outputs/fair_recipes")
    ap.add_argument("--also-refit", action="store_true",
                    help="also check each fair model with its head refitted on its frozen "
                         "hidden layer (refit_head above), as recipe '<r>+refit'")
    ap.add_argument("--probe-rows", type=int, default=0,
                    help="also run the check with the probes trained on this many of the "
                         "training rows (seeded draw): does the probe or the model move it?")
    ap.add_argument("--toy", action="store_true",
                    help="instead: tests/test_models_adel.py's toy and its probe (c accuracy of "
                         "a fresh MLP on the hidden layer) per recipe and seed (--seeds)")
    ap.add_argument("--toy-rows", type=int, default=2000)
    ap.add_argument("--toy-epochs", type=int, default=40)
    ap.add_argument("--reference", action="store_true",
                    help="instead: the accuracy of a c-independent score built from a logistic "
                         "regression (per-group quantiles; uses c, a reference, not a model)")
    ap.add_argument("--blind-reference", action="store_true",
                    help="instead: the same trade-off for c-blind linear scores (a logistic "
                         "regression with a group-mean-gap penalty on its logit, per weight)")
    a = ap.parse_args(argv)
    if a.toy:
        return toy(a.recipes, a.toy_rows, a.toy_epochs, [int(v) for v in a.seeds.split(",")])
    if a.reference:
        for name in a.datasets.split(","):
            for seed in (int(s) for s in a.seeds.split(",")):
                print(f"{name} seed {seed}: " + ", ".join(
                    f"{k} {v:.4f}" for k, v in reference(name, seed).items()), flush=True)
        return 0
    if a.blind_reference:
        for name in a.datasets.split(","):
            for seed in (int(s) for s in a.seeds.split(",")):
                for r in blind_reference(name, seed):
                    print(f"{name} seed {seed} c-blind: " + ", ".join(
                        f"{k} {v:.4f}" for k, v in r.items()), flush=True)
        return 0
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    recipes = [parse_recipe(r) for r in a.recipes.split(",")]
    sizes = {"max_epochs": a.max_epochs, "patience": a.patience}
    ep = {**sizes, "accelerator": "cpu"}
    out_dir = Path(a.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    records = []
    for name in a.datasets.split(","):
        for seed in (int(s) for s in a.seeds.split(",")):
            d, tr = rows_for(name, seed, a.max_train_rows)
            x, y, c = d.X_train[tr], d.y_train[tr], d.c_train[tr]
            args = (x, c, d.X_val, d.c_val, d.X_test, d.c_test, d.y_test)
            edits = edit_columns(proxy_edits(name), d.feature_names)
            kw = {"proxy_edits": proxy_edits(name), "feature_names": d.feature_names,
                  "seed": seed + 4000}
            t = time.perf_counter()
            unfair, uinfo = MLPSpec().train(x, y, d.X_val, d.y_val, seed=seed, **ep)
            u_s = time.perf_counter() - t
            chk = fairness_check(unfair, *args, **kw)
            records.append({"dataset": name, "seed": seed, "recipe": "-", "model": "unfair",
                            "train_s": u_s, "epochs": uinfo["epochs"], **chk})
            print(_line(records[-1]), flush=True)
            for label, over in recipes:
                spec = replace(AdelSpec(), **{**over, **sizes})
                t = time.perf_counter()
                fair, finfo = train_adel(spec, x, y, c, d.X_val, d.y_val, d.c_val,
                                         seed=seed + 1000, pair_edits=edits, accelerator="cpu")
                f_s = time.perf_counter() - t
                chk = fairness_check(fair, *args, **kw)
                records.append({"dataset": name, "seed": seed, "recipe": label, "model": "fair",
                                "train_s": f_s, "epochs": finfo["epochs"],
                                "best_epoch": finfo["best_epoch"],
                                "adv_accuracy": finfo["adv_accuracy"],
                                "alpha_last": finfo["alpha_last"], **chk})
                print(_line(records[-1]) + f"  alpha {finfo['alpha_last']:.3g}", flush=True)
                if a.also_refit:
                    refit = refit_head(copy.deepcopy(fair), x, y)
                    chk = fairness_check(refit, *args, **kw)
                    records.append({**records[-1], "recipe": label + "+refit", **chk})
                    print(_line(records[-1]), flush=True)
                if a.probe_rows and a.probe_rows < len(x):
                    sub = np.sort(np.random.default_rng(seed + 5000).choice(
                        len(x), size=a.probe_rows, replace=False))
                    small = fairness_check(fair, x[sub], c[sub], *args[2:], **kw)
                    records[-1]["probe_auroc_sub"] = small["probe_auroc"]
                    print(f"    probe trained on {a.probe_rows} of the {len(x)} training rows: "
                          f"{small['probe_auroc']:.3f}", flush=True)
            if a.aux:
                label, over = parse_recipe(a.aux)
                spec = replace(AdelSpec(), **{**over, **sizes})
                t = time.perf_counter()
                aux, ainfo = train_adel(spec, x, c, y, d.X_val, d.c_val, d.y_val,
                                        seed=seed + 2000, accelerator="cpu")
                a_s = time.perf_counter() - t
                chk = fairness_check(aux, *args, target="y", y_train=y, y_val=d.y_val,
                                     seed=seed + 4000)
                with torch.no_grad():
                    c_auc = roc_auc_score(d.c_test, aux(torch.as_tensor(d.X_test)).numpy())
                records.append({"dataset": name, "seed": seed, "recipe": label, "model": "aux",
                                "train_s": a_s, "epochs": ainfo["epochs"],
                                "best_epoch": ainfo["best_epoch"], "aux_c_auroc": c_auc,
                                "adv_accuracy": ainfo["adv_accuracy"], **chk})
                print(_line(records[-1]) + f"  aux c AUROC {c_auc:.3f}", flush=True)
            pd.DataFrame(records).to_csv(out_dir / "fair_recipes.csv", index=False)
    df = pd.DataFrame(records)
    df.to_csv(out_dir / "fair_recipes.csv", index=False)
    md = summary(df)
    (out_dir / "fair_recipes.md").write_text(md)
    print(md)
    return 0


def reference(name: str, seed: int) -> dict:
    """How accurate can a score be whose distribution is the same in both groups of c?

    A logistic regression of y on the full training split; its test scores mapped to their
    quantile within the row's own group of c (so every threshold gives both groups the same
    positive rate: demographic parity at all thresholds, c-AUROC 0.5); the best accuracy
    over 201 thresholds. It uses c at prediction time, which a model without c cannot.
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score

    from faux.data.real import load_real

    d = load_real(name, seed=seed)
    s = LogisticRegression(max_iter=2000).fit(d.X_train, d.y_train).decision_function(d.X_test)
    y, c = d.y_test, d.c_test
    q = np.empty_like(s)
    for g in (0, 1):
        i = c == g
        q[i] = (s[i].argsort().argsort() + 0.5) / i.sum()

    def best_accuracy(score):
        return max(float(((score > t) == y).mean()) for t in np.quantile(score, np.linspace(
            0.0, 1.0, 401)))

    # the frontier between the two: r the pooled quantile of s, q its quantile within the
    # row's group, scores (1 - lam) r + lam q; each point's c-AUROC (what the score alone
    # tells of c) and best accuracy; the best accuracy of a point whose score reads c at
    # AUROC <= 0.60 (a hidden layer that holds such a score reads c at least that well)
    r = (s.argsort().argsort() + 0.5) / len(s)
    frontier = []
    for lam in np.linspace(0.0, 1.0, 21):
        m = (1 - lam) * r + lam * q
        frontier.append((float(lam), float(max(roc_auc_score(c, m), 1 - roc_auc_score(c, m))),
                         best_accuracy(m)))
    ok = [acc for _, au, acc in frontier if au <= 0.60]
    return {"lr_accuracy": float(((s > 0) == y).mean()),
            "lr_score_c_auroc": float(roc_auc_score(c, s)),
            "parity_score_best_accuracy": best_accuracy(q),
            "best_accuracy_score_c_auroc_le_0.60": max(ok) if ok else float("nan"),
            **{f"lam{lam:.2f}_c_auroc": au for lam, au, _ in frontier[::4]},
            **{f"lam{lam:.2f}_accuracy": acc for lam, _, acc in frontier[::4]}}


def blind_reference(name: str, seed: int, weights=(0.0, 1.0, 2.0, 3.0, 5.0, 10.0, 30.0,
                                                     100.0)) -> list[dict]:
    """The same trade-off for scores that do *not* use c: a logistic regression of y on X (c is
    not a column of X) with the Adel model's penalty ``mu * score_gap`` on its logit s
    (``faux.models.adel.score_gap``: the squared gap of the groups' mean logits over the
    logit's variance; full-batch L-BFGS on the training split, L2 1e-4), for each weight mu:
    the score's c-AUROC, its best accuracy over thresholds and its accuracy at 0 on the test
    split. A c-blind model whose hidden layer holds its score cannot do better than the best
    *such* score at a given c-AUROC if it is linear; a deeper model may."""
    import torch
    from sklearn.metrics import roc_auc_score

    from faux.data.real import load_real

    d = load_real(name, seed=seed)
    x = torch.as_tensor(np.asarray(d.X_train, dtype=np.float64))
    mu_x, sd_x = x.mean(0), x.std(0) + 1e-6
    x = (x - mu_x) / sd_x
    y = torch.as_tensor(np.asarray(d.y_train, dtype=np.float64))
    c = torch.as_tensor(np.asarray(d.c_train) == 1)
    xt = (torch.as_tensor(np.asarray(d.X_test, dtype=np.float64)) - mu_x) / sd_x
    yt, ct = d.y_test, d.c_test
    out = []
    for mu in weights:
        w, b = _gap_penalised_logistic(x, y, c, mu)
        with torch.no_grad():
            st = (xt @ w + b).numpy()
        au = float(roc_auc_score(ct, st))
        best = max(float(((st > t) == yt).mean()) for t in np.quantile(st, np.linspace(
            0.0, 1.0, 401)))
        out.append({"mu": mu, "c_auroc": max(au, 1 - au), "best_accuracy": best,
                    "accuracy_at_0": float(((st > 0) == yt).mean())})
    return out


def _gap_penalised_logistic(x, y, c, mu: float):
    """Weights and bias of a logistic regression of y on x minimising BCE + mu * score_gap of
    its logit between ``c`` and ``~c`` + 1e-4 |w|^2 (full batch, L-BFGS from zero)."""
    import torch

    from faux.models.adel import score_gap

    w = torch.zeros(x.shape[1], dtype=x.dtype, requires_grad=True)
    b = torch.zeros((), dtype=x.dtype, requires_grad=True)
    opt = torch.optim.LBFGS([w, b], lr=1.0, max_iter=500, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        s = x @ w + b
        loss = (torch.nn.functional.binary_cross_entropy_with_logits(s, y)
                + mu * score_gap(s[~c], s[c]) + 1e-4 * (w ** 2).sum())
        loss.backward()
        return loss

    opt.step(closure)
    return w.detach(), b.detach()


def toy(recipes: str, rows: int = 2000, epochs: int = 40, seeds=(0,)) -> int:
    """The toy of tests/test_models_adel.py (``rows`` training rows, half as many validation
    rows, width 32, alpha decay 0.85 unless the recipe sets it): fresh-probe c accuracy and y
    accuracy per recipe and seed."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
    from faux.models.adel import GUARDS, train_adel
    from test_models_adel import _probe, _toy

    x, y, c = _toy(rows, 0)
    xv, yv, cv = _toy(rows // 2, 1)
    for label, over in (parse_recipe(r) for r in recipes.split(",")):
        for seed in seeds:
            sizes = dict(width=32, depth=2, max_epochs=epochs, patience=5)
            spec = replace(GUARDS, **{"alpha_decay": 0.85, **over, **sizes})
            fair, info = train_adel(spec, x, y, c, xv, yv, cv, seed=seed, accelerator="cpu")
            print(f"toy {label} seed {seed}: probe c accuracy "
                  f"{_probe(fair.net, x, c, xv, cv):.3f}, y accuracy {info['accuracy']:.3f}, "
                  f"best epoch {info['best_epoch']}", flush=True)
    return 0


def _line(r: dict) -> str:
    return (f"{r['dataset']} seed {r['seed']} {r['model']:6s} {r['recipe']:28s} "
            f"probe({r['probe_target']}) {r['probe_auroc']:.3f} (lr {r['probe_auroc_lr']:.3f}, "
            f"mlp {r['probe_auroc_mlp']:.3f})  swap {r['proxy_swap_mean_abs_dprob']:.3f}  "
            f"dp {r['dp_gap']:.3f}  acc {r['accuracy']:.3f}  {r['train_s']:.0f}s "
            f"{r['epochs']} ep (best {r.get('best_epoch', '-')})")


def summary(df: pd.DataFrame) -> str:
    """Mean over seeds per dataset, model and recipe; targets checked on the means."""
    cols = ["probe_auroc", "proxy_swap_mean_abs_dprob", "dp_gap", "accuracy", "train_s"]
    g = df.groupby(["dataset", "model", "recipe"], sort=False)[cols].mean().reset_index()
    lines = ["| dataset | model | recipe | probe AUROC | proxy swap | dp gap | accuracy | "
             "train s | targets (probe / swap / acc) |", "|" + "---|" * 9]
    for _, r in g.iterrows():
        mark = ""
        if r["model"] == "fair":
            u = g[(g.dataset == r.dataset) & (g.model == "unfair")].iloc[0]
            ok = (r.probe_auroc <= 0.60,
                  r.proxy_swap_mean_abs_dprob <= 0.5 * u.proxy_swap_mean_abs_dprob,
                  r.accuracy >= u.accuracy - 0.02)
            mark = " / ".join("pass" if o else "FAIL" for o in ok)
        lines.append(f"| {r.dataset} | {r.model} | {r.recipe} | {r.probe_auroc:.3f} | "
                     f"{r.proxy_swap_mean_abs_dprob:.3f} | {r.dp_gap:.3f} | {r.accuracy:.3f} | "
                     f"{r.train_s:.0f} | {mark} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
