"""Error lines in the caller's words. The audit's checks name command-line flags (``--out``,
``--force``, ``--trust-pickle``); a Python caller of ``faux.audit`` or ``AuditResult.save``
sees the same line with each flag written as the keyword argument it sets (``out_dir``,
``force=True``, ``trust_pickle=True``). The words of flags that are not a function's own
parameters (the audit's settings, taken as ``**overrides``) are given by the caller."""

from __future__ import annotations

import functools
import inspect
import re

from faux.errors import ConfigError, DataError

_FLAG = re.compile(r"--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)")
_BOTH = re.compile(r"\b([a-z_]+) \(--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)\)")
#: flags whose keyword is not the flag's own name
_RENAMED = {"out": "out_dir"}


def _keyword(flag: str, params: dict[str, inspect.Parameter],
             words: dict[str, str]) -> str | None:
    if flag in _RENAMED:
        return _RENAMED[flag]
    if flag in words:
        return words[flag]
    name = flag.replace("-", "_")
    p = params.get(name)
    if p is None:
        return None
    return f"{name}=True" if isinstance(p.default, bool) else name


def in_python_words(message: str, fn, words: dict[str, str] | None = None) -> str:
    """``message`` with each flag of ``fn``'s parameters, or of ``words`` (a flag without
    ``--`` -> its keyword, ``no-exact`` -> ``exact=False``), named as its keyword argument
    (a keyword followed by its own flag, ``fd_step (--fd-step)``, is left alone once)."""
    params, words = dict(inspect.signature(fn).parameters), words or {}
    message = _BOTH.sub(lambda m: m.group(1) if _keyword(m.group(2), params, words)
                        == m.group(1) else m.group(0), message)
    return _FLAG.sub(lambda m: _keyword(m.group(1), params, words) or m.group(0), message)


def speaks_python(fn, words_of=None, words: dict[str, str] | None = None):
    """``fn`` raising its ``ConfigError``/``DataError`` in Python words (the keywords of
    ``words_of``, default ``fn`` itself, and ``words``, see ``in_python_words``)."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (ConfigError, DataError) as err:
            text = in_python_words(str(err), words_of or fn, words)
            if text == str(err):
                raise
            raise type(err)(text) from None

    return wrapper
