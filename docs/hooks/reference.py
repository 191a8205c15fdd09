"""mkdocs hook: the CLI and config reference pages, rendered from the code on every build.

The pages are never files in the repository, so they cannot go stale: ``agentworld.cli_docs`` walks the
command tree of ``agentworld.cli`` and the typed configs it is generated from. This checkout's ``src``
comes first on the path (set when the pages are made: mkdocs restores ``sys.path`` after loading a
hook), so a build describes this checkout even where another one is installed.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

SRC = Path(__file__).resolve().parents[2] / "src"
PAGES = {"reference/cli.md": "render_cli", "reference/config.md": "render_configs"}


def on_files(files: Files, config: Any) -> Files:
    if str(SRC) not in sys.path:
        sys.path.insert(0, str(SRC))
    cli_docs = importlib.import_module("agentworld.cli_docs")
    for uri, render in PAGES.items():
        files.append(File.generated(config, uri, content=getattr(cli_docs, render)()))
    return files
