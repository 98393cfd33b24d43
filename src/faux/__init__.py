"""faux: individual-fairness testing by gradient alignment (Castiglione et al., 2022)."""

__version__ = "0.1.0"


def score(method, target, aux, x, options=None, **overrides):
    """Per-individual unfairness scores, shape ``(n,)``; ``options``: a
    :class:`faux.methods.options.ScoreOptions` (or a dict of its fields), ``overrides`` its
    fields as keywords; see :func:`faux.methods.gradients.score`."""
    from faux.methods.gradients import score as _score

    return _score(method, target, aux, x, options, **overrides)


def audit(model, X=None, c=None, **options):
    """Individual-fairness audit of a user's model; see :func:`faux.audit.core.audit`."""
    from faux.audit.core import audit as _audit

    return _audit(model, X, c, **options)
