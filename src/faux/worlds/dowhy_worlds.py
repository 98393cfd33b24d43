"""Worlds written as DoWhy ``gcm`` structural causal models, whose samples and counterfactuals
the library computes.

Each world is an ``InvertibleStructuralCausalModel``: root nodes are ``ScipyDistribution``
(``c`` Bernoulli, the other roots normal) and every other node an ``AdditiveNoiseModel``
``x = f(parents) + n`` (a ``DiscreteAdditiveNoiseModel`` for the discrete proxy) whose ``f``
is a known function (:class:`KnownFunction`, never fitted: the mechanism is the ground truth)
and whose noise is a ``ScipyDistribution`` or an ``EmpiricalDistribution`` with fixed
parameters. ``gcm.draw_samples`` draws the rows; ``gcm.counterfactual_samples`` with the
intervention ``c -> 1 - c`` abducts each row's noise (``n = x - f(parents)``, exact for an
additive-noise model) and propagates it: ``X_cf``. The label is computed here from the
factual rows (``1[score + noise > median]``), outside the SCM: only the models read it.

Since the mechanisms are known there is nothing to fit; ``gcm.fit`` would only record each
node's parents, which :func:`declare_fitted` does directly (the step DoWhy's own error
message names: "update the persisted parents for that node manually").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from faux.worlds.world import World, binary_label, global_seed

#: proxy strength (the shift of a proxy per unit of c) by level
STRENGTHS = {"weak": 0.5, "strong": 1.5}
#: the discrete proxy's integer shift by level
SHIFTS = {"weak": 1, "strong": 2}


class KnownFunction:
    """A ``gcm`` prediction model with a fixed, known function of the named parents
    (``f(**parents)``); ``fit`` does nothing. DoWhy passes the parents as columns in sorted
    name order (``dowhy.graph.get_ordered_predecessors``)."""

    def __init__(self, parents: tuple[str, ...], f: Callable[..., np.ndarray], text: str = ""):
        self.parents, self.f, self.text = tuple(sorted(parents)), f, text

    def fit(self, X, Y) -> None:  # the ground truth is not estimated
        return None

    def predict(self, X) -> np.ndarray:
        X = np.asarray(X, dtype=float).reshape(len(X), -1)
        cols = {name: X[:, i] for i, name in enumerate(self.parents)}
        return np.asarray(self.f(**cols), dtype=float).reshape(-1, 1)

    def clone(self):
        return KnownFunction(self.parents, self.f, self.text)

    def __repr__(self) -> str:
        return f"KnownFunction({self.text or self.parents})"


@dataclass(frozen=True)
class Node:
    """One node: its parents, the known part ``f`` of its mechanism, the noise (``"normal"``
    with ``scale``, ``"binomial"`` with ``n_trials``/``p``, ``"empirical"`` with a pool), and
    ``text`` for the world's description."""

    parents: tuple[str, ...] = ()
    f: Callable[..., np.ndarray] | None = None
    noise: str = "normal"
    scale: float = 1.0
    n_trials: int = 0
    p: float = 0.5
    pool: np.ndarray | None = None
    text: str = ""


def _noise_model(node: Node):
    from dowhy import gcm
    from scipy import stats

    if node.noise == "normal":
        return gcm.ScipyDistribution(stats.norm, loc=0.0, scale=node.scale)
    if node.noise == "bernoulli":
        return gcm.ScipyDistribution(stats.bernoulli, p=node.p)
    if node.noise == "binomial":
        return gcm.ScipyDistribution(stats.binom, n=node.n_trials, p=node.p)
    if node.noise == "empirical":
        dist = gcm.EmpiricalDistribution()
        dist.fit(node.pool)
        return dist
    raise ValueError(f"unknown noise {node.noise!r}")


