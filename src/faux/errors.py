"""Errors that carry a one-line, actionable message for the user."""


class FauxError(Exception):
    """Base class: the message says what is wrong and how to fix it, on one line."""


class DataError(FauxError):
    """A dataset is unknown, missing, corrupt or malformed."""


class ConfigError(FauxError):
    """A configuration value is out of range or inconsistent."""
