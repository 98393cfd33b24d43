"""The Python side of the audit: the caller's data are left alone, names never collide,
``AuditResult`` is exported with a short repr and its scores, and ``import faux`` is light."""

import copy
import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import faux
from faux.audit.sources.array_source import ArraySource

HEAVY = ("aif360", "wandb", "pytorch_lightning", "lightning", "hydra", "torch")


def _model(x):
    x = np.asarray(x, dtype=np.float64)
    return 1 / (1 + np.exp(-(0.8 * x[:, 0] - 0.5 * x[:, 1] + 1.5 * x[:, -1])))


def _world(n=300, columns=(0, 1, 2, 3), seed=0):
    rng = np.random.default_rng(seed)
    c = rng.integers(0, 2, n)
    X = pd.DataFrame(rng.normal(size=(n, len(columns))), columns=list(columns))
    X[columns[-1]] = c + 0.3 * rng.normal(size=n)
    return X, c


def test_audit_leaves_the_callers_frame_and_arrays_alone():
    X, c = _world()
    y = (np.random.default_rng(1).random(len(X)) < 0.5).astype(int)
    X_before, c_before, y_before = X.copy(deep=True), c.copy(), y.copy()
    res = faux.audit(_model, X, c, y=y, methods=None, aux_epochs=2, progress=False)
    pd.testing.assert_frame_equal(X, X_before)
    assert list(X.columns) == [0, 1, 2, 3]
    assert [type(col) for col in X.columns] == [type(col) for col in X_before.columns]
    np.testing.assert_array_equal(c, c_before)
    np.testing.assert_array_equal(y, y_before)
    assert res.summary["data"]["features"] == ["0", "1", "2", "3"]


def test_audit_with_a_protected_column_name_leaves_the_frame_alone():
    X, c = _world(columns=("a", "b", "d", "e"))
    X["sex"] = c
    X_before = X.copy(deep=True)
    res = faux.audit(_model, X, "sex", aux_epochs=2, progress=False)
    pd.testing.assert_frame_equal(X, X_before)
    assert res.summary["data"]["features"] == ["a", "b", "d", "e"]


def test_an_array_c_never_takes_a_features_name():
    X, c = _world(columns=("a", "b", "c", "d", "e"))
    res = faux.audit(_model, X, c, y=c, aux_epochs=2, progress=False)
    assert res.summary["data"]["features"] == ["a", "b", "c", "d", "e"]
    assert res.summary["data"]["protected"] == "c_protected"
    assert res.summary["data"]["label"] == "y"
    src = ArraySource(X.assign(c_protected=0.0, y=1.0), c, c)
    assert src.c_name == "c_protected_2" and src.y_name == "y_label"
    assert ArraySource(X.drop(columns="c"), c).c_name == "c"


def test_audit_result_is_exported_with_a_short_repr_and_scores_read_from_disk(tmp_path):
    assert "AuditResult" in faux.__all__ and "AuditResult" in dir(faux)
    from faux.audit.result import AuditResult

    assert faux.AuditResult is AuditResult
    X, c = _world()
    data = tmp_path / "people.parquet"
    X.set_axis(["a", "b", "d", "e"], axis=1).assign(sex=c).to_parquet(data)
    out = tmp_path / "out"
    res = faux.audit(_model, data=data, protected="sex", aux_epochs=2, progress=False,
                     out_dir=out)
    assert isinstance(res, faux.AuditResult)
    text = repr(res)
    assert 2 <= len(text.splitlines()) <= 6
    assert "300 rows" in text and "faux" in text and str(out) in text and "flagged" in text
    scores = res.scores  # not kept in memory: read from out_dir on first access
    assert len(scores) == 300 and list(scores.row_id) == list(range(300))
    s = json.loads((out / "summary.json").read_text())
    assert int(scores.flagged.sum()) == s["flagged"]["count"]
    mem = faux.audit(_model, X, c, aux_epochs=2, progress=False)
    assert "scores in memory" in repr(mem) and len(mem.scores) == 300


@pytest.mark.parametrize("touch", ["", "faux.score", "faux.audit"])
def test_import_faux_loads_nothing_heavy(touch):
    code = ("import sys, faux\n" + (f"{touch}\n" if touch else "")
            + "print(','.join(sorted({m.split('.')[0] for m in sys.modules})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip().split(",")
    assert not set(HEAVY) & set(out), set(HEAVY) & set(out)


def test_deepcopy_of_a_result_keeps_its_lazy_scores(tmp_path):
    X, c = _world(100)
    res = faux.audit(_model, X, c, aux_epochs=2, progress=False)
    assert copy.deepcopy(res).scores.shape == res.scores.shape
