"""``agentworld demo`` on an install without a domain's extra: that domain is skipped with one line that
names the extra, and the others run (it died with ``ModuleNotFoundError: playwright``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from rich.console import Console

from agentworld.demo import DemoConfig, run_demo
from agentworld.envs.search_index import default_docs_dir

pytestmark = pytest.mark.skipif(default_docs_dir() is None, reason="needs python3-doc (run ./install.sh)")


def test_demo_without_the_web_extra_skips_web_in_one_line_and_runs_search(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("playwright", "playwright.sync_api"):
        monkeypatch.setitem(sys.modules, name, None)  # what an install without the web extra has
    console = Console(record=True, width=200)
    report = run_demo(DemoConfig(out=str(tmp_path / "demo"), domains=["web,search"]), console=console)
    text = console.export_text()
    lines = [line for line in text.splitlines() if line.startswith("Web:")]
    assert lines == ["Web: skipped: playwright is not installed (pip install 'agentworld[web]')"], text
    assert "Traceback" not in text and "ModuleNotFoundError" not in text
    assert report.is_file()
    data = sorted(p.name for p in (tmp_path / "demo" / "data").glob("*_test.jsonl") if p.stat().st_size)
    assert data == ["search_test.jsonl"]
