"""Gradient scorers (FTA, fAux eq. 9, fAux+NG eq. 10, fAux+IG) and LIC-UB: closed forms on
linear models, finite differences, invariances, chunking, and every bad-input error."""

import pytest
import torch
from torch import nn

import faux
from faux.errors import ConfigError, DataError, FauxError
from faux.methods.alignment import faux_from_gradients, ng_from_gradients
from faux.methods.autograd import input_gradients
from faux.methods.lic_ub import lic_ub

D = 6


def linear(w, b=0.0):
    m = nn.Linear(len(w), 1).double()
    with torch.no_grad():
        m.weight.copy_(torch.as_tensor(w, dtype=torch.float64).view(1, -1))
        m.bias.fill_(b)
    return m


def mlp(d=D, hidden=16, k=1, seed=0, dtype=torch.float64):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(d, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Softplus(),
                         nn.Linear(hidden, k)).to(dtype)


class Scaled(nn.Module):
    def __init__(self, model, c):
        super().__init__()
        self.model, self.c = model, c

    def forward(self, x):
        return self.c * self.model(x)


class Squeeze(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x).squeeze(1)


class Columns(nn.Module):
    """An MLP that reads only the columns ``cols`` of x (slicing inside forward)."""

    def __init__(self, cols, seed):
        super().__init__()
        self.cols = list(cols)
        self.net = mlp(len(self.cols), seed=seed)

    def forward(self, x):
        return self.net(x[:, self.cols])


@pytest.fixture
def xw():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(40, D, generator=g, dtype=torch.float64)
    w = torch.randn(D, generator=g, dtype=torch.float64)
    v = torch.randn(D, generator=g, dtype=torch.float64)
    return x, w, v


def dsig(z):
    return torch.sigmoid(z) * torch.sigmoid(-z)  # sigma'(z), accurate in both tails


# ----------------------------------------------------------------------------- closed forms


def test_fta_closed_form(xw):
    x, w, _ = xw
    tar = linear(w, 0.3)
    t = x @ w + 0.3
    got = faux.score("fta", tar, None, x)  # default output="prob", p=2
    torch.testing.assert_close(got, dsig(t) * w.norm(), rtol=1e-10, atol=1e-12)
    got = faux.score("fta", tar, None, x, output="logit", p=1)
    torch.testing.assert_close(got, torch.full_like(got, w.abs().sum().item()), rtol=1e-10,
                               atol=1e-12)
    got = faux.score("fta", tar, None, x, output="logit", p=float("inf"))
    torch.testing.assert_close(got, torch.full_like(got, w.abs().max().item()), rtol=1e-10,
                               atol=1e-12)


@pytest.mark.parametrize("output,aux_output", [("prob", "prob"), ("prob", None),
                                               ("logit", "logit"), ("logit", "prob")])
def test_faux_closed_form(xw, output, aux_output):
    x, w, v = xw
    tar, aux = linear(w, 0.3), linear(v, -0.2)
    t, a = x @ w + 0.3, x @ v - 0.2
    st = dsig(t) if output == "prob" else torch.ones_like(t)
    sa = dsig(a) if aux_output == "prob" else torch.ones_like(a)  # None -> aux logit
    want = (st * (w @ v) * sa).abs() / (sa**2 * (v @ v))
    opts = {"output": output} if aux_output is None else {"output": output,
                                                           "aux_output": aux_output}
    got = faux.score("faux", tar, aux, x, **opts)
    torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("output", ["prob", "logit"])
def test_faux_ng_closed_forms(xw, output):
    x, w, v = xw
    tar, aux = linear(w, 0.3), linear(v, -0.2)
    cos = (w @ v).abs() / (w.norm() * v.norm())
    got = faux.score("faux_ng", tar, aux, x, ng="sample", output=output)
    torch.testing.assert_close(got, torch.full_like(got, cos.item()), rtol=1e-10, atol=1e-12)
    # per-feature reading: dividing column j by the spread of w_j*s(x) leaves sign(w_j)
    want = (torch.sign(w) @ torch.sign(v)).abs() / D
    for ng in ("feature", "feature_rms"):
        got = faux.score("faux_ng", tar, aux, x, ng=ng, output=output)
        torch.testing.assert_close(got, torch.full_like(got, want.item()), rtol=1e-10, atol=1e-12)


