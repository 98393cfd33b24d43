"""The counterfactual path's defaults (``faux.audit.counterfactual.effects``), kept free of torch so that the
audit's settings and the CLI's help can read them without loading it."""

#: first-order steps of the path (the path converges as K grows; docs/audit.md)
STEPS = 8
#: the support's widening, as a share of each feature's range in the sample
SUPPORT_MARGIN = 0.1
