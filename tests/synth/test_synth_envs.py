"""``synth envs``: stages from seeds with a scripted generator, rejections, resume after SIGKILL, serving."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import TextContent

from agentworld.models.base import ChatRequest, ChatResult
from agentworld.models.cache import response_key
from agentworld.models.scripted import ScriptedBackend
from agentworld.schema import Message
from agentworld.serve.mock_server import MockConfig, run_mock_server
from agentworld.synth.envs import Factory
from agentworld.synth.seeds import read_seeds
from agentworld.synth.stages import STAGES, read_inputs
from agentworld.synth.template import answer
from agentworld.synth.world import load_world
from serving import chat_server

TAU = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "tau_bench_airline_gpt4o_dev.json"
TAU = TAU if TAU.exists() else Path("/work/shared/data/tau_bench_airline_gpt4o_dev.json")
TOOLS = Path(__file__).parents[1] / "fixtures" / "airline_tools.json"
needs_tau = pytest.mark.skipif(not TAU.exists(), reason="tau-bench seed file not present")


def scripted(override: dict[str, str] | None = None) -> ScriptedBackend:
    """A generator that answers like ``synth-template``, except stages named in ``override``."""

    def reply(request: ChatRequest) -> str:
        stage, _ = read_inputs(request.messages[-1].content)
        return (override or {}).get(stage) or answer(request)

    return ScriptedBackend(default=reply, name="scripted-generator")


def run_factory(backend: Any, out: Path, seeds: list[Any], concurrency: int = 4) -> Any:
    return asyncio.run(Factory(backend, out, model="g", concurrency=concurrency).run(seeds))


@needs_tau
def test_tau_bench_seeds_become_world_folders_served_to_a_real_mcp_client(tmp_path: Path) -> None:
    seeds = read_seeds([TAU], limit=3)
    backend = scripted()
    summary = run_factory(backend, tmp_path, seeds)
    assert (summary.environments, summary.generated, summary.requests_sent) == (3, 3, 15)
    assert len(backend.calls) == 15 and {
        read_inputs(c.messages[-1].content)[0] for c in backend.calls
    } == set(STAGES)
    folder = tmp_path / "env_00000"
    assert sorted(p.name for p in (folder / "stages").iterdir()) == [
        "01_scenario.json",
        "02_tools.json",
        "03_initial_state.json",
        "04_tasks.json",
        "05_plans.json",
    ]
    stage = json.loads((folder / "stages" / "02_tools.json").read_text())
    assert (stage["stage"], stage["version"], stage["env"]) == ("tools", 1, "env_00000")
    world = load_world(folder)
    assert world.provenance.seeds == [f"{TAU.name}:{seeds[0].id.split(':', 1)[1]}"]
    assert "reservation" in world.initial_state.entities and world.tasks[0].reference_plan
    assert all(
        [(s.tool, s.arguments) for s in t.reference_plan] == [(c.tool, c.arguments) for c in t.success.trace]
        for t in world.tasks
    )

    with run_mock_server(MockConfig()) as mock_url:
        params = StdioServerParameters(
            command=sys.executable,
            env=dict(os.environ),
            args=[
                "-m",
                "agentworld",
                "serve",
                "mcp",
                "--world",
                str(folder),
                "--model-base-url",
                mock_url,
                "--model",
                "mock",
            ],
        )

        async def session() -> tuple[list[str], str]:
            async with Client(params) as client:
                names = [t.name for t in (await client.list_tools()).tools]
                call = world.tasks[0].reference_plan[0]
                result = await client.call_tool(call.tool, call.arguments)
                assert not result.is_error
                block = result.content[0]
                assert isinstance(block, TextContent)
                return names, block.text

        names, text = asyncio.run(session())
    assert names == [t.name for t in world.tools] and "get_reservation_details" in names
    assert "Command completed successfully." in text


@needs_tau
@pytest.mark.parametrize(
    ("stage", "reply", "reason", "detail"),
    [
        ("tasks", "Sure! Here are the tasks.", "unparsable_json", "no JSON object"),
        (
            "tools",
            '{"tools": [{"description": "nameless"}]}',
            "invalid_output",
            "tools.0.name: Field required",
        ),
        (
            "scenario",
            '```json\n{"service": "x", "users": "everyone"}\n```',
            "invalid_output",
            "users: Input should be a valid list",
        ),
    ],
)
def test_an_answer_that_does_not_parse_is_a_recorded_rejection(
    tmp_path: Path, stage: str, reply: str, reason: str, detail: str
) -> None:
    seeds = read_seeds([TAU], limit=1) if stage == "tools" else read_seeds([TOOLS])  # a tools/list has tools
    summary = run_factory(scripted({stage: reply}), tmp_path, seeds)
    assert (summary.generated, summary.rejected_by_stage, summary.rejected_by_reason) == (
        0,
        {stage: 1},
        {reason: 1},
    )
    status = json.loads((tmp_path / "env_00000" / "status.json").read_text())
    assert status["kept"] is False and status["rejections"][0]["stage"] == stage
    assert detail in status["rejections"][0]["detail"]
    assert not (tmp_path / "env_00000" / "world.json").exists()


def test_a_bare_tools_list_seed_keeps_its_tools_and_sends_no_tools_request(tmp_path: Path) -> None:
    backend = scripted()
    summary = run_factory(backend, tmp_path, read_seeds([TOOLS]))
    assert summary.generated == 1 and summary.requests_sent == 4
    assert "tools" not in {read_inputs(c.messages[-1].content)[0] for c in backend.calls}
    world = load_world(tmp_path / "env_00000")
    assert [t.model_dump() for t in world.tools] == json.loads(TOOLS.read_text())["tools"]


class Gauge:
    """A generator that counts requests in flight (each waits until the loop has run other tasks)."""

    name = "gauge"

    def __init__(self) -> None:
        self.now = self.peak = self.calls = 0

    async def complete(self, request: ChatRequest) -> ChatResult:
        self.now += 1
        self.calls += 1
        self.peak = max(self.peak, self.now)
        for _ in range(5):
            await asyncio.sleep(0)
        self.now -= 1
        return ChatResult(content=answer(request))


def test_concurrency_bounds_the_requests_in_flight(tmp_path: Path) -> None:
    seeds = [read_seeds([TOOLS])[0].model_copy(update={"id": f"s{i}"}) for i in range(6)]
    gauge = Gauge()
    summary = run_factory(gauge, tmp_path, seeds, concurrency=3)
    assert summary.generated == 6 and gauge.calls == 24 and gauge.peak == 3


# -- SIGKILL and resume, through the CLI and a real OpenAI-compatible HTTP server -------------------


@contextmanager
def generator_server(delay_s: float = 0.05) -> Iterator[tuple[str, list[list[dict[str, str]]]]]:
    """An OpenAI-compatible chat server on 127.0.0.1 answering like synth-template; logs every request."""
    log: list[list[dict[str, str]]] = []

    def reply(_path: str, body: dict[str, Any], _headers: Any) -> str:
        log.append(body["messages"])
        time.sleep(delay_s)
        return answer(ChatRequest(messages=tuple(Message(**m) for m in body["messages"])))

    with chat_server(reply) as url:
        yield f"{url}/v1", log


def journal_keys(path: Path) -> set[str]:
    keys = set()
    for line in path.read_text().splitlines():
        with contextlib.suppress(ValueError, KeyError):  # a torn last line
            keys.add(json.loads(line)["key"])
    return keys


def key_of(messages: list[dict[str, str]]) -> str:
    request = ChatRequest(
        messages=tuple(Message(**m) for m in messages), model="gen", max_tokens=4096, temperature=0.0, seed=0
    )
    return response_key("openai:gen", request)


def test_sigkill_then_the_same_command_finishes_every_environment_once_without_resending(
    tmp_path: Path,
) -> None:
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    for i in range(6):
        tools = json.loads(TOOLS.read_text())["tools"]
        (seeds / f"svc{i}.json").write_text(
            json.dumps({"tools": [{**t, "name": f"{t['name']}_{i}"} for t in tools]})
        )
    out = tmp_path / "out"
    with generator_server() as (url, log):
        cmd = [
            sys.executable,
            "-m",
            "agentworld",
            "synth",
            "envs",
            *(a for f in sorted(seeds.iterdir()) for a in ("--seed-files", str(f))),
            "--out",
            str(out),
            "--generator-model",
            "gen",
            "--generator-base-url",
            url,
            "--concurrency",
            "2",
        ]
        env = {**os.environ, "AGENTWORLD_GENERATOR_API_KEY": "sk-test"}
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120
        while len(log) < 9 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        assert proc.wait() == -signal.SIGKILL, proc.stderr.read() if proc.stderr else ""
        first = list(log)
        journaled = journal_keys(out / "generator_cache.jsonl")
        assert 0 < len(journaled) < 24, "killed mid-run"
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        second = log[len(first) :]
    resent = [key_of(m) for m in second if key_of(m) in journaled]
    assert resent == [], "a request answered and journaled before the kill was sent again"
    assert len({key_of(m) for m in first + second}) == 24
    summary = json.loads((out / "summary.json").read_text())
    assert summary["environments"] == summary["generated"] == 6
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == [f"env_{i:05d}" for i in range(6)]
    assert all(load_world(out / f"env_{i:05d}").tasks for i in range(6))
    assert "sk-test" not in "".join(p.read_text() for p in out.rglob("*") if p.is_file())
    assert f"kept {summary['kept']} of 6 environments" in done.stdout


def test_a_missing_seed_file_is_one_red_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "agentworld",
            "synth",
            "envs",
            "--seed-files",
            str(tmp_path / "no"),
            "--out",
            str(tmp_path / "o"),
            "--generator-model",
            "synth-template",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and done.stderr.strip() == f"error: {tmp_path / 'no'}: no such seed file"


@needs_tau
def test_a_rerun_with_other_seeds_redoes_the_environments_it_does_not_match(tmp_path: Path) -> None:
    first = run_factory(scripted(), tmp_path, read_seeds([TOOLS]))
    again = run_factory(scripted(), tmp_path, read_seeds([TOOLS]))
    other = run_factory(scripted(), tmp_path, read_seeds([TAU], limit=1))
    assert (first.requests_sent, again.requests_sent, again.requests_cached) == (4, 0, 0)
    assert other.requests_sent == 5, "stage files of another seed are not reused"
    world = load_world(tmp_path / "env_00000")
    assert world.provenance.seeds[0].startswith(TAU.name)
    assert [t.model_dump() for t in world.tools] != json.loads(TOOLS.read_text())["tools"]


def test_synth_envs_with_a_world_model_runs_every_check_and_writes_the_report(tmp_path: Path) -> None:
    out = tmp_path / "envs"
    with run_mock_server(MockConfig()) as mock_url:
        done = subprocess.run(
            [sys.executable, "-m", "agentworld", "synth", "envs", "--seed-files", str(TOOLS), "--seed-files",
             str(TOOLS), "--out", str(out), "--generator-model", "synth-template", "--no-progress",
             "--model", "mock", "--model-base-url", mock_url],
            capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads((out / "report.json").read_text())
    stages = {s["stage"]: s for s in report["summary"]["stages"]}
    assert report["skipped"] == [] and {"reference_plan", "probe", "duplicates"} <= set(stages)
    assert stages["reference_plan"]["checked"] == 2
    # Two environments from one seed: the same scenario over the same tools, so one is a near-duplicate.
    assert report["summary"]["reasons"] == {"near_duplicate": 1} and report["summary"]["kept"] == 1
    assert (out / "report.html").is_file() and (out / "world_model_cache.jsonl").stat().st_size > 0


def test_kept_means_after_every_check_in_the_output_the_summary_and_every_status(tmp_path: Path) -> None:
    """Two environments from one seed: one is a near-duplicate, so 1 of 2 is kept, in every place that
    says how many were kept (the old command printed "2 of 2 environments kept", then "kept 1 of 2")."""
    out = tmp_path / "envs"
    done = subprocess.run(
        [sys.executable, "-m", "agentworld", "synth", "envs", "--seed-files", str(TOOLS), "--seed-files",
         str(TOOLS), "--out", str(out), "--generator-model", "synth-template", "--no-progress"],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads((out / "report.json").read_text())["summary"]
    summary = json.loads((out / "summary.json").read_text())
    status = [json.loads((out / f"env_0000{i}" / "status.json").read_text()) for i in range(2)]
    assert report["kept"] == summary["kept"] == sum(s["kept"] for s in status) == 1
    assert summary["generated"] == 2 and summary["rejected_by_reason"] == {"near_duplicate": 1}
    assert [s["generated"] for s in status] == [True, True]
    assert [r["reason"] for r in status[1]["rejections"]] == ["near_duplicate"]
    counts = re.findall(r"kept \d+ of \d+|\d+ of \d+ environments kept", done.stdout + done.stderr)
    assert counts == ["kept 1 of 2"], done.stdout
