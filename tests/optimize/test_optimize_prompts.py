"""``agentworld optimize prompts`` over real HTTP: stub world models whose quality depends on the system
prompt, a scripted optimizer, the mock server as judge; validation picks the winner; kill + resume."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from agentworld.cli import app
from agentworld.data.types import TrainSample
from agentworld.domains.registry import DOMAINS
from agentworld.errors import BackendError, DataError
from agentworld.io import read_journal
from agentworld.models.base import ChatRequest
from agentworld.models.cache import response_key
from agentworld.models.scripted import ScriptedBackend
from agentworld.optimize import PromptOptConfig, run_optimize, split_samples
from agentworld.optimize.evaluate import SampleScore
from agentworld.optimize.proposal import ProposalError, parse_revision, samples_block
from agentworld.schema import BenchSample, Message, load_samples
from agentworld.serve.mock_server import MockConfig, run_mock_server
from agentworld.train.config import SFTConfig
from agentworld.train.sft import sft_rows, system_variants
from eval_helpers import bench_rows, echo_truth, write_bench
from serving import chat_server

MARKER = "Reproduce command output exactly."
WRONG = "<predicted_observation>**Environment Observation:**\nbash: command not found\nroot@box:/app#" \
        "</predicted_observation>"


class WorldStub:
    """A world model that answers the ground truth only for ``good`` samples and only when the system
    prompt holds :data:`MARKER`; every request is recorded."""

    def __init__(self, data: Path, good: set[str], delay_s: float = 0.0) -> None:
        self.truth = {json.dumps([m.model_dump() for m in s.messages()[1:]]): s for s in load_samples([data])}
        self.good, self.delay_s = good, delay_s
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def __call__(self, path: str, body: dict[str, Any], headers: Any) -> str:
        with self.lock:
            self.requests.append(body)
        time.sleep(self.delay_s)
        system, rest = body["messages"][0]["content"], body["messages"][1:]
        sample = self.truth[json.dumps(rest)]
        if MARKER in system and sample.id in self.good:
            return f"<predicted_observation>{sample.ground_truth}</predicted_observation>"
        return WRONG


class OptimizerStub:
    """Replies in turn from ``replies`` (functions of the current prompt); records every request."""

    def __init__(self, *replies: Callable[[str], str]) -> None:
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []

    def __call__(self, path: str, body: dict[str, Any], headers: Any) -> str:
        self.requests.append(body)
        user = body["messages"][1]["content"]
        current = re.search(r"<current_prompt>\n(.*)\n</current_prompt>", user, re.S)
        assert current is not None
        reply = self.replies[min(len(self.requests), len(self.replies)) - 1]
        return reply(current.group(1))


def add_marker(current: str) -> str:
    return f"Here is the revision.\n<revised_prompt>\n{current}\n\n# Rule\n{MARKER}\n</revised_prompt>"


@contextmanager
def servers(world: WorldStub, optimizer: OptimizerStub) -> Iterator[tuple[str, str]]:
    with chat_server(world) as w, chat_server(optimizer) as o:
        yield w + "/v1", o + "/v1"


def _data(tmp_path: Path, trajectories: int = 10) -> Path:
    return write_bench(tmp_path / "data", bench_rows(trajectories, turns=2))


def _args(data: Path, world: str, optimizer: str, out: Path, *extra: str) -> list[str]:
    return ["optimize", "prompts", "--data", str(data), "--domains", "terminal", "--model-base-url", world,
            "--model", "wm", "--optimizer-base-url", optimizer, "--optimizer-model", "opt", "--out", str(out),
            "--backoff-s", "0.01", "--concurrency", "4", *extra]


def _train_ids(data: Path) -> set[str]:
    split = split_samples(load_samples([data]), 0.3, 0)["terminal"]
    assert split.train and split.val
    return {s.id for s in split.train}


def test_a_revision_that_improves_only_the_training_split_is_not_the_winner(tmp_path: Path) -> None:
    data, out = _data(tmp_path), tmp_path / "out"
    world, optimizer = WorldStub(data, good=_train_ids(data)), OptimizerStub(add_marker)
    with servers(world, optimizer) as (w, o):
        result = CliRunner().invoke(app, _args(data, w, o, out, "--rounds", "1"))
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())["domains"]["terminal"]
    v0, v1 = summary["variants"]
    assert v1["train"] > v0["train"] and v1["val"] == v0["val"]
    assert summary["best_train"] == 1 and summary["winner"] == 0
    assert "terminal: winner v0" in result.output
    assert summary["rows_with_own_prompt"] == 20
    assert "20 of 20 rows carry a system prompt not built" in result.output
    assert (out / "variants/terminal/v0.txt").read_text() == DOMAINS["terminal"].system_prompt
    assert MARKER in (out / "variants/terminal/v1.txt").read_text()
    record = json.loads((out / "variants/terminal/v1.json").read_text())
    assert record["parent"] == 0 and record["round"] == 1 and f"+{MARKER}" in record["diff_to_parent"]
    asked = optimizer.requests[0]["messages"][1]["content"]
    assert "```diff" in asked and "-t" in asked and "+bash: command not found" in asked
    validation = [s for s in load_samples([data]) if s.id not in _train_ids(data)]
    assert validation and not [s.id for s in validation if s.action in asked]


def test_a_revision_that_also_improves_validation_wins(tmp_path: Path) -> None:
    data, out = _data(tmp_path), tmp_path / "out"
    ids = {s.id for s in load_samples([data])}
    with servers(WorldStub(data, good=ids), OptimizerStub(add_marker)) as (w, o):
        result = CliRunner().invoke(app, _args(data, w, o, out, "--rounds", "1"))
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())["domains"]["terminal"]
    assert summary["winner"] == 1 and summary["variants"][1]["val"] > summary["variants"][0]["val"]


def test_garbled_optimizer_replies_are_failed_proposals(tmp_path: Path) -> None:
    data, out = _data(tmp_path), tmp_path / "out"
    replies = OptimizerStub(lambda _: "I would keep the prompt as it is.",
                            lambda _: "<revised_prompt>\nBe exact, and",
                            lambda _: "<revised_prompt>\n  \n</revised_prompt>",
                            lambda cur: f"<think>x</think><REVISED_PROMPT>```\n{cur}\n```</revised_prompt>",
                            add_marker)
    with servers(WorldStub(data, good=set()), replies) as (w, o):
        result = CliRunner().invoke(app, _args(data, w, o, out, "--rounds", "5"))
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())["domains"]["terminal"]
    reasons = [f["reason"] for f in summary["failed"]]
    assert reasons == ["no <revised_prompt> block in the reply",
                       "<revised_prompt> is never closed (a truncated reply?)",
                       "the <revised_prompt> block is empty", "the revision is the same as v0"]
    assert [v["version"] for v in summary["variants"]] == [0, 1] and summary["variants"][1]["round"] == 5
    failed = [r for r in read_journal(out / "journal.jsonl") if r["event"] == "failed"]
    assert failed[0]["reply"] == "I would keep the prompt as it is."
    assert "round 2 proposal 1 failed: <revised_prompt> is never closed" in result.output


def test_candidates_of_one_round_are_asked_separately(tmp_path: Path) -> None:
    data, out = _data(tmp_path), tmp_path / "out"
    optimizer = OptimizerStub(lambda _: "no idea", add_marker)
    with servers(WorldStub(data, good=_train_ids(data)), optimizer) as (w, o):
        result = CliRunner().invoke(app, _args(data, w, o, out, "--rounds", "1", "--candidates", "2"))
    assert result.exit_code == 0, result.output
    assert len(optimizer.requests) == 2 and optimizer.requests[0] == optimizer.requests[1]
    summary = json.loads((out / "summary.json").read_text())["domains"]["terminal"]
    # The two identical requests are sent concurrently, so which candidate got "no idea" is the order
    # the stub saw them in: one failed, the other became v1.
    failed = [(f["round"], f["candidate"]) for f in summary["failed"]]
    assert len(failed) == 1 and failed[0][0] == 1 and failed[0][1] in (0, 1)
    assert json.loads((out / "variants/terminal/v1.json").read_text())["candidate"] == 1 - failed[0][1]


def test_the_samples_part_keeps_to_its_budget() -> None:
    long = "**Environment Observation:**\n" + "\n".join(f"line {i} " * 20 for i in range(400))
    samples = {f"s{i}": BenchSample(task="terminal", id=f"s{i}", prompt=["ls " * 500], response=[long])
               for i in range(4)}
    worst = [SampleScore(id=k, score=0.0, prediction="nothing") for k in samples]
    block = samples_block(worst, samples, 2000)
    assert len(block) <= 2000 + 4 * 10 and block.count("… [truncated]") == 8
    assert block.count("```diff") == 4 and "-line 0" in block


def test_parse_revision_limits() -> None:
    assert parse_revision("<revised_prompt>a</revised_prompt> <revised_prompt>b</revised_prompt>", 10) == "b"
    with pytest.raises(ProposalError, match="has 11 characters"):
        parse_revision("<revised_prompt>" + "x" * 11 + "</revised_prompt>", 10)


def test_judge_scores_join_the_rule_tier(tmp_path: Path) -> None:
    data, out = _data(tmp_path), tmp_path / "out"
    with servers(WorldStub(data, good=_train_ids(data)), OptimizerStub(add_marker)) as (w, o), \
            run_mock_server(MockConfig()) as judge:
        result = CliRunner().invoke(app, _args(data, w, o, out, "--rounds", "1", "--judge-base-url", judge,
                                               "--judge-model", "judge", "--rule-weight", "0"))
    assert result.exit_code == 0, result.output
    evaluated = [r for r in read_journal(out / "journal.jsonl") if r["event"] == "evaluated"]
    samples = [s for r in evaluated for s in r["evaluation"]["samples"]]
    assert samples and all(s["rubric"] is not None and s["score"] == s["rubric"] for s in samples)
    assert {s["rubric"] for s in samples} == {100.0, min(s["rubric"] for s in samples)} != {100.0}


def _rows(path: Path) -> int:
    return sum(1 for _ in read_journal(path)) if path.exists() else 0


def _wire_keys(body: dict[str, Any]) -> set[str]:
    request = ChatRequest(messages=tuple(Message(**m) for m in body["messages"]), model=body["model"],
                          max_tokens=body.get("max_tokens"), temperature=body.get("temperature"))
    return {response_key(f"openai:{body['model']}", request, attempt) for attempt in range(4)}


def test_sigkill_mid_run_then_resume_sends_no_completed_request_again(tmp_path: Path) -> None:
    data, out = _data(tmp_path, trajectories=15), tmp_path / "out"
    world, optimizer = WorldStub(data, good=_train_ids(data), delay_s=0.05), OptimizerStub(add_marker)
    with servers(world, optimizer) as (w, o):
        args = _args(data, w, o, out, "--rounds", "2", "--concurrency", "2")
        command = [sys.executable, "-m", "agentworld", *args]
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
        proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                start_new_session=True)
        deadline = time.monotonic() + 60
        while _rows(out / "cache.jsonl") < 70:
            assert proc.poll() is None, "the run ended before it could be killed"
            assert time.monotonic() < deadline, "no progress"
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        completed = {r["key"] for r in read_journal(out / "cache.jsonl")}
        sent = len(world.requests), len(optimizer.requests)
        rerun = subprocess.run(command, env=env, capture_output=True, timeout=120)
        assert rerun.returncode == 0, rerun.stderr.decode()
        after = [*world.requests[sent[0]:], *optimizer.requests[sent[1]:]]
        assert after and not [b for b in after if _wire_keys(b) & completed]
        fresh = CliRunner().invoke(app, _args(data, w, o, tmp_path / "fresh", "--rounds", "2"))
        assert fresh.exit_code == 0, fresh.output
    assert (out / "summary.json").read_text() == (tmp_path / "fresh" / "summary.json").read_text()
    summary = json.loads((out / "summary.json").read_text())["domains"]["terminal"]
    assert summary["winner"] == 0 and summary["best_train"] >= 1


def _red_line(result: Any) -> str:
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2 and len(lines) == 1 and lines[0].startswith("error: "), result.output
    return str(lines[0])


def test_bad_input_is_one_red_line_and_exit_2_leaving_out_untouched(tmp_path: Path) -> None:
    data, out = _data(tmp_path), tmp_path / "out"
    url = "http://127.0.0.1:9/v1"
    runner = CliRunner()
    assert "--val-fraction: Input should be less than 1" in _red_line(
        runner.invoke(app, _args(data, url, url, out, "--val-fraction", "1.5")))
    assert "unknown world-model backend 'nope'" in _red_line(runner.invoke(app, [
        "optimize", "prompts", "--data", str(data), "--model", "nope", "--optimizer-base-url", url,
        "--optimizer-model", "o", "--out", str(out)]))
    one = write_bench(tmp_path / "one", bench_rows(1, turns=3))
    assert "'terminal' has 1 trajectory: a validation split needs at least 2" in _red_line(
        runner.invoke(app, _args(one, url, url, out)))
    only_mcp = [a if a != "terminal" else "mcp" for a in _args(data, url, url, out)]
    assert "no samples to optimise on" in _red_line(runner.invoke(app, only_mcp))
    assert "terminal: every world-model request failed, e.g. BackendError" in _red_line(
        runner.invoke(app, _args(data, url, url, out, "--max-retries", "0")))
    assert not (out / "summary.json").exists()
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("keep me")
    assert "not an agentworld optimize prompts folder" in _red_line(
        runner.invoke(app, _args(data, url, url, other)))
    assert [p.name for p in other.iterdir()] == ["notes.txt"]
    assert (other / "notes.txt").read_text() == "keep me"


def test_resume_refuses_changed_settings_but_may_add_rounds(tmp_path: Path) -> None:
    data, out = _data(tmp_path), tmp_path / "out"
    optimizer = OptimizerStub(add_marker, lambda current: add_marker(current + "\nMore."))
    with servers(WorldStub(data, good=_train_ids(data)), optimizer) as (w, o):
        assert CliRunner().invoke(app, _args(data, w, o, out, "--rounds", "1")).exit_code == 0
        changed = CliRunner().invoke(app, _args(data, w, o, out, "--rounds", "1", "--val-fraction", "0.5"))
        assert "val_fraction: 0.3 -> 0.5" in _red_line(changed)
        more = CliRunner().invoke(app, _args(data, w, o, out, "--rounds", "2"))
    assert more.exit_code == 0, more.output
    assert len(optimizer.requests) == 2
    summary = json.loads((out / "summary.json").read_text())["domains"]["terminal"]
    assert [v["parent"] for v in summary["variants"]] == [None, 0, 1]


def _train_sample(domain: str, n: int) -> TrainSample:
    return TrainSample(id=f"{domain}{n}-t1", trajectory_id=f"{domain}{n}", turn=1, domain=domain,
                       system="row prompt", action=f"echo {n}", observation=f"{n}", total_turns=1)


def test_sft_trains_on_the_stored_variants(tmp_path: Path) -> None:
    data, out = _data(tmp_path), tmp_path / "opt"
    ids = {s.id for s in load_samples([data])}
    with servers(WorldStub(data, good=ids), OptimizerStub(add_marker)) as (w, o):
        assert CliRunner().invoke(app, _args(data, w, o, out, "--rounds", "1")).exit_code == 0
    stored = [(out / f"variants/terminal/v{n}.txt").read_text() for n in (0, 1)]
    config_file = tmp_path / "sft.yaml"
    config_file.write_text("model: m\noutput_dir: run\nsystem_prompts_from: opt\n")
    config = SFTConfig.load(config_file)
    assert config.system_prompts_from == out
    samples = [_train_sample("terminal", n) for n in range(3)] + [_train_sample("mcp", 0)]
    rows = sft_rows(samples, config)
    terminal = [r for r in rows if r["sample_id"].startswith("terminal")]
    assert [r["prompt"][0]["content"] for r in terminal] == stored * 3
    assert [r["variant"] for r in terminal] == [0, 1] * 3
    mcp = {r["prompt"][0]["content"] for r in rows if r["sample_id"].startswith("mcp")}
    assert mcp == set(system_variants(DOMAINS["mcp"].system_prompt, config.variants))
    capped = sft_rows(samples[:1], config.model_copy(update={"variants": 1}))
    assert [r["prompt"][0]["content"] for r in capped] == stored[:1]
    with pytest.raises(DataError, match=r"no variants/<domain>/vN\.txt files"):
        sft_rows(samples, config.model_copy(update={"system_prompts_from": tmp_path / "data"}))
    with pytest.raises(ValidationError, match="system_prompt or system_prompts_from, not both"):
        SFTConfig(model="m", output_dir=tmp_path, system_prompt="x", system_prompts_from=out)


def test_python_api_with_scripted_backends(tmp_path: Path) -> None:
    data, out = _data(tmp_path), tmp_path / "out"
    model = ScriptedBackend(default=lambda r: echo_truth(r) if MARKER in r.messages[0].content else WRONG,
                            name="world")
    optimizer = ScriptedBackend([lambda r: add_marker(DOMAINS["terminal"].system_prompt)], name="optimizer")
    config = PromptOptConfig(data=[data], out=out, model="world", optimizer_base_url="unused",
                             optimizer_model="opt", rounds=1)
    [summary] = run_optimize(config, model=model, optimizer=optimizer)
    optimizer.assert_complete()
    assert summary.winner == summary.best_train == 1
    assert summary.line(1).val == summary.line(1).train == 100.0 > summary.line(0).val
    asked = optimizer.calls[0].messages[1].content
    assert "# Earlier variants (training-split score, 0-100)\n\n- v0 (the shipped prompt): " in asked
    assert len(model.calls) == 2 * 20


def test_a_failed_optimizer_request_is_asked_again_on_resume(tmp_path: Path) -> None:
    data, out = _data(tmp_path), tmp_path / "out"
    model = ScriptedBackend(default=lambda r: echo_truth(r) if MARKER in r.messages[0].content else WRONG,
                            name="world")
    config = PromptOptConfig(data=[data], out=out, model="world", optimizer_base_url="unused",
                             optimizer_model="opt", rounds=1)
    down = ScriptedBackend([BackendError("optimizer: HTTP 503")], name="optimizer")
    [first] = run_optimize(config, model=model, optimizer=down)
    assert [(f.reason, f.retried) for f in first.failed] == [
        ("optimizer request failed: BackendError: optimizer: HTTP 503", True)]
    assert first.winner == 0 and len(first.variants) == 1
    up = ScriptedBackend([lambda _: add_marker("Simulate a terminal.")], name="optimizer")
    [second] = run_optimize(config, model=model, optimizer=up)
    assert len(up.calls) == 1 and not second.failed and second.winner == 1
    assert len(model.calls) == 2 * 20
