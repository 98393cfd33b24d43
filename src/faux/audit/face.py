"""A wing's face: the names it lists, each resolved from its defining module on first use,
so importing the face loads nothing heavy."""

import importlib


def lazy(package: str, where: dict[str, str]):
    """``(__getattr__, __dir__)`` for ``package``, whose public ``name`` is defined in its
    module ``where[name]``."""
    module = importlib.import_module(package)

    def getattr_(name: str):
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{where[name]}"), name)
        setattr(module, name, value)
        return value

    def dir_():
        return sorted({*vars(module), *where})

    return getattr_, dir_
