"""The measurements behind the audit's counterfactual (docs/notebook/audit_validity.md):
on the planted worlds of bench/audit_validity.py, the flags' precision and recall against
the true counterfactual for each choice — the aux logit moved to its mirror or by the
groups' gap, one aux model or agreement across three, the continuous path limited to the
groups' distance (1x, 1.5x) or not.

    PYTHONPATH=src .venv/bin/python scripts/research/counterfactual_choices.py [--rows 4000]
"""

from __future__ import annotations

import argparse
import logging
import sys
import warnings
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from audit_validity import planted_world, proba, world_models  # noqa: E402

from faux.audit.counterfactual import effects as E  # noqa: E402
from faux.audit.scores.aux import train_aux  # noqa: E402
from faux.audit.sources.protected import ProtectedInfo  # noqa: E402


def flags(model, auxes, gaps, zt, ct, layout, mu, sd, *, mirror, reach, seeds):
    p_cf = []
    for aux, gap in list(zip(auxes, gaps))[:seeds]:
        d = None
        if mirror:
            with torch.no_grad():
                d = E.Direction(None, -2 * aux(zt).reshape(-1))
        cf = E.counterfactual(aux, zt, ct, "binary", gap, layout, mu, sd, direction=d,
                              reach=reach)
        p_cf.append(proba(model, cf.z.numpy() * sd + mu))
    p = proba(model, zt.numpy() * sd + mu)
    return E.verdict(p, np.array(p_cf))["flagged"]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=4000)
    ap.add_argument("--strengths", type=float, nargs="+", default=[0.5, 1.0, 2.0])
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    logging.disable(logging.WARNING)
    torch.set_num_threads(1)
    info = ProtectedInfo("binary", [0, 1], [1, 1])
    for s in a.strengths:
        X, c, y, X_cf = planted_world(a.rows, s, 0)
        x = X.to_numpy()
        mu, sd = x.mean(0), x.std(0)
        zt, ct = torch.tensor((x - mu) / sd), torch.tensor(c)
        models = world_models(X, y, 0)
        auxes = [train_aux(zt.float().numpy(), c, info, seed=k)[0].double() for k in range(3)]
        gaps = [E.group_gaps(aux, zt, c, "binary") for aux in auxes]
        layout = E.Layout.infer(x, X.columns)
        r0 = E.group_reach(zt, c, "binary", layout)
        choices = {"mirror, 3 aux": dict(mirror=True, reach=None, seeds=3),
                   "gap, 1 aux": dict(mirror=False, reach=None, seeds=1),
                   "gap, 3 aux": dict(mirror=False, reach=None, seeds=3),
                   "gap, 3 aux, reach 1x": dict(mirror=False, reach=r0, seeds=3),
                   "gap, 3 aux, reach 1.5x": dict(mirror=False, reach=1.5 * r0, seeds=3)}
        for label, kw in choices.items():
            cells = []
            for name, model in models.items():
                truth = (proba(model, x) >= 0.5) != (proba(model, X_cf) >= 0.5)
                fl = flags(model, auxes, gaps, zt, ct, layout, mu, sd, **kw)
                tp = int((fl & truth).sum())
                cells.append(f"{name} P {tp / max(fl.sum(), 1):.3f} R "
                             f"{tp / max(truth.sum(), 1):.3f} n {int(fl.sum())}")
            print(f"s={s:g} {label:24s} | " + " | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
