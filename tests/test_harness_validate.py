"""Every numeric harness override is checked in one line before any work
(``faux.harness.validate``): the seed, every size, epoch, step, count and rate field of the
profile, study and model configs. Table-driven: one case per field and bad value, through
the checking function; a few through ``python -m faux.run`` (exit 2, one stderr line,
nothing written)."""

import functools
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: (key, a bad value, what the message says is expected); one row per harness field
BAD = [
    ("seed", -1, "an integer in [0, 4294967295]"),
    ("seed", 2**32, "an integer in [0, 4294967295]"),
    ("seed", "abc", "an integer in [0, 4294967295]"),
    ("seed", 1.5, "an integer in [0, 4294967295]"),
    ("seed", True, "an integer in [0, 4294967295]"),
    ("seed", None, "an integer in [0, 4294967295]"),
    ("gan_seed", -2, "an integer in [0, 4294967295]"),
    ("draw", -1, "an integer >= 0"),
    ("profile.max_epochs", "abc", "an integer >= 1"),
    ("profile.max_epochs", 0, "an integer >= 1"),
    ("profile.max_epochs", 3.0, "an integer >= 1"),
    ("profile.patience", -1, "an integer >= 0 or null"),
    ("profile.runs", 0, "an integer >= 1"),
    ("profile.gan_steps", "1k", "an integer >= 1"),
    ("profile.synth.n_train", 0, "an integer >= 1"),
    ("profile.synth.n_val", -5, "an integer >= 1"),
    ("profile.synth.n_test", "x", "an integer >= 1"),
    ("profile.real.seeds", 0, "an integer >= 1"),
    ("profile.real.max_train_rows", 0, "an integer >= 1 or null"),
    ("profile.real.n_score", 2.5, "an integer >= 1"),
    ("profile.real.adel_max_epochs", 0, "an integer >= 1"),
    ("profile.real.adel_mmd", -1.0, "a finite number >= 0"),
    ("profile.real.adel_mmd", float("nan"), "a finite number >= 0"),
    ("profile.real.adel_last_width", 0, "an integer >= 1 or null"),
    ("profile.real.adel_probe_target", 1.0, "a finite number in (0, 1) or null"),
    ("profile.real.adel_probe_select", "yes", "true or false"),
    ("profile.fig5.draws", 0, "an integer >= 1"),
    ("profile.fig5.synth.n_train", 0, "an integer >= 1"),
    ("profile.fig11.runs", 0, "an integer >= 1"),
    ("profile.fig11.quality_rows", -1, "an integer >= 1 or null"),
    ("profile.generators.epochs", 0, "an integer >= 1"),
    ("profile.generators.max_steps", "abc", "an integer >= 1"),
    ("profile.generators.hidden", 0, "an integer >= 1"),
    ("profile.generators.lr", 0.0, "a finite number > 0"),
    ("profile.generators.val_fraction", 1.0, "a finite number in (0, 1)"),
    ("synthetic.generators.magic.latent_dim", 0, "an integer >= 1"),
    ("synthetic.generators.magic.beta", -0.1, "a finite number >= 0"),
    # the reading's values: the schema's choices and ranges (faux.harness.schema.Reading)
    ("reading.tau", 0, "one of 0.3, 1.0"),
    ("reading.beta", -1.0, "one of 0.2, 1.0"),
    ("reading.fraction", 1.5, "a finite number in (0, 1]"),
    ("reading.fraction", True, "a finite number in (0, 1]"),
    ("reading.latent_dim", "table3", "one of table2, 16"),
    ("reading.ng", "bad", "one of feature, sample"),
    ("synthetic.threshold_k", -1.0, "a finite number >= 0"),
    ("synthetic.threshold_k", float("inf"), "a finite number >= 0"),
    ("synthetic.options.ig_steps", 0, "an integer >= 1"),
    ("model.target.width", 0, "an integer >= 1"),
    ("model.target.depth", "two", "an integer >= 1"),
    ("model.target.max_epochs", -3, "an integer >= 1"),
    ("model.target.patience", 1.5, "an integer >= 0 or null"),
    ("model.target.batch_size", 0, "an integer >= 1"),
    ("model.target.lr", 0, "a finite number > 0"),
    ("model.aux.lr", "fast", "a finite number > 0"),
    ("model.fair.last_width", 0, "an integer >= 1 or null"),
    ("model.fair.alpha", -1.0, "a finite number >= 0"),
    ("model.fair.alpha_decay", 0.0, "a finite number in (0, 1]"),
    ("model.fair.alpha_decay", 1.5, "a finite number in (0, 1]"),
    ("model.fair.alpha_min", -0.5, "a finite number >= 0"),
    ("model.fair.n_adv", -1, "an integer >= 0"),
    ("model.fair.adv_width", 0, "an integer >= 1"),
    ("model.fair.adv_depth", 0, "an integer >= 1"),
    ("model.fair.adv_steps", 0, "an integer >= 1"),
    ("model.fair.adv_lr", 0.0, "a finite number > 0 or null"),
    ("model.fair.decor", -1.0, "a finite number >= 0"),
    ("model.fair.decor_momentum", 1.0, "a finite number in [0, 1)"),
    ("model.fair.pair", -1.0, "a finite number >= 0"),
    ("model.fair.mmd", -3.0, "a finite number >= 0"),
    ("model.fair.mmd_rows", 0, "an integer >= 1"),
    ("model.fair.score_gap", -1.0, "a finite number >= 0"),
    ("model.fair.probe_target", 0.0, "a finite number in (0, 1) or null"),
    ("model.fair.probe_step", 1.0, "a finite number > 1"),
    ("model.fair.cap", "no", "true or false"),
    ("model.fair.probe_select", 1, "true or false"),
    ("model.gan.critic_width", 0, "an integer >= 1 or null"),
    ("model.gan.n_critic", 0, "an integer >= 1"),
    ("model.gan.gen_steps", 0, "an integer >= 1"),
    ("model.gan.lr", -1e-4, "a finite number > 0"),
    ("model.gan.clip", 0, "a finite number > 0"),
    ("model.gan.transport_weight", -1e-5, "a finite number >= 0"),
    ("real_study.val_frac", 0.0, "a finite number in (0, 1)"),
    ("real_study.test_frac", 1.0, "a finite number in (0, 1)"),
    ("real_study.probe.max_epochs", 0, "an integer >= 1"),
    ("real_study.targets.probe_max", 0.0, "a finite number in (0, 1]"),
    ("real_study.targets.accuracy_drop", 2.0, "a finite number in [0, 1]"),
    ("real_study.n_random_rankings", 0, "an integer >= 1"),
    ("real_study.gan_quality_rows", 0, "an integer >= 1 or null"),
    ("fig8.epochs", 0, "an integer >= 1"),
]

