"""Metrics as pure functions of arrays (no model, no training loop). Importing the package
loads nothing; its modules are its API (``from faux.metrics import ranking``).

- ``ranking``: AP, AUROC, NDCG and the prevalence-aware AP;
- ``intervals``: bootstrap intervals of a table's cells and the three-state claim decision;
- ``fairness``: probes of an attribute in a hidden layer, the counterfactual proxy swap,
  demographic parity, mutual information.
"""

__all__ = ["fairness", "intervals", "ranking"]
