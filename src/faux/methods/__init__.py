"""The fairness tests: what a test is, the registry of the paper's eight and the extensions,
their options and their scorers. Importing the package loads nothing; its modules are its
API (``from faux.methods import registry``), each importing torch only where it computes.

- ``protocol``: what a test is (``Base``, ``MethodConfig``, ``TrainData``, ``Batch``);
  ``registry``: name -> class, in table order; ``builtin``: the classes; ``options``: their
  typed options, each default written once.
- ``gradients``: ``faux.score``; ``alignment``: FTA's norm and eqs. 9-10 as pure functions of
  gradients; ``gradient_pass``: the passes they read; ``autograd``: the shared autograd core;
  ``ig``: integrated gradients; ``transparency``: the feature reports (A.10).
- ``path``: fAux path (A.12); ``first_order``: the first-order step and support box it
  shares with the audit's counterfactuals.
- ``lic_ub``, ``fta_lin``, ``unfair_map``, ``fliptest``: the other tests' scorers.
"""

__all__ = ["alignment", "autograd", "builtin", "first_order", "fliptest", "fta_lin",
           "gradient_pass", "gradients", "ig", "lic_ub", "options", "path", "protocol",
           "registry", "transparency", "unfair_map"]
