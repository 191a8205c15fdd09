"""Which extra of ``pyproject.toml`` a test needs, whether it is installed, and the skip reason naming it.

Why: the README's test command runs right after the README's install, which brings the ``dev`` and
``web`` extras only. A test that needs another extra (``train``, ``ray``, ``verifiers``, ``docs``) skips
there with a reason that names the extra and the command installing it, and CI runs exactly the tests
that skipped so once every extra is installed (``.ci/extra_tests.py``). What each extra holds is read
from ``pyproject.toml``, never listed twice.

A test declares its extra with ``@pytest.mark.extra("train")`` (a module: ``pytestmark = ...``); a module
that imports the extra's package at its top guards that with ``pytest.importorskip("torch")``, whose
reason is rewritten here to name the extra bringing the missing package. The hooks at the end (which
``tests/conftest.py`` imports) apply both, end the run with one line per missing extra, and record
every skip in pytest's cache under ``agentworld/skips``, which CI reads.
"""

from __future__ import annotations

import functools
import importlib.metadata
import linecache
import re
import tomllib
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
INSTALL = {
    "dev": "bash install.sh", "web": "bash install.sh",
    "gym": "bash install.sh (the dev extra has it)", "search": "bash install.sh (the dev extra has it)",
    "mcp-servers": "bash install.sh (the dev extra has it)",
    "train": "bash install.sh --train", "verifiers": "bash install.sh --train",
    "ray": "bash install.sh --ray",
    "docs": ".venv/bin/pip install -e '.[docs]'",
}
"""How each extra gets installed (``tests/test_extras_needed.py`` checks every extra has one)."""
PREFERRED = ("dev", "web", "train", "ray", "verifiers", "docs", "gym", "search", "mcp-servers")
"""Which extra a skip names when several hold the missing package: the one the README's install has
(``transformers`` is in ``dev`` and ``train``), then the one ``install.sh`` brings with the fewest flags."""
ALSO = {"verifiers": ("verifiers",)}
"""Installed with an extra but not listed in it: ``install.sh --train`` adds verifiers with ``--no-deps``
after its extra (verifiers 0.3.1 pins ``mcp<2``)."""
IMPORT_NAMES = {"yaml": "pyyaml", "re2": "google-re2", "browsergym": "browsergym-core",
                "llama_cpp": "llama-cpp-python", "material": "mkdocs-material"}
"""Import name → distribution where the two differ (``tests/test_dependencies.py`` checks the table
against what is installed, so that it cannot go stale where the package is present)."""
EXTRA_REASON = re.compile(r"needs the ([a-z][\w-]*) extra\b")
IMPORT_SKIP = re.compile(r"could not import '[\w.]+': No module named '([\w.]+)'")
"""``pytest.importorskip``'s own reason (a test passed none): the module named last is the one missing."""
IMPORTORSKIP_CALL = re.compile(r"\bimportorskip\(\s*[\"']([\w.]+)[\"']")
"""The line that skipped called ``pytest.importorskip("NAME", reason=...)`` (a reason of its own)."""


def norm(name: str) -> str:
    """A distribution name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def distribution_of(module: str) -> str:
    """The distribution of ``module``'s top-level package (``llama_cpp.server`` → ``llama-cpp-python``)."""
    top = module.split(".")[0]
    return norm(IMPORT_NAMES.get(top, top))


