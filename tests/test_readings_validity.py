"""The readings study's one output switch, its declared validity rule, the gradient-cosine
metric, and the aux's width and depth drawn per run (docs/readings.md, "Fourth pass")."""

from pathlib import Path

import pytest
import torch
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from faux.errors import ConfigError
from faux.methods import registry
from faux.methods.protocol import Batch, TrainData
from faux.models.mlp import MLP, MLPSpec
from faux.reports.readings import (
    COLUMNS,
    LIN_GAP,
    TIE_DISTANCE,
    frame_of,
    lin_gap_held,
    markdown,
    paper,
    selected_line,
    valid_reading,
)
from faux.studies import readings as R
from faux.studies.reading_check import OUTPUT_AXES
from faux.synth.ground_truth import ifs

ROOT = Path(__file__).resolve().parents[1]
METHODS = ("fta", "fta_lin", "faux", "faux_ng", "faux_ig", "lic_ub")


def _cfg(*overrides):
    import faux.run  # noqa: F401  (registers the config's resolvers)

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=["experiment=readings", *overrides,
                                           "paths.output_dir=."])
    return OmegaConf.to_container(cfg, resolve=True)


# ------------------------------------------------------------------ the output switch


def _column(seed=0, n=40, d=5):
    """A tiny prepared column: a target and an aux MLP, rows x, their counterfactuals, and
    the map c -> x (affine: x0 + c v)."""
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    target, aux = MLP(d, 8, 2), MLP(d, 8, 2)
    x0, v = torch.randn(n, d, generator=g), 2 * torch.randn(d, generator=g)

    def x_of_c(c):
        return x0 + torch.as_tensor(c).reshape(-1, 1).float() * v
    c = (torch.rand(n, generator=g) > 0.5).float()
    return target, aux, x_of_c(c), x_of_c(1 - c), c, x_of_c


def _out(net, x, output):
    z = net(x).reshape(-1)
    return torch.sigmoid(z) if output == "prob" else z


def _direct(target, aux, x, x_cf, x_of_c, output):
    """The IFS, LIC-UB at c = 1/2, FTA and fAux (eq. 9) computed here by autograd, all on
    ``output``."""
    xg = x.clone().requires_grad_(True)
    g_t = torch.autograd.grad(_out(target, xg, output).sum(), xg)[0]
    g_a = torch.autograd.grad(_out(aux, xg, output).sum(), xg)[0]
    cc = torch.full((len(x),), 0.5, requires_grad=True)
    lic = torch.autograd.grad(_out(target, x_of_c(cc), output).sum(), cc)[0].abs()
    with torch.no_grad():
        ifs_v = (_out(target, x, output) - _out(target, x_cf, output)).abs()
    return {"ifs": ifs_v, "lic_ub": lic, "fta": g_t.norm(dim=1),
            "faux": (g_t * g_a).sum(1).abs() / (g_a * g_a).sum(1)}


def _study(reading, target, aux, x, x_cf, c, x_of_c):
    """The same four numbers through the study's own settings (synth_settings, the methods'
    config of a readings job)."""
    cfg = _cfg(f"reading={reading}")
    _, r = R.reading_of(cfg)
    cs = R.synth_settings(cfg, r, ("magic", "backache"))
    config = R.method_config(cs, r)
    data = TrainData(x, c, aux=lambda seed: (aux, {"accuracy": 1.0, "n_params": 0}))
    batch = Batch(x, c, None, None, x_of_c)
    out = {"ifs": ifs(target, x, x_cf, output=cs.output)}
    for m in ("lic_ub", "fta", "faux"):
        out[m] = torch.as_tensor(
            registry.get(m).build(config).fit(data, 0).score(target, batch)).reshape(-1)
    return out


@pytest.mark.parametrize("output", ["prob", "logit"])
def test_the_output_switch_puts_the_ifs_lic_ub_and_faux_on_one_output(output):
    target, aux, x, x_cf, c, x_of_c = _column()
    got = _study(f"p30_softmax_{output}", target, aux, x, x_cf, c, x_of_c)
    want = _direct(target, aux, x, x_cf, x_of_c, output)
    other = _direct(target, aux, x, x_cf, x_of_c, "logit" if output == "prob" else "prob")
    for k in want:
        torch.testing.assert_close(got[k].double(), want[k].double(), rtol=2e-4, atol=1e-6)
        assert not torch.allclose(got[k].double(), other[k].double(), rtol=1e-2), k


def test_the_logit_bias_readings_follow_the_same_switch():
    for name, output in [("p30_softmax_logitbias_prob", "prob"),
                         ("p30_softmax_logitbias_logit", "logit")]:
        _, r = R.reading_of(_cfg(f"reading={name}"))
        assert r["c_path"] == "logit_bias" and r["output"] == output
        assert {r[a] for a in OUTPUT_AXES} == {output}
        assert R.lic_ub_params(r)["output"] == output


