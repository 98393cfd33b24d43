"""Validation worlds with exact per-row counterfactuals, the models scored on them, and the
harness that scores estimated counterfactuals against the exact ones.

- ``faux.worlds.world``: :class:`World` (``X`` without c, ``c``, ``X_cf`` under
  ``do(c := 1 - c)``, ``descendants``, ``y``);
- ``faux.worlds.dowhy_worlds``: worlds written as DoWhy ``gcm`` additive-noise SCMs (the
  library draws the rows and abducts the counterfactuals);
- ``faux.worlds.profiler_worlds``: random SCMs from causal-profiler, the same noise
  re-evaluated under the intervention;
- ``faux.worlds.planted``: the audit tests' own planted world, for comparison;
- ``faux.worlds.catalog``: every world of a profile;
- ``faux.worlds.models``: the models per world (logistic, MLP, trees, two c-blind fair models,
  one that reads c);
- ``faux.worlds.counterfactuals``: the ``Transport`` interface (``fit(X, c)``,
  ``transport(X, c, c_to)``) and the reference baselines (mean shift, quantile map, oracle);
- ``faux.worlds.evaluate``: the truth per row and the scores of an estimate, today's audit
  included;
- ``faux.worlds.run``: ``python -m faux.worlds.run [--quick] [--out DIR]`` (``make worlds``).

Needs the ``worlds`` extra (dowhy, causal-profiler). Importing this package loads nothing.
"""

__all__ = ["catalog", "counterfactuals", "dowhy_worlds", "evaluate", "models", "planted",
           "profiler_worlds", "report", "run", "torch_models", "world"]
