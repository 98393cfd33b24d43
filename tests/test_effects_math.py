"""The counterfactual paths of faux.audit.counterfactual.effects: closed forms, categorical swaps, verdicts."""

import numpy as np
import pytest
import torch
from torch import nn

from faux.audit.counterfactual import effects as E
from faux.errors import ConfigError


def linear(w, b=0.0):
    m = nn.Linear(len(w), 1).double()
    with torch.no_grad():
        m.weight.copy_(torch.tensor([w], dtype=torch.float64))
        m.bias.fill_(b)
    return lambda z: m(z)[:, 0]


def cont_layout(d):
    return E.Layout(d, (), tuple(range(d)))


def space(d: int, kind: str = "binary", **path) -> E.Space:
    """The counterfactual's space over ``d`` continuous standardised features (mean 0,
    scale 1); ``path``: steps, lo/hi, contrasts, reach."""
    return E.Space(kind, cont_layout(d), np.zeros(d), np.ones(d), **path)


def test_linear_aux_path_is_the_minimum_norm_step_for_any_k():
    rng = np.random.default_rng(0)
    z = torch.tensor(rng.normal(size=(50, 4)))
    c = torch.tensor(rng.integers(0, 2, 50))
    w = [1.0, -2.0, 0.5, 0.0]
    aux = linear(w, 0.3)
    gaps = E.group_gaps(aux, z, c.numpy(), "binary")
    wt = torch.tensor(w, dtype=torch.float64)
    g = torch.full((50,), gaps["gap"], dtype=torch.float64)
    shift = torch.where(c > 0.5, -g, g)
    expect = z + shift[:, None] * wt / (wt @ wt)
    for k in (1, 3, 16):
        cf = E.counterfactual(aux, z, c, gaps, space(4, steps=k))
        torch.testing.assert_close(cf.z, expect, rtol=0, atol=1e-10)
        assert not cf.unreachable.any()


def test_gap_recovers_the_planted_counterfactual_of_a_proxy():
    """proxy = s c + e: a linear aux on the proxy moves it by the groups' mean difference,
    down for group 1 and up for group 0, so each row keeps its own noise e."""
    rng = np.random.default_rng(1)
    n, s = 2000, 1.5
    c = rng.integers(0, 2, n)
    e = rng.normal(size=n)
    z = torch.tensor(np.stack([c * s + e, rng.normal(size=n)], axis=1))
    aux = linear([2.0, 0.0], -1.0)
    gaps = E.group_gaps(aux, z, c, "binary")
    cf = E.counterfactual(aux, z, torch.tensor(c), gaps, space(2))
    diff = z[c == 1, 0].mean() - z[c == 0, 0].mean()
    moved = (cf.z - z)[:, 0].numpy()
    np.testing.assert_allclose(moved, np.where(c == 1, -1, 1) * float(diff), atol=1e-9)
    np.testing.assert_allclose((cf.z - z)[:, 1].numpy(), 0, atol=1e-12)


def test_nonlinear_aux_path_converges_and_reaches_its_target():
    rng = np.random.default_rng(2)
    z = torch.tensor(rng.normal(size=(200, 3)))
    c = torch.tensor(rng.integers(0, 2, 200))
    u = torch.tensor([0.3, 1.0, -0.5], dtype=torch.float64)

    def aux(t):
        return t[:, 0] + 0.5 * (t @ u) ** 2

    gaps = {"gap": 1.2}
    ends = {}
    for k in (2, 8, 32, 256):
        cf = E.counterfactual(aux, z, c, gaps, space(3, steps=k))
        ends[k] = cf.z
    err = {k: float((ends[k] - ends[256]).norm(dim=1).max()) for k in (2, 8, 32)}
    assert err[2] > err[8] > err[32]
    target = aux(z) + torch.where(c > 0.5, -1.2, 1.2)
    miss = {k: float((aux(ends[k]) - target).abs().max()) for k in (2, 256)}
    assert miss[256] < miss[2] and miss[256] < 1e-2