def test_a_switch_on_a_reading_that_reads_another_output_is_refused_in_one_line():
    with pytest.raises(ConfigError, match=r"output=prob puts every test on the target's "
                                          r"probability but ifs_output=logit; set "
                                          r"reading.ifs_output=prob"):
        R.reading_of(_cfg("reading=p30_softmax", "reading.output=prob"))
    # a reading that follows the switch takes the other value whole
    _, r = R.reading_of(_cfg("reading=p30_softmax_prob", "reading.output=logit"))
    assert {r[a] for a in OUTPUT_AXES} == {"logit"}


def test_the_earlier_readings_keep_their_outputs_one_axis_at_a_time():
    cfg = _cfg("reading=p30_softmax")
    _, r = R.reading_of(cfg)
    assert r["output"] == "per_axis" and r["aux_arch"] == "fixed"
    cs = R.synth_settings(cfg, r, ("magic", "backache"))
    # the IFS on logits, the gradient tests on probabilities, as before the switch
    assert (cs.output, cs.options.output, cs.options.aux_output) == ("logit", "prob", "prob")
    assert cs.lic_ub == {"at": "mid", "output": "logit"} and cs.aux_arch == "fixed"


# ------------------------------------------------------------------ the gradient cosine


def test_the_gradient_cosine_is_one_for_a_linear_target_and_less_for_a_nonlinear_one():
    torch.manual_seed(0)
    x = torch.randn(300, 6)
    linear = MLP(6, depth=0)
    for output in ("prob", "logit"):
        assert R.target_gradient_cosine(linear, x, output) == pytest.approx(1.0, abs=1e-6)
    bent = MLP(6, 32, 2)
    for output in ("prob", "logit"):
        assert R.target_gradient_cosine(bent, x, output) < 0.99


# ------------------------------------------------------------------ the aux's architecture


def test_varied_aux_architectures_differ_across_run_seeds_and_repeat_per_seed():
    spec = MLPSpec(width=64, depth=2)
    seeds = range(10)
    varied = [R.aux_spec_for(spec, s, "varied") for s in seeds]
    assert len({(a.width, a.depth) for a in varied}) >= 3
    assert all(a.width in R.AUX_WIDTHS and a.depth in R.AUX_DEPTHS for a in varied)
    assert varied == [R.aux_spec_for(spec, s, "varied") for s in seeds]     # by the seed
    assert all(R.aux_spec_for(spec, s, "fixed") is spec for s in seeds)
    with pytest.raises(ConfigError, match="aux_arch must be one of fixed, varied"):
        R.aux_spec_for(spec, 0, "random")


class _Sets:
    x = c = torch.zeros(4, 2)
    w_tilde = None


class _PC:
    key = {"column": "k"}
    train = val = _Sets()


@pytest.mark.parametrize("trainer", ["stacked", "single"])
def test_fixed_aux_trains_under_the_keys_of_before_and_varied_under_its_draws(monkeypatch,
                                                                                trainer):
    import dataclasses

    calls = []
    monkeypatch.setattr(R, "cached_mlp_stacked", lambda cache, kind, key, spec, *a, **k:
                        calls.append((kind, key, spec, a[4], list(a[5]))))
    monkeypatch.setattr(R, "cached_mlp", lambda cache, kind, key, spec, *a, **k:
                        calls.append((kind, key, spec, a[4], None)))
    cs = R.synth_settings(_cfg("reading=p30_softmax"), R.reading_of(
        _cfg("reading=p30_softmax"))[1], ("magic", "backache"))
    spec, seeds = MLPSpec(width=64, depth=2), [3, 4, 5, 6, 7, 8]
    for arch in ("fixed", "varied"):
        s = dataclasses.replace(cs, aux_trainer=trainer, aux_arch=arch)
        calls.clear()
        aux = R.aux_provider(_PC(), "mlp", spec, s, seeds)
        for sd in seeds:
            aux(sd)
        for (kind, key, sp, sd, group), want in zip(calls, seeds):
            assert (kind, key, sd) == ("aux", _PC.key, want)
            if arch == "fixed":          # the spec and stack of before: the same cache keys
                assert sp is spec and group == (seeds if trainer == "stacked" else None)
            else:
                assert sp == R.aux_spec_for(spec, want, "varied")
                if trainer == "stacked":  # a stack holds only the seeds of its recipe
                    assert group == [x for x in seeds
                                     if R.aux_spec_for(spec, x, "varied") == sp]
        if arch == "varied":
            assert len({c[2] for c in calls}) > 1