def build_scm(nodes: dict[str, Node]):
    """The ``InvertibleStructuralCausalModel`` of ``nodes`` (name -> :class:`Node`)."""
    import networkx as nx
    from dowhy import gcm

    graph = nx.DiGraph()
    graph.add_nodes_from(nodes)
    graph.add_edges_from((p, name) for name, node in nodes.items() for p in node.parents)
    scm = gcm.InvertibleStructuralCausalModel(graph)
    for name, node in nodes.items():
        if not node.parents:
            scm.set_causal_mechanism(name, _noise_model(node))
            continue
        known = KnownFunction(node.parents, node.f, node.text)
        cls = gcm.DiscreteAdditiveNoiseModel if node.noise == "binomial" else gcm.AdditiveNoiseModel
        scm.set_causal_mechanism(name, cls(known, _noise_model(node)))
    declare_fitted(scm)
    return scm


def declare_fitted(scm) -> None:
    """Record each node's parents as ``gcm.fit`` does after fitting (nothing to fit here)."""
    from dowhy.gcm.causal_models import PARENTS_DURING_FIT
    from dowhy.graph import get_ordered_predecessors

    for node in scm.graph.nodes:
        scm.graph.nodes[node][PARENTS_DURING_FIT] = get_ordered_predecessors(scm.graph, node)


def simulate(nodes: dict[str, Node], n: int, seed: int):
    """``(data, data_cf)``: ``n`` rows drawn by ``gcm.draw_samples`` (global numpy seeded with
    ``seed``, restored after) and their counterfactuals under ``c -> 1 - c`` by
    ``gcm.counterfactual_samples`` (abduction of each row's noise). Columns in ``nodes``' order."""
    from dowhy import gcm

    scm = build_scm(nodes)
    with global_seed(seed):
        data = gcm.draw_samples(scm, n)
    data_cf = gcm.counterfactual_samples(scm, {"c": lambda v: 1 - v}, observed_data=data)
    order = list(nodes)
    return data[order], data_cf[order]


def descendants_of_c(nodes: dict[str, Node]) -> list[str]:
    out: list[str] = []
    for name, node in nodes.items():  # nodes are listed in a topological order
        if any(p == "c" or p in out for p in node.parents):
            out.append(name)
    return out


def _make(name: str, nodes: dict[str, Node], weights: dict[str, float], n: int, seed: int,
          level: str, strength: float, description: str) -> World:
    data, data_cf = simulate(nodes, n, seed)
    feats = [k for k in nodes if k != "c"]
    X = data[feats].reset_index(drop=True)
    X_cf = data_cf[feats].reset_index(drop=True)
    rng = np.random.default_rng(seed + 1)
    score = sum(w * X[k].to_numpy() for k, w in weights.items()) + 0.5 * rng.normal(size=n)
    label = " + ".join(f"{w:g} {k}" for k, w in weights.items())
    text = "; ".join(f"{k} = {nd.text}" for k, nd in nodes.items())
    return World(name=name, description=f"{description} [{text}; y = 1[{label} + N(0, 0.5) > "
                 "median]]", X=X, c=data["c"].to_numpy(), X_cf=X_cf,
                 descendants=descendants_of_c(nodes), y=binary_label(score), source="dowhy",
                 meta={"seed": seed, "level": level, "strength": strength})


def _roots(*names: str) -> dict[str, Node]:
    nodes = {"c": Node(noise="bernoulli", p=0.5, text="Bernoulli(0.5)")}
    nodes.update({k: Node(text="N(0, 1)") for k in names})
    return nodes


def proxy_chain(n: int = 8000, level: str = "strong", seed: int = 101) -> World:
    """c -> p1 (unit noise) -> p2 (a proxy of the proxy); p3 a low-noise proxy that also
    depends on u, which c does not cause; x1..x3 independent of c."""
    s = STRENGTHS[level]
    nodes = _roots("u", "x1", "x2", "x3")
    nodes["p1"] = Node(("c",), lambda c: s * c, scale=1.0, text=f"{s:g} c + N(0, 1)")
    nodes["p2"] = Node(("p1",), lambda p1: 0.8 * p1, scale=0.5, text="0.8 p1 + N(0, 0.5^2)")
    nodes["p3"] = Node(("c", "u"), lambda c, u: s * c + 0.5 * u, scale=0.2,
                       text=f"{s:g} c + 0.5 u + N(0, 0.2^2)")
    return _make(f"proxy_chain_{level}", nodes, {"x1": 1.0, "x2": 0.5, "p1": 0.5, "p2": 0.5},
                 n, seed, level, s, "a proxy chain and a low-noise proxy mixed with u")


