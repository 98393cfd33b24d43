"""faux: individual-fairness testing by gradient alignment (Castiglione et al., 2022).

Importing ``faux`` loads nothing heavy: ``score``, ``audit`` and ``AuditResult`` import
their modules (torch, the audit) when first used."""

__version__ = "0.1.0"

__all__ = ["AuditResult", "__version__", "audit", "score"]


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


def __getattr__(name):
    if name == "AuditResult":
        from faux.audit.core import AuditResult

        return AuditResult
    raise AttributeError(f"module 'faux' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
