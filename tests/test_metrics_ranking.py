"""faux.metrics.ranking against scikit-learn and hand-computed cases (ties, one class,
top-fraction labels): every synthetic AP in Table 1 / Fig. 5 / Fig. 11 goes through it."""

import math

import numpy as np
import pytest
import torch
from sklearn.metrics import average_precision_score, ndcg_score, roc_auc_score

from faux.errors import DataError, FauxError
from faux.metrics.ranking import (
    ap_top_fraction,
    auroc,
    average_precision,
    ndcg,
    ndcg_by_name,
    random_ndcg,
    separation_auroc,
    top_fraction_labels,
)


def test_ap_hand_computed():
    # ranks: +, -, +, -  -> precision at the positives 1 and 2/3
    assert average_precision([1, 0, 1, 0], [0.9, 0.8, 0.7, 0.1]) == pytest.approx((1 + 2 / 3) / 2)
    # perfect ranking, and the one positive ranked last of n
    assert average_precision([0, 0, 1, 1], [0.1, 0.2, 0.8, 0.9]) == 1.0
    assert average_precision([1, 0, 0, 0, 0], [0.0, 1, 2, 3, 4]) == pytest.approx(1 / 5)


def test_ap_ties_form_one_threshold():
    # both at one score: one threshold, precision 1/2 at recall 1
    assert average_precision([1, 0], [0.5, 0.5]) == pytest.approx(0.5)
    # threshold 1: P = 1/2, R = 1/2; threshold 0: P = 2/3, R = 1
    assert average_precision([1, 0, 1], [1.0, 1.0, 0.0]) == pytest.approx(0.5 * 0.5 + 0.5 * 2 / 3)
    # a constant scorer's AP is the positive rate, whatever the order of rows
    y = np.array([1, 0, 0, 1, 0, 0, 0, 1, 0, 0])
    assert average_precision(y, np.zeros(10)) == pytest.approx(0.3)
    assert average_precision(y[::-1], np.zeros(10)) == pytest.approx(0.3)


def test_ap_matches_sklearn_and_is_rank_based():
    rng = np.random.default_rng(0)
    for _trial in range(20):
        n = int(rng.integers(5, 300))
        y = (rng.random(n) < rng.uniform(0.05, 0.9)).astype(int)
        if y.min() == y.max():
            continue
        s = np.round(rng.normal(size=n) + y * rng.uniform(0, 2), 1)  # many ties
        ours = average_precision(torch.from_numpy(y), torch.from_numpy(s).float())
        assert ours == pytest.approx(average_precision_score(y, s.astype(np.float32)), abs=1e-12)
        assert average_precision(y, np.exp(s)) == pytest.approx(average_precision(y, s))


def test_ap_tells_a_good_scorer_from_a_constant_one():
    rng = np.random.default_rng(1)
    y = (rng.random(500) < 0.2).astype(int)
    good = y + 0.3 * rng.normal(size=500)
    assert average_precision(y, good) > 0.8 > 0.3 > average_precision(y, np.ones(500))


def test_one_class_gives_nan_not_zero():
    assert math.isnan(average_precision([0, 0, 0], [0.1, 0.5, 0.2]))  # all negative
    assert math.isnan(average_precision([1, 1], [0.1, 0.5]))  # all positive
    assert math.isnan(auroc([0, 0, 0], [1, 2, 3]))


@pytest.mark.parametrize("labels, scores, match", [
    ([1, 0], [0.5], "differ in length"),
    ([], [], "empty"),
    ([0, 2, 1], [0.1, 0.2, 0.3], "0/1"),
    ([0, 1], [np.nan, 0.2], "non-finite"),
    ([0, 1], [np.inf, 0.2], "non-finite"),
])
def test_bad_input_is_an_error(labels, scores, match):
    with pytest.raises(FauxError, match=match):
        average_precision(labels, scores)
    with pytest.raises(FauxError, match=match):
        auroc(labels, scores)


