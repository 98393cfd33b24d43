"""Each default is written once: in the YAML Hydra composes or in the schema
(faux.harness.schema), and the code reads it from there. Every experiment x profile is
composed and each code-side default of a key it carries (a dataclass field, a function's
keyword default) must be the composed value; the audit's keyword, flag and help defaults all
come from AuditSettings."""

import dataclasses
import functools
import inspect
import re
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"


@functools.lru_cache(maxsize=1)
def _composed() -> list[tuple[str, dict]]:
    """``(label, plain config)`` of every experiment (and none) x every profile."""
    exps = [None] + sorted(p.stem for p in (CONF / "experiment").glob("*.yaml"))
    profiles = sorted(p.stem for p in (CONF / "profile").glob("*.yaml"))
    out = []
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        for exp in exps:
            for prof in profiles:
                cfg = compose("config", overrides=[f"profile={prof}"]
                              + ([f"experiment={exp}"] if exp else []))
                out.append((f"{exp}/{prof}", OmegaConf.to_container(cfg, resolve=False)))
    return out


def _field_default(cls, name):
    f = {f.name: f for f in dataclasses.fields(cls)}[name]
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


def _keyword_defaults(fn) -> dict:
    return {k: p.default for k, p in inspect.signature(fn).parameters.items()
            if p.default is not inspect.Parameter.empty}


def _at(cfg: dict, key: str):
    node = cfg
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return dataclasses.MISSING
        node = node[part]
    return node


def _code_defaults():
    """``(composed key, where, the code's default)`` of every code-side default of a key the
    configs carry."""
    from faux.harness.schema import READING_NUMERIC
    from faux.studies import synth_defaults
    from faux.studies.column import ColumnSettings

    return [
        ("synthetic.aux_trainer", "ColumnSettings.aux_trainer",
         _field_default(ColumnSettings, "aux_trainer")),
        ("synthetic.threshold_k", "studies.synth_defaults.threshold_k()",
         synth_defaults.threshold_k()),
        ("reading.fraction", "ColumnSettings.top_fraction",
         _field_default(ColumnSettings, "top_fraction")),
        ("reading.fraction", "schema Reading.fraction", READING_NUMERIC["fraction"][0]),
    ]


def test_no_code_default_differs_from_the_composed_value():
    found = []
    for label, cfg in _composed():
        for key, where, default in _code_defaults():
            value = _at(cfg, key)
            if value is not dataclasses.MISSING and value != default:
                found.append(f"{label}: {key}={value!r} but {where} = {default!r}")
    assert found == []


def test_the_report_options_agree_with_the_report_function():
    """real_study.report_options go to ``faux_report`` as keywords: a key the YAML sets to
    the function's own default would be written twice; a key it leaves out is the
    function's (ig_steps: ScoreOptions')."""
    from faux.methods.options import ScoreOptions
    from faux.methods.transparency import faux_report

    code = _keyword_defaults(faux_report)
    assert code["ig_steps"] == ScoreOptions.ig_steps
    for label, cfg in _composed():
        for block in ("real_study.options", "real_study.report_options", "synthetic.options"):
            opts = _at(cfg, block)
            if opts is dataclasses.MISSING:
                continue
            assert "ig_steps" not in opts, f"{label}: {block}.ig_steps repeats ScoreOptions'"


def test_the_readings_ranges_are_the_schemas_only():
    """A reading's values are checked against the schema's choices and ranges
    (faux.harness.schema.Reading), not again in the numeric override table."""
    from faux.harness import schema, validate

    assert [k for k in validate.RULES if k.startswith("reading.")] == []
    assert validate.expected("reading.fraction") == schema.reading_expected("reading.fraction")
    assert validate.expected("reading.tau") == "expected one of 0.3, 1.0"


def test_the_composed_reading_fraction_is_the_schemas_default_unless_a_reading_sets_it():
    from faux.harness.schema import READING_NUMERIC

    for label, cfg in _composed():
        assert cfg["reading"]["fraction"] == READING_NUMERIC["fraction"][0], label


# ----------------------------------------------------------------------------- the audit
def test_the_audit_keywords_default_to_audit_settings():
    """The audit takes its settings as keywords (``**overrides``) or ``settings=``; none is a
    parameter of its own with a default of its own."""
    from faux.audit.core import audit
    from faux.audit.settings import AuditSettings, from_keywords

    params = inspect.signature(audit).parameters
    assert not set(params) & set(AuditSettings.names())
    assert params["overrides"].kind is inspect.Parameter.VAR_KEYWORD
    assert params["settings"].default is None
    assert from_keywords(None, {}) == AuditSettings().resolved()


def test_the_cli_defaults_are_audit_settings():
    """Each settings flag lands on its field's name with its field's default, so the
    settings of a command line that sets none are ``AuditSettings()``."""
    from faux.audit.cli import build_parser, settings_of
    from faux.audit.settings import DEFAULTS, AuditSettings

    args = build_parser().parse_args(["audit", "--model", "m", "--data", "d",
                                      "--protected", "c"])
    given = {"model", "data", "protected", "label", "features", "out", "command", "parser_of"}
    flagged = {f.name for f in dataclasses.fields(AuditSettings) if f.metadata["flag"]}
    assert set(vars(args)) - given == flagged
    for name in flagged:
        assert getattr(args, name) == getattr(DEFAULTS, name), name
    assert settings_of(args) == DEFAULTS


def test_the_audit_docstring_defaults_are_audit_settings():
    """``faux.audit.audit``'s docstring says ``name : type, default X`` for each setting:
    X is AuditSettings' default (for ``methods`` None, the default methods it stands for)."""
    from faux.audit.audit_doc import shown_default
    from faux.audit.core import audit
    from faux.audit.settings import AuditSettings

    fields = {f.name: f for f in dataclasses.fields(AuditSettings)}
    said = dict(re.findall(r"^ *(\w+) : [^\n]*?, default ([^\n]+)$", audit.__doc__, re.M))
    assert len(said) >= 30 and set(said) <= set(fields)
    for name, text in said.items():
        assert text.strip() == repr(shown_default(fields[name])), (name, text)


@pytest.mark.parametrize("flag", ["--alpha", "--null-permutations", "--aux-seeds", "--min-cell",
                                  "--sample", "--batch-size", "--aux-epochs", "--fd-step",
                                  "--seed", "--steps", "--decision-threshold", "--verdict",
                                  "--aux"])
def test_the_cli_help_names_the_settings_default(flag):
    from faux.audit.cli import build_parser
    from faux.audit.settings import DEFAULTS

    sub = build_parser()._subparsers._group_actions[0].choices["audit"]
    action = next(a for a in sub._actions if flag in a.option_strings)
    want = getattr(DEFAULTS, action.dest)
    assert re.search(rf"\(default {re.escape(f'{want:g}' if isinstance(want, float) else str(want))}[;)]",
                     action.help), (flag, action.help)