def test_layout_infers_one_hot_blocks_single_flags_and_continuous_columns():
    x = np.array([[1, 0, 0, 1, 35.0, 1, 1],
                  [0, 1, 0, 0, 41.0, 0, 1],
                  [0, 0, 1, 1, 29.0, 1, 0]], dtype=float)
    names = ["rel_Husband", "rel_Wife", "rel_Other", "smoker", "age", "a_x", "a_y"]
    lay = E.Layout.infer(x, names)
    by = {b.name: b for b in lay.blocks}
    assert by["rel"].columns == (0, 1, 2) and by["rel"].levels == ("Husband", "Wife", "Other")
    assert by["smoker"].columns == (3,) and by["smoker"].levels == ("0", "1")
    # a_x, a_y are 0/1 with a common prefix but do not sum to 1 on every row: two singles
    assert by["a_x"].columns == (5,) and by["a_y"].columns == (6,)
    assert lay.continuous == (4,)


def _one_hot_world():
    # columns: rel_Husband, rel_Wife, rel_Other, age
    x = np.array([[1, 0, 0, 40.0], [0, 1, 0, 35.0], [0, 0, 1, 50.0], [1, 0, 0, 28.0]])
    mean, scale = x.mean(axis=0), np.array([1.0, 1.0, 1.0, x[:, 3].std()])
    z = torch.tensor((x - mean) / scale)
    lay = E.Layout.infer(x, ["rel_Husband", "rel_Wife", "rel_Other", "age"])
    return x, mean, scale, z, lay


def test_a_categorical_block_swaps_to_the_level_that_moves_the_aux_furthest_never_fractional():
    x, mean, scale, z, lay = _one_hot_world()
    xm = torch.tensor(mean)
    xs = torch.tensor(scale)

    def aux(t):  # raw one-hot weights: Husband +3, Wife -3, Other 0; age weak
        r = t * xs + xm
        return 3 * r[:, 0] - 3 * r[:, 1] + 0.01 * r[:, 3]

    c = torch.tensor([1, 0, 0, 1])
    gaps = {"gap": 1.0}
    cf = E.counterfactual(aux, z, c, gaps, E.Space("binary", lay, mean, scale))
    raw = cf.z.numpy() * scale + mean
    blocks = raw[:, :3]
    assert np.isin(np.round(blocks, 12), (0.0, 1.0)).all() and np.allclose(blocks.sum(1), 1)
    # Husband rows of group 1 move down: Wife is the furthest (-6 against -3 for Other)
    assert cf.moved[0, 0] == 1 and cf.moved[3, 0] == 1
    # the Wife row (group 0) moves up: Husband; the Other row (group 0): Husband too
    assert cf.moved[1, 0] == 0 and cf.moved[2, 0] == 0
    # the swaps overshoot the gap, so the continuous feature does not move
    np.testing.assert_allclose(raw[:, 3], x[:, 3], atol=1e-9)


def test_continuous_features_cover_what_the_swaps_leave():
    x, mean, scale, z, lay = _one_hot_world()
    xm, xs = torch.tensor(mean), torch.tensor(scale)

    def aux(t):  # the block moves the aux by at most 0.5, the gap asks for 2
        r = t * xs + xm
        return 0.5 * r[:, 0] + 0.1 * r[:, 3]

    c = torch.tensor([1, 0, 0, 1])
    cf = E.counterfactual(aux, z, c, {"gap": 2.0}, E.Space("binary", lay, mean, scale))
    end = aux(cf.z)
    target = aux(z) + torch.where(c > 0.5, -2.0, 2.0)
    torch.testing.assert_close(end, target, rtol=0, atol=1e-9)
    assert cf.moved[0, 0] >= 0 and cf.moved[1, 0] == 0   # Husband rows leave, others join


def test_categorical_protected_attribute_moves_the_margin_by_its_group_gap():
    rng = np.random.default_rng(3)
    n = 600
    c = rng.integers(0, 3, n)
    z = torch.tensor(rng.normal(size=(n, 3)) + np.eye(3)[c] * 2.0)
    W = torch.eye(3, dtype=torch.float64) * 1.5

    def aux(t):
        return t @ W

    gaps = E.group_gaps(aux, z, c, "categorical")
    ct = torch.tensor(c)
    for d in E.directions(z, ct, "categorical", gaps):
        cf = E.counterfactual(aux, z, ct, gaps, space(3, "categorical"), direction=d)
        before = E.aux_scalar(aux(z), ct, d.level)
        after = E.aux_scalar(aux(cf.z), ct, d.level)
        torch.testing.assert_close(after - before, d.shift, rtol=0, atol=1e-9)
        assert torch.all(d.shift[ct == d.level] == 0)


