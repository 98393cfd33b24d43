"""fAux path (faux.methods.path): K successive first-order steps of the aux inverse. Closed
forms on linear and quadratic models, convergence in K on a curved aux, the saturated target
eq. 9 misses, k-class and continuous c, the support flag, stuck rows, a black-box target,
batching, the options' errors, and the registered class."""

import pytest
import torch
from torch import nn

import faux
from faux.errors import ConfigError, FauxError
from faux.methods import registry
from faux.methods.builtin import FAuxPathMethod
from faux.methods.options import PathOptions
from faux.methods.path import path_effect, support_box
from faux.methods.protocol import Batch, MethodConfig, TrainData

D = 5


def linear(w, b=0.0):
    m = nn.Linear(len(w), 1).double()
    with torch.no_grad():
        m.weight.copy_(torch.as_tensor(w, dtype=torch.float64).view(1, -1))
        m.bias.fill_(b)
    return m


class Quadratic(nn.Module):
    """``x^T Q x``: a target logit whose slope changes along any line."""

    def __init__(self, Q):
        super().__init__()
        self.Q = nn.Parameter(Q)

    def forward(self, x):
        return torch.einsum("nd,de,ne->n", x, self.Q, x)


class CurvedAux(nn.Module):
    """``a(x) = w.x + 0.5 (u.x)^2``: a nonlinear aux with a closed-form value."""

    def __init__(self, w, u):
        super().__init__()
        self.w, self.u = nn.Parameter(w), nn.Parameter(u)

    def forward(self, x):
        return x @ self.w + 0.5 * (x @ self.u) ** 2


def mlp(k=1, seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(D, 16), nn.Tanh(), nn.Linear(16, k)).double()


@pytest.fixture
def xwv():
    g = torch.Generator().manual_seed(3)
    x = torch.randn(30, D, generator=g, dtype=torch.float64)
    w = torch.randn(D, generator=g, dtype=torch.float64)
    v = torch.randn(D, generator=g, dtype=torch.float64)
    return x, w, v


# ----------------------------------------------------------------------------- closed forms


@pytest.mark.parametrize("steps", [1, 3, 8])
def test_linear_models_effect_is_eq9_times_the_aux_step(xwv, steps):
    x, w, v = xwv
    aux, tar = linear(w, 0.4), linear(v)
    a = x @ w + 0.4
    res = path_effect(tar, aux, x, steps=steps, output="logit")
    want = (v @ w) / (w @ w) * (-2 * a)
    torch.testing.assert_close(res.effect, want, rtol=1e-10, atol=1e-12)
    eq9 = faux.score("faux", tar, aux, x, output="logit")
    torch.testing.assert_close(res.effect.abs(), eq9 * (2 * a).abs(), rtol=1e-10, atol=1e-12)
    # a straight line along w to the mirror of the aux logit
    torch.testing.assert_close(res.end, x - 2 * a[:, None] * w / (w @ w))
    torch.testing.assert_close(res.aux_end, -a)
    assert (res.direction == -torch.sign(a)).all() and not res.stuck.any()


