"""Package names loaded on first use (PEP 562): importing one module of a package does not load them all."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping
from typing import Any


def load(package: str, module_of: Mapping[str, str], name: str) -> Any:
    """``package``'s ``name``, imported from its module in ``module_of`` and kept in the package for the
    next use; AttributeError for a name the package does not have (a package's ``__getattr__``)."""
    module = module_of.get(name)
    if module is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    setattr(sys.modules[package], name, value)
    return value
