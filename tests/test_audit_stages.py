"""The audit's stages hand their results on (``faux.audit.inputs``, ``faux.audit.stages``):
each is a function of the results before it and returns a frozen one, and run in order they
are ``faux.audit``. The pass over the rows is per-batch work (``score_batch``: a batch's
scores, flags and columns, from nothing but the batch and what every batch shares), the
writing of scores.parquet, and an in-order merge of the batches' results (``Tally``)."""

import dataclasses

import numpy as np
import pandas as pd
import pytest
import torch

import faux
from audit_world import proxy_world
from faux.audit import inputs, stages
from faux.audit.passes.score_pass import BatchState, Reading, Tally, score_all, score_batch
from faux.audit.report.summary import build
from faux.audit.settings import AuditSettings

SETTINGS = dict(methods=("faux", "fta"), aux_epochs=2, sample=300, batch_size=128,
                null_permutations=3, aux_seeds=2, verdict="score", fdr=True, progress=False,
                seed=4)


class Proxy(torch.nn.Module):
    def forward(self, x):
        return 2.0 * x[:, 0] + 3.0 * (x[:, 3] - 0.5)


def _fitted(X, c):
    st = AuditSettings(**SETTINGS)
    st.check(has_label=False)
    plan = inputs.plan(st)
    given = inputs.open_inputs(plan, torch.jit.script(Proxy()), X, c, data=None,
                               protected=None, y=None, label=None, features=None,
                               out_dir=None, name=None)
    scanned = stages.scan_rows(plan, given)
    return plan, given, scanned, stages.fit(plan, given, scanned)


def test_the_stages_in_order_are_the_audit_and_hand_on_frozen_results():
    X, c = proxy_world(500, seed=2)
    plan, given, scanned, fitted = _fitted(X.values, c)
    scored = stages.score(plan, given, scanned, fitted, None)
    settled = stages.settle(plan, given, scanned, fitted, scored, None)
    summary = build(plan, given, scanned, fitted, scored, settled)
    for result in (plan, given, scanned, fitted, scored, settled, summary):
        field = dataclasses.fields(result)[0].name
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(result, field, None)
    whole = faux.audit(torch.jit.script(Proxy()), X.values, c, report=False,
                       **{k: list(v) if k == "methods" else v for k, v in SETTINGS.items()})
    for key in ("flagged", "thresholds", "calibration", "groups", "settings", "baselines"):
        assert summary.content[key] == whole.summary[key], key
    assert summary.content["calibration"]["rule"] == "benjamini-hochberg"
    assert settled.thresholds != fitted.thresholds  # the cut, settled once every row is scored
    pd.testing.assert_frame_equal(settled.scores, whole.scores)
    assert summary.gate == [] and whole.passed


def test_the_pass_is_batches_scored_in_any_order_then_merged_in_order(tmp_path):
    X, c = proxy_world(500, seed=3)
    plan, given, scanned, fitted = _fitted(X.values, c)
    sc = scanned.sc
    state = BatchState(scorer=fitted.scorer, methods=plan.methods,
                       thresholds=fitted.thresholds, alpha=plan.st.alpha,
                       protected=sc.protected, views=tuple(fitted.views),
                       bh_null=fitted.null["scores"][plan.primary])
    reading = Reading(given.source, given.feats, given.c_cols, None, 128)
    whole = score_all(state, reading, n_rows=sc.n_rows, seed=7, keep=True, out=tmp_path,
                      bar=plan.bar)
    batches = list(reading.batches())
    assert len(batches) == 4
    results = [score_batch(state, b) for b in reversed(batches)][::-1]  # computed backwards
    tally = Tally(plan.methods, sc.n_rows, 7, state.bh_null, keep=True)
    for r in results:  # merged in the rows' order
        tally.add(r)
    merged = tally.finish(whole.seconds, plan.st.alpha)
    assert (merged.n_flag, merged.per_group, merged.above, merged.bh, merged.n_scored) == (
        whole.n_flag, whole.per_group, whole.above, whole.bh, whole.n_scored)
    assert [t[:2] for t in merged.top] == [t[:2] for t in whole.top] and whole.top
    assert merged.plot_scores.keys() == whole.plot_scores.keys()
    for k, v in whole.plot_scores.items():
        np.testing.assert_array_equal(merged.plot_scores[k], v)
    pd.testing.assert_frame_equal(merged.scores, whole.scores)
    written = pd.read_parquet(tmp_path / "scores.parquet")  # the writer's, batch by batch
    pd.testing.assert_frame_equal(written, pd.concat([r.frame for r in results],
                                                     ignore_index=True))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scores.parquet"]


def test_the_plot_sample_draws_one_value_per_row_from_the_first_however_batches_come():
    """The plot sample keeps row i when the i-th draw of the stream seeded ``seed`` + 1 is
    under its keep rate: counting the batches in order (``add``) and one batch alone from
    its first row (``part_at``, as a Ray worker does) draw the same values for each row."""
    from types import SimpleNamespace

    from faux.audit.passes.score_pass import PLOT_STREAM, Tally

    rng = np.random.default_rng(0)
    scores = rng.normal(size=1000)

    def result(a, b):
        n = b - a
        return SimpleNamespace(scores={"m": scores[a:b]}, flagged=np.zeros(n, dtype=bool),
                               exceed=None, scored=None, groups=np.array(["f"] * n),
                               above={"m": 0}, effect_plot={}, top=(), frame=None)

    tally = Tally(["m"], 2_000_000, 7, None, False)  # keeps 1 row in 10 of 2 M
    assert tally.keep_p < 0.2
    for a, b in [(0, 300), (300, 800), (800, 1000)]:
        tally.add(result(a, b))
    keep = np.random.default_rng(7 + PLOT_STREAM).random(1000) < tally.keep_p
    assert 50 < keep.sum() < 150
    np.testing.assert_array_equal(np.concatenate(tally.plot["m"]), scores[keep])
    alone = tally.part_at(result(300, 800), 300)
    np.testing.assert_array_equal(alone.plot["m"], scores[300:800][keep[300:800]])