#: (key, a good value): bounds and the forms a valid config takes
GOOD = [
    ("seed", 0), ("seed", 2**32 - 1), ("profile.max_epochs", 1), ("profile.patience", None),
    ("profile.patience", 0), ("profile.real.max_train_rows", None),
    ("profile.real.adel_probe_target", 0.56), ("model.gan.transport_weight", 0),
    ("model.gan.transport_weight", 1e-5), ("model.target.lr", 1e-3), ("model.fair.alpha_decay", 1),
    ("model.fair.decor_momentum", 0.0), ("model.fair.probe_step", 1.25),
    ("model.fair.adv_lr", None), ("synthetic.threshold_k", 0), ("real_study.targets.probe_max", 1.0),
    ("reading.latent_dim", "table2"), ("reading.latent_dim", 16), ("reading.fraction", 1),
    ("reading.tau", 1.0),
]


def _config_with(key: str, value) -> dict:
    cfg: dict = {}
    node = cfg
    *parents, last = key.split(".")
    for p in parents:
        node = node.setdefault(p, {})
    node[last] = value
    return cfg


def _message(key, value) -> str | None:
    from faux.errors import ConfigError
    from faux.harness.validate import check

    try:
        check(_config_with(key, value))
    except ConfigError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("key,value,expected", BAD, ids=[f"{k}={v!r}" for k, v, _ in BAD])
