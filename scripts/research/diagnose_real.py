"""Why does a c-aware test separate (or reverse) the unfair and fair target on one seed of
the real-data study? Retrains the job's three networks (unfair target, fair target, aux; the
study's seeds, rows and recipes at the quick profile's sizes) for several seeds, then:

1. crosses targets and aux models: the fAux+NG separation AUROC of the targets of seed a
   scored with the aux of seed b (does the aux or the target pair decide the sign?);
2. per target, the mean |cosine| of its unit input gradient with two c directions: the aux's
   unit gradient (what fAux+NG reads) and the logistic regression of c on x (what FTA + lin.
   aux reads), and the original features carrying most of its mean unit gradient.

With ``--blind`` a third target joins: the study's proxy-blind fair model
(``faux.studies.real.train_blind``: the unfair recipe blind to the dataset's declared proxy
edit by construction, the two edited columns entering the network as their sum, so the edit
cannot move it; e.g. Adult's Husband and Wife become "spouse"), trained as the study trains it
(``profile.real.blind_model``) with its own seed. It asks whether the test ranks a model that
cannot use the most c-coded feature below the unfair one, i.e. whether a reversal belongs to
the test or to the adversarially fair model.

    FAUX_DATA_DIR=/work/shared/data OMP_NUM_THREADS=1 .venv/bin/python scripts/research/diagnose_real.py \
        --dataset adult --seeds 0,1 [--blind] [model.fair.decor=2.0 ...]

The networks are trained as the study trains them (``faux.studies.real.train_models`` under
the study's composed config: profile, recipes, epoch caps, declared edits), so a seed's
fAux+NG AUROC here is the study's for that seed.

Prints plain lines; nothing is written.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch

#: the checkout's conf/ (the study's config, composed as faux.run composes it)
CONF = Path(__file__).resolve().parents[2] / "conf"


def main(argv=None) -> None:
    from dataclasses import replace

    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf
    from sklearn.linear_model import LogisticRegression

    from faux.data.real import load_real
    from faux.methods.gradients import score
    from faux.metrics.ranking import separation_auroc
    from faux.studies.job import register_resolvers
    from faux.studies.real import Settings, select_rows, train_models

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", default="adult")
    ap.add_argument("--seeds", default="0,1")
    ap.add_argument("--profile", default="quick", help="the study's profile (sizes, epochs)")
    ap.add_argument("--blind", action="store_true",
                    help="add the unfair recipe blind to the declared proxy edit")
    ap.add_argument("overrides", nargs="*", help="Hydra overrides of the study's config, e.g. "
                    "model.fair.decor=2.0")
    a = ap.parse_args(argv)
    register_resolvers()          # the config's ${faux_...:} resolvers
    torch.set_num_threads(1)
    runs = {}
    for seed in (int(s) for s in a.seeds.split(",")):
        with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
            cfg = compose("config", overrides=["experiment=real", f"profile={a.profile}",
                                               f"data={a.dataset}", f"seed={seed}",
                                               "paths.output_dir=.", *a.overrides])
        st = Settings.from_config(OmegaConf.to_container(cfg, resolve=True))
        data = load_real(a.dataset, seed, root=st.data_dir, val_frac=st.val_frac,
                         test_frac=st.test_frac)
        rows = select_rows(data, st.study, seed)
        m3 = train_models(data, rows, st.specs, replace(st.study, blind=a.blind), seed,
                          log=print)
        lr = LogisticRegression(max_iter=1000).fit(rows.x, rows.c)
        runs[seed] = dict(data=data, x=torch.as_tensor(rows.x_score), unfair=m3["unfair"][0],
                          fair=m3["fair"][0], aux=m3["aux"][0],
                          w=torch.as_tensor(lr.coef_[0], dtype=torch.float32))
        if a.blind:
            if m3["blind"] is None:
                ap.error(f"--blind: {a.dataset} declares no proxy edit")
            runs[seed]["blind"] = m3["blind"][0]
            print(f"seed {seed}: blind model accuracy {m3['blind'][1]['accuracy']:.3f}",
                  flush=True)
        print(f"seed {seed}: trained", flush=True)

    opts = {"output": "prob", "aux_output": "logit", "ng": "sample"}
    others = ("fair", "blind") if a.blind else ("fair",)
    for other in others:
        print(f"\n{a.dataset}: fAux+NG separation AUROC of unfair vs {other}, targets of seed "
              f"a (rows) scored with the aux of seed b (columns)")
        for sa, ra in runs.items():
            cells = []
            for sb, rb in runs.items():
                s = {m: score("faux_ng", ra[m], rb["aux"], ra["x"], **opts).detach().numpy()
                     for m in ("unfair", other)}
                cells.append(f"aux {sb}: {separation_auroc(s['unfair'], s[other]):.3f}")
            print(f"  targets {sa}: " + ", ".join(cells))

    def grad(model, x, prob):
        x = x.clone().requires_grad_(True)
        out = model(x).reshape(len(x), -1)[:, 0]
        out = torch.sigmoid(out) if prob else out
        (g,) = torch.autograd.grad(out.sum(), x)
        return g

    def unit(g):
        return g / g.norm(dim=1, keepdim=True).clamp_min(1e-12)

    print(f"\n{a.dataset}: mean |cos| of each target's unit gradient with the aux's unit "
          f"gradient and with the logistic c direction w_c (unit), the median size of its "
          f"probability's gradient along w_c, and the features of its largest mean |unit grad|")
    for seed, r in runs.items():
        ga = unit(grad(r["aux"], r["x"], False))
        w = r["w"] / r["w"].norm()
        groups = np.asarray(r["data"].feature_groups)
        for m in ("unfair",) + others:
            raw = grad(r[m], r["x"], True)
            g = unit(raw)
            cos_aux = (g * ga).sum(1).abs().mean().item()
            cos_lr = (g @ w).abs().mean().item()
            along = raw @ w                        # the probability's gradient along w_c
            mag = g.abs().mean(0).numpy()
            per = {n: float(mag[groups == n].sum()) for n in dict.fromkeys(groups)}
            top = sorted(per.items(), key=lambda kv: -kv[1])[:5]
            print(f"  seed {seed} {m:6s}: |cos aux| {cos_aux:.3f}, |cos LR(c)| {cos_lr:.3f}, "
                  f"median |dp/dx . w_c| {along.abs().median().item():.4f}; "
                  + ", ".join(f"{n} {v:.2f}" for n, v in top))
        mag = ga.abs().mean(0).numpy()
        per = {n: float(mag[groups == n].sum()) for n in dict.fromkeys(groups)}
        top = sorted(per.items(), key=lambda kv: -kv[1])[:5]
        print(f"  seed {seed} aux   : " + ", ".join(f"{n} {v:.2f}" for n, v in top))


if __name__ == "__main__":
    main()
