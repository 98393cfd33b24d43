"""Score one synthetic column with every gradient-method reading (the ambiguity measurements).

    python scripts/research/diagnose_column.py magic backache 0.5 concat [--decoding gumbel --tau 0.3]

Prints the column's positive rate and, per reading, AP against the IFS labels and AP with the
top 30% of IFS as positives. The numbers in docs/decisions.md come from this script (quick
sizes: 4,000/1,000/2,000 rows, target and aux 2x64 MLPs, 30 epochs, patience 5, seed 0).
"""

from __future__ import annotations

import argparse

import torch

from faux.methods.gradients import score
from faux.methods.lic_ub import lic_ub
from faux.metrics.ranking import ap_top_fraction, average_precision
from faux.models.mlp import MLPSpec
from faux.studies.column import Column, prepare_column, train_aux

READINGS = [  # (label, method, options)
    ("fta", "fta", {}),
    ("faux aux=logit", "faux", {"aux_output": "logit"}),
    ("faux aux=prob", "faux", {"aux_output": "prob"}),
    ("faux_ng feature", "faux_ng", {"ng": "feature"}),
    ("faux_ng sample", "faux_ng", {"ng": "sample"}),
    ("faux_ig zeros", "faux_ig", {"ig_baseline": "zeros"}),
    ("faux_ig mean", "faux_ig", {"ig_baseline": "mean"}),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("xc")
    ap.add_argument("xy")
    ap.add_argument("bias", type=float)
    ap.add_argument("fusion", choices=("outer", "concat"))
    ap.add_argument("--decoding", default="gumbel", choices=("gumbel", "softmax"))
    ap.add_argument("--tau", type=float, default=0.3)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    torch.set_num_threads(1)
    col = Column(a.xc, a.xy, a.bias, a.fusion)
    spec = MLPSpec(max_epochs=30, patience=5)
    pc = prepare_column(col, sizes={"n_train": 4000, "n_val": 1000, "n_test": 2000},
                        target_spec=spec, gen_opts={"decoding": a.decoding, "tau": a.tau},
                        seed=a.seed)
    aux, info = train_aux(pc, spec, a.seed)
    print(f"column {a.xc}/{a.xy} bias {a.bias} {a.fusion} decoding {a.decoding} tau {a.tau}: "
          f"positive rate {pc.positive_rate:.3f}, target acc {pc.target_info['accuracy']:.3f}, "
          f"aux acc {info['accuracy']:.3f}")
    x = pc.test.x
    for label, method, opts in READINGS:
        s = score(method, pc.target, aux, x, **opts)
        print(f"  {label:18s} AP {average_precision(pc.labels, s):.3f}  "
              f"top30 AP {ap_top_fraction(pc.ifs_test, s):.3f}")
    from faux.methods.autograd import input_gradients

    cos = torch.nn.functional.cosine_similarity(input_gradients(aux, x), pc.test.dx_dc, dim=1)
    print(f"  median |cos(grad f_aux, dx/dc)| {cos.abs().median().item():.2f}")
    s = lic_ub(pc.target, x, pc.test.dx_dc)
    print(f"  {'lic_ub':18s} AP {average_precision(pc.labels, s):.3f}  "
          f"top30 AP {ap_top_fraction(pc.ifs_test, s):.3f}")


if __name__ == "__main__":
    main()
