"""The audit's settings are written once, in ``AuditSettings``: each field carries its help
and its flag; the CLI's flags, their defaults and ``faux.audit``'s keywords are read from
the fields; an unknown keyword is refused naming the closest setting; ``settings=`` takes
the keywords on top."""

import dataclasses
import re

import numpy as np
import pandas as pd
import pytest

import faux
from faux.audit.api_words import in_python_words
from faux.audit.audit_doc import help_text, python_words
from faux.audit.cli import INPUT_FLAGS, build_parser, settings_of
from faux.audit.core import audit as core_audit
from faux.audit.scores.methods import default_methods
from faux.audit.settings import DEFAULTS, AuditSettings, from_keywords
from faux.errors import ConfigError

FIELDS = dataclasses.fields(AuditSettings)
#: the settings a Python caller sets but the command line does not
PYTHON_ONLY = {"aux_width", "aux_depth", "support_margin", "report"}
MINIMAL = ["audit", "--model", "m", "--data", "d", "--protected", "s"]


def _audit_parser():
    return build_parser()._subparsers._group_actions[0].choices["audit"]


def _parse(*flags):
    return build_parser().parse_args([*MINIMAL, *flags])


def test_every_setting_has_a_help_sentence_and_a_flag_or_is_python_only():
    for f in FIELDS:
        m = f.metadata
        text = help_text(f, str)
        assert text.endswith(".") and len(text.split()) >= 4, f.name
        assert "flag" in m and "cli" in m, f.name
    assert {f.name for f in FIELDS if f.metadata["flag"] is None} == PYTHON_ONLY


def test_a_flag_is_its_settings_name_and_a_switch_turns_a_default_off():
    renamed = {"trusted_types": "--trust-type"}
    for f in FIELDS:
        flag = f.metadata["flag"]
        if flag is None:
            continue
        name = f.name.replace("_", "-")
        if f.type.startswith("bool") and f.default is not False:  # on, or auto, by default
            assert flag == f"--no-{name}", f.name
        else:
            assert flag == renamed.get(f.name, f"--{name}"), f.name


def test_the_helps_name_only_settings_and_inputs():
    known = set(AuditSettings.names()) | set(INPUT_FLAGS)
    for f in FIELDS:
        named = re.findall(r"`(\w+)`", f.metadata["help"])
        assert set(named) <= known, (f.name, named)
        text = help_text(f, lambda n: f"<{n}>")
        assert "$" not in text and "`" not in text, f.name


def test_the_clis_flags_are_the_settings_flags_and_the_inputs():
    flags = {s for a in _audit_parser()._actions for s in a.option_strings}
    settings_flags = {f.metadata["flag"] for f in FIELDS if f.metadata["flag"]}
    assert flags == settings_flags | set(INPUT_FLAGS.values()) | {"-h", "--help"}
    helps = {a.dest: a.help for a in _audit_parser()._actions}
    for f in FIELDS:  # the help shown is the setting's own
        if f.metadata["flag"]:
            words = help_text(f, lambda n: "").split()[:4]
            assert " ".join(words[1:]) in " ".join(helps[f.name].split()), f.name


def test_the_parsers_defaults_are_audit_settings_field_by_field():
    args = _parse()
    for f in FIELDS:
        if f.metadata["flag"]:
            assert getattr(args, f.name) == getattr(DEFAULTS, f.name), f.name
    assert settings_of(args) == AuditSettings()


def test_each_flag_sets_its_setting():
    first = default_methods()[0]
    st = settings_of(_parse("--no-exact", "--no-progress", "--no-intersection", "--force",
                            "--trust-type", "a.B", "--trust-type", "c.D", "--hold", "u", "v",
                            "--protected-type", "binary", "--methods", first,
                            "--aux-epochs", "7", "--fd-step", "0.2", "--verdict", "score"))
    assert st == dataclasses.replace(
        DEFAULTS, exact=False, progress=False, intersection=False, force=True,
        trusted_types=("a.B", "c.D"), hold=("u", "v"), protected_type="binary",
        methods=(first,), aux_epochs=7, fd_step=0.2, verdict="score")
    two = settings_of(_parse("--protected-type", "binary", "categorical"))
    assert two.protected_type == ("binary", "categorical")


def test_an_unknown_keyword_is_a_type_error_naming_the_closest_setting():
    X = pd.DataFrame({"u": np.zeros(4)})
    for fn in (faux.audit, core_audit):
        with pytest.raises(TypeError) as err:
            fn(lambda x: np.full(len(x), 0.5), X, np.array([0, 1, 0, 1]), aux_epoch=2)
        msg = str(err.value)
        assert msg == ("audit() got an unexpected keyword argument 'aux_epoch'; did you mean "
                       "'aux_epochs'?")
    with pytest.raises(TypeError, match=r"argument 'zzz'; the settings are AuditSettings'"):
        from_keywords(None, {"zzz": 1})
    with pytest.raises(TypeError, match="settings must be an AuditSettings, got dict"):
        from_keywords({"aux": "mlp"}, {})


def test_settings_with_overrides_replace_and_resolve():
    base = AuditSettings(aux_epochs=2, seed=4, alpha=2.0, hold=["a"])
    st = from_keywords(base, {"seed": 5, "alpha": 0.05})
    assert (st.aux_epochs, st.seed, st.alpha) == (2, 5, 0.05)
    assert st.methods == default_methods() and st.hold == ("a",)
    with pytest.raises(ConfigError, match=r"alpha \(--alpha\) must be a number above 0"):
        from_keywords(base, {}).check(has_label=False)
    st.check(has_label=False)
    assert from_keywords(None, {"methods": [default_methods()[-1]]}).methods == (
        default_methods()[-1],)


def test_an_audit_takes_settings_and_overrides():
    rng = np.random.default_rng(0)
    n = 300
    c = rng.integers(0, 2, n)
    X = pd.DataFrame({"u": rng.normal(size=n), "v": c + 0.3 * rng.normal(size=n)})
    settings = faux.audit.AuditSettings(aux_epochs=2, aux_seeds=2, null_permutations=2,
                                        progress=False, seed=3, batch_size=100,
                                        null_transports=2)
    res = faux.audit(lambda x: 1 / (1 + np.exp(-np.asarray(x)[:, 1])), X, c,
                     settings=settings, seed=7)
    s = res.summary["settings"]
    assert (s["seed"], s["batch_size"]) == (7, 100)
    assert s["methods"] == list(default_methods())


def test_error_lines_name_the_settings_keywords_for_python_callers():
    words = python_words()
    assert words["no-exact"] == "exact=False" and words["no-progress"] == "progress=False"
    assert words["force"] == "force=True" and words["trust-type"] == "trusted_types"
    assert words["fd-step"] == "fd_step"
    line = "pass --no-exact, --trust-type T or --force to --out; fd_step (--fd-step) is 2"
    assert in_python_words(line, core_audit, words) == (
        "pass exact=False, trusted_types T or force=True to out_dir; fd_step is 2")
    with pytest.raises(ConfigError, match=r"^fdr=True applies to the calibrated thresholds; "
                       r"drop it, or drop threshold / fail_above"):
        faux.audit(lambda x: x, pd.DataFrame({"u": [0.0]}), [0], fdr=True, threshold=0.1)
