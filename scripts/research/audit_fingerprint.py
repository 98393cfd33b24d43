"""The audit's fixture outputs as md5 sums: a fixed set of audits (a TorchScript model on the
tests' planted-proxy CSV, a scikit-learn Pipeline with its own encoders on Adult from the data
root, a LightGBM text model), each written into a fresh folder; prints the md5 of each
``scores.parquet`` and of each ``summary.json`` with its timings and paths left out. Two
commits that print the same sums give the same outputs for these inputs.

    FAUX_DATA_DIR=../shared/data python scripts/research/audit_fingerprint.py [--keep DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
#: summary.json keys whose values differ between two identical runs (time, place, versions)
VOLATILE = {"seconds", "seconds_total", "rows_per_s", "timings", "speed", "file", "out_dir",
            "created", "started", "finished", "host", "versions", "faux_version", "path",
            "code", "python", "platform", "command", "sha256"}


def _stable(obj):
    if isinstance(obj, dict):
        return {k: _stable(v) for k, v in obj.items() if k not in VOLATILE
                and not k.startswith("seconds")}
    if isinstance(obj, list):
        return [_stable(v) for v in obj]
    return obj


def _md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def _fixtures(tmp: Path) -> dict[str, list[str]]:
    """name -> ``faux audit`` arguments (model, data, protected, ...)."""
    import torch

    sys.path.insert(0, str(ROOT / "tests"))
    from audit_world import proxy_world

    X, c = proxy_world(3000, seed=0)
    X.assign(gender=np.array(["f", "m"])[c]).to_csv(tmp / "people.csv", index=False)

    class Proxy(torch.nn.Module):
        def forward(self, x):
            return 2.0 * x[:, 0] + 3.0 * (x[:, 3] - 0.5)

    torch.jit.save(torch.jit.script(Proxy()), tmp / "proxy.pt")
    out = {"torchscript": ["--model", str(tmp / "proxy.pt"), "--data",
                           str(tmp / "people.csv"), "--protected", "gender"]}

    import lightgbm as lgb

    y = (X.x1 + X.proxy + np.random.default_rng(1).normal(size=len(X)) > 0.5).astype(int)
    booster = lgb.train({"objective": "binary", "verbose": -1, "num_leaves": 8,
                         "deterministic": True, "num_threads": 1},
                        lgb.Dataset(X.values, y), 20)
    booster.save_model(tmp / "lgbm.txt")
    out["lightgbm"] = ["--model", str(tmp / "lgbm.txt"), "--data", str(tmp / "people.csv"),
                       "--protected", "gender"]

    from faux.data.real import is_present

    if is_present("adult"):
        import skops.io as sio
        from sklearn.compose import ColumnTransformer
        from sklearn.ensemble import HistGradientBoostingClassifier
        from sklearn.pipeline import Pipeline
        from sklearn.preprocessing import OneHotEncoder, StandardScaler

        from faux.data.real import read_adult_frame

        df = read_adult_frame().sample(4000, random_state=0).reset_index(drop=True)
        df["income"] = df.pop("income-per-year").str.startswith(">50K").astype(int)
        text = ["workclass", "marital-status", "occupation", "relationship"]
        nums = ["age", "education-num", "capital-gain", "capital-loss", "hours-per-week"]
        pipe = Pipeline([("pre", ColumnTransformer([
            ("text", OneHotEncoder(handle_unknown="ignore", sparse_output=False), text),
            ("numbers", StandardScaler(), nums)])),
            ("gbt", HistGradientBoostingClassifier(max_iter=50, random_state=0))])
        pipe.fit(df[text + nums], df["income"])
        sio.dump(pipe, tmp / "adult.skops")
        df[text + nums + ["sex", "income"]].to_parquet(tmp / "adult.parquet", index=False)
        out["adult_pipeline"] = ["--model", str(tmp / "adult.skops"), "--data",
                                 str(tmp / "adult.parquet"), "--protected", "sex", "--label",
                                 "income", "--trust-type", "numpy.dtype"]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", type=Path, default=None, help="write the outputs here")
    args = ap.parse_args(argv)
    from faux.audit.cli import main as faux_main

    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        base = args.keep or tmp
        for name, cmd in _fixtures(tmp).items():
            out = base / name
            rc = faux_main(["audit", *cmd, "--out", str(out), "--no-progress"])
            if rc not in (0, 1):
                print(f"{name}: exit {rc}")
                continue
            summary = json.loads((out / "summary.json").read_text())
            stable = json.dumps(_stable(summary), sort_keys=True).encode()
            print(f"{name}: scores.parquet {_md5((out / 'scores.parquet').read_bytes())}  "
                  f"summary.json (stable) {_md5(stable)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