def test_top_fraction_labels():
    ifs = np.array([0.1, 0.9, 0.3, 0.8, 0.2, 0.0, 0.7, 0.6, 0.5, 0.4])
    lab = top_fraction_labels(ifs, 0.3)
    assert lab.tolist() == [0, 1, 0, 1, 0, 0, 1, 0, 0, 0]  # the 3 largest
    assert top_fraction_labels(ifs, 1.0).sum() == 10
    assert top_fraction_labels(ifs, 0.01).sum() == 1  # at least one positive
    assert top_fraction_labels(np.arange(2000.0), 0.3).sum() == 600
    # ties at the cut: exactly k marked, the earlier rows win
    assert top_fraction_labels([1.0, 1.0, 1.0, 0.0], 0.5).tolist() == [1, 1, 0, 0]
    assert top_fraction_labels(torch.tensor([0.0, 2.0, 2.0, 2.0]), 0.5).tolist() == [0, 1, 1, 0]
    for bad in (0.0, -0.1, 1.5):
        with pytest.raises(FauxError, match="fraction"):
            top_fraction_labels(ifs, bad)
    with pytest.raises(FauxError, match="non-finite"):
        top_fraction_labels([0.1, np.nan], 0.5)


def test_ap_top_fraction_uses_the_top_labels():
    rng = np.random.default_rng(2)
    ifs = rng.exponential(size=200)
    assert ap_top_fraction(ifs, ifs, 0.3) == 1.0  # the ground truth ranks itself perfectly
    assert ap_top_fraction(ifs, -ifs, 0.3) < 0.3  # reversed: below the 0.3 positive rate
    noise = rng.normal(size=200)
    assert ap_top_fraction(ifs, noise, 0.3) == pytest.approx(
        average_precision_score(top_fraction_labels(ifs, 0.3), noise))


def test_auroc_hand_computed_and_sklearn():
    # pairs (neg, pos): (0.1,0.35) ok, (0.1,0.8) ok, (0.4,0.35) wrong, (0.4,0.8) ok -> 3/4
    assert auroc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]) == pytest.approx(0.75)
    assert auroc([0, 1], [0.5, 0.5]) == pytest.approx(0.5)  # a tie counts one half
    rng = np.random.default_rng(3)
    y = (rng.random(300) < 0.4).astype(int)
    s = np.round(rng.normal(size=300) + y, 1)
    assert auroc(y, s) == pytest.approx(roc_auc_score(y, s), abs=1e-12)


def test_separation_auroc():
    a = np.array([0.9, 0.8, 0.7])
    assert separation_auroc(a, a) == pytest.approx(0.5)
    assert separation_auroc(a, a - 1) == 1.0
    assert separation_auroc(a - 1, a) == 0.0


def test_ndcg_hand_computed_and_sklearn():
    # relevance 3, 2, 0 ranked in reverse: DCG = 2/log2(3) + 3/log2(4); IDCG = 3 + 2/log2(3)
    expected = (2 / math.log2(3) + 3 / 2) / (3 + 2 / math.log2(3))
    assert ndcg([3, 2, 0], [0, 1, 2]) == pytest.approx(expected)
    assert ndcg([3, 2, 0], [5, 4, 1]) == pytest.approx(1.0)
    assert ndcg([3, 2, 0, 1], [0, 1, 2, 3], k=2) == pytest.approx(
        ndcg_score([[3, 2, 0, 1]], [[0, 1, 2, 3]], k=2))
    with pytest.raises(FauxError, match="differ"):
        ndcg([1, 2], [1])
    with pytest.raises(FauxError, match="at least 2"):
        ndcg([1.0], [1.0])
    with pytest.raises(FauxError, match=">= 0"):
        ndcg([-1.0, 2.0], [1.0, 2.0])


def test_ndcg_by_name_closed_form_and_the_random_floor():
    rel = {"a": 3.0, "b": 2.0, "c": 1.0}
    assert ndcg_by_name({"c": 0.1, "a": 9.0, "b": 5.0}, rel) == pytest.approx(1.0)
    # reversed ranking: DCG = 1/log2(2) + 2/log2(3) + 3/log2(4); IDCG = 3 + 2/log2(3) + 1/2
    dcg = 1 + 2 / math.log2(3) + 3 / 2
    idcg = 3 + 2 / math.log2(3) + 1 / 2
    assert ndcg_by_name({"a": 1.0, "b": 2.0, "c": 3.0}, rel) == pytest.approx(dcg / idcg)
    with pytest.raises(DataError, match="lacks 1 feature"):
        ndcg_by_name({"a": 1.0, "b": 2.0}, rel)
    # the random floor lies strictly between the worst and the best ranking
    assert dcg / idcg < random_ndcg(rel, 200, seed=0) < 1.0
