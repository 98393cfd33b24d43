"""How well a dataset's generator keeps its label relationship (paper A.7.3)."""

from __future__ import annotations

import numpy as np
import torch

from faux.synth.dataset_generator import DatasetGenerator
from faux.synth.generator_settings import PAPER_MODEL_SCORE, check_decoding


def generator_scores(gen: DatasetGenerator, *, decoding: str = "gumbel", tau: float = 0.3,
                     n: int = 5000, seed: int = 0, root=None) -> dict:
    """How well a generator keeps its dataset's label relationship (paper A.7.3).

    ``model_score_*``: a logistic regression trained on ``n`` sampled ``(x, label)`` pairs
    (labels at the real frequency), evaluated on the real encoded data (accuracy, balanced
    accuracy, ROC AUC). ``sep_synth_auc`` / ``sep_real_auc``: 5-fold cross-validated ROC AUC
    of a logistic regression on synthetic / real encoded data (label separability).
    ``synth_on_synth_acc``: accuracy of the synthetic-trained classifier on fresh samples.
    ``mlp_synth_auc`` / ``mlp_real_auc`` (and ``_acc``): a small MLP (sklearn, 64x64, early
    stopping) trained on 70% and tested on 30% of synthetic / real data: how readable the
    label is to a nonlinear model such as the auxiliary and target models.
    ``peak_synth`` / ``peak_real``: mean over features of the mean largest mode probability
    of a block (how one-hot the rows are), a check of the decoded marginal shape.
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import accuracy_score, balanced_accuracy_score, roc_auc_score
    from sklearn.model_selection import StratifiedKFold, cross_val_predict

    check_decoding(decoding)
    xr, yr = gen.real_encoded(root)
    xs, ys = gen.sample(n, decoding=decoding, tau=tau, seed=seed)
    xs2, ys2 = gen.sample(n, decoding=decoding, tau=tau, seed=seed + 1)
    xs, ys, xs2, ys2 = xs.numpy(), ys.numpy(), xs2.numpy(), ys2.numpy()
    clf = LogisticRegression(max_iter=2000).fit(xs, ys)
    p_real = clf.predict_proba(xr)[:, 1]
    cv = StratifiedKFold(5, shuffle=True, random_state=seed)

    def cv_auc(x, y):
        p = cross_val_predict(LogisticRegression(max_iter=2000), x, y, cv=cv,
                              method="predict_proba")[:, 1]
        return float(roc_auc_score(y, p))

    def mlp_scores(x, y):
        from sklearn.model_selection import train_test_split
        from sklearn.neural_network import MLPClassifier

        xa, xb, ya, yb = train_test_split(x, y, test_size=0.3, stratify=y, random_state=seed)
        m = MLPClassifier((64, 64), early_stopping=True, max_iter=300, random_state=seed)
        m.fit(xa, ya)
        pb = m.predict_proba(xb)[:, 1]
        return float(accuracy_score(yb, pb > 0.5)), float(roc_auc_score(yb, pb))

    def peak(x):
        from faux.synth.encoding import block_bounds

        return float(np.mean([x[:, a:b].max(1).mean() for a, b in
                              block_bounds(gen.encoder.block_sizes)]))

    mlp_synth = mlp_scores(xs, ys)
    mlp_real = mlp_scores(xr, yr)
    with torch.no_grad():
        kl = gen.cvae.kl_nats(torch.from_numpy(xr).float(), torch.from_numpy(yr).float())
    return {
        "dataset": gen.name, "decoding": decoding, "tau": tau, "beta": gen.cfg["beta"],
        "model_score_acc": float(accuracy_score(yr, p_real > 0.5)),
        "model_score_bal_acc": float(balanced_accuracy_score(yr, p_real > 0.5)),
        "model_score_auc": float(roc_auc_score(yr, p_real)),
        "synth_on_synth_acc": float(accuracy_score(ys2, clf.predict(xs2))),
        "sep_synth_auc": cv_auc(xs, ys), "sep_real_auc": cv_auc(xr, yr),
        "mlp_synth_acc": mlp_synth[0], "mlp_synth_auc": mlp_synth[1],
        "mlp_real_acc": mlp_real[0], "mlp_real_auc": mlp_real[1],
        "peak_synth": peak(xs), "peak_real": peak(xr),
        "kl_nats": kl, "paper_model_score": PAPER_MODEL_SCORE.get(gen.name),
    }

