"""Table 1's claims decided with bootstrap intervals (faux.metrics.intervals): the weighted AP
is scikit-learn's; the three-state rule on synthetic draws stays undecided on equal methods,
holds on a clear difference, fails on the reverse, never decides opposite ways on two noisy
draws of one truth; the interval of a mean covers it about 95 % of the time."""

import numpy as np
import pytest
from sklearn.metrics import average_precision_score

from faux.metrics import intervals as I


def test_weighted_ap_is_sklearns_with_repeated_rows():
    g = np.random.default_rng(0)
    y = (g.random(300) < 0.3).astype(int)
    s = np.round(g.normal(size=300) + y, 1)          # ties included
    assert I.weighted_ap(y, s, np.ones(300))[0] == pytest.approx(average_precision_score(y, s),
                                                                 abs=1e-12)
    w = I.row_weights(300, 5, g)
    for row in w:
        idx = np.repeat(np.arange(300), row.astype(int))
        want = average_precision_score(y[idx], s[idx])
        assert I.weighted_ap(y, s, row)[0] == pytest.approx(want, abs=1e-12)
    assert np.isnan(I.weighted_ap(np.zeros(4), [1, 2, 3, 4], np.ones(4))[0])


def test_decide_reads_the_interval_against_the_bound():
    assert I.decide(0.01, 0.2) == I.HOLDS and I.decide(-0.2, -0.01) == I.FAILS
    assert I.decide(-0.1, 0.1) == I.UNDECIDED
    assert I.decide(0.0, 0.0, strict=True) == I.FAILS        # "above" is strict
    assert I.decide(0.0, 0.0, strict=False) == I.HOLDS       # ">=" holds on a tie
    assert I.decide(0.91, 0.95, 0.9, strict=False) == I.HOLDS
    assert I.decide(0.85, 0.89, 0.9, strict=False) == I.FAILS
    assert I.decide(float("nan"), 0.5) == I.UNDECIDED
    assert I.summary([I.HOLDS, I.FAILS, I.UNDECIDED, I.HOLDS]) == \
        "holds 2/4, fails 1/4, undecided 1/4"


N, RUNS, B = 300, 3, 400


def _world(g, shift_b=0.0):
    """A column: labels at rate 0.3; two methods whose scores are the labels plus noise, each
    run with its own strength (the aux seed's), method b stronger by ``shift_b``."""
    y = (g.random(N) < 0.3).astype(int)

    def runs(shift):
        return np.stack([(1.0 + shift + 0.1 * g.normal()) * y + g.normal(size=N)
                         for _ in range(RUNS)])
    return y, runs(0.0), runs(shift_b)


def _state(y, sa, sb, seed=I.SEED):
    cells = {m: {"scores": s, "ap_runs": [I.weighted_ap(y, r, np.ones(N))[0] for r in s],
                 "seeds": [0, 1, 2]} for m, s in (("a", sa), ("b", sb))}
    draws, what = I.cell_draws(y, cells, b=B, seed=seed)
    assert what == ["rows", "runs"]
    lo, hi = I.percentile_interval(draws["b"] - draws["a"])
    return I.decide(lo, hi)


def test_identical_methods_stay_undecided():
    g = np.random.default_rng(1)
    states = [_state(*_world(g)) for _ in range(60)]
    c = I.counts(states)
    assert c[I.UNDECIDED] >= 0.9 * len(states), c
    assert max(c[I.HOLDS], c[I.FAILS]) <= 0.05 * len(states) + 2, c


def test_a_clear_difference_holds_and_its_reverse_fails():
    g = np.random.default_rng(2)
    for _ in range(5):
        y, sa, sb = _world(g, shift_b=1.0)
        assert _state(y, sa, sb) == I.HOLDS
        assert _state(y, sb, sa) == I.FAILS


