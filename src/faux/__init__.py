"""faux: individual-fairness testing by gradient alignment (Castiglione et al., 2022)."""

__version__ = "0.1.0"


def score(method, target, aux, x, **options):
    """Per-individual unfairness scores, shape ``(n,)``; see :func:`faux.methods.gradients.score`."""
    from faux.methods.gradients import score as _score

    return _score(method, target, aux, x, **options)


def audit(model, X=None, c=None, **options):
    """Individual-fairness audit of a user's model; see :func:`faux.audit.core.audit`."""
    from faux.audit.core import audit as _audit

    return _audit(model, X, c, **options)
