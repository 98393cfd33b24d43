"""faux: individual-fairness testing by gradient alignment (Castiglione et al., 2022).

Importing ``faux`` loads nothing heavy: ``score`` imports torch when first called;
``audit`` (the callable package ``faux.audit``: ``help(faux.audit)`` documents every
parameter), ``AuditResult`` and ``FauxAuditWarning`` import the audit package (not torch)
when first used."""

__version__ = "0.1.0"

__all__ = ["AuditResult", "FauxAuditWarning", "__version__", "audit", "score"]


def score(method, target, aux, x, options=None, **overrides):
    """Per-individual unfairness scores, shape ``(n,)``; ``options``: a
    :class:`faux.methods.options.ScoreOptions` (or a dict of its fields), ``overrides`` its
    fields as keywords; see :func:`faux.methods.gradients.score`."""
    from faux.methods.gradients import score as _score

    return _score(method, target, aux, x, options, **overrides)


def __getattr__(name):
    if name in ("audit", "AuditResult", "FauxAuditWarning"):
        import importlib

        package = importlib.import_module("faux.audit")  # binds faux.audit to the package
        return package if name == "audit" else getattr(package, name)
    raise AttributeError(f"module 'faux' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
