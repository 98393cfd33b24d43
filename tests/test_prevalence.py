"""Prevalence-aware AP: normalised AP, the floor of AP at a positive rate, and the caps the
paper's Table 1 puts on each column's prevalence."""

import math

import numpy as np
import pytest

from faux.errors import FauxError
from faux.metrics.ranking import average_precision, min_ap, normalised_ap, prevalence_cap
from faux.reports.paper_values import TABLE1, table1_prevalence_caps


def test_normalised_ap_hand_values():
    assert normalised_ap(0.3, 0.3) == 0.0                 # chance
    assert normalised_ap(1.0, 0.3) == 1.0                 # perfect
    assert normalised_ap(0.65, 0.3) == pytest.approx(0.5)
    assert normalised_ap(0.2, 0.6) == pytest.approx(-1.0)  # below chance is negative


@pytest.mark.parametrize("ap,pi", [(0.5, 0.0), (1.0, 1.0), (float("nan"), 0.3), (0.5, float("nan"))])
def test_normalised_ap_is_nan_where_undefined(ap, pi):
    assert math.isnan(normalised_ap(ap, pi))


def test_min_ap_hand_values_and_ends():
    assert min_ap(0.0) == 0.0 and min_ap(1.0) == 1.0
    assert min_ap(0.5) == pytest.approx(1 - math.log(2))            # 0.3069: the paper's FTA
    assert min_ap(0.96) == pytest.approx(0.8659, abs=1e-4)
    assert min_ap(0.99) == pytest.approx(0.9535, abs=1e-4)
    assert math.isnan(min_ap(1.5))
    assert all(np.diff([min_ap(p) for p in np.linspace(0.01, 0.99, 50)]) > 0)   # increasing


def test_min_ap_is_the_ap_of_the_worst_ranking_on_many_rows():
    n, pi = 20000, 0.3
    y = np.r_[np.ones(int(n * pi)), np.zeros(n - int(n * pi))]
    worst = np.arange(n, dtype=float)                # positives first in y, scored lowest
    assert average_precision(y, worst) == pytest.approx(min_ap(pi), abs=2e-3)


def test_ties_give_the_positive_rate():
    y = np.array([1, 0, 0, 1, 0, 0, 0, 1, 0, 0])
    assert average_precision(y, np.zeros(10)) == pytest.approx(0.3)
    assert normalised_ap(average_precision(y, np.zeros(10)), y.mean()) == pytest.approx(0.0)


def test_prevalence_cap_inverts_min_ap_and_refuses_non_aps():
    for pi in (0.1, 0.3, 0.5, 0.9):
        assert prevalence_cap(min_ap(pi)) == pytest.approx(pi, abs=1e-9)
    assert prevalence_cap(0.0) == pytest.approx(0.0, abs=1e-9)
    with pytest.raises(FauxError, match=r"lies in \[0, 1\]"):
        prevalence_cap(1.2)


def test_paper_caps_from_its_lowest_ap_per_column():
    caps = table1_prevalence_caps()
    assert caps["Synthetic-1"] == pytest.approx(prevalence_cap(0.307))
    assert caps["Synthetic-1"] == pytest.approx(0.50, abs=0.005)
    assert caps["Synthetic-5"] == pytest.approx(0.68, abs=0.005)     # lowest AP there 0.466
    assert caps["Synthetic-6"] == pytest.approx(0.48, abs=0.005)
    assert caps["Synthetic-7"] == pytest.approx(0.56, abs=0.005)
    # every cap comes from the lowest AP of its column
    lowest = min(v[5][0] for v in TABLE1.values())
    assert caps["Synthetic-6"] == pytest.approx(prevalence_cap(lowest))
