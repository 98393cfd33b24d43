"""The effect verdict: the rule that decides a row flagged (a decision that changes at its
counterfactual), the groups' outcomes, the flagged rows' values, and the verdict in words.

Its modules are private to it; code outside imports the names below from here or,
inside the audit, from the module that defines them. Names resolve on first use, so
importing the face loads nothing heavy (torch, pyarrow).

Modules: ``effect_defaults``, ``flagged_rows``, ``outcomes``, ``rule``, ``words``.
"""

from faux.audit.face import lazy

#: name -> the module of this package that defines it
_WHERE = {
    "Settings": "rule",
    "VERDICT": "rule",
    "DECISION_THRESHOLD": "rule",
    "summary": "rule",
    "group_outcomes": "outcomes",
    "RowValues": "flagged_rows",
    "headline": "words",
    "row_text": "words",
}

__all__ = sorted(_WHERE)

__getattr__, __dir__ = lazy(__name__, _WHERE)
