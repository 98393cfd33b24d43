"""Missing feature values: a tree ensemble that reads NaN is audited on its rows as they are
(the aux side reads the sample's mean), a model scored by autograd is refused them in one
line."""

import warnings

import numpy as np
import pandas as pd
import pytest
import torch

import faux
from faux.errors import DataError

KW = dict(aux_epochs=2, aux_seeds=2, null_permutations=2, progress=False)


def _world(n=500, seed=0):
    rng = np.random.default_rng(seed)
    c = rng.integers(0, 2, n)
    X = pd.DataFrame({"u": rng.normal(size=n), "v": rng.normal(size=n),
                      "w": c + 0.3 * rng.normal(size=n)})
    y = ((X.u + 2 * X.w + 0.3 * rng.normal(size=n)) > 1).astype(int)
    holes = rng.random(n) < 0.15
    X.loc[holes, "u"] = np.nan
    X.loc[rng.random(n) < 0.05, "w"] = np.nan
    return X, c, y


def test_a_tree_ensemble_reads_its_nan_rows_as_they_are():
    from sklearn.ensemble import HistGradientBoostingClassifier

    X, c, y = _world()
    model = HistGradientBoostingClassifier(max_iter=30, random_state=0).fit(X.to_numpy(), y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", faux.FauxAuditWarning)
        res = faux.audit(model, X, c, y=y, **KW)
    nan_rows = int(X.isna().any(axis=1).sum())
    miss = res.summary["missing"]
    assert miss["rows"] == nan_rows and "column mean" in miss["text"]
    # the row's own prediction is the model's on the row with its NaN
    p_model = model.predict_proba(X.to_numpy())[:, 1]
    np.testing.assert_allclose(res.scores["p"].to_numpy(), p_model, atol=1e-9)
    filled = X.fillna(X.mean()).to_numpy()
    hole = X.isna().any(axis=1).to_numpy()
    assert not np.allclose(model.predict_proba(filled)[hole, 1], p_model[hole])  # it matters
    for col in ("effect", "p_cf", "faux_ng"):
        assert np.isfinite(res.scores[col].to_numpy()).all(), col
    sel = res.summary["outcomes"]["views"][res.summary["data"]["protected"]]["by_group"]
    for g in (0, 1):
        assert sel[str(g)]["selection_rate"] == pytest.approx((p_model[c == g] >= 0.5).mean())


def test_nan_is_refused_in_one_line_for_a_model_scored_by_autograd():
    X, c, _ = _world(200)

    class Net(torch.nn.Module):
        def forward(self, x):
            return x[:, 0] + x[:, 2]

    with pytest.raises(DataError) as err:
        faux.audit(Net(), X, c, **KW)
    msg = str(err.value)
    assert "\n" not in msg and "NaN" in msg and "autograd" in msg and "impute" in msg


def test_progress_lines_on_a_pipe(tmp_path):
    """stderr a pipe: periodic lines (every EVERY_S seconds, here 0) with the share done."""
    import subprocess
    import sys

    X, c, _ = _world(600)
    X = X.fillna(0.0)
    X.assign(sex=c).to_csv(tmp_path / "d.csv", index=False)
    net = torch.jit.script(_Linear())
    net.save(str(tmp_path / "m.pt"))
    code = ("import sys, faux.audit.progress as p; p.EVERY_S = 0.0; "
            "from faux.audit.cli import main; sys.exit(main(sys.argv[1:]))")
    r = subprocess.run([sys.executable, "-c", code, "audit", "--model", str(tmp_path / "m.pt"),
                        "--data", str(tmp_path / "d.csv"),
                        "--protected", "sex", "--out", str(tmp_path / "o"), "--batch-size",
                        "100", "--aux-epochs", "2", "--aux-seeds", "2",
                        "--null-permutations", "2"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("faux audit: scoring")]
    assert len(lines) >= 6, r.stderr
    pcts = [int(ln.split()[3]) for ln in lines]
    assert pcts == sorted(pcts) and pcts[-1] == 100
    assert "(600/600 rows)" in lines[-1] and lines[-1].endswith(" s")
    assert "\x1b[" not in r.stderr  # no bar's escape codes on a pipe


class _Linear(torch.nn.Module):
    def forward(self, x):
        return x[:, 0] + 2 * x[:, 2] - 1