def test_bad_value_is_one_line_naming_key_value_and_what_is_expected(key, value, expected):
    from faux.harness.validate import check_override, show

    msg = _message(key, value)
    assert msg == f"{key}={show(value)}: expected {expected}"
    assert "\n" not in msg
    # the same value as a (swept) command-line override
    from faux.errors import ConfigError

    with pytest.raises(ConfigError) as e:
        check_override(key, value)
    assert str(e.value) == msg


@pytest.mark.parametrize("key,value", GOOD, ids=[f"{k}={v!r}" for k, v in GOOD])
def test_good_value_passes(key, value):
    from faux.harness.validate import check_override

    assert _message(key, value) is None
    check_override(key, value)


def _bad_values(rule) -> list:
    """Values the rule must refuse: text, a bool (for numbers), null (unless allowed), the
    integers' float form, and the first value past each bound."""
    out = ["abc"] + ([None] if not rule.nullable else [])
    if rule.kind == "bool":
        return out + [0, 1]
    out += [True, float("nan"), float("inf")]
    step = 1 if rule.kind == "int" else 0.5
    if rule.kind == "int":
        out.append(float(rule.lo if rule.lo is not None else 1))
    if rule.lo is not None:
        out.append(rule.lo if rule.lo_open else rule.lo - step)
    if rule.hi is not None:
        out.append(rule.hi if rule.hi_open else rule.hi + step)
    return out


def _key_of(pattern: str) -> str:
    return pattern.replace("synthetic.generators.*", "synthetic.generators.magic").replace("*", "fair")


@pytest.mark.parametrize("pattern", list(__import__("faux.harness.validate",
                                                    fromlist=["RULES"]).RULES))
def test_every_rule_of_the_table_refuses_what_it_should(pattern):
    from faux.errors import ConfigError
    from faux.harness.validate import RULES, check, show

    rule, key = RULES[pattern], _key_of(pattern)
    for value in _bad_values(rule):
        with pytest.raises(ConfigError) as e:
            check(_config_with(key, value))
        assert str(e.value) == f"{key}={show(value)}: {rule.expected()}"


@functools.lru_cache(maxsize=1)
def _shipped_configs():
    """(label, resolved checked sections) of every experiment x profile, and the aux/fair
    model choices the configs name. Every reading (a reading file sets only the ``reading``
    section) passes the same checks (``problems``, a rule for each number) in
    tests/test_readings.py, where each is composed once."""
    from hydra import compose, initialize_config_dir

    from faux.harness.guard import _sections

    exps = [None] + sorted(p.stem for p in (ROOT / "conf" / "experiment").glob("*.yaml"))
    profiles = sorted(p.stem for p in (ROOT / "conf" / "profile").glob("*.yaml"))
    out = []
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        for exp in exps:
            for prof in profiles:
                ov = [f"profile={prof}"] + ([f"experiment={exp}"] if exp else [])
                out.append((f"{exp}/{prof}", _sections(compose("config", overrides=ov))))
        out.append(("aux=adel", _sections(compose("config", overrides=["model/aux=adel"]))))
    return out


def test_every_shipped_config_passes():
    from faux.harness.validate import problems

    for label, sections in _shipped_configs():
        assert {"seed", "profile", "synthetic", "model"} <= set(sections), label
        assert problems(sections) == [], label


def test_every_rule_names_a_field_the_configs_have():
    """A rule for a field no config has (a typo, a renamed field) fails here: each names a
    field of a shipped config, or of the CVAE settings (``GENERATOR_DEFAULT``) for the
    generator overrides, or of ``ScoreOptions`` for the scorer options (``synthetic.options``
    is empty: the reading sets them; the real study's leave out what it takes as is)."""
    import dataclasses

    from faux.harness.validate import RULES, _walk
    from faux.methods.options import ScoreOptions
    from faux.synth.generator_settings import GENERATOR_DEFAULT

    configs = [sections for _, sections in _shipped_configs()]
    unknown = []
    for pattern in RULES:
        if pattern.startswith(("profile.generators.", "synthetic.generators.")):
            if pattern.rsplit(".", 1)[1] not in GENERATOR_DEFAULT:
                unknown.append(pattern)
        elif pattern.startswith(("synthetic.options.", "real_study.options.",
                                 "real_study.report_options.")):
            if pattern.rsplit(".", 1)[1] not in {f.name for f in dataclasses.fields(ScoreOptions)}:
                unknown.append(pattern)
        elif not any(list(_walk(c, pattern.split("."), "")) for c in configs):
            unknown.append(pattern)
    assert unknown == []


