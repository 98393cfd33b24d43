"""The fairness check of an Adel model at every epoch of its training (issue 14, round 10).

Does the training trajectory pass through a model that meets the check (probe AUROC <= 0.60,
accuracy within 2 points of the unfair model), so that choosing the epoch by a check on the
validation split would give one? Trains the unfair model and one Adel recipe (as
``scripts/research/fair_recipes.py`` does: quick sizes, the same seeds), keeps the weights of every
epoch, and for each kept epoch prints

* on the validation split: y accuracy, and the AUROC of c of a logistic probe fitted on the
  standardised hidden layer of ``--probe-fit-rows`` training rows (what a selection rule
  may use while training);
* on the test split: the full check (``faux.studies.fairness_check``: LR and MLP probe, swap,
  accuracy), what the study reports.

    FAUX_DATA_DIR=/work/shared/data OMP_NUM_THREADS=1 .venv/bin/python scripts/research/adel_trajectory.py \\
        --dataset adult --seed 0 --recipe "norm_decor_smooth_bpair:mmd=3.0" --out /tmp/traj

Writes ``<out>/trajectory_<dataset>_<seed>.csv``.
"""

from __future__ import annotations

import argparse
import copy
import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd


def main(argv=None) -> int:
    import torch
    from fair_recipes import parse_recipe, rows_for
    from pytorch_lightning.callbacks import Callback
    from sklearn.metrics import roc_auc_score

    from faux.metrics.fairness import logistic_probe_auroc
    from faux.models.adel import AdelSpec, train_adel
    from faux.models.mlp import MLPSpec
    from faux.studies.fairness_check import edit_columns, fairness_check, proxy_edits

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dataset", default="adult")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--recipe", default="norm_decor_smooth_bpair:mmd=3.0")
    ap.add_argument("--max-train-rows", type=int, default=8000)
    ap.add_argument("--max-epochs", type=int, default=80)
    ap.add_argument("--patience", type=int, default=5)
    ap.add_argument("--every", type=int, default=2, help="check every k-th epoch")
    ap.add_argument("--from-epoch", type=int, default=10)
    ap.add_argument("--probe-fit-rows", type=int, default=4000)
    ap.add_argument("--out", default="outputs/adel_trajectory")
    a = ap.parse_args(argv)
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))

    name, seed = a.dataset, a.seed
    d, tr = rows_for(name, seed, a.max_train_rows)
    x, y, c = d.X_train[tr], d.y_train[tr], d.c_train[tr]
    ep = {"max_epochs": a.max_epochs, "patience": a.patience, "accelerator": "cpu"}
    unfair, _ = MLPSpec().train(x, y, d.X_val, d.y_val, seed=seed, **ep)
    kw = {"proxy_edits": proxy_edits(name), "feature_names": d.feature_names, "seed": seed + 4000}
    args = (x, c, d.X_val, d.c_val, d.X_test, d.c_test, d.y_test)
    u = fairness_check(unfair, *args, **kw)
    print(f"unfair: probe {u['probe_auroc']:.3f} acc {u['accuracy']:.3f} "
          f"(required {u['accuracy'] - 0.02:.3f})", flush=True)

    states: dict[int, dict] = {}

    class Keep(Callback):
        def on_validation_end(self, trainer, pl_module):
            e = trainer.current_epoch
            if not trainer.sanity_checking and e >= a.from_epoch and e % a.every == 0:
                states[e] = copy.deepcopy(pl_module.model.state_dict())

    _, over = parse_recipe(a.recipe)
    spec = replace(AdelSpec(), **{**over, "max_epochs": a.max_epochs, "patience": a.patience})
    edits = edit_columns(proxy_edits(name), d.feature_names)
    fair, info = train_adel(spec, x, y, c, d.X_val, d.y_val, d.c_val, seed=seed + 1000,
                            pair_edits=edits, extra_callbacks=(Keep(),), accelerator="cpu")
    print(f"trained {info['epochs']} epochs, best {info['best_epoch']}", flush=True)

    rng = np.random.default_rng(seed)
    fit_rows = rng.choice(len(x), size=min(a.probe_fit_rows, len(x)), replace=False)
    xv = torch.as_tensor(np.asarray(d.X_val, dtype=np.float32))
    xt = torch.as_tensor(np.asarray(d.X_test, dtype=np.float32))
    xf = torch.as_tensor(np.asarray(x[fit_rows], dtype=np.float32))
    rows = []
    for e, state in sorted(states.items()):
        model = copy.deepcopy(fair)
        model.load_state_dict(state)
        model.eval()
        with torch.no_grad():
            hf, hv = model.hidden(xf).numpy(), model.hidden(xv).numpy()
            val_acc = float(((model(xv).numpy().reshape(-1) > 0) == d.y_val).mean())
            logit_c = float(roc_auc_score(d.c_test, model(xt).numpy().reshape(-1)))
        val_probe = logistic_probe_auroc(hf, c[fit_rows], hv, d.c_val)
        chk = fairness_check(model, *args, **kw)
        rows.append({"epoch": e, "val_acc": val_acc, "val_probe_lr": val_probe,
                     "test_probe": chk["probe_auroc"], "test_probe_lr": chk["probe_auroc_lr"],
                     "test_probe_mlp": chk["probe_auroc_mlp"], "test_acc": chk["accuracy"],
                     "test_logit_c_auroc": logit_c, "swap": chk["proxy_swap_mean_abs_dprob"],
                     "dp_gap": chk["dp_gap"],
                     "best": e == info["best_epoch"]})
        r = rows[-1]
        ok = r["test_probe"] <= 0.60 and r["test_acc"] >= u["accuracy"] - 0.02
        print(f"epoch {e:3d}: val acc {val_acc:.3f} val probe(lr) {val_probe:.3f} | test probe "
              f"{r['test_probe']:.3f} acc {r['test_acc']:.3f} swap {r['swap']:.3f} "
              f"logit c-AUROC {logit_c:.3f}"
              f"{'  PASS' if ok else ''}{'  <- chosen' if r['best'] else ''}", flush=True)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    df = pd.DataFrame(rows)
    df["unfair_acc"], df["unfair_probe"] = u["accuracy"], u["probe_auroc"]
    df.to_csv(out / f"trajectory_{name}_{seed}.csv", index=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