@pytest.mark.parametrize("steps", [1, 4, 16])
def test_quadratic_target_on_a_linear_aux_is_the_secant(xwv, steps):
    x, w, _ = xwv
    Q = torch.randn(D, D, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    tar, aux = Quadratic(Q), linear(w, -0.3)
    a = x @ w - 0.3
    end = x - 2 * a[:, None] * w / (w @ w)
    want = tar(end) - tar(x)
    res = path_effect(tar, aux, x, steps=steps, output="logit")
    torch.testing.assert_close(res.effect, want.detach(), rtol=1e-10, atol=1e-10)
    # the one-point reading (eq. 9 times the step) misses the curvature
    eq9 = faux.score("faux", tar, aux, x, output="logit") * (2 * a).abs()
    assert (eq9 - res.effect.abs()).abs().max() > 0.1


def test_curved_aux_converges_in_k_and_reaches_the_mirror(xwv):
    x, w, v = xwv
    u = torch.randn(D, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    aux, tar = CurvedAux(w, 0.5 * u), mlp(seed=1)
    a0 = aux(x).detach()
    ref = path_effect(tar, aux, x, steps=1024, output="logit")
    errs, gaps = [], []
    for k in (4, 8, 16, 32, 64):
        r = path_effect(tar, aux, x, steps=k, output="logit")
        errs.append(float((r.effect - ref.effect).abs().max()))
        gaps.append(float((r.aux_end + a0).abs().max()))
    assert all(b < a for a, b in zip(errs, errs[1:])), errs
    assert all(b < a for a, b in zip(gaps, gaps[1:])), gaps
    # first order: halving the step halves the error (O(1/K))
    assert 1.5 < errs[-2] / errs[-1] < 3.0, errs
    assert 1.5 < gaps[-2] / gaps[-1] < 3.0, gaps
    assert gaps[-1] < 0.05 * float(a0.abs().max()) and errs[0] > 10 * errs[-1]
    # the converged path ends at the mirror of the aux logit
    assert float((ref.aux_end + a0).abs().max()) < 1e-2


def test_saturated_target_path_sees_the_flip_eq9_does_not():
    g = torch.Generator().manual_seed(6)
    v = torch.randn(D, generator=g, dtype=torch.float64)
    z = torch.randn(40, D, generator=g, dtype=torch.float64)
    # rows at v.x = +-1: sigmoid(50 v.x) is 1 - 2e-22 or 2e-22, far from the boundary
    # and p.x = 0 for the aux's part p perpendicular to v: the aux logit is v.x = +-1
    side = torch.where(torch.arange(40) % 2 == 0, 1.0, -1.0).double()
    r = torch.randn(D, generator=g, dtype=torch.float64)
    p = r - (r @ v) / (v @ v) * v
    p = 0.3 * p * (v.norm() / p.norm())
    x = z - ((z @ v)[:, None] - side[:, None]) * v / (v @ v) - (z @ p)[:, None] * p / (p @ p)
    tar, aux = linear(50 * v), linear(v + p)
    res = path_effect(tar, aux, x, output="prob")
    eq9 = faux.score("faux", tar, aux, x, output="prob")
    assert (res.effect.abs() > 0.99).all()
    assert (torch.sign(res.effect) == -side).all()
    assert eq9.max() < 1e-15


# ----------------------------------------------------------------------------- kinds of c


class Margin(nn.Module):
    """``a_j - a_0`` of a k-logit aux: one softmax candidate as a binary logit."""

    def __init__(self, aux, j):
        super().__init__()
        self.aux, self.j = aux, j

    def forward(self, x):
        out = self.aux(x)
        return out[:, self.j] - out[:, 0]


@pytest.mark.parametrize("steps", [1, 8])
def test_softmax_aux_mirrors_the_margin_of_the_class_with_the_largest_effect(steps):
    g = torch.Generator().manual_seed(7)
    aux = mlp(k=3, seed=2)
    x = torch.randn(400, D, generator=g, dtype=torch.float64)
    x = x[aux(x).argmax(dim=1) == 0]                    # current class 0 on every row
    tar = mlp(seed=3)
    res = path_effect(tar, aux, x, steps=steps, output="logit", aux_kind="softmax")
    per_j = [path_effect(tar, Margin(aux, j), x, steps=steps, output="logit") for j in (1, 2)]
    eff = torch.stack([r.effect for r in per_j], dim=1)
    best = eff.abs().argmax(dim=1)
    assert ((res.which - 1) == best).all() and set(res.which.tolist()) == {1, 2}
    torch.testing.assert_close(res.effect, eff[torch.arange(len(x)), best])
    start = torch.stack([r.aux_start for r in per_j], dim=1)[torch.arange(len(x)), best]
    torch.testing.assert_close(res.aux_start, start)
    torch.testing.assert_close(res.aux_goal, -start)


def test_softmax_margin_error_shrinks_with_k_and_is_exact_for_a_linear_aux():
    g = torch.Generator().manual_seed(8)
    x = torch.randn(50, D, generator=g, dtype=torch.float64)
    lin = nn.Linear(D, 4).double()
    r = path_effect(mlp(seed=3), lin, x, steps=2, aux_kind="softmax")
    torch.testing.assert_close(r.aux_end, -r.aux_start)
    out = lin(r.end).detach()
    cur = lin(x).argmax(dim=1)
    torch.testing.assert_close(out[torch.arange(50), r.which] - out[torch.arange(50), cur],
                               -r.aux_start)
    aux = mlp(k=3, seed=2)
    gaps = [float((path_effect(mlp(seed=3), aux, x, steps=k, aux_kind="softmax").aux_end
                   - path_effect(mlp(seed=3), aux, x, steps=k, aux_kind="softmax").aux_goal)
                  .abs().max()) for k in (4, 16, 64)]
    assert gaps[0] > gaps[1] > gaps[2] and gaps[2] < 0.02, gaps
    with pytest.raises(ConfigError, match="k >= 2"):
        path_effect(mlp(seed=3), linear(torch.ones(D)), x, aux_kind="softmax")


def test_regression_aux_moves_c_by_sd_in_the_direction_of_the_larger_effect(xwv):
    x, w, _ = xwv
    Q = torch.randn(D, D, generator=torch.Generator().manual_seed(9), dtype=torch.float64)
    tar, aux = Quadratic(Q), linear(w, 0.1)
    sd = 0.7
    res = path_effect(tar, aux, x, steps=3, output="logit", aux_kind="regression", sd=sd)
    torch.testing.assert_close(res.aux_end - res.aux_start, res.direction * sd)
    up = (tar(x + sd * w / (w @ w)) - tar(x)).detach()
    down = (tar(x - sd * w / (w @ w)) - tar(x)).detach()
    want = torch.where(up.abs() >= down.abs(), up, down)
    torch.testing.assert_close(res.effect, want, rtol=1e-10, atol=1e-10)
    assert set(res.direction.tolist()) == {-1.0, 1.0}
    # a curved aux (its values spread 0.4 sd over these rows, so a step of 0.2 stays where
    # its gradient lives): the first-order error of the end point falls about 4x per 4x K
    ends = [path_effect(tar, mlp(seed=4), x, steps=k, aux_kind="regression", sd=0.2)
            for k in (2, 8, 32)]
    gaps = [float((r.aux_end - r.aux_goal).abs().max()) for r in ends]
    assert gaps[0] > 2.5 * gaps[1] > 6 * gaps[2], gaps
    with pytest.raises(ConfigError, match="sd > 0"):
        path_effect(tar, aux, x, aux_kind="regression")


# ----------------------------------------------------------------------------- flags, errors


def test_support_flag_marks_the_path_that_leaves_the_box():
    train = torch.rand(200, 3, generator=torch.Generator().manual_seed(10),
                       dtype=torch.float64)
    aux = linear([1.0, 0.0, 0.0], -0.2)                 # a = x_0 - 0.2, mirror x_0 -> 0.4 - x_0
    x = torch.tensor([[0.9, 0.5, 0.5], [0.3, 0.5, 0.5]], dtype=torch.float64)
    box = support_box(train, 0.1)
    res = path_effect(mlp_for(3), aux, x, support=box)
    assert res.outside.tolist() == [True, False]
    torch.testing.assert_close(res.end[:, 0], torch.tensor([-0.5, 0.1], dtype=torch.float64))
    assert not path_effect(mlp_for(3), aux, x).outside.any()          # no box, no flag
    # the class takes the box from its training rows
    m = FAuxPathMethod().fit(TrainData(train, None, aux=lambda s: (aux, _info())), 0)
    m.score(mlp_for(3), Batch(x))
    assert m.last.outside.tolist() == [True, False] and m.info["path_outside_rows"] == 1
    with pytest.raises(ConfigError, match="margin"):
        support_box(train, -1)


def mlp_for(d):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(d, 8), nn.Tanh(), nn.Linear(8, 1)).double()


def _info():
    return {"accuracy": 0.9, "n_params": 4}


class ReluAux(nn.Module):
    """``relu(x_0) - 0.5``: no gradient where x_0 < 0."""

    def forward(self, x):
        return torch.relu(x[:, 0]) - 0.5


def test_rows_whose_aux_gradient_vanishes_are_stuck_with_effect_zero():
    # row 3's goal -1.5 is below the aux's range: its path runs into the flat part, stuck too
    x = torch.tensor([[1.0, 0.2], [-1.0, 0.2], [0.8, -0.3], [2.0, 0.1]], dtype=torch.float64)
    res = path_effect(mlp_for(2), ReluAux(), x, steps=4)
    assert res.stuck.tolist() == [False, True, False, True]
    assert (res.effect[[1, 3]] == 0).all() and (res.which[[1, 3]] == -1).all()
    assert (res.end[[1, 3]] == x[[1, 3]]).all() and (res.direction[[1, 3]] == 0).all()
    assert (res.effect[[0, 2]] != 0).all()
    torch.testing.assert_close(res.end[[0, 2], 0], torch.tensor([0.0, 0.2], dtype=torch.float64))
    with pytest.raises(FauxError, match="ignores x"):
        path_effect(mlp_for(2), ReluAux(), x[[1]])


@pytest.mark.parametrize("steps", [0, -2, 2.5, True])
def test_bad_steps_are_refused_in_one_line(xwv, steps):
    x, w, v = xwv
    with pytest.raises(ConfigError) as e:
        path_effect(linear(v), linear(w), x, steps=steps)
    assert "\n" not in str(e.value) and "steps" in str(e.value)
    with pytest.raises(ConfigError, match="steps must be an integer >= 1"):
        FAuxPathMethod(MethodConfig(params={"faux_path": {"steps": steps}}))


def test_option_errors(xwv):
    x, w, v = xwv
    with pytest.raises(ConfigError, match="known: steps, output, margin, aux_kind, sd"):
        PathOptions.of(step=3)
    with pytest.raises(ConfigError, match="aux_kind"):
        path_effect(linear(v), linear(w), x, aux_kind="probit")
    with pytest.raises(ConfigError, match="exactly one of target"):
        path_effect(None, linear(w), x)
    with pytest.raises(ConfigError, match="output"):
        path_effect(linear(v), linear(w), x, output="margin")


def test_batch_sizes_give_the_same_scores():
    g = torch.Generator().manual_seed(11)
    x = torch.randn(1000, D, generator=g, dtype=torch.float64)
    tar, aux = mlp(seed=5), mlp(k=3, seed=6)
    some = torch.arange(0, 1000, 20)         # one row at a time is slow: every 20th row
    for kind in ("logit", "softmax"):
        whole = path_effect(tar, aux, x, aux_kind=kind, batch_size=1000)
        one = path_effect(tar, aux, x[some], aux_kind=kind, batch_size=1)
        torch.testing.assert_close(one.effect, whole.effect[some], rtol=1e-12, atol=1e-14)
        torch.testing.assert_close(one.end, whole.end[some], rtol=1e-12, atol=1e-14)
        assert (one.which == whole.which[some]).all()


def test_black_box_target_needs_two_calls_or_k_plus_one_with_the_trace(xwv):
    x, w, _ = xwv
    tar, aux = mlp(seed=7), CurvedAux(w, 0.3 * w.flip(0))
    calls = []

    def proba(rows):
        calls.append(rows.shape[0])
        with torch.no_grad():
            return torch.sigmoid(tar(torch.as_tensor(rows))[:, 0]).numpy()

    ref = path_effect(tar, aux, x, steps=6, output="prob", trace=True)
    box = path_effect(None, aux, x, steps=6, target_fn=proba)
    assert len(calls) == 2
    torch.testing.assert_close(box.effect, ref.effect)
    calls.clear()
    traced = path_effect(None, aux, x, steps=6, target_fn=proba, trace=True)
    assert len(calls) == 6 + 1 and traced.trace.shape == (len(x), 7)
    torch.testing.assert_close(traced.trace, ref.trace)
    torch.testing.assert_close(traced.trace[:, -1] - traced.trace[:, 0], ref.effect)


# ----------------------------------------------------------------------------- the method


def test_registered_with_label_and_place_after_the_paper_rows():
    m = registry.get("faux_path")
    assert m is FAuxPathMethod and m.label == "fAux path" and m.paper_section == "A.12"
    assert m.paper_row is None and m.needs == {"target", "aux"}
    names = registry.names()
    assert names.index("faux_path") > names.index("faux_ig")
    assert names.index("faux_path") > names.index("lic_ub")
    assert "faux_path" in registry.names(provides=("target", "aux"), requires=("aux",))


def test_class_scores_abs_effect_under_the_configs_output(xwv):
    x, w, v = xwv
    aux, tar = mlp(seed=8), mlp(seed=9)
    data = TrainData(x, None, aux=lambda s: (aux, _info()))
    cfg = MethodConfig(options={"output": "logit"}, params={"faux_path": {"steps": 5}})
    fitted = FAuxPathMethod(cfg).fit(data, 0)
    s = fitted.score(tar, Batch(x))
    want = path_effect(tar, aux, x, steps=5, output="logit", support=support_box(x, 0.1))
    torch.testing.assert_close(s, want.effect.abs())
    assert fitted.info["aux_accuracy"] == 0.9 and fitted.info["path_stuck_rows"] == 0
    # its own output wins over the gradient tests'; the default K is 8
    cfg = MethodConfig(options={"output": "logit"}, params={"faux_path": {"output": "prob"}})
    s = FAuxPathMethod(cfg).fit(data, 0).score(tar, Batch(x))
    torch.testing.assert_close(s, path_effect(tar, aux, x, steps=8).effect.abs())
    assert PathOptions().steps == 8
