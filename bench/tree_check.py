"""What checking a tree file's structure costs beside predicting with it: a random forest of
300 trees (~6,500 nodes each) and a million-node tree numbered in random order, each checked
by ``faux.audit.loaders.tree_check`` and, for the forest, predicted on its 20,000 training rows;
prints the seconds and the ratio check / predict.

    python bench/tree_check.py
"""

from __future__ import annotations

import copy
import time

import numpy as np


def main() -> None:
    from sklearn.ensemble import RandomForestClassifier

    from faux.audit.loaders.tree_check import check_tree, estimator_trees

    rng = np.random.default_rng(0)
    X = rng.normal(size=(20_000, 8))
    y = (X[:, 0] + rng.normal(size=len(X)) > 0).astype(int)
    one = RandomForestClassifier(1, random_state=0).fit(X, y).estimators_[0]
    forest = RandomForestClassifier(1, random_state=0).fit(X, y)
    forest.estimators_ = [copy.deepcopy(one) for _ in range(300)]
    forest.n_estimators = 300
    t0 = time.perf_counter()
    estimator_trees(forest)
    check_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    forest.predict_proba(X)
    predict_s = time.perf_counter() - t0
    print(f"forest of 300 trees x {one.tree_.node_count:,} nodes: check {check_s:.3f} s, "
          f"predict 20,000 rows {predict_s:.3f} s, check/predict {check_s / predict_s:.2f}")

    n = 2**20 - 1
    i = np.arange(n)
    left, right = np.where(2 * i + 1 < n, 2 * i + 1, -1), np.where(2 * i + 2 < n, 2 * i + 2, -1)
    new = np.concatenate([[0], 1 + rng.permutation(n - 1)])
    split = left >= 0
    L, R = np.full(n, -1), np.full(n, -1)
    L[new[split]], R[new[split]] = new[left[split]], new[right[split]]
    t0 = time.perf_counter()
    check_tree(L, R, L < 0, feature=np.zeros(n, int), n_features=1, threshold=np.zeros(n),
               value=np.zeros((n, 1, 2)))
    print(f"one tree of {n:,} nodes in random order: check {time.perf_counter() - t0:.3f} s")


if __name__ == "__main__":
    main()