def test_aux_arch_varied_reading_composes():
    _, r = R.reading_of(_cfg("reading=p30_softmax_prob_auxvaried"))
    assert r["aux_arch"] == "varied" and r["output"] == "prob"


# ------------------------------------------------------------------ the declared rule


def _result(name, rate=0.3, lic=None, ng=None, lin_gap=None, shift=0.0, cos=0.5):
    """Fabricated readings_cell results: the paper's AP per cell, with LIC-UB, fAux+NG, the
    lin. aux gap (FTA + lin. aux - FTA) and a shift of every fitted row set where given."""
    out = []
    for c in COLUMNS:
        ap = {m: [paper(m, c)] for m in METHODS}
        ap["faux_path"] = [0.5]
        for m in ("faux", "faux_ig"):
            ap[m] = [paper(m, c) + shift]
        if lic is not None:
            ap["lic_ub"] = [lic]
        if ng is not None:
            ap["faux_ng"] = [ng]
        if lin_gap is not None:
            ap["fta_lin"] = [paper("fta", c) + lin_gap[c] if isinstance(lin_gap, dict)
                             else paper("fta", c) + lin_gap]
        out.append({"metrics": {"reading": name, "column": c, "settings": {}, "ap_runs": ap,
                                "positive_rate": rate,
                                "target_grad_cosine": {"output": "prob", "median": cos}}})
    return out


def test_validity_needs_the_rates_and_the_lin_aux_gap_on_six_columns():
    gaps = {c: (LIN_GAP if i < 6 else 0.0) for i, c in enumerate(COLUMNS)}
    six = {c: 0.3 + gaps[c] for c in COLUMNS}
    fta = {c: 0.3 for c in COLUMNS}
    rates = {c: 0.3 for c in COLUMNS}
    assert lin_gap_held({"fta": fta, "fta_lin": six}) == 6
    assert valid_reading(rates, {"fta": fta, "fta_lin": six})
    five = {**six, COLUMNS[0]: 0.3 + LIN_GAP - 0.001}
    assert lin_gap_held({"fta": fta, "fta_lin": five}) == 5
    assert not valid_reading(rates, {"fta": fta, "fta_lin": five})           # (b) fails
    assert not valid_reading({**rates, COLUMNS[5]: 0.6}, {"fta": fta, "fta_lin": six})  # (a)
    assert not valid_reading({**rates, COLUMNS[0]: 0.1}, {"fta": fta, "fta_lin": six})  # (a)


def test_the_rule_ranks_validity_then_c1_then_claims_then_distance_and_reports_ties():
    rows = [*_result("bad_rate", rate=0.9, lic=1.0, ng=0.0),
            *_result("bad_gap", lin_gap=0.02, lic=1.0),
            *_result("no_c1", lic=0.5),
            *_result("c1_fewer_claims", lic=0.95, ng=0.0),
            *_result("c1_near", lic=0.95),
            *_result("c1_tied", lic=0.95, shift=TIE_DISTANCE / 2),
            *_result("c1_far", lic=0.95, shift=3 * TIE_DISTANCE)]
    df = frame_of(rows)
    assert list(df["reading"]) == ["c1_near", "c1_tied", "c1_far", "c1_fewer_claims",
                                   "no_c1", "bad_gap", "bad_rate"]
    assert list(df["rank"]) == [1, 1, 3, 4, 5, 6, 7]
    assert list(df["tie"]) == [True, True, False, False, False, False, False]
    v = df.set_index("reading")
    assert not v.loc["bad_gap", "valid"] and v.loc["bad_gap", "valid_rate"]
    assert v.loc["bad_gap", "lin_gap_held"] == "0/8" and v.loc["c1_near", "lin_gap_held"] == "7/8"
    assert not v.loc["bad_rate", "valid"]
    assert v.loc["c1_near", f"grad_cos {COLUMNS[0]}"] == pytest.approx(0.5)   # (c) reported
    assert v.loc["c1_near", f"lin_gap {COLUMNS[1]}"] == pytest.approx(0.683 - 0.306)
    assert "tie between c1_near, c1_tied" in selected_line(df)
    md = markdown(df)         # fAux path's AP (no row in the paper's table) is listed too
    assert "| 1 (tie) | c1_near |" in md and "| 3 | c1_far |" in md
    assert "| c1_near | lin. aux gap | +0.095 | +0.377 |" in md


def test_the_cosine_is_reported_not_gated():
    a = frame_of(_result("aligned", lic=0.95, cos=1.0))
    b = frame_of(_result("aligned", lic=0.95, cos=0.2))
    assert a.loc[0, "valid"] and b.loc[0, "valid"]
    assert a.loc[0, "paper_distance"] == b.loc[0, "paper_distance"]
