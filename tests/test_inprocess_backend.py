"""``--model transformers:DIR``: a local model run in this process, batched, on the tiny model built here.

The model is the training demo's tiny Qwen2 (:func:`agentworld.train.tiny.build_tiny`), with its
weights redrawn wider so different prompts get different greedy answers (the freshly built one
answers every prompt with the same newlines, which would make equalities vacuous), and with one
token it emits on some of the held-out turns made a stop token: at ``--max-tokens 12`` some
answers then end and the others are cut, so a truncation count has something to be honest about.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from agentworld.data.types import TrainSample
from agentworld.endpoints import build_backend
from agentworld.errors import AgentWorldError
from agentworld.models.base import ChatRequest, create_backend
from agentworld.models.transformers_backend import TransformersBackend
from agentworld.schema import BenchSample, Message
from agentworld.train import demo
from agentworld.train.rejection import rejection_sample

BUDGET = 12
ROOT = Path(__file__).resolve().parents[1]


def _heldout() -> list[BenchSample]:
    """The training demo's held-out turns (as its evaluation builds them)."""
    from agentworld.corpus import corpus_path
    from agentworld.train.config import SFTConfig
    from agentworld.train.sft import build_rows

    sft = SFTConfig(model="unused", output_dir=Path("unused"), data=[{"path": corpus_path(demo.DOMAIN)}],
                    eval_fraction=0.15, system_prompt=demo.SYSTEM, reasoning="none", resume=False)
    return [demo._sample(row) for row in build_rows(sft)[1][:6]]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[BenchSample]]:
    import torch
    import transformers

    from agentworld.train.tiny import build_tiny

    folder = build_tiny(tmp_path_factory.mktemp("tiny-wm"), corpus=demo._corpus_texts(), vocab_size=1024,
                        stop_tags=[demo.TAG])
    tok = transformers.AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    model = transformers.AutoModelForCausalLM.from_pretrained(str(folder), local_files_only=True)
    torch.manual_seed(1)
    with torch.no_grad():
        for param in model.parameters():
            param.normal_(0.0, 0.6)
    samples = _heldout()
    outputs = []
    for sample in samples:
        ids = tok.apply_chat_template([m.model_dump() for m in sample.messages()], add_generation_prompt=True,
                                      return_tensors="pt", return_dict=True)
        with torch.no_grad():
            out = model.generate(**ids, max_new_tokens=BUDGET - 1, do_sample=False,
                                 pad_token_id=tok.pad_token_id)
        outputs.append(set(out[0][ids["input_ids"].shape[1]:].tolist()))
    # a token some answers reach within the budget and others never do
    counts = {t: sum(t in o for o in outputs) for o in outputs for t in o}
    stop = min((t for t, n in counts.items() if 0 < n < len(outputs)), key=lambda t: (-counts[t], t))
    model.generation_config.eos_token_id = [*model.generation_config.eos_token_id, stop]
    model.save_pretrained(folder)
    return folder, samples


def _requests(samples: list[BenchSample], **settings: Any) -> list[ChatRequest]:
    return [ChatRequest(messages=tuple(s.messages()), max_tokens=BUDGET, **settings) for s in samples]


def test_eval_run_gives_the_demo_evaluations_predictions_and_counts_truncations(
        world: tuple[Path, list[BenchSample]], tmp_path: Path) -> None:
    folder, samples = world
    data = tmp_path / "heldout.jsonl"
    data.write_text("".join(json.dumps(s.to_row()) + "\n" for s in samples))
    run = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    command = [sys.executable, "-m", "agentworld", "eval", "run", "--data", str(data), "--out", str(run),
               "--model", f"transformers:{folder}", "--temperature", "0", "--max-tokens", str(BUDGET),
               "--no-judge"]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    rows = {r["id"]: r for r in map(json.loads, (run / "predictions.jsonl").read_text().splitlines())}
    assert len(rows) == len(samples) and not any(r.get("error") for r in rows.values())

    answers = demo.predict(folder, samples, BUDGET)  # the training demo's evaluation
    assert [rows[s.id]["raw"] for s in samples] == [a.content for a in answers]
    assert len({a.content for a in answers}) > 1  # the equality compares different answers
    truncated = [a.truncated for a in answers]
    assert [rows[s.id]["truncated"] for s in samples] == truncated
    assert 0 < sum(truncated) < len(samples)
    for a in answers:  # cut exactly at the budget; an ended answer used less (its stop token counted)
        assert a.finish_reason == ("length" if a.truncated else "stop")
        assert (a.usage.completion_tokens == BUDGET) if a.truncated else (a.usage.completion_tokens <= BUDGET)
        assert a.usage.prompt_tokens > 0
    scores = json.loads((run / "scores.json").read_text())
    assert sum(d["truncated"] for d in scores["domains"].values()) == sum(truncated)
    assert f"truncated: {sum(truncated)}" in done.stdout + done.stderr