def test_continuous_protected_attribute_moves_by_the_slope_both_ways():
    rng = np.random.default_rng(4)
    c = rng.normal(size=300)
    z = torch.tensor(np.stack([0.8 * c + 0.3 * rng.normal(size=300),
                               rng.normal(size=300)], axis=1))
    aux = linear([1.0, 0.0])
    gaps = E.group_gaps(aux, z, c, "continuous")
    slope = np.polyfit(c, z[:, 0].numpy(), 1)[0]
    assert gaps["slope"] == pytest.approx(slope, rel=1e-9)
    ds = E.directions(z, torch.tensor(c), "continuous", gaps)
    assert len(ds) == 2 and torch.allclose(ds[0].shift, -ds[1].shift)


def test_effects_call_the_model_once_with_every_counterfactual():
    rng = np.random.default_rng(5)
    z = torch.tensor(rng.normal(size=(40, 3)))
    c = torch.tensor(rng.integers(0, 2, 40))
    auxes = [linear([1.0, 0.5, 0.0]), linear([0.8, 0.7, 0.1])]
    gaps = [E.group_gaps(a, z, c.numpy(), "binary") for a in auxes]
    calls = []

    def proba(x):
        calls.append(len(x))
        return 1 / (1 + np.exp(-(2 * x[:, 0] - x[:, 1])))

    out = E.effects(proba, auxes, gaps, z, c, space(3))
    assert calls == [40 * (1 + 2)]
    assert out["p_cf"].shape == (2, 40) and out["p"].shape == (40,)
    np.testing.assert_allclose(out["p"], proba(z.numpy()))


def test_saturated_model_has_an_effect_the_tangent_misses():
    """Rows far from a steep logistic boundary: eq. 9's derivative is ~0, the path's change
    of probability is ~1."""
    z = torch.tensor([[3.0, 0.0], [-3.0, 0.0]], dtype=torch.float64)
    c = torch.tensor([1, 0])
    aux = linear([1.0, 0.0])

    def proba(x):
        return 1 / (1 + np.exp(-50 * x[:, 0]))

    out = E.effects(proba, [aux], [{"gap": 6.0}], z, c, space(2))
    assert np.all(np.abs(out["p_cf"][0] - out["p"]) > 0.99)
    slope = 50 * proba(z.numpy()) * (1 - proba(z.numpy()))
    assert np.all(slope < 1e-50)


def test_support_box_flags_rows_that_leave_it():
    z_sample = np.array([[0.0, 0.0], [1.0, 1.0]])
    lo, hi = E.support_box(z_sample, 0.1)
    np.testing.assert_allclose(lo, [-0.1, -0.1]) and np.testing.assert_allclose(hi, [1.1, 1.1])
    z = torch.tensor([[0.5, 0.5], [1.0, 0.5]], dtype=torch.float64)
    c = torch.tensor([0, 0])
    cf = E.counterfactual(linear([1.0, 0.0]), z, c, {"gap": 0.05}, space(2, lo=lo, hi=hi))
    assert cf.off_support.tolist() == [False, False]
    cf = E.counterfactual(linear([1.0, 0.0]), z, c, {"gap": 0.5}, space(2, lo=lo, hi=hi))
    assert cf.off_support.tolist() == [False, True]


def test_zero_steps_is_refused_in_one_line():
    z = torch.zeros((2, 2), dtype=torch.float64)
    with pytest.raises(ConfigError, match="at least 1 step"):
        E.counterfactual(linear([1.0, 0.0]), z, torch.tensor([0, 1]), {"gap": 1.0},
                         space(2, steps=0))


def test_a_row_the_aux_cannot_move_is_unreachable():
    z = torch.zeros((3, 2), dtype=torch.float64)
    cf = E.counterfactual(linear([0.0, 0.0]), z, torch.tensor([0, 1, 0]), {"gap": 1.0},
                          space(2))
    assert cf.unreachable.all()
    torch.testing.assert_close(cf.z, z)


def test_verdict_needs_every_aux_to_agree():
    p = np.array([0.4, 0.4, 0.6, 0.9])
    p_cf = np.array([[0.6, 0.45, 0.3, 0.85],
                     [0.7, 0.55, 0.2, 0.80]])
    v = E.verdict(p, p_cf)
    assert v["flagged"].tolist() == [True, False, True, False]
    np.testing.assert_allclose(v["effect"], [0.25, 0.1, -0.35, -0.075])
    assert np.all(v["effect_lo"] <= v["effect"]) and np.all(v["effect"] <= v["effect_hi"])
    m = E.verdict(p, p_cf, materiality=0.1)
    assert m["flagged"].tolist() == [True, False, True, False]
    m = E.verdict(p, p_cf, materiality=0.04)
    assert m["flagged"].tolist() == [True, True, True, True]


