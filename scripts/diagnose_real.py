"""Why does a c-aware test separate (or reverse) the unfair and fair target on one seed of
the real-data study? Retrains the job's three networks (unfair target, fair target, aux; the
study's seeds, rows and recipes at the quick profile's sizes) for several seeds, then:

1. crosses targets and aux models: the fAux+NG separation AUROC of the targets of seed a
   scored with the aux of seed b (does the aux or the target pair decide the sign?);
2. per target, the mean |cosine| of its unit input gradient with two c directions: the aux's
   unit gradient (what fAux+NG reads) and the logistic regression of c on x (what FTA + lin.
   aux reads), and the original features carrying most of its mean unit gradient.

    FAUX_DATA_DIR=/work/shared/data OMP_NUM_THREADS=1 .venv/bin/python scripts/diagnose_real.py \
        --dataset adult --seeds 0,1

Prints plain lines; nothing is written.
"""

from __future__ import annotations

import argparse
from dataclasses import replace

import numpy as np
import torch


def main(argv=None) -> None:
    from sklearn.linear_model import LogisticRegression

    from faux.data.real import load_real
    from faux.methods.gradients import score
    from faux.metrics.ranking import separation_auroc
    from faux.models.adel import AdelSpec
    from faux.models.mlp import MLPSpec
    from faux.studies.real import SEED_OFFSETS, RealSettings, select_rows

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", default="adult")
    ap.add_argument("--seeds", default="0,1")
    ap.add_argument("--max-train-rows", type=int, default=8000)
    ap.add_argument("--n-score", type=int, default=1000)
    ap.add_argument("--max-epochs", type=int, default=30)
    ap.add_argument("--patience", type=int, default=5)
    ap.add_argument("--fair", default="", help="AdelSpec overrides of the fair model, k=v;...")
    a = ap.parse_args(argv)
    torch.set_num_threads(1)
    aux_spec = AdelSpec(alpha_min=0.0, adv_norm=False, decor=0.0)   # conf/model/aux/adel.yaml
    fair_over = {}
    for kv in filter(None, a.fair.split(";")):
        k, v = kv.split("=")
        fair_over[k] = type(getattr(AdelSpec(), k))(float(v)) if k != "reinit" else v == "true"
    fair_spec = replace(AdelSpec(), **fair_over)
    st = RealSettings(max_train_rows=a.max_train_rows, n_score=a.n_score)
    ep = {"max_epochs": a.max_epochs, "patience": a.patience, "accelerator": "cpu"}
    runs = {}
    for seed in (int(s) for s in a.seeds.split(",")):
        data = load_real(a.dataset, seed)
        rows = select_rows(data, st, seed)
        sd = {k: seed + v for k, v in SEED_OFFSETS.items()}
        unfair, _ = MLPSpec().train(rows.x, rows.y, rows.x_val, rows.y_val, seed=sd["unfair"],
                                    **ep)
        fair, _ = fair_spec.train(rows.x, rows.y, rows.c, rows.x_val, rows.y_val, rows.c_val,
                                  seed=sd["fair"], **ep)
        aux, _ = aux_spec.train(rows.x, rows.c, rows.y, rows.x_val, rows.c_val, rows.y_val,
                                seed=sd["aux"], **ep)
        lr = LogisticRegression(max_iter=1000).fit(rows.x, rows.c)
        runs[seed] = dict(data=data, x=torch.as_tensor(rows.x_score), unfair=unfair, fair=fair,
                          aux=aux, w=torch.as_tensor(lr.coef_[0], dtype=torch.float32))
        print(f"seed {seed}: trained", flush=True)

    opts = {"output": "prob", "aux_output": "logit", "ng": "sample"}
    print(f"\n{a.dataset}: fAux+NG separation AUROC, targets of seed a (rows) scored with "
          f"the aux of seed b (columns)")
    for sa, ra in runs.items():
        cells = []
        for sb, rb in runs.items():
            s = {m: score("faux_ng", ra[m], rb["aux"], ra["x"], **opts).detach().numpy()
                 for m in ("unfair", "fair")}
            cells.append(f"aux {sb}: {separation_auroc(s['unfair'], s['fair']):.3f}")
        print(f"  targets {sa}: " + ", ".join(cells))

    def unit_grad(model, x, prob):
        x = x.clone().requires_grad_(True)
        out = model(x).reshape(len(x), -1)[:, 0]
        out = torch.sigmoid(out) if prob else out
        (g,) = torch.autograd.grad(out.sum(), x)
        return g / g.norm(dim=1, keepdim=True).clamp_min(1e-12)

    print(f"\n{a.dataset}: mean |cos| of each target's unit gradient with the aux's unit "
          f"gradient and with the logistic c direction; top features of its mean |unit grad|")
    for seed, r in runs.items():
        ga = unit_grad(r["aux"], r["x"], False)
        w = r["w"] / r["w"].norm()
        groups = np.asarray(r["data"].feature_groups)
        for m in ("unfair", "fair"):
            g = unit_grad(r[m], r["x"], True)
            cos_aux = (g * ga).sum(1).abs().mean().item()
            cos_lr = (g @ w).abs().mean().item()
            mag = g.abs().mean(0).numpy()
            per = {n: float(mag[groups == n].sum()) for n in dict.fromkeys(groups)}
            top = sorted(per.items(), key=lambda kv: -kv[1])[:5]
            print(f"  seed {seed} {m:6s}: |cos aux| {cos_aux:.3f}, |cos LR(c)| {cos_lr:.3f}; "
                  + ", ".join(f"{n} {v:.2f}" for n, v in top))
        mag = ga.abs().mean(0).numpy()
        per = {n: float(mag[groups == n].sum()) for n in dict.fromkeys(groups)}
        top = sorted(per.items(), key=lambda kv: -kv[1])[:5]
        print(f"  seed {seed} aux   : " + ", ".join(f"{n} {v:.2f}" for n, v in top))


if __name__ == "__main__":
    main()
