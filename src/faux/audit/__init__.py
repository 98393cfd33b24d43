"""``faux audit``: test a user's own model on their own data for individual unfairness.

``faux.audit(model, X, c, ...)`` in Python (the function ``audit`` below documents every
parameter), or the console script ``faux audit --model PATH --data PATH --protected COLUMN``
(``faux.audit.cli``). It returns an ``AuditResult`` (``save(folder)`` writes the outputs the
CLI writes); what weakens a result is raised as a ``FauxAuditWarning``. The settings are
keywords, or one ``AuditSettings`` (``settings=``).

``faux.audit`` is this package, made callable: ``faux.audit(...)`` runs
:func:`faux.audit.core.audit`.
"""

import sys
import types

from faux.audit.api_words import speaks_python
from faux.audit.audit_doc import module_doc, python_words
from faux.audit.core import audit as _audit
from faux.audit.notices import FauxAuditWarning
from faux.audit.result import AuditResult
from faux.audit.settings import AuditSettings

audit = speaks_python(_audit, words=python_words())
# help(faux.audit) documents the call first: its signature, then every parameter
__doc__ = module_doc(_audit, __doc__)

__all__ = ["AuditResult", "AuditSettings", "FauxAuditWarning", "audit"]


class _CallableModule(types.ModuleType):
    def __call__(self, *args, **kwargs):
        return audit(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