def test_two_machines_never_decide_opposite_ways():
    """Two machines = two independent noisy draws of the same truth (a small real edge of b,
    or none). The mean rule flips between them; the interval rule never says holds on one
    and fails on the other."""
    g = np.random.default_rng(3)
    opposite, mean_flips = 0, 0
    for rep in range(80):
        truth = 0.15 if rep % 2 else 0.0
        y, sa, sb = _world(g, truth)
        one = _state(y, sa + 0.05 * g.normal(size=sa.shape), sb + 0.05 * g.normal(size=sb.shape))
        two = _state(y, sa + 0.05 * g.normal(size=sa.shape), sb + 0.05 * g.normal(size=sb.shape))
        opposite += {one, two} == {I.HOLDS, I.FAILS}
        y2, sa2, sb2 = _world(g, truth)              # the mean rule on two draws of the truth
        m1 = np.mean([average_precision_score(y, r) for r in sb]) > np.mean(
            [average_precision_score(y, r) for r in sa])
        m2 = np.mean([average_precision_score(y2, r) for r in sb2]) > np.mean(
            [average_precision_score(y2, r) for r in sa2])
        mean_flips += m1 != m2
    assert opposite == 0
    assert mean_flips >= 10          # the old rule: verdicts that flip with the draw


def test_the_interval_of_a_mean_covers_it_about_95_percent_of_the_time():
    g = np.random.default_rng(4)
    hits = 0
    reps = 400
    for i in range(reps):
        x = g.normal(2.0, 1.5, size=60)
        lo, hi = I.bootstrap_mean(x, b=500, seed=i)
        hits += lo <= 2.0 <= hi
    assert 0.90 <= hits / reps <= 0.98, hits / reps


def test_the_bootstrap_is_reproducible_and_pairs_shared_seeds():
    g = np.random.default_rng(5)
    y, sa, sb = _world(g)
    cells = {"a": {"scores": sa, "ap_runs": [0.5] * 3, "seeds": [0, 1, 2]},
             "same": {"scores": sa, "ap_runs": [0.5] * 3, "seeds": [0, 1, 2]}}
    d1, _ = I.cell_draws(y, cells, b=50, seed=9)
    d2, _ = I.cell_draws(y, cells, b=50, seed=9)
    assert np.array_equal(d1["a"], d2["a"])
    assert np.array_equal(d1["a"], d1["same"])       # same rows, same run draws: paired
    d3, what = I.cell_draws(None, {"a": {"scores": None, "ap_runs": [0.2, 0.4], "seeds": None}},
                            b=200, seed=1)
    assert what == ["runs"] and set(np.round(d3["a"], 6)) <= {0.2, 0.3, 0.4}


def test_one_machine_is_one_line_whatever_order_its_thread_pools_were_loaded_in():
    from faux.reports.table1_intervals import machines

    blas = {"api": "openblas", "threads": 1}
    omp = {"api": "openmp", "threads": 1}
    base = {"cpu": "AMD EPYC", "kernels": "AVX2", "torch_threads": 1}
    jobs = [{"metrics": {"machine": {**base, "pools": pools}}}
            for pools in ([blas, omp], [omp, blas], [omp, blas])]
    other = {"metrics": {"machine": {**base, "cpu": "Intel Xeon", "pools": [blas]}}}
    out = machines([*jobs, other])
    assert [(m["cpu"], m["n_jobs"]) for m in out] == [("AMD EPYC", 3), ("Intel Xeon", 1)]
    assert machines([other, *jobs]) == out        # whatever order the jobs finished in


def test_the_same_results_in_another_job_order_write_the_same_bytes(tmp_path):
    from faux.reports.table1_intervals import write

    cells = {"Synthetic-2": {"faux_ng": {"ap": 0.3}, "fta_lin": {"ap": 0.35}},
             "Synthetic-1": {"fta": {"ap": 0.3}}}
    flipped = {col: dict(reversed(list(cells[col].items()))) for col in reversed(list(cells))}
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a = write({"cells": cells, "resampled": {"Synthetic-2": ["rows", "runs"]}},
              tmp_path / "a").read_bytes()
    b = write({"resampled": {"Synthetic-2": ["rows", "runs"]}, "cells": flipped},
              tmp_path / "b").read_bytes()
    assert a == b and a.index(b'"Synthetic-1"') < a.index(b'"Synthetic-2"')
