"""Random structural causal models from causal-profiler, with each row's exact counterfactual.

causal-profiler's ``Sampler`` draws a DAG over X1..X10 (causal order X1 < ... < X10, edge
probability from ``expected_edges`` in [10, 16]), one exogenous noise per node (``U_Xi``,
Gaussian N(0, s^2) or uniform on [-s, s]; s = 1 for linear mechanisms, 0.2 for nets:
``NOISE_SCALE``) and a mechanism per node (``linear``: random N(0, 1) weights and bias plus
the additive noise; ``nn``: a random feed-forward net of the parents, one hidden layer of 16
ReLU units, plus the additive noise). The four kinds alternate with the world's index.
Its variables are all continuous, so the protected attribute is made binary here, by
thresholding a root: the chosen root's mechanism is replaced (``MechanismFamily.CUSTOM``) by
``c = 1[U_c > t]``, ``t`` the quantile of the noise distribution that gives P(c = 1) = pi, pi
drawn per world from [0.3, 0.7] (a linear root is ``bias + U_c``, so this is the same as
thresholding the root at ``bias + t``). Its children read the 0/1 value.

Which nodes play which part (deterministic in the world's seed):

- the label: the node (other than the root made c) with the most ancestors, thresholded at
  its median; it is not a feature;
- c: the root (not the label) whose descendants among the other 8 nodes number closest to 4;
- a graph is redrawn (sub-seed ``1000 * seed + k``, k = 0, 1, ...) until c has 2 to 6
  descendants among the features and the label has at least 2 ancestors.

The counterfactual evaluates the same sampled noise under ``do(c := 1 - c)``: every noise
value is kept, c is set per row to ``1 - c`` (``SCM.do_hard_intervention`` with an ``(n, 1)``
array), and the mechanisms are recomputed (``reset_values(reset_noise=False)``,
``compute_variables``), as causal-profiler's own counterfactual queries do
(``QueryEstimator.compute_counterfactuals``). Non-descendants of c are recomputed from the
same inputs and so come back bit for bit.

causal-profiler replaces ``warnings.showwarning`` with a coloured ``print`` when imported;
:func:`import_profiler` restores the caller's.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np

from faux.worlds.world import World, binary_label, global_seed

N_NODES = 10
#: (mechanism family, noise distribution, its scale) by world index modulo 4: N(0, scale^2) or
#: U(-scale, scale). The random nets' outputs are small (torch's default initialisation), so
#: their worlds draw smaller noise, for c's effect to be of the noise's order as in the linear
NOISE_SCALE = {"linear": 1.0, "nn": 0.2}
KINDS = [("linear", "gaussian"), ("nn", "gaussian"), ("linear", "uniform"), ("nn", "uniform")]
MAX_REDRAWS = 200


def import_profiler():
    """``causal_profiler``, imported without keeping its replacement of ``showwarning``."""
    shown = warnings.showwarning
    try:
        import causal_profiler
    finally:
        warnings.showwarning = shown
    return causal_profiler


def _space(cp, kind: tuple[str, str], n: int):
    family, noise = kind
    nn, scale = family == "nn", NOISE_SCALE[family]
    return cp.SpaceOfInterest(
        number_of_nodes=(N_NODES, N_NODES),
        mechanism_family=cp.MechanismFamily.NEURAL_NETWORK if nn else cp.MechanismFamily.LINEAR,
        mechanism_args=[cp.NeuralNetworkType.FEEDFORWARD, 16] if nn else None,
        expected_edges=(10, 16),
        noise_distribution=(cp.NoiseDistribution.GAUSSIAN if noise == "gaussian"
                            else cp.NoiseDistribution.UNIFORM),
        noise_args=[0.0, scale] if noise == "gaussian" else [-scale, scale],
        noise_mode=cp.NoiseMode.ADDITIVE,
        variable_type=cp.VariableDataType.CONTINUOUS,
        disable_query_sampling=True,
        number_of_data_points=n)


def _endogenous_parents(scm) -> dict[str, list[str]]:
    return {v: [p for p in scm.parents[v] if not scm.variables[p].exogenous]
            for v in scm.variables if not scm.variables[v].exogenous}


def _closure(edges: dict[str, list[str]], start: str) -> set[str]:
    seen, todo = set(), list(edges.get(start, []))
    while todo:
        v = todo.pop()
        if v not in seen:
            seen.add(v)
            todo += edges.get(v, [])
    return seen


def choose_roles(parents: dict[str, list[str]]) -> tuple[str, str] | None:
    """``(c, label)`` for a graph (node -> endogenous parents), or None when it does not
    qualify (see the module's docstring)."""
    nodes = sorted(parents, key=lambda v: int(v[1:]))
    children = {v: [w for w in nodes if v in parents[w]] for v in nodes}
    ancestors = {v: _closure(parents, v) for v in nodes}
    label = max(nodes, key=lambda v: (len(ancestors[v]), int(v[1:])))
    if len(ancestors[label]) < 2:
        return None
    best = None
    for root in (v for v in nodes if not parents[v] and v != label):
        k = len(_closure(children, root) - {label})
        if 2 <= k <= N_NODES - 4 and (best is None or abs(k - 4) < best[0]):
            best = (abs(k - 4), root)
    return None if best is None else (best[1], label)


def _threshold(kind: tuple[str, str], pi: float) -> float:
    """The t with P(U > t) = pi for U ~ N(0, scale^2) or U(-scale, scale)."""
    from scipy import stats

    scale = NOISE_SCALE[kind[0]]
    return scale * (float(stats.norm.ppf(1 - pi)) if kind[1] == "gaussian" else 1.0 - 2.0 * pi)


def _draw_scm(cp, kind, n: int, seed: int):
    """The first qualifying SCM of the sub-seeds ``1000 * seed + k``: ``(scm, c, label, k)``."""
    for k in range(MAX_REDRAWS):
        with global_seed(1000 * seed + k):
            scm = cp.Sampler(_space(cp, kind, n)).generate_scm()
        roles = choose_roles(_endogenous_parents(scm))
        if roles is not None:
            return scm, roles[0], roles[1], k
    raise RuntimeError(f"no qualifying causal-profiler graph in {MAX_REDRAWS} draws (seed {seed})")


def sample_with_counterfactual(scm, c_name: str, n: int, seed: int):
    """``(factual, counterfactual)``: dicts node -> (n,) values, the same noise evaluated with
    c as sampled and under ``do(c := 1 - c)``."""
    scm.n_samples = n
    c_var = scm.variables[c_name]
    with global_seed(seed):
        scm.reset_values(reset_noise=True)
        scm.sample_noise_variables()
        scm.compute_variables()
        fact = {k: v.value.copy() for k, v in scm.variables.items()}
        scm.do_hard_intervention(c_var, 1.0 - fact[c_name])
        scm.reset_values(reset_noise=False)  # keeps the noise and the intervened c
        scm.compute_variables()
        cf = {k: v.value.copy() for k, v in scm.variables.items()}
        scm.remove_intervention(c_var)
        scm.reset_values(reset_noise=True)
    return ({k: v.reshape(n, -1)[:, 0] for k, v in fact.items()},
            {k: v.reshape(n, -1)[:, 0] for k, v in cf.items()})


def profiler_world(index: int, n: int = 6000, seed: int | None = None) -> World:
    """The ``index``-th causal-profiler world (kind ``KINDS[index % 4]``, seed ``index`` unless
    given): 8 features, c, a label, ``n`` rows and their counterfactuals."""
    import pandas as pd

    cp = import_profiler()
    seed = index if seed is None else seed
    kind = KINDS[index % len(KINDS)]
    scm, c_name, label, redraws = _draw_scm(cp, kind, n, seed)
    pi = float(np.random.default_rng(seed).uniform(0.3, 0.7))
    t = _threshold(kind, pi)
    scm.set_function(scm.variables[c_name], cp.MechanismFamily.CUSTOM,
                     custom_function=lambda ps: (ps[0].value > t).astype(float))
    fact, cf = sample_with_counterfactual(scm, c_name, n, 10_000 + seed)
    parents = _endogenous_parents(scm)
    feats = [v for v in sorted(parents, key=lambda v: int(v[1:])) if v not in (c_name, label)]
    children = {v: [w for w in parents if v in parents[w]] for v in parents}
    desc = sorted(_closure(children, c_name) - {label}, key=lambda v: int(v[1:]))
    X = pd.DataFrame({v: fact[v] for v in feats})
    X_cf = pd.DataFrame({v: cf[v] for v in feats})  # World checks the non-descendants held
    edges = {v: ps for v, ps in parents.items() if ps}
    return World(
        name=f"profiler_{index:02d}",
        description=(f"causal-profiler {kind[0]} SCM, {kind[1]} noise, 10 nodes; c = "
                     f"1[U_{c_name} > {t:.3f}] (root {c_name}, P(c=1) = {pi:.2f}); label "
                     f"1[{label} > median]; edges {edges}"),
        X=X, c=fact[c_name].astype(int), X_cf=X_cf, descendants=desc,
        y=binary_label(fact[label]), source="causal-profiler",
        meta={"seed": seed, "sub_seed": 1000 * seed + redraws, "kind": "/".join(kind),
              "c_node": c_name, "label_node": label, "pi": pi, "threshold": t,
              "edges": edges})


def profiler_worlds(count: int = 20, n: int = 6000) -> dict[str, Callable[[], World]]:
    """name -> a function building that world, for indices 0..count-1."""
    return {f"profiler_{i:02d}": (lambda i=i: profiler_world(i, n=n)) for i in range(count)}