def test_concurrent_requests_are_batched_and_answer_as_one_by_one(
        world: tuple[Path, list[BenchSample]]) -> None:
    folder, samples = world
    backend = TransformersBackend(folder, max_batch_size=4, device="cpu")
    threads: set[int] = set()
    run_batch = backend.run_batch

    def recording(requests: list[ChatRequest]) -> Any:
        threads.add(threading.get_ident())
        return run_batch(requests)

    backend.run_batch = recording  # type: ignore[method-assign]

    async def both(requests: list[ChatRequest]) -> tuple[list[Any], list[Any]]:
        together = await asyncio.gather(*(backend.complete(r) for r in requests))
        alone = [await backend.complete(r) for r in requests]
        return list(together), alone

    async def main() -> tuple[Any, ...]:
        greedy = await both(_requests(samples, temperature=0))
        sampled = await both(_requests(samples, temperature=1.0, seed=7))
        other_seed = await asyncio.gather(*(backend.complete(r)
                                            for r in _requests(samples, temperature=1.0, seed=8)))
        await backend.aclose()
        return greedy, sampled, other_seed

    (together, alone), (s_together, s_alone), other_seed = asyncio.run(main())
    assert backend.batch_sizes == [4, 2, 1, 1, 1, 1, 1, 1] * 2 + [4, 2]
    assert [r.meta["batch_size"] for r in together] == [4, 4, 4, 4, 2, 2]
    assert [r.content for r in together] == [r.content for r in alone]
    assert [r.finish_reason for r in together] == [r.finish_reason for r in alone]
    assert [r.content for r in s_together] == [r.content for r in s_alone]  # seeded per request
    assert [r.content for r in s_together] != [r.content for r in other_seed]
    assert threading.get_ident() not in threads and len(threads) == 1  # off the event loop


def test_rejection_sampling_draws_its_candidates_from_the_in_process_backend(
        world: tuple[Path, list[BenchSample]]) -> None:
    folder, samples = world
    turns = [TrainSample(id=s.id, trajectory_id=s.id, turn=s.turn_idx, domain=s.domain, system=s.system_str,
                         history=s.history(), action=s.action, observation=s.ground_truth,
                         total_turns=s.turn_idx)
             for s in samples[:3]]
    teacher = create_backend(f"transformers:{folder}", concurrency=8)
    report = rejection_sample(turns, teacher, None, k=2, threshold=0.0, temperature=1.0, max_tokens=BUDGET)
    assert len(report.candidates) == 6 and not any(c.error for c in report.candidates)
    assert sum(teacher.batch_sizes) == 6 and max(teacher.batch_sizes) > 1
    for turn in range(3):  # the two draws of a turn differ by their seed
        first, second = report.candidates[2 * turn:2 * turn + 2]
        assert first.raw != second.raw


def test_backend_names_and_errors(tmp_path: Path) -> None:
    with pytest.raises(AgentWorldError, match="does not exist"):
        build_backend(f"transformers:{tmp_path / 'nope'}")
    with pytest.raises(AgentWorldError, match=r"holds no config\.json"):
        build_backend(f"transformers:{tmp_path}")
    with pytest.raises(AgentWorldError, match=r"needs a local model folder: transformers:PATH"):
        build_backend("transformers:")
    with pytest.raises(AgentWorldError, match=r"needs a local model folder: vllm:PATH"):
        build_backend("vllm")
    with pytest.raises(AgentWorldError, match="transformers:PATH, vllm:PATH"):
        build_backend("nonsense")
    if importlib.util.find_spec("vllm") is None:
        with pytest.raises(AgentWorldError, match=r"needs vLLM \(pip install vllm"):
            build_backend(f"vllm:{tmp_path}")


def test_a_prompt_longer_than_the_context_fails_that_request_only(
        world: tuple[Path, list[BenchSample]]) -> None:
    from agentworld.errors import BackendError

    folder, samples = world
    backend = TransformersBackend(folder, device="cpu")
    huge = ChatRequest(messages=(Message(role="user", content="ls -la /tmp " * 3000),), max_tokens=4)

    async def main() -> list[Any]:
        try:
            return list(await asyncio.gather(backend.complete(huge), backend.complete(_requests(samples)[0]),
                                             return_exceptions=True))
        finally:
            await backend.aclose()

    failed, fine = asyncio.run(main())
    assert isinstance(failed, BackendError) and "context is 4096" in str(failed)
    assert fine.usage.completion_tokens > 0 and backend.batch_sizes == [2]


def test_eval_run_with_a_missing_model_folder_is_one_line_and_exit_2(tmp_path: Path) -> None:
    data = tmp_path / "one.jsonl"
    data.write_text(json.dumps(_heldout()[0].to_row()) + "\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    command = [sys.executable, "-m", "agentworld", "eval", "run", "--data", str(data),
               "--out", str(tmp_path / "run"), "--model", f"transformers:{tmp_path / 'missing'}",
               "--no-judge"]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "missing does not exist" in done.stderr
