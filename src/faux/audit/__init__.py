"""``faux audit``: test a user's own model on their own data for individual unfairness.

``faux.audit(model, X, c, ...)`` in Python (see :func:`faux.audit.core.audit`), or the
console script ``faux audit --model PATH --data PATH --protected COLUMN`` (``faux.audit.cli``).

Importing this package binds the name ``faux.audit`` to the package itself (replacing the
lazy function of ``faux/__init__.py``), so the package is made callable: ``faux.audit(...)``
runs :func:`faux.audit.core.audit` either way.
"""

import sys
import types

from faux.audit.core import AuditResult, audit

__all__ = ["AuditResult", "audit"]


class _CallableModule(types.ModuleType):
    def __call__(self, *args, **kwargs):
        return audit(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
