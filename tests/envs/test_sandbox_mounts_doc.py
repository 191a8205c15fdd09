"""The recording guide says exactly which host folders the sandbox mounts: the ones ``Sandbox.argv`` binds.

It used to say the SWE sandbox did not mount the host's files at all, while bubblewrap bind-mounts
the host's ``/usr`` and ``/etc`` read-only.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agentworld.envs.sandbox import Sandbox, missing_tools

GUIDE = Path(__file__).parents[2] / "docs" / "guides" / "record.md"


def _swe_section() -> str:
    text = GUIDE.read_text(encoding="utf-8")
    start = text.index("A coding agent's tools, as Qwen Code names them")
    return text[start:text.index("\n\n", start)]


@pytest.mark.skipif(bool(missing_tools()), reason=f"needs {missing_tools()}")
def test_the_guide_names_every_host_folder_the_sandbox_binds() -> None:
    with Sandbox() as box:
        argv = box.argv(["true"])
    host = [argv[i + 1] for i, a in enumerate(argv) if a in ("--ro-bind", "--bind")
            if not argv[i + 1].startswith(str(box.root))]
    read_only = [argv[i + 1] for i, a in enumerate(argv) if a == "--ro-bind"]
    assert host and host == read_only, "every host folder is bound read-only"
    section = " ".join(_swe_section().split())
    assert "not even mounted" not in section
    for folder in host:
        assert re.search(rf"`{re.escape(folder)}`", section), f"docs/guides/record.md does not name {folder}"
    assert "read-only" in section