def _leaves(node, prefix=""):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _leaves(v, f"{prefix}.{k}" if prefix else str(k))
    else:
        yield prefix, node


def test_every_numeric_field_of_profile_synthetic_and_model_has_a_rule():
    """A number or flag added to conf/profile, conf/synthetic, conf/model or conf/reading
    without a rule (the table's, or the reading schema's choices or range) fails here (so
    the checks stay the whole list)."""
    from faux.harness.validate import expected

    missing = set()
    for _, sections in _shipped_configs():
        for top in ("seed", "profile", "reading", "synthetic", "model"):
            for key, value in _leaves(sections.get(top), top):
                if isinstance(value, (int, float, bool)) and expected(key) is None:
                    missing.add(key)
    assert sorted(missing) == []


def _run(tmp_path, *args):
    env = {**os.environ, "FAUX_CACHE_DIR": str(tmp_path / "cache"), "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "faux.run", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def _nothing_written(tmp_path):
    return [p for p in tmp_path.rglob("*") if p.is_file()]


@pytest.mark.parametrize("override,line", [
    ("seed=-1", "error: seed=-1: expected an integer in [0, 4294967295]"),
    ("profile.max_epochs=abc", "error: profile.max_epochs=abc: expected an integer >= 1"),
])
def test_run_refuses_a_bad_value_in_one_line_before_any_work(tmp_path, override, line):
    """`seed=-1` was a ValueError traceback from seed_everything; `profile.max_epochs=abc`
    composed without complaint."""
    r = _run(tmp_path, "experiment=table1", "profile=tiny", "column=Synthetic-2", "method=fta",
             f"paths.log_dir={tmp_path / 'out'}", override)
    assert r.returncode == 2, r.stderr[-3000:]
    assert r.stderr.strip().splitlines() == [line]
    assert _nothing_written(tmp_path) == []        # no run folder, no cache entry


def test_sweep_refuses_an_unknown_method_before_the_first_job(tmp_path):
    """`method=fta,nope` ran fta, then failed in the second job."""
    sweep = tmp_path / "sweep"
    r = _run(tmp_path, "-m", "experiment=table1", "profile=tiny", "column=Synthetic-1",
             "method=fta,nope", f"hydra.sweep.dir={sweep}")
    assert r.returncode == 2, r.stderr[-3000:]
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith("error: method=nope: expected one of fta, ")
    assert _nothing_written(tmp_path) == []


def test_sweep_refuses_a_bad_swept_value_before_the_first_job(tmp_path):
    sweep = tmp_path / "sweep"
    r = _run(tmp_path, "-m", "data=wdbc", "seed=0,-1", f"hydra.sweep.dir={sweep}")
    assert r.returncode == 2, r.stderr[-3000:]
    assert r.stderr.strip().splitlines() == [
        "error: seed=-1: expected an integer in [0, 4294967295]"]
    assert _nothing_written(tmp_path) == []        # not even the seed=0 job ran


def test_a_choice_is_one_of_the_names_a_layer_above_gives(monkeypatch):
    from faux.errors import ConfigError
    from faux.harness import validate

    monkeypatch.setitem(validate.CHOICES, "method", lambda: ("fta", "faux"))
    validate.check({"method": "faux"})
    for bad in ("nope", 1, None, "FAUX"):
        with pytest.raises(ConfigError) as e:
            validate.check({"method": bad})
        assert str(e.value) == f"method={validate.show(bad)}: expected one of fta, faux"
    with pytest.raises(ConfigError, match="expected one of fta, faux"):
        validate.check_override("method", "nope")
