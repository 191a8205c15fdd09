"""Every ``agentworld …`` command line in the README and the docs pages names a command and options that
exist; the README stays a short entry page whose command map names every command."""

from __future__ import annotations

import importlib.util
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import typer

from agentworld.cli import app

ROOT = Path(__file__).parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").rglob("*.md"))]


def _command_lines() -> list[str]:
    """``agentworld`` invocations inside the bash blocks of the README and the docs pages, continuation lines
    joined."""
    text = "\n".join(page.read_text(encoding="utf-8") for page in PAGES)
    lines: list[str] = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        if "AGENTWORLD_DOMAIN_PACKAGES=" in block:
            continue  # an out-of-tree domain's commands: test_readme_commands.py checks them registered
        joined = re.sub(r"\\\n\s*", " ", block)
        for line in joined.splitlines():
            line = line.split("#", 1)[0].strip()
            match = re.search(r"(?:^|\s|/)agentworld\s+(.*)$", line)
            if match and not line.startswith(("pip", "python")) and "|" not in match.group(1):
                lines.append(match.group(1))
    return lines


def _resolve(words: list[str]) -> tuple[Any, list[str]]:
    command: Any = typer.main.get_command(app)
    rest = list(words)
    while rest and not rest[0].startswith("-"):
        sub = command.get_command(None, rest[0]) if hasattr(command, "get_command") else None
        if sub is None:
            break
        command, rest = sub, rest[1:]
    return command, rest


@pytest.mark.parametrize("line", _command_lines())
def test_readme_command_exists(line: str) -> None:
    words = shlex.split(line.replace("[", "").replace("]", "").replace("|", " "))
    command, rest = _resolve(words)
    known = {opt for p in command.params for opt in [*p.opts, *p.secondary_opts]} | {"--help"}
    if "--" in rest:
        rest = rest[:rest.index("--")]
    for word in rest:
        if word.startswith("--"):
            assert word.split("=")[0] in known, f"{line!r}: {word} is not an option of {command.name}"


def test_readme_has_command_lines() -> None:
    assert len(_command_lines()) >= 60


def test_readme_is_short_and_keeps_the_quick_start() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300
    assert "```bash\nbash install.sh && .venv/bin/agentworld demo\n```" in text  # CI and the tests run these
    assert "```bash\n.venv/bin/pytest -q\n```" in text


def test_ci_runs_the_quick_start_commands_as_the_readme_writes_them_before_any_extra() -> None:
    """``.ci/run`` runs the README's install and test commands as written, first, and checks they match."""
    spec = importlib.util.spec_from_file_location("readme_commands", ROOT / ".ci" / "readme_commands.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    install, tests = module.quick_start(README.read_text(encoding="utf-8"))
    assert install.startswith("bash install.sh") and "--" not in install  # no extra: what a newcomer gets
    assert tests.strip().startswith(".venv/bin/pytest")
    ci = (ROOT / ".ci" / "run").read_text()
    steps = [line for line in ci.splitlines() if line and line[0] != "#"]
    check = steps.index("python3 .ci/readme_commands.py --check")
    assert steps[check + 1:check + 3] == [install.strip(), tests.strip()]  # first, before any extra
    assert not [line for line in steps[:check] if "install" in line or "pytest" in line]
    assert steps[-1] == ".venv/bin/python .ci/extra_tests.py"
    assert [line for line in steps if "pytest" in line] == [tests.strip()], "the README's and the extras'"
    assert module.drifted([install, tests], ci) == []
    assert module.drifted([install, tests.strip() + " -x"], ci) == [tests.strip() + " -x"]  # it can fail
    assert module.drifted([tests, install], ci) == [install.strip()]  # and minds the order


def test_the_readme_command_map_names_every_command() -> None:
    """One row per visible top-level command, doctor included, in the README's command table."""
    from agentworld.cli import COMMANDS

    text = README.read_text(encoding="utf-8")
    table = text[text.index("## Commands"):text.index("\n## ", text.index("## Commands") + 1)]
    rows = re.findall(r"^\| `agentworld ([a-z-]+)` \|(.*)$", table, re.M)
    assert [name for name, _ in rows] == [name for name, entry in COMMANDS.items() if not entry.hidden]
    root = typer.main.get_command(app)
    for name, row in rows:
        group = root.get_command(None, name)  # type: ignore[attr-defined]
        subs = group.list_commands(None) if hasattr(group, "list_commands") else []
        missing = [sub for sub in subs if f"`{sub}`" not in row and f"`{name} {sub}`" not in row]
        assert missing == [], f"README command map: agentworld {name} does not name {missing}"


def test_the_readme_links_resolve() -> None:
    """Its relative links point at files of the repository (GitHub renders them; mkdocs never sees it)."""
    text = README.read_text(encoding="utf-8")
    targets = re.findall(r"\]\(((?!https?:|#)[^)#]+)(?:#[^)]*)?\)", text)
    assert targets
    assert [t for t in targets if not (ROOT / t).exists()] == []


def test_paths_named_in_the_docs_exist() -> None:
    """Files outside docs/ are named as code spans (mkdocs cannot link them, so it cannot check them): each
    named repository path must exist, so a moved file fails here and not in a reader's hands."""
    span = re.compile(r"`((?:src|tests|benchmarks|examples|configs|environments|docs|\.ci)/[^`\s]*)`")
    named = [(page.relative_to(ROOT), found.group(1).rstrip(".,:;)")) for page in PAGES
             for found in span.finditer(page.read_text(encoding="utf-8"))]
    concrete = [(page, path) for page, path in named if not set(path) & set("<*{…")]
    assert len(concrete) >= 100
    assert [f"{page}: {path}" for page, path in concrete if not (ROOT / path).exists()] == []
