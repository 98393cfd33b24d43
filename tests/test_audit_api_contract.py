"""The Python API says what it does: ``help(faux.audit)`` documents every parameter, what
weakens a result is a ``FauxAuditWarning`` listed by the result, and ``AuditResult.save``
writes what the CLI writes under the same rules for the output folder."""

import dataclasses
import inspect
import json
import pydoc
import re
import warnings

import numpy as np
import pandas as pd
import pytest

import faux
from faux.audit.core import _result_warnings, audit
from faux.audit.report.outputs import MARKER
from faux.errors import ConfigError


def _model(x):
    x = np.asarray(x, dtype=np.float64)
    return 1 / (1 + np.exp(-(0.8 * x[:, 0] - 0.5 * x[:, 1] + 2.5 * (x[:, 2] - 0.5))))


def _world(n=300, seed=0, blind=False):
    rng = np.random.default_rng(seed)
    c = rng.integers(0, 2, n)
    X = pd.DataFrame({"u": rng.normal(size=n), "v": rng.normal(size=n),
                      "w": (0 if blind else c) + 0.3 * rng.normal(size=n)})
    return X, c


KW = dict(aux_epochs=2, aux_seeds=2, null_permutations=2, progress=False)


def test_help_documents_every_parameter_in_a_parameters_section():
    from faux.audit.settings import AuditSettings

    text = pydoc.render_doc(faux.audit, renderer=pydoc.plaintext)
    section = text.split("Parameters\n")[1].split("Returns\n")[0]
    params = [p for p in inspect.signature(audit).parameters if p != "overrides"]
    params += AuditSettings.names()
    assert len(params) >= 40
    missing = [p for p in params if f"    {p} :" not in section]
    assert not missing, missing
    assert "    **overrides\n" in section
    assert faux.FauxAuditWarning is faux.audit.FauxAuditWarning
    assert issubclass(faux.FauxAuditWarning, UserWarning)


def test_help_opens_with_the_signature_and_the_parameters_as_values():
    """``help(faux.audit)`` (the callable package) starts with the call: its signature with
    the defaults' values, then every parameter and setting, each default written as its
    value and equal to the signature's or AuditSettings' (a constant's name is not a
    value)."""
    from faux.audit.audit_doc import shown_default
    from faux.audit.settings import AuditSettings

    lines = pydoc.render_doc(faux.audit, renderer=pydoc.plaintext).splitlines()
    assert lines[5].strip() == "DESCRIPTION"
    assert lines[6].strip().startswith("faux.audit(model, X=None, c=None, *, data=None")
    sig = "\n".join(lines[6:9])
    assert "settings=None,\n" in sig or "settings=None, " in sig
    assert "**overrides) -> AuditResult" in sig
    start = next(i for i, line in enumerate(lines) if line.strip() == "Parameters")
    assert start < 40
    section = "\n".join(lines[start:next(i for i, line in enumerate(lines)
                                         if line.strip() == "Returns")])
    defaults = {k: repr(p.default) for k, p in inspect.signature(audit).parameters.items()}
    defaults.update({f.name: repr(shown_default(f)) for f in dataclasses.fields(AuditSettings)})
    said = dict(re.findall(r"^    (\w+) : .*, default (.+)$", section, flags=re.M))
    assert len(said) >= 30
    wrong = {k: v for k, v in said.items() if v != defaults[k]}
    assert not wrong, wrong
    constants = set(re.findall(r"\b[A-Z][A-Z_]{3,}\b", section)) - {"ONNX", "RAY_ADDRESS"}
    assert not constants, f"constants named, not their values: {constants}"
    assert "methods : list of str, default ('faux_ng', 'faux')" in section


def test_an_aux_near_chance_is_a_warning_listed_by_the_result():
    X, c = _world(blind=True)
    with pytest.warns(faux.FauxAuditWarning, match="near chance") as got:
        res = faux.audit(_model, X, c, **KW)
    assert any("near chance" in w for w in res.warnings)
    assert {w.filename for w in got} == {__file__}  # the user's line, not faux's
    assert res.summary["warnings"] == res.warnings
    assert len({str(w.message) for w in got}) == len(got)  # each once
    text = repr(res)
    assert "warning:" in text and "near chance" in text


def test_a_pipeline_audited_after_its_encoders_is_a_warning():
    from test_audit_encoders import fitted, people

    X, sex, y = people()
    model = fitted(X, y)
    with pytest.warns(faux.FauxAuditWarning, match="Pipeline that encodes its own columns") as got:
        res = faux.audit(model, X, sex, **KW)
    assert any("after its" in w for w in res.warnings)
    assert {w.filename for w in got} == {__file__}  # the user's line, not faux's


