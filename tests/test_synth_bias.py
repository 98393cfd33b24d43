import numpy as np
import pytest

from faux.errors import ConfigError, DataError
from faux.synth.bias import (
    feasible_interval,
    joint_from_q,
    kl_divergence,
    mutual_information,
    p_bias,
    p_max,
    p_min,
    sample_joint,
)

# (P(C=1), P(Y=1)): magic/backache, australian/credit_g, balanced, skewed
MARGINALS = [(0.352, 0.139), (0.445, 0.7), (0.5, 0.5), (0.9, 0.2)]


@pytest.mark.parametrize("pc,py", MARGINALS)
@pytest.mark.parametrize("bias", [0.0, 0.25, 0.5, 1.0])
def test_marginals_preserved(pc, py, bias):
    P = p_bias(pc, py, bias)
    assert P.shape == (2, 2) and (P >= 0).all()
    assert P.sum() == pytest.approx(1.0)
    assert P[1].sum() == pytest.approx(pc)       # P(C=1)
    assert P[:, 1].sum() == pytest.approx(py)    # P(Y=1)


@pytest.mark.parametrize("pc,py", MARGINALS)
def test_bias0_is_independence(pc, py):
    P = p_bias(pc, py, 0.0)
    np.testing.assert_allclose(P, np.outer(P.sum(1), P.sum(0)), atol=1e-15)
    assert mutual_information(P) == pytest.approx(0.0, abs=1e-15)


@pytest.mark.parametrize("pc,py", MARGINALS)
def test_mutual_information_grows_with_bias(pc, py):
    mi = [mutual_information(p_bias(pc, py, b)) for b in np.linspace(0, 1, 11)]
    assert all(b > a for a, b in zip(mi, mi[1:]))


@pytest.mark.parametrize("pc,py", MARGINALS)
def test_p_max_is_the_argmax_and_an_endpoint(pc, py):
    lo, hi = feasible_interval(pc, py)
    pmin = p_min(pc, py)
    qs = np.linspace(lo, hi, 4001)
    brute = max(kl_divergence(np.clip(joint_from_q(pc, py, q), 0, None), pmin) for q in qs)
    P = p_max(pc, py)
    assert kl_divergence(P, pmin) == pytest.approx(brute, rel=1e-9)
    assert min(abs(P[1, 1] - lo), abs(P[1, 1] - hi)) < 1e-12
    assert (P == 0).sum() >= 1  # an endpoint makes a zero cell


def test_p_max_direction_matches_known_pairs():
    # magic/backache: P(C=1,Y=1) at the upper end min(pc, py); australian/credit_g: lower end
    assert p_max(0.352, 0.139)[1, 1] == pytest.approx(0.139)
    assert p_max(0.445, 0.7)[1, 1] == pytest.approx(0.145)


@pytest.mark.parametrize("pc,py", MARGINALS)
@pytest.mark.parametrize("bias", [0.0, 0.5, 1.0])
def test_sampled_joint_matches(pc, py, bias):
    P = p_bias(pc, py, bias)
    c, y = sample_joint(P, 20_000, np.random.default_rng(0))
    emp = np.zeros((2, 2))
    np.add.at(emp, (c, y), 1)
    emp /= emp.sum()
    assert np.abs(emp - P).max() < 0.02
    # zero cells of P (bias 1) are never drawn
    assert (emp[P == 0] == 0).all()
    assert c.dtype == np.int64 and y.dtype == np.int64


def test_sampling_is_deterministic_in_seed():
    P = p_bias(0.3, 0.6, 0.5)
    a = sample_joint(P, 100, np.random.default_rng(5))
    b = sample_joint(P, 100, np.random.default_rng(5))
    assert all((u == v).all() for u, v in zip(a, b))


@pytest.mark.parametrize("bias", [-0.1, 1.5, float("nan")])
def test_bias_out_of_range(bias):
    with pytest.raises(ConfigError, match="bias must be in"):
        p_bias(0.3, 0.4, bias)


@pytest.mark.parametrize("pc,py", [(0.0, 0.5), (0.5, 1.0), (1.2, 0.3)])
def test_degenerate_marginals(pc, py):
    with pytest.raises(DataError, match="binary label"):
        p_bias(pc, py, 0.5)


def test_bad_joint_rejected():
    with pytest.raises(ConfigError):
        sample_joint(np.array([[0.5, 0.5], [0.5, 0.5]]), 10, np.random.default_rng(0))
