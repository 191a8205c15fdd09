"""The generated CLI and config references name every command, option and config field, and the site builds.

Why: the references are the documentation of every option; they are rendered from the code at build time
(``agentworld.cli_docs``), so what can go wrong is the renderer skipping something — a command of a lazy
group, a hidden alias, a required option, a field of a nested config.
"""

from __future__ import annotations

import doctest
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel

from agentworld.cli import COMMANDS
from agentworld.cli_docs import (
    config_anchor,
    config_classes,
    render_cli,
    render_configs,
    type_name,
    walk_commands,
)
from agentworld.cli_support import config_of

ROOT = Path(__file__).parents[1]


def _sections(markdown: str) -> dict[str, str]:
    """Heading text → the section's body (up to the next heading of any level)."""
    parts = re.split(r"^#{1,6} (.+)$", markdown, flags=re.M)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def test_every_command_has_a_section_with_its_help_and_every_option() -> None:
    sections = _sections(render_cli())
    docs = list(walk_commands())
    assert {d.path for d in docs} >= {(name,) for name in COMMANDS} | {("eval", "run"), ("serve", "mock"),
                                                                          ("record", "terminal")}
    for doc in docs:
        body = sections[doc.name]
        if doc.command.help:
            first = doc.command.help.split("\n")[0].strip().replace("<", "&lt;").replace(">", "&gt;")
            assert " ".join(first.split()) in " ".join(body.split()), doc.name
        for param in doc.command.params:
            if param.name == "help":
                continue
            if param.param_type_name == "argument":
                assert f"`{(param.name or '').upper()}` (argument)" in body, (doc.name, param.name)
                continue
            for flag in (*param.opts, *param.secondary_opts):
                assert re.search(rf"`{re.escape(flag)}`", body), (doc.name, flag)


def test_required_options_come_first_with_type_default_and_help() -> None:
    sections = _sections(render_cli())
    body = sections["agentworld eval run"]
    rows = [line for line in body.splitlines() if line.startswith("| `")]
    required = [row.split(" | ")[3] == "yes" for row in rows]
    assert required[0] and required == sorted(required, reverse=True)  # every "yes" before the rest
    assert "| `--model` | str | — | yes | World model: the served model name" in body
    assert re.search(r"\| `--concurrency` \| int \| `16` \|  \| \S", body)
    assert re.search(r"\| `--judge-mode` \| rubric\\\|turing\\\|reference \| `rubric` \|", body)
    assert "(env: AGENTWORLD_MODEL_API_KEY, OPENAI_API_KEY)" in body


def test_hidden_aliases_are_documented_as_such() -> None:
    sections = _sections(render_cli())
    for name, entry in COMMANDS.items():
        if entry.hidden:
            assert "Hidden from `--help`" in sections[f"agentworld {name}"]
    root = sections["agentworld"]
    listed = re.search(r"Sub-commands: (.*)\.", root)
    assert listed is not None
    visible = [n for n, e in COMMANDS.items() if not e.hidden]
    assert [n.strip("` ") for n in listed.group(1).split(",")] == visible


def test_every_config_field_appears_under_its_class() -> None:
    text = render_configs()
    classes = config_classes()
    used = {config_of(doc.command.callback) for doc in walk_commands()} - {None}
    assert used and used <= set(classes)  # every config a command is generated from, plus nested ones
    for config in classes:
        anchor = f"{{ #{config_anchor(config)} }}"
        start = text.index(f"## {config.__name__} {anchor}")
        end = text.find("\n## ", start + 1)
        body = text[start:end if end > 0 else None]
        for name, info in config.model_fields.items():
            row = next((line for line in body.splitlines() if line.startswith(f"| `{name}` |")), None)
            assert row is not None, (config.__name__, name)
            assert ("| yes |" in row) == info.is_required(), (config.__name__, name)
    assert len({config_anchor(c) for c in classes}) == len(classes)  # two ExportOptions stay apart


def test_each_generated_command_links_its_config() -> None:
    text = render_cli()
    for doc in walk_commands():
        config = config_of(doc.command.callback)
        if config is not None:
            assert f"(config.md#{config_anchor(config)})" in _sections(text)[doc.name], doc.name


def test_the_module_example_holds() -> None:
    from agentworld import cli_docs

    assert doctest.testmod(cli_docs).attempted >= 1 and doctest.testmod(cli_docs).failed == 0


def test_type_names_read_as_written() -> None:
    from typing import Literal

    class Example(BaseModel):
        a: Literal["x", "y"] = "x"
        b: list[Path] | None = None

    assert type_name(Example.model_fields["a"].annotation) == "'x' | 'y'"
    assert type_name(Example.model_fields["b"].annotation) == "list[Path] | None"


@pytest.mark.extra("docs")
def test_the_site_builds_strict(tmp_path: Path) -> None:
    """Every link and anchor resolves, and the hook puts both generated pages into the site."""
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent)) or "mkdocs"
    done = subprocess.run([mkdocs, "build", "--strict", "--site-dir", str(tmp_path / "site")], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    cli = (tmp_path / "site" / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    assert "agentworld doctor" in cli and "--model-base-url" in cli
    assert (tmp_path / "site" / "reference" / "config" / "index.html").is_file()
