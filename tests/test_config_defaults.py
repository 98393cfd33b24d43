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
    from faux.audit.core import audit
    from faux.audit.settings import AuditSettings

    code = _keyword_defaults(audit)
    for f in dataclasses.fields(AuditSettings):
        assert code[f.name] == _field_default(AuditSettings, f.name), f.name


#: CLI flag dest -> AuditSettings field, where the names differ (the --no-* flags invert)
_FLAG_FIELD = {"trust_type": "trusted_types", "no_intersection": "intersection",
               "no_exact": "exact", "no_progress": "progress"}


def test_the_cli_defaults_are_audit_settings():
    from faux.audit.cli import build_parser
    from faux.audit.scores.methods import default_methods
    from faux.audit.settings import DEFAULTS

    args = build_parser().parse_args(["audit", "--model", "m", "--data", "d",
                                      "--protected", "c"])
    given = {"model", "data", "protected", "label", "features", "out", "command", "parser_of"}
    for dest, value in vars(args).items():
        if dest in given:
            continue
        field = _FLAG_FIELD.get(dest, dest)
        want = getattr(DEFAULTS, field)
        if dest.startswith("no_"):          # the flag off: the setting's default (on, or auto)
            assert value is False and want in (True, None), dest
        elif field == "methods":
            assert value == list(default_methods())
        elif field == "protected_type":
            assert value == [want]
        elif field in ("trusted_types", "hold"):  # lists on the command line
            assert tuple(value) == want
        else:
            assert value == want, dest


def test_the_audit_docstring_defaults_are_audit_settings():
    """``faux.audit.audit``'s docstring says ``name : type, default X`` for each setting:
    X is AuditSettings' default."""
    from faux.audit.core import audit
    from faux.audit.settings import DEFAULTS

    said = dict(re.findall(r"^ *(\w+) : [^\n]*?, default ([^\n]+)$", audit.__doc__, re.M))
    assert len(said) >= 20
    for name, text in said.items():
        want = getattr(DEFAULTS, name)
        shown = {repr(want), str(want), f'"{want}"'}
        assert text.strip() in shown, (name, text, want)


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