@functools.cache
def declared() -> tuple[frozenset[str], dict[str, frozenset[str]]]:
    """The base dependencies and each extra's distributions, from ``pyproject.toml``."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]

    def names(specs: list[str]) -> frozenset[str]:
        return frozenset(norm(m.group()) for s in specs if (m := re.match(r"[A-Za-z0-9._-]+", s)))

    extras = {name: names(specs) | frozenset(ALSO.get(name, ())) for name, specs in
              project["optional-dependencies"].items()}
    return names(project["dependencies"]), extras


@functools.cache
def missing(extra: str) -> tuple[str, ...]:
    """The distributions of ``extra`` that are not installed (none: the extra is there).

    Raises:
        KeyError: ``extra`` is not an extra of ``pyproject.toml`` (a typo in a marker).
    """
    wanted = declared()[1][extra]
    gone = []
    for name in sorted(wanted):
        try:
            importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            gone.append(name)
    return tuple(gone)


def reason(extra: str, absent: str | None = None) -> str:
    """The skip reason for a missing ``extra``: its name, how to install it, and what is absent."""
    gone = missing(extra)
    shown = f"no module named {absent!r}" if absent else (
        "missing: " + ", ".join(gone[:3]) + (f" and {len(gone) - 3} more" if len(gone) > 3 else ""))
    return f"needs the {extra} extra: {INSTALL[extra]}" + (f" ({shown})" if absent or gone else "")


def extra_of(module: str) -> str | None:
    """The extra to install for ``module`` (None: a base dependency, or no extra has it)."""
    base, extras = declared()
    dist = distribution_of(module)
    if dist in base:
        return None
    return next((name for name in PREFERRED if dist in extras.get(name, ())), None)


def attribute(skip_reason: str, source_line: str = "") -> tuple[str | None, str]:
    """``(extra, reason)`` for a skip: the extra it is for, if any, and the reason to show.

    A reason that already names an extra (the ``extra`` marker's, or a test's own) is kept. A skip by
    ``pytest.importorskip`` of a package some extra brings gets that extra's reason: known by
    importorskip's own reason, or by ``source_line``, the line that skipped, where a test gave a reason
    of its own.
    """
    named = EXTRA_REASON.search(skip_reason)
    if named:
        return named.group(1), skip_reason
    found = IMPORT_SKIP.search(skip_reason)
    if found and (extra := extra_of(found.group(1))):
        return extra, reason(extra, found.group(1))
    call = IMPORTORSKIP_CALL.search(source_line)
    if call and (extra := extra_of(call.group(1))):
        return extra, f"{reason(extra)}: {skip_reason}"
    return None, skip_reason


# -- the hooks (tests/conftest.py imports them) -----------------------------------------------------

SKIPS = pytest.StashKey[dict[str, dict[str, str]]]()
"""This run's skips: ``{"extra": {node id: extra}, "other": {node id: reason}}``."""
CACHE_KEY = "agentworld/skips"


def pytest_configure(config: pytest.Config) -> None:
    config.stash[SKIPS] = {"extra": {}, "other": {}}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test marked ``extra(NAME)`` skips, at its own location, where the extra is not installed."""
    for item in items:
        for mark in item.iter_markers("extra"):
            for extra in mark.args:
                if extra not in INSTALL:
                    known = ", ".join(sorted(INSTALL))
                    raise pytest.UsageError(f"{item.nodeid}: pytest.mark.extra({extra!r}) is not an extra of "
                                            f"pyproject.toml (known: {known})")
                if missing(extra):
                    item.add_marker(pytest.mark.skip(reason=reason(extra)))


def _note_skip(config: pytest.Config, report: pytest.TestReport | pytest.CollectReport) -> None:
    """Names the extra in the reason of a skip for one, and records the skip (xfails are not skips)."""
    if not report.skipped or hasattr(report, "wasxfail") or not isinstance(report.longrepr, tuple):
        return
    path, line, text = report.longrepr
    extra, shown = attribute(text.removeprefix("Skipped: "), linecache.getline(str(path), int(line or 0)))
    if shown not in text:
        report.longrepr = (path, line, f"Skipped: {shown}")
    if extra is None:
        config.stash[SKIPS]["other"][report.nodeid] = shown
    else:
        config.stash[SKIPS]["extra"][report.nodeid] = extra


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    report = yield
    _note_skip(item.config, report)
    return report


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, Any, Any]:
    report = yield
    _note_skip(collector.config, report)
    return report


def pytest_sessionfinish(session: pytest.Session) -> None:
    cache = getattr(session.config, "cache", None)  # None under -p no:cacheprovider
    if cache is not None:
        args = list(session.config.invocation_params.args)
        cache.set(CACHE_KEY, {"args": args, **session.config.stash[SKIPS]})


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    skipped = config.stash[SKIPS]["extra"]
    for extra in sorted(set(skipped.values())):
        ids = [node for node, wanted in skipped.items() if wanted == extra]
        tests, modules = sum("::" in node for node in ids), sum("::" not in node for node in ids)
        what = " and ".join(f"{n} {word}{'s' if n != 1 else ''}" for n, word in
                            ((tests, "test"), (modules, "module")) if n)
        terminalreporter.write_line(f"{what} skipped for the {extra} extra ({INSTALL[extra]})",
                                    yellow=True)