def test_unreachable_and_off_support_rows_are_warnings_above_their_share():
    summary = {"data": {"rows": 1000, "features": ["a"]}, "settings": {"support_margin": 0.1},
               "groups": {"views": {"sex": {"aux_quality": {"warning": None}}}},
               "effects": {"sex": {"unreachable": 12, "off_support": 60},
                           "race": {"unreachable": 10, "off_support": 50}}}
    msgs = _result_warnings(summary)
    assert len(msgs) == 2 and all(m.startswith("sex:") for m in msgs)  # race: at the limits
    assert "12 rows (1.20%)" in msgs[0] and "unreachable" in msgs[0]
    assert "60 rows" in msgs[1] and "support" in msgs[1]


def test_the_cli_prints_each_warning_as_one_line(tmp_path, capsys):
    from faux.audit.cli import main

    X, c = _world(blind=True)
    data = tmp_path / "d.csv"
    X.assign(sex=c).to_csv(data, index=False)
    import joblib
    from sklearn.linear_model import LogisticRegression

    lr = LogisticRegression().fit(X.to_numpy(), (X.u > 0).astype(int))
    joblib.dump(lr, tmp_path / "m.pkl")
    rc = main(["audit", "--model", str(tmp_path / "m.pkl"), "--trust-pickle", "--data",
               str(data), "--protected", "sex", "--out", str(tmp_path / "o"), "--aux-epochs",
               "2", "--null-permutations", "2", "--aux-seeds", "2", "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 0
    lines = [ln for ln in err.splitlines() if "near chance" in ln]
    assert len(lines) == 1 and lines[0].startswith("faux audit: warning: "), err
    assert "FauxAuditWarning" not in err


@pytest.fixture(scope="module")
def in_memory():
    X, c = _world()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", faux.FauxAuditWarning)
        return faux.audit(_model, X, c, **KW)


def test_save_writes_what_an_audit_with_out_dir_writes(in_memory, tmp_path):
    res = in_memory
    assert res.out_dir is None
    out = res.save(tmp_path / "saved")
    assert out == tmp_path / "saved" and res.out_dir == out
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted(["scores.parquet", "summary.json", "report.html", MARKER])
    marker = json.loads((out / MARKER).read_text())
    assert sorted(marker["files"]) == ["report.html", "scores.parquet", "summary.json"]
    s = json.loads((out / "summary.json").read_text())
    assert s["flagged"] == json.loads(json.dumps(res.summary["flagged"]))
    assert "top_flagged" in s and "provenance" in s
    scores = pd.read_parquet(out / "scores.parquet")
    assert len(scores) == 300 and int(scores.flagged.sum()) == s["flagged"]["count"]
    assert "Individual-fairness audit" in (out / "report.html").read_text()
    res.save(out)  # an earlier audit's output may be replaced
    assert sorted(p.name for p in out.iterdir()) == names


def test_save_keeps_the_out_folder_rules(in_memory, tmp_path):
    res = in_memory
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match="force=True"):
        res.save(busy)
    assert sorted(p.name for p in busy.iterdir()) == ["notes.txt"]
    res.save(busy, force=True, report=False)
    assert sorted(p.name for p in busy.iterdir()) == sorted(
        [MARKER, "notes.txt", "scores.parquet", "summary.json"])
    assert (busy / "notes.txt").read_text() == "mine"
    afile = tmp_path / "a-file"
    afile.write_text("x")
    with pytest.raises(ConfigError, match="is a file"):
        res.save(afile)


def test_the_settings_defaults_are_written_once():
    """audit()'s settings and the CLI's flag defaults are AuditSettings' fields."""
    from faux.audit.cli import build_parser, settings_of
    from faux.audit.settings import DEFAULTS, AuditSettings

    assert not set(inspect.signature(audit).parameters) & set(AuditSettings.names())
    args = build_parser().parse_args(["audit", "--model", "m", "--data", "d", "--protected",
                                      "s"])
    assert settings_of(args) == DEFAULTS
    assert args.protected_type == DEFAULTS.protected_type
    assert args.exact is DEFAULTS.exact and args.fdr is DEFAULTS.fdr
    assert args.intersection is DEFAULTS.intersection and args.progress is None
    assert args.force == DEFAULTS.force and args.trust_pickle == DEFAULTS.trust_pickle
    with pytest.raises(dataclasses.FrozenInstanceError):
        DEFAULTS.aux = "adel"