def student_t_pool(seed: int, size: int = 100_000, df: int = 3, scale: float = 1.5) -> np.ndarray:
    """The pool an ``EmpiricalDistribution`` noise draws from: Student-t draws (heavy tails)."""
    return scale * np.random.default_rng(seed).standard_t(df, size=size)


def unequal_noise(n: int = 8000, level: str = "strong", seed: int = 202) -> World:
    """Three proxies of c at one strength with unequal noise: q1 N(0, 0.25^2), q2 N(0, 1), q3
    heavy-tailed (an ``EmpiricalDistribution`` over Student-t(3) draws, scale 1.5)."""
    s = STRENGTHS[level]
    nodes = _roots("x1", "x2", "x3")
    nodes["q1"] = Node(("c",), lambda c: s * c, scale=0.25, text=f"{s:g} c + N(0, 0.25^2)")
    nodes["q2"] = Node(("c",), lambda c: s * c, scale=1.0, text=f"{s:g} c + N(0, 1)")
    nodes["q3"] = Node(("c",), lambda c: s * c, noise="empirical", pool=student_t_pool(seed),
                       text=f"{s:g} c + 1.5 t(3)")
    return _make(f"unequal_noise_{level}", nodes,
                 {"x1": 1.0, "x2": 0.5, "q1": 0.4, "q2": 0.4, "q3": 0.4}, n, seed, level, s,
                 "proxies with unequal noise")


def interaction(n: int = 8000, level: str = "strong", seed: int = 303) -> World:
    """Mechanisms with product terms between c's descendants (or c) and non-descendants:
    d2 = d1 x1 + 0.5 d1 + noise, d3 = s c x2 + noise (additive noise throughout)."""
    s = STRENGTHS[level]
    nodes = _roots("x1", "x2", "x3")
    nodes["d1"] = Node(("c",), lambda c: s * c, scale=1.0, text=f"{s:g} c + N(0, 1)")
    nodes["d2"] = Node(("d1", "x1"), lambda d1, x1: d1 * x1 + 0.5 * d1, scale=0.5,
                       text="d1 x1 + 0.5 d1 + N(0, 0.5^2)")
    nodes["d3"] = Node(("c", "x2"), lambda c, x2: s * c * x2, scale=0.5,
                       text=f"{s:g} c x2 + N(0, 0.5^2)")
    return _make(f"interaction_{level}", nodes,
                 {"x1": 1.0, "x2": 0.5, "d1": 0.5, "d2": 0.5, "d3": 0.5}, n, seed, level, s,
                 "descendants interacting with non-descendants")


def discrete_proxy(n: int = 8000, level: str = "strong", seed: int = 404) -> World:
    """A discrete descendant k = a c + Binomial(3, 0.4) (integers 0..3 + a; a
    ``DiscreteAdditiveNoiseModel``) and a continuous proxy of it, p1 = 0.5 k + N(0, 1)."""
    a = SHIFTS[level]
    nodes = _roots("x1", "x2", "x3")
    nodes["k"] = Node(("c",), lambda c: a * c, noise="binomial", n_trials=3, p=0.4,
                      text=f"{a} c + Binomial(3, 0.4)")
    nodes["p1"] = Node(("k",), lambda k: 0.5 * k, scale=1.0, text="0.5 k + N(0, 1)")
    return _make(f"discrete_proxy_{level}", nodes,
                 {"x1": 1.0, "x2": 0.5, "k": 0.5, "p1": 0.5}, n, seed, level, float(a),
                 "a discrete proxy")


#: the DoWhy worlds, by family; each at the levels of STRENGTHS (SHIFTS for discrete_proxy)
FAMILIES = {"proxy_chain": proxy_chain, "unequal_noise": unequal_noise,
            "interaction": interaction, "discrete_proxy": discrete_proxy}


def dowhy_worlds(n: int = 8000) -> dict[str, Callable[[], World]]:
    """name -> a function building that world (``n`` rows)."""
    out = {}
    for family, build in FAMILIES.items():
        for level in ("weak", "strong"):
            out[f"{family}_{level}"] = (lambda b=build, lv=level: b(n=n, level=lv))
    return out
