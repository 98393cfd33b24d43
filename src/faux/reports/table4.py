"""Table 4 from the real-data sweep (jobs ``real_cell``): parameters and training time of
FlipTest (both generators and both critics) and of the fAux aux model (its predictor
network; the Adel adversary used while training it is counted apart), mean ± std over
seeds, with FlipTest / fAux ratios.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from faux.methods.builtin import FAuxMethod, FlipTestMethod
from faux.reports import paper_values as P
from faux.reports.base import Report
from faux.reports.real_sweep import DATASET_LABELS, DATASETS, RealSweep, finish, ms

NAME = "table4"


def _table4_frame(rs: RealSweep) -> pd.DataFrame:
    rows = []
    for d in rs.datasets():
        t4 = [r["metrics"]["table4"] for r in rs.of(d)]
        row = {"dataset": d, "n_seeds": len(t4)}
        for key in ("fliptest_params", "faux_params", "faux_params_adv", "fliptest_time_s",
                    "faux_time_s"):
            row[f"{key}_mean"], row[f"{key}_std"] = ms([t[key] for t in t4])
        row["plain_mlp_time_s_mean"], row["plain_mlp_time_s_std"] = ms(
            [r["metrics"]["models"]["unfair"]["train_time_s"] for r in rs.of(d)])
        row["params_ratio"] = row["fliptest_params_mean"] / row["faux_params_mean"]
        row["time_ratio"] = row["fliptest_time_s_mean"] / row["faux_time_s_mean"]
        row["gan_steps"] = rs.of(d)[0]["metrics"]["models"][FlipTestMethod.name]["gen_steps"]
        paper = P.TABLE4.get(d)
        if paper:
            (fp, fps), (ft, fts) = paper[FlipTestMethod.name]
            (ap, aps), (at, ats) = paper[FAuxMethod.name]
            row.update(paper_fliptest_params_k=fp, paper_fliptest_params_k_std=fps,
                       paper_fliptest_time_s=ft, paper_fliptest_time_s_std=fts,
                       paper_faux_params_k=ap, paper_faux_params_k_std=aps,
                       paper_faux_time_s=at, paper_faux_time_s_std=ats,
                       paper_params_ratio=fp / ap, paper_time_ratio=ft / at)
        rows.append(row)
    return pd.DataFrame(rows)


def _k(m, s) -> str:
    return "—" if m is None or not np.isfinite(m) else f"{m / 1000:.1f} ± {s / 1000:.1f} K"


def _sec(m, s) -> str:
    return "—" if m is None or not np.isfinite(m) else f"{m:.1f} ± {s:.1f} s"


def _table4_md(frame: pd.DataFrame) -> str:
    out = ["Table 4: resources of FlipTest (two generators + two critics) and fAux (the aux "
           "model; in brackets the Adel adversary used while training it), mean ± std over "
           "seeds; ours / paper.\n\n",
           "| | Resource | FlipTest | fAux | FlipTest / fAux |\n|---|---|---|---|---|\n"]
    order = [d for d in DATASETS if d in set(frame.dataset)] + \
        [d for d in frame.dataset if d not in DATASETS]
    f = frame.set_index("dataset")
    for d in order:
        r = f.loc[d]
        has_paper = "paper_params_ratio" in f.columns and pd.notna(r.get("paper_params_ratio"))

        ft_p = fa_p = ra_p = ft_t = fa_t = ra_t = ""
        if has_paper:
            ft_p = f" / {r.paper_fliptest_params_k:g} ± {r.paper_fliptest_params_k_std:g} K"
            fa_p = f" / {r.paper_faux_params_k:g} ± {r.paper_faux_params_k_std:g} K"
            ra_p = f" / {r.paper_params_ratio:.1f}×"
            ft_t = f" / {r.paper_fliptest_time_s:g} ± {r.paper_fliptest_time_s_std:g} s"
            fa_t = f" / {r.paper_faux_time_s:g} ± {r.paper_faux_time_s_std:g} s"
            ra_t = f" / {r.paper_time_ratio:.1f}×"
        out.append(f"| {DATASET_LABELS.get(d, d)} | # Parameters | "
                   f"{_k(r.fliptest_params_mean, r.fliptest_params_std)}{ft_p} | "
                   f"{_k(r.faux_params_mean, r.faux_params_std)} "
                   f"(+{r.faux_params_adv_mean / 1000:.1f} K){fa_p} | "
                   f"{r.params_ratio:.1f}×{ra_p} |\n")
        out.append(f"| | Training time | {_sec(r.fliptest_time_s_mean, r.fliptest_time_s_std)}"
                   f"{ft_t} | {_sec(r.faux_time_s_mean, r.faux_time_s_std)}{fa_t} | "
                   f"{r.time_ratio:.1f}×{ra_t} |\n")
    steps = ", ".join(f"{DATASET_LABELS.get(d, d)} {int(f.loc[d, 'gan_steps'])}" for d in order)
    out.append(f"\nFlipTest generator steps: {steps} (the reference uses 20,000).\n")
    plain = ", ".join(f"{DATASET_LABELS.get(d, d)} "
                      f"{_sec(f.loc[d, 'plain_mlp_time_s_mean'], f.loc[d, 'plain_mlp_time_s_std'])}"
                      for d in order)
    out.append(f"For reference, the plain MLP of the same size (the unfair target, no adversary, "
               f"early stopping from epoch 1) trained in: {plain}.\n")
    return "".join(out)


def build(sweep, results_dir: Path, figures_dir: Path) -> Report:
    rs = RealSweep(sweep)
    return finish(rs, NAME, _table4_frame(rs), _table4_md, results_dir)