def test_faux_ig_closed_form_linear(xw):
    # logit IG of a linear model from a zero baseline is x * w exactly (for any rule)
    x, w, v = xw
    tar, aux = linear(w, 0.3), linear(v, -0.2)
    want = (x**2 * w * v).sum(1).abs() / (x**2 * v**2).sum(1)
    for rule in ("midpoint", "trapezoid", "gausslegendre"):
        got = faux.score("faux_ig", tar, aux, x, output="logit", ig_steps=7, ig_method=rule)
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)


def test_default_ng_is_feature_and_differs_from_sample():
    x = torch.randn(200, D, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    x[:, 0] *= 30.0  # features on very different scales
    tar, aux = mlp(seed=1), mlp(seed=2)
    default = faux.score("faux_ng", tar, aux, x)
    torch.testing.assert_close(default, faux.score("faux_ng", tar, aux, x, ng="feature"))
    sample = faux.score("faux_ng", tar, aux, x, ng="sample")
    assert (default - sample).abs().max() > 1e-3
    for s in (default, sample):
        assert bool(((s >= 0) & (s <= 1 + 1e-12)).all())


# ----------------------------------------------------------------------------- gradients


@pytest.mark.parametrize("output", ["logit", "prob"])
@pytest.mark.parametrize("k", [1, 2])
def test_input_gradients_match_finite_differences(output, k):
    model = mlp(k=k, seed=4)
    x = torch.randn(5, D, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    g = input_gradients(model, x, output=output)
    assert g.shape == ((5, D) if k == 1 else (5, k, D))
    g = g.reshape(5, k, D)

    def f(z):
        with torch.no_grad():
            out = model(z)
        return torch.sigmoid(out) if output == "prob" else out

    h = 1e-6
    fd = torch.empty(5, k, D, dtype=torch.float64)
    for j in range(D):
        e = torch.zeros(D, dtype=torch.float64)
        e[j] = h
        fd[:, :, j] = (f(x + e) - f(x - e)) / (2 * h)
    torch.testing.assert_close(g, fd, rtol=1e-6, atol=1e-8)


def test_scores_equal_formula_on_mlp_gradients():
    x = torch.randn(30, D, dtype=torch.float64, generator=torch.Generator().manual_seed(6))
    tar, aux = mlp(seed=7), mlp(seed=8)
    gt = input_gradients(tar, x, output="prob")
    ga = input_gradients(aux, x, output="logit")
    want = (gt * ga).sum(1).abs() / (ga * ga).sum(1)
    torch.testing.assert_close(faux.score("faux", tar, aux, x), want, rtol=1e-10, atol=0)
    cos = (gt * ga).sum(1).abs() / (gt.norm(dim=1) * ga.norm(dim=1))
    torch.testing.assert_close(faux.score("faux_ng", tar, aux, x, ng="sample"), cos)
    torch.testing.assert_close(faux.score("fta", tar, aux, x), gt.norm(dim=1))


# ----------------------------------------------------------------------------- invariances


@pytest.mark.parametrize("ng", ["feature", "sample", "feature_rms"])
def test_faux_ng_invariant_to_output_scale(ng):
    x = torch.randn(50, D, dtype=torch.float64, generator=torch.Generator().manual_seed(9))
    tar, aux = mlp(seed=10), mlp(seed=11)
    base = faux.score("faux_ng", tar, aux, x, ng=ng, output="logit")
    for t, a in ((Scaled(tar, 7.0), aux), (tar, Scaled(aux, -0.01))):
        got = faux.score("faux_ng", t, a, x, ng=ng, output="logit")
        torch.testing.assert_close(got, base, rtol=1e-10, atol=1e-12)


def test_faux_scales_with_target_and_inversely_with_aux():
    x = torch.randn(50, D, dtype=torch.float64, generator=torch.Generator().manual_seed(12))
    tar, aux = mlp(seed=13), mlp(seed=14)
    base = faux.score("faux", tar, aux, x, output="logit")
    torch.testing.assert_close(faux.score("faux", Scaled(tar, 2.0), aux, x, output="logit"),
                               2 * base)
    torch.testing.assert_close(faux.score("faux", tar, Scaled(aux, 3.0), x, output="logit"),
                               base / 3)


@pytest.mark.parametrize("method", ["fta", "faux", "faux_ng", "faux_ig"])
def test_aux_shape_n1_equals_n(method):
    x = torch.randn(20, D, dtype=torch.float64, generator=torch.Generator().manual_seed(15))
    tar, aux = mlp(seed=16), mlp(seed=17)
    a = faux.score(method, tar, aux, x)
    b = faux.score(method, Squeeze(tar), Squeeze(aux), x)
    assert a.shape == b.shape == (20,)
    torch.testing.assert_close(a, b, rtol=0, atol=0)


@pytest.mark.parametrize("aux_output", ["prob", "logit"])
def test_two_output_aux_matches_pinv(xw, aux_output):
    x, w, v = xw
    v2 = torch.randn(D, dtype=torch.float64, generator=torch.Generator().manual_seed(18))
    aux = nn.Linear(D, 2).double()
    with torch.no_grad():
        aux.weight.copy_(torch.stack([v, v2]))
        aux.bias.copy_(torch.tensor([0.1, -0.4]))
    tar = mlp(seed=19)
    got = faux.score("faux", tar, aux, x, aux_output=aux_output)
    gt = input_gradients(tar, x, output="prob")
    J = input_gradients(aux, x, output=aux_output)  # (n, 2, d)
    want = torch.stack([(gt[i] @ torch.linalg.pinv(J[i])).abs().max() for i in range(len(x))])
    torch.testing.assert_close(got, want, rtol=1e-9, atol=1e-12)
    # one output of the pair alone is a different (lower-dimensional) test
    assert not torch.allclose(got, faux.score("faux", tar, linear(v, 0.1), x,
                                              aux_output=aux_output))


def test_rank_deficient_two_output_aux_is_finite():
    # two parallel aux outputs: J J^T singular; the cut-off gives the pseudo-inverse
    x = torch.randn(10, D, dtype=torch.float64, generator=torch.Generator().manual_seed(20))
    v = torch.randn(D, dtype=torch.float64, generator=torch.Generator().manual_seed(21))
    aux = nn.Linear(D, 2).double()
    with torch.no_grad():
        aux.weight.copy_(torch.stack([v, 2 * v]))
        aux.bias.zero_()
    tar = mlp(seed=22)
    got = faux.score("faux", tar, aux, x, output="logit")
    gt = input_gradients(tar, x, output="logit")
    want = (gt @ torch.linalg.pinv(torch.stack([v, 2 * v]))).abs().amax(1)
    torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)
    got32 = faux.score("faux", tar.float(), aux.float(), x.float(), output="logit")
    torch.testing.assert_close(got32.double(), want, rtol=1e-4, atol=1e-7)


def test_target_ignoring_c_block_scores_zero():
    d1, d2 = 4, 3
    x = torch.randn(60, d1 + d2, dtype=torch.float64, generator=torch.Generator().manual_seed(23))
    fair = Columns(range(d1), seed=24)
    unfair = Columns(range(d1 + d2), seed=25)
    aux = Columns(range(d1, d1 + d2), seed=26)
    for method in ("faux", "faux_ng", "faux_ig"):
        s_fair = faux.score(method, fair, aux, x)
        s_unfair = faux.score(method, unfair, aux, x)
        assert s_fair.abs().max() < 1e-12, method
        assert s_unfair.mean() > 1e-3, method


def test_zero_gradient_rows_score_zero():
    # a ReLU aux that is dead on part of the rows: those rows score 0 (faux) and 0 (NG)
    aux = nn.Sequential(nn.Linear(D, 1), nn.ReLU()).double()
    with torch.no_grad():
        aux[0].weight.fill_(1.0)
        aux[0].bias.zero_()
    x = torch.randn(30, D, dtype=torch.float64, generator=torch.Generator().manual_seed(27))
    dead = x.sum(1) < 0
    tar = mlp(seed=28)
    for method in ("faux", "faux_ng"):
        s = faux.score(method, tar, aux, x)
        assert bool((s[dead] == 0).all()) and bool((s[~dead] > 0).all())


def test_confident_prob_target_does_not_underflow(xw):
    # float32 logits of 60-80: sigma' ~ 1e-30, whose square underflows; scores stay exact
    x, w, v = xw
    x = x[:10]
    w = w / w.norm()
    x = x - (x @ w)[:, None] * w + torch.linspace(60, 80, 10, dtype=torch.float64)[:, None] * w
    tar, aux = linear(w).float(), linear(w * (v.abs() + 0.5)).float()  # same signs as w
    u = w * (v.abs() + 0.5)
    for ng, want in (("sample", (w @ u).abs() / u.norm()), ("feature", 1.0),
                     ("feature_rms", 1.0)):  # feature readings: |sign(w).sign(u)| / d
        got = faux.score("faux_ng", tar, aux, x.float(), ng=ng)
        torch.testing.assert_close(got, torch.full_like(got, float(want)), rtol=1e-5, atol=0)
    aux = linear(v).float()
    got = faux.score("faux", aux, tar, x.float(), aux_output="prob", output="logit")
    want = (w @ v).abs() / dsig(x @ w)  # |v.w| sigma'/(sigma'^2 |w|^2), |w| = 1
    torch.testing.assert_close(got.double(), want, rtol=1e-4, atol=0)


# ----------------------------------------------------------------------------- dtype, chunks


@pytest.mark.parametrize("method", ["fta", "faux", "faux_ng", "faux_ig"])
def test_dtype_kept_and_chunking_invariant(method):
    x = torch.randn(37, D, dtype=torch.float64, generator=torch.Generator().manual_seed(29))
    tar, aux = mlp(seed=30), mlp(k=2, seed=31)
    whole = faux.score(method, tar, aux, x)
    assert whole.dtype == torch.float64 and whole.shape == (37,)
    chunked = faux.score(method, tar, aux, x, batch_size=5)
    torch.testing.assert_close(chunked, whole, rtol=1e-12, atol=1e-14)
    s32 = faux.score(method, tar.float(), aux.float(), x.float())
    assert s32.dtype == torch.float32
    torch.testing.assert_close(s32.double(), whole, rtol=2e-3, atol=1e-5)


def test_no_param_grads_eval_mode_restored_and_works_under_inference_mode():
    tar = nn.Sequential(nn.Linear(D, 16), nn.Dropout(0.5), nn.Tanh(), nn.Linear(16, 1)).double()
    aux = mlp(seed=32)
    tar.train()
    x = torch.randn(25, D, dtype=torch.float64, generator=torch.Generator().manual_seed(33))
    a = faux.score("faux", tar, aux, x)
    b = faux.score("faux", tar, aux, x)
    torch.testing.assert_close(a, b, rtol=0, atol=0)  # dropout off while scoring
    assert tar.training and tar[1].training and aux.training  # modes restored
    with torch.inference_mode():
        xi = x.clone()
        c = faux.score("faux", tar, aux, xi)
    with torch.no_grad():
        d = faux.score("faux", tar, aux, x)
    torch.testing.assert_close(c, a, rtol=0, atol=0)
    torch.testing.assert_close(d, a, rtol=0, atol=0)
    assert all(p.grad is None for p in list(tar.parameters()) + list(aux.parameters()))
    assert not a.requires_grad


# ----------------------------------------------------------------------------- LIC-UB


def test_lic_ub_closed_form(xw):
    x, w, _ = xw
    tar = linear(w, 0.3)
    dx = torch.randn(len(x), D, dtype=torch.float64, generator=torch.Generator().manual_seed(34))
    want = (dsig(x @ w + 0.3) * (dx @ w)).abs()
    torch.testing.assert_close(lic_ub(tar, x, dx), want, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(lic_ub(tar, x, dx, output="logit"), (dx @ w).abs())
    dx2 = torch.stack([dx, -3 * dx], dim=1)  # (n, 2, d): infinity norm over the two
    torch.testing.assert_close(lic_ub(tar, x, dx2), 3 * want)
    with pytest.raises(DataError, match="dx_dc has shape"):
        lic_ub(tar, x, dx[:, :3])


# ----------------------------------------------------------------------------- errors


class Const(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(D, 1).double()

    def forward(self, x):
        return self.lin(x) * 0.0 + 1.0


class Inf(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(D, 1).double()

    def forward(self, x):
        out = self.lin(x)
        return torch.where(x[:, :1] > 0, out / 0.0, out)


class BadGrad(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(D, 1).double()

    def forward(self, x):
        return self.lin(x) + torch.sqrt(x[:, :1].abs())  # finite value, infinite slope at 0


def test_errors():
    x = torch.randn(10, D, dtype=torch.float64, generator=torch.Generator().manual_seed(35))
    tar, aux = mlp(seed=36), mlp(seed=37)
    with pytest.raises(ConfigError, match="unknown gradient method 'nope'; valid: fta, faux"):
        faux.score("nope", tar, aux, x)
    with pytest.raises(ConfigError, match="unknown option"):
        faux.score("faux", tar, aux, x, ig_step=3)
    with pytest.raises(ConfigError, match="output="):
        faux.score("faux", tar, aux, x, output="probability")
    with pytest.raises(ConfigError, match="ng="):
        faux.score("faux_ng", tar, aux, x, ng="row")
    with pytest.raises(ConfigError, match="batch_size"):
        faux.score("faux", tar, aux, x, batch_size=0)
    with pytest.raises(ConfigError, match="p must be"):
        faux.score("fta", tar, aux, x, p=0)
    with pytest.raises(ConfigError, match="needs an aux model"):
        faux.score("faux", tar, None, x)
    with pytest.raises(ConfigError, match="ig_method"):
        faux.score("faux_ig", tar, aux, x, ig_method="simpson")
    with pytest.raises(ConfigError, match="ig_steps"):
        faux.score("faux_ig", tar, aux, x, ig_steps=0)
    with pytest.raises(ConfigError, match="ig_baseline"):
        faux.score("faux_ig", tar, aux, x, ig_baseline="median")
    with pytest.raises(DataError, match="ig_baseline has shape"):
        faux.score("faux_ig", tar, aux, x, ig_baseline=torch.zeros(D + 1, dtype=torch.float64))


def test_bad_x_errors():
    tar, aux = mlp(seed=38), mlp(seed=39)
    x = torch.randn(10, D, dtype=torch.float64)
    with pytest.raises(DataError, match=r"shape \(n, d\)"):
        faux.score("faux", tar, aux, x[0])
    with pytest.raises(DataError, match="floating"):
        faux.score("faux", tar, aux, x.long())
    xn = x.clone()
    xn[[2, 5], 1] = float("nan")
    with pytest.raises(DataError, match="non-finite values at 2 rows"):
        faux.score("faux", tar, aux, xn)


def test_model_errors():
    x = torch.randn(10, D, dtype=torch.float64, generator=torch.Generator().manual_seed(40))
    tar, aux = mlp(seed=41), mlp(seed=42)
    with pytest.raises(FauxError, match="aux model's gradient is zero everywhere: it ignores x"):
        faux.score("faux", tar, Const(), x)
    for method in ("faux_ng", "faux_ig"):
        with pytest.raises(FauxError, match="zero everywhere"):
            faux.score(method, tar, Const(), x)
    n_pos = int((x[:, 0] > 0).sum())
    with pytest.raises(FauxError, match=f"non-finite values in target outputs at {n_pos} rows"):
        faux.score("faux", Inf(), aux, x)
    with pytest.raises(FauxError, match="non-finite values in aux outputs"):
        faux.score("faux", tar, Inf(), x, batch_size=3)
    xz = x.clone()
    xz[[1, 3, 4], 0] = 0.0
    with pytest.raises(FauxError, match="non-finite values in aux gradients at 3 rows"):
        faux.score("faux", tar, BadGrad(), xz)
    # width: pre-checked on Sequentials, and caught from the call for other modules
    with pytest.raises(FauxError, match="x has 5 columns but the target model's first layer "
                                        "reads 6"):
        faux.score("faux", tar, aux, x[:, :5])
    with pytest.raises(FauxError, match="aux model on x with 5 columns failed .*reads 6"):
        faux.score("faux", Columns(range(3), seed=0), BadGrad(), x[:, :5])
    with pytest.raises(FauxError, match="target model returned 2 outputs"):
        faux.score("faux", mlp(k=2), aux, x)
    with pytest.raises(FauxError, match="target model's parameters are torch.float32"):
        faux.score("faux", mlp(dtype=torch.float32), aux, x)
    with pytest.raises(FauxError, match="aux model's parameters are on meta"):
        faux.score("faux", tar, mlp().to("meta"), x)
    with pytest.raises(FauxError, match="must be a torch.nn.Module"):
        faux.score("faux", tar, lambda z: z.sum(1), x)


def test_combiners_accept_precomputed_gradients():
    g_t = torch.tensor([[1.0, 0.0], [1.0, 1.0]], dtype=torch.float64)
    g_a = torch.tensor([[2.0, 0.0], [0.0, 0.0]], dtype=torch.float64)
    torch.testing.assert_close(faux_from_gradients(g_t, g_a),
                               torch.tensor([0.5, 0.0], dtype=torch.float64), rtol=1e-10, atol=0)
    torch.testing.assert_close(ng_from_gradients(g_t, g_a, ng="sample"),
                               torch.tensor([1.0, 0.0], dtype=torch.float64))


# ------------------------------------------------------------------ target part memoised


class Counting(nn.Module):
    """Counts the rows it is called on (IG calls it on every path point)."""

    def __init__(self, model):
        super().__init__()
        self.model, self.rows = model, 0

    def forward(self, x):
        self.rows += x.shape[0]
        return self.model(x)


@pytest.mark.parametrize("method", ["fta", "faux", "faux_ng", "faux_ig"])
def test_target_memo_computes_the_target_once_and_changes_no_score(xw, method):
    """A cell scores one target with one aux per seed: with ``target_memo`` the target's part
    (gradients, or IG attributions) is computed once, and every score equals, bit for bit,
    the score of a separate call (the cores work in place on copies, not on the memo)."""
    from faux.methods.gradients import score

    x, _, _ = xw
    target = Counting(mlp(seed=3))
    auxes = [mlp(k=1 if i else 2, seed=10 + i) for i in range(3)]
    opts = {"ig_steps": 8} if method == "faux_ig" else {}
    alone = [score(method, target, a, x, **opts) for a in auxes]
    rows_alone = target.rows
    target.rows, memo = 0, {}
    shared = [score(method, target, a, x, target_memo=memo, **opts) for a in auxes]
    assert target.rows == rows_alone // 3                 # the target ran for the first only
    for s0, s1 in zip(alone, shared):
        assert torch.equal(s0, s1)
    x2 = x.clone()                                        # another tensor: computed anew
    score(method, target, auxes[0], x2, target_memo=memo, **opts)
    assert target.rows == 2 * rows_alone // 3
    with torch.no_grad():                                 # the target's weights change: anew
        target.model[0].bias.add_(0.1)
    moved = score(method, target, auxes[0], x, target_memo=memo, **opts)
    assert target.rows == rows_alone
    assert torch.equal(moved, score(method, target, auxes[0], x, **opts))
    if method == "faux_ig":                               # other IG settings: anew
        target.rows = 0
        score(method, target, auxes[0], x, target_memo=memo, ig_steps=4)
        assert target.rows == rows_alone // 3 // 8 * 4


def test_a_memo_shared_by_two_tests_computes_the_aux_once_and_changes_no_score(xw):
    """fAux and fAux+NG scoring the same rows with one memo: the target and the aux each run
    once, and both scores equal, bit for bit, those of separate calls."""
    from faux.methods.gradients import score

    x, _, _ = xw
    target, aux = Counting(mlp(seed=3)), Counting(mlp(k=2, seed=11))
    alone = [score(m, target, aux, x) for m in ("faux", "faux_ng")]
    t_rows, a_rows = target.rows, aux.rows
    target.rows = aux.rows = 0
    memo = {}
    shared = [score(m, target, aux, x, target_memo=memo) for m in ("faux", "faux_ng")]
    assert (target.rows, aux.rows) == (t_rows // 2, a_rows // 2)
    for s0, s1 in zip(alone, shared):
        assert torch.equal(s0, s1)