def test_a_category_as_common_in_both_groups_stays_and_a_group_carrier_swaps():
    rng = np.random.default_rng(6)
    n = 4000
    c = rng.integers(0, 2, n)
    married = rng.random(n) < 0.5
    rel = np.where(married, np.where(c == 1, 0, 1), 2)     # Husband, Wife, Unmarried
    x = np.eye(3)[rel]
    mean, scale = x.mean(axis=0), np.ones(3)
    z = torch.tensor(x - mean)
    lay = E.Layout.infer(x, ["rel_Husband", "rel_Wife", "rel_Unmarried"])
    xs, xm = torch.tensor(scale), torch.tensor(mean)

    def aux(t):
        r = t * xs + xm
        return 4 * r[:, 0] - 4 * r[:, 1]

    ct = torch.tensor(c)
    gaps = E.group_gaps(aux, z, c, "binary")
    con = E.level_contrasts(z, c, "binary", lay, mean, scale)
    cf = E.counterfactual(aux, z, ct, gaps, E.Space("binary", lay, mean, scale, contrasts=con))
    moved = cf.moved[:, 0].numpy()
    assert (moved[rel == 0] == 1).all() and (moved[rel == 1] == 0).all()
    assert (moved[rel == 2] == -1).all()       # unmarried rows keep their level
    free = E.counterfactual(aux, z, ct, gaps, E.Space("binary", lay, mean, scale))
    assert (free.moved[rel == 2, 0].numpy() >= 0).any()   # without the rule they would move


def test_the_continuous_path_is_never_longer_than_the_groups_distance():
    rng = np.random.default_rng(7)
    c = rng.integers(0, 2, 500)
    z = torch.tensor(np.stack([0.3 * c + rng.normal(size=500), rng.normal(size=500)], 1))
    lay = cont_layout(2)
    reach = E.group_reach(z, c, "binary", lay)
    expect = np.linalg.norm(z[c == 1].mean(0).numpy() - z[c == 0].mean(0).numpy())
    assert reach == pytest.approx(expect)
    cf = E.counterfactual(linear([1.0, 0.0]), z, torch.tensor(c), {"gap": 5.0},
                          E.Space("binary", lay, np.zeros(2), np.ones(2), reach=reach))
    np.testing.assert_allclose((cf.z - z).norm(dim=1).numpy(), reach, rtol=1e-9)
    short = E.counterfactual(linear([1.0, 0.0]), z, torch.tensor(c), {"gap": 0.1},
                             E.Space("binary", lay, np.zeros(2), np.ones(2), reach=reach))
    np.testing.assert_allclose((short.z - z).norm(dim=1).numpy(), 0.1, rtol=1e-9)


def test_the_model_sees_each_row_as_read_and_unmoved_features_exactly():
    """Rebuilding rows from float32 standardised units moves a value across a tree's split;
    with the rows as read, p is the model's own output and only moved features change."""
    rng = np.random.default_rng(8)
    x = np.column_stack([rng.normal(size=300) * 1e3 + 0.1, rng.integers(0, 2, 300),
                         rng.normal(size=300)])
    c = torch.tensor(rng.integers(0, 2, 300))
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[1] = 1.0
    z = torch.tensor((x - mean) / scale, dtype=torch.float32)
    lay = E.Layout.infer(x, ["big", "flag", "small"])
    seen = []

    def proba(rows):
        seen.append(rows.copy())
        return (rows[:, 0] > 0.1).astype(float)        # a split at a value the rows hold

    aux = linear([0.0, 0.0, 1.0])
    aux32 = lambda t: aux(t.double())  # noqa: E731
    out = E.effects(proba, [aux32], [{"gap": 0.5}], z, c, E.Space("binary", lay, mean, scale), x=x)
    np.testing.assert_array_equal(seen[0][:300], x)                  # the rows as read
    cf = seen[0][300:]
    np.testing.assert_array_equal(cf[:, 0], x[:, 0])                 # unmoved: bit for bit
    assert np.isin(cf[:, 1], (0.0, 1.0)).all()                       # a code, exactly
    assert not np.array_equal(cf[:, 2], x[:, 2])
    np.testing.assert_array_equal(out["p"], (x[:, 0] > 0.1).astype(float))
