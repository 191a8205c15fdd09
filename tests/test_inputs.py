"""Files read from world folders, seed, tools, control and config files: regular, bounded, confined."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentworld.configfile import load_config_file
from agentworld.domains.spec import ControlSpec, load_control_spec
from agentworld.errors import DataError
from agentworld.inputs import MAX_DEPTH, MAX_INPUT_BYTES_ENV, read_bytes
from agentworld.sim.toolfile import load_tools
from agentworld.synth.world import load_world
from synth_worlds import TASK, WORLD
from synth_worlds import write as write_into


def write(folder: Path, world: dict[str, Any], tasks: list[Any]) -> Path:
    folder.mkdir(parents=True)
    return write_into(folder, world, tasks)


DEEP_JSON = "[" * 5000 + "]" * 5000
DEEP_YAML = "a: " + "[" * 5000 + "]" * 5000 + "\n"


def finishes(call: Any, timeout_s: float = 10) -> BaseException | None:
    """Run ``call`` in a daemon thread: the exception it raised, or a failed test when it hangs."""
    box: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
            box.append(None)
        except BaseException as exc:
            box.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout_s)
    assert box, f"still reading after {timeout_s} s (hangs)"
    return box[0]


def test_a_fifo_control_file_is_refused_at_once(tmp_path: Path) -> None:
    world = write(tmp_path / "w", WORLD, [TASK])
    (world / "controls").mkdir()
    os.mkfifo(world / "controls" / "faults.yaml")
    error = finishes(lambda: load_world(world))
    assert isinstance(error, DataError) and "not a regular file (a FIFO)" in str(error)
    assert str(world / "controls" / "faults.yaml") in str(error)


def test_a_world_file_linked_out_of_its_folder_is_refused(tmp_path: Path) -> None:
    world = write(tmp_path / "w", WORLD, [TASK])
    (world / "controls").mkdir()
    (world / "controls" / "zero.yaml").symlink_to("/dev/zero")
    error = finishes(lambda: load_world(world))
    assert isinstance(error, DataError) and "links outside its folder" in str(error)
    (world / "controls" / "zero.yaml").unlink()
    outside = write(tmp_path / "elsewhere", WORLD, [TASK])
    (world / "world.json").unlink()
    (world / "world.json").symlink_to(outside / "world.json")
    with pytest.raises(DataError, match="links outside its folder"):
        load_world(world)
    (world / "world.json").unlink()
    (world / "world.json").symlink_to("sub/world.json")  # a link inside the folder is fine
    (world / "sub").mkdir()
    (world / "sub" / "world.json").write_text(json.dumps(WORLD))
    assert load_world(world).name == WORLD["name"]


def test_devices_are_refused_and_the_size_limit_is_configurable(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    error = finishes(lambda: load_tools("/dev/zero"))
    assert isinstance(error, DataError) and "a character device" in str(error)
    world = write(tmp_path / "w", WORLD, [TASK])
    monkeypatch.setenv(MAX_INPUT_BYTES_ENV, "100")
    with pytest.raises(DataError, match=f"larger than 100 bytes.*{MAX_INPUT_BYTES_ENV}"):
        load_world(world)
    monkeypatch.setenv(MAX_INPUT_BYTES_ENV, "lots")
    with pytest.raises(DataError, match="expected a positive number of bytes"):
        read_bytes(world / "world.json")
    monkeypatch.delenv(MAX_INPUT_BYTES_ENV)
    assert load_world(world).tasks


def test_deeply_nested_json_and_yaml_are_one_located_error(tmp_path: Path) -> None:
    world = write(tmp_path / "w", WORLD, [TASK])
    (world / "world.json").write_text('{"name": ' + DEEP_JSON + "}")
    with pytest.raises(DataError, match=f"nested deeper than {MAX_DEPTH} levels"):
        load_world(world)
    world = write(tmp_path / "w2", WORLD, [TASK])
    (world / "tasks.jsonl").write_text(json.dumps(TASK) + "\n" + '{"id": ' + DEEP_JSON + "}\n")
    with pytest.raises(DataError, match=r"tasks\.jsonl:2: nested deeper"):
        load_world(world)
    (tmp_path / "c.yaml").write_text(DEEP_YAML)
    with pytest.raises(DataError, match="nested deeper"):
        load_control_spec(tmp_path / "c.yaml")
    with pytest.raises(DataError, match="nested deeper"):
        load_config_file(ControlSpec, tmp_path / "c.yaml")
    (tmp_path / "tools.json").write_text('{"tools": ' + DEEP_JSON + "}")
    with pytest.raises(DataError, match="nested deeper"):
        load_tools(tmp_path / "tools.json")


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agentworld", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=60, env={**os.environ, "NO_COLOR": "1"})


def test_cli_readers_answer_hostile_files_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "deep.json").write_text('{"tools": ' + DEEP_JSON + "}")
    (tmp_path / "deep.jsonl").write_text('{"a": ' + DEEP_JSON + "}\n")
    os.mkfifo(tmp_path / "fifo.json")
    (tmp_path / "c.yaml").write_text(DEEP_YAML)
    runs = [
        (("serve", "mcp", "--tools", "deep.json", "--model", "scripted"), "nested deeper"),
        (("serve", "mcp", "--tools", "fifo.json", "--model", "scripted"), "not a regular file (a FIFO)"),
        (("serve", "mcp", "--tools", "/dev/zero", "--model", "scripted"), "a character device"),
        (("synth", "envs", "--seed-files", "fifo.json", "--out", "o1", "--generator-model", "synth-template"),
         "not a regular file (a FIFO)"),
        (("synth", "envs", "--seed-files", "deep.jsonl", "--out", "o2", "--generator-model",
          "synth-template"),
         "deep.jsonl:1"),
    ]
    deep = write(tmp_path / "deep", WORLD, [TASK])
    (deep / "world.json").write_text('{"name": ' + DEEP_JSON + "}")
    runs.append((("serve", "mcp", "--world", "deep", "--model", "scripted"), "nested deeper"))
    for args, expected in runs:
        done = _cli(*args, cwd=tmp_path)
        assert done.returncode == 2 and expected in done.stderr, (args, done.stderr[-2000:])
        assert len(done.stderr.strip().splitlines()) == 1, (args, done.stderr[-2000:])
    checked = _cli("synth", "check", "deep", "--out", "checked", cwd=tmp_path)  # a rejected world, reported
    assert checked.returncode == 0 and "Traceback" not in checked.stderr, checked.stderr[-2000:]
    assert "nested deeper" in (tmp_path / "checked" / "report.json").read_text()


def test_serve_http_refuses_linked_and_deep_world_files_with_422(tmp_path: Path) -> None:
    from agentworld.serve.config import HttpServeConfig
    from agentworld.serve.http_api import create_app
    from serving import serve

    root = tmp_path / "worlds"
    write(root / "good", WORLD, [TASK])
    outside = write(tmp_path / "secret", WORLD, [TASK])
    write(root / "linked", WORLD, [TASK])
    (root / "linked" / "world.json").unlink()
    (root / "linked" / "world.json").symlink_to(outside / "world.json")
    write(root / "deep", WORLD, [TASK])
    (root / "deep" / "world.json").write_text('{"name": ' + DEEP_JSON + "}")
    config = HttpServeConfig(model="scripted", worlds_root=root)
    with serve(create_app(config)) as url, httpx.Client(base_url=url, timeout=30) as client:
        assert client.post("/v1/sessions", json={"world": "good"}).status_code == 200
        linked = client.post("/v1/sessions", json={"world": "linked"})
        assert linked.status_code == 422 and "links outside its folder" in linked.text
        assert str(tmp_path) not in linked.text
        deep = client.post("/v1/sessions", json={"world": "deep"})
        assert deep.status_code == 422 and "nested deeper" in deep.text
