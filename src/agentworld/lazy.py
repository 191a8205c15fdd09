"""Package exports resolved on first use, so importing a package (and so every CLI command) stays cheap.

Why: ``agentworld.cli`` imports a sub-package for each command it runs, and the packages
re-export their heavy parts (the data pipeline, the eval runner, the sandbox). With
:func:`lazy_exports` a package lists ``name -> module`` and imports the module when the name is
first read; ``from agentworld.data import mask`` works as before.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str,
                 exports: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package`` exporting each ``name`` from its ``module``."""

    def getattr_(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module), name)

    def dir_() -> list[str]:
        return sorted(exports)

    return getattr_, dir_
