"""The click classes the CLI needs, from the one place that knows where typer keeps them.

Why a shim: since 0.26 typer vendors click as the private ``typer._click`` (earlier versions used the
``click`` package, whose classes typer no longer raises or builds). Private imports spread over the
code base break silently when typer moves them again; here they break in one file, and
:data:`MIN_TYPER` (the ``typer>=`` bound in ``pyproject.toml``, which a test keeps equal) is the first
release that has every name imported below (``typer.exceptions``, ``_click.termui.secho``,
``_click.exceptions.NoArgsIsHelpError``, ``_click.globals``: checked in the 0.26.0 wheel).
"""

from __future__ import annotations

from typer import Abort
from typer._click.core import Command, Context
from typer._click.exceptions import ClickException, NoArgsIsHelpError, UsageError
from typer._click.formatting import HelpFormatter
from typer._click.globals import get_current_context
from typer._click.termui import secho
from typer.core import TyperGroup

MIN_TYPER = "0.26"
"""The oldest typer with ``typer._click`` and every name above."""

__all__ = ["MIN_TYPER", "Abort", "ClickException", "Command", "Context", "HelpFormatter", "NoArgsIsHelpError",
           "TyperGroup", "UsageError", "get_current_context", "secho"]
