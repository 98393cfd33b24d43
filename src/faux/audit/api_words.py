"""Error lines in the caller's words. The audit's checks name command-line flags (``--out``,
``--force``, ``--trust-pickle``); a Python caller of ``faux.audit`` or ``AuditResult.save``
sees the same line with each flag written as the keyword argument it sets (``out_dir``,
``force=True``, ``trust_pickle=True``)."""

from __future__ import annotations

import functools
import inspect
import re

from faux.errors import ConfigError, DataError

_FLAG = re.compile(r"--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)")
_BOTH = re.compile(r"\b([a-z_]+) \(--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)\)")
#: flags whose keyword is not the flag's own name
_RENAMED = {"out": "out_dir", "trust-type": "trusted_types", "no-progress": "progress=False",
            "no-exact": "exact=False", "no-intersection": "intersection=False"}


def _keyword(flag: str, params: dict[str, inspect.Parameter]) -> str | None:
    if flag in _RENAMED:
        return _RENAMED[flag]
    name = flag.replace("-", "_")
    p = params.get(name)
    if p is None:
        return None
    return f"{name}=True" if isinstance(p.default, bool) else name


def in_python_words(message: str, fn) -> str:
    """``message`` with each flag of ``fn``'s parameters named as its keyword argument (a
    keyword followed by its own flag, ``fd_step (--fd-step)``, is left alone once)."""
    params = dict(inspect.signature(fn).parameters)
    message = _BOTH.sub(lambda m: m.group(1) if _keyword(m.group(2), params) == m.group(1)
                        else m.group(0), message)
    return _FLAG.sub(lambda m: _keyword(m.group(1), params) or m.group(0), message)


def speaks_python(fn, words_of=None):
    """``fn`` raising its ``ConfigError``/``DataError`` in Python words (the keywords of
    ``words_of``, default ``fn`` itself)."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (ConfigError, DataError) as err:
            text = in_python_words(str(err), words_of or fn)
            if text == str(err):
                raise
            raise type(err)(text) from None

    return wrapper
