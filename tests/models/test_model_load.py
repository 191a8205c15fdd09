"""A model run in this process that cannot load fails once, in one line, before any sample is sent.

Before: a truncated or crafted GGUF file, a GGUF file without a chat template or an unloadable model
folder gave an exit-0 run in which every sample was a prediction error, and a chat template that
raised (a refused system role) or that the Jinja sandbox stopped ended in a traceback. The GGUF
files here are tiny and real (:mod:`gguf_helpers`: llama.cpp loads them); the CLI is the real one in
a bounded child; a loopback judge counts the requests that reach it (none may).
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("llama_cpp")
pytest.importorskip("gguf")

from agentworld.errors import AgentWorldError, BackendError
from agentworld.models.base import ChatRequest, create_backend
from agentworld.schema import Message
from eval_helpers import bench_rows, write_bench
from fuzz_harness import Outcome, assert_clean, run_cli
from gguf_helpers import CHATML, NO_SYSTEM, SANDBOXED, tiny_gguf
from hostile_http import chat_completion, hostile_server

TIME_S = 60.0
ALTERNATE = ("{% for message in messages %}{% if loop.index0 > 0 and "
             "message['role'] == messages[loop.index0 - 1]['role'] %}"
             "{{ raise_exception('Conversation roles must alternate') }}{% endif %}"
             "{{ message['role'] + ': ' + message['content'] + '\n' }}{% endfor %}"
             "{% if add_generation_prompt %}assistant: {% endif %}")
"""A template that refuses two messages of one role in a row (as Llama 2's and Mistral's do)."""


def eval_run(tmp_path: Path, model: str, *extra: str) -> tuple[Outcome, list[str]]:
    """``eval run`` of two samples with a loopback judge; the outcome and the requests the judge got."""
    data = write_bench(tmp_path / "data", bench_rows(2, 1))
    with hostile_server({"POST /v1/chat/completions": chat_completion("no verdict")}) as (url, judge):
        outcome = run_cli(["eval", "run", "--data", str(data), "--out", str(tmp_path / "run"),
                           "--model", model, "--judge-base-url", f"{url}/v1", "--judge-model", "j",
                           "--max-tokens", "4", "--no-progress", *extra], cwd=tmp_path, timeout_s=TIME_S)
    return outcome, judge.hits


def refused(outcome: Outcome, hits: list[str], tmp_path: Path, *needles: str) -> str:
    assert_clean(outcome)
    assert outcome.code == 2, outcome.describe()
    line = outcome.stderr.strip().splitlines()[-1]
    assert all(n in line for n in needles), outcome.describe()
    assert hits == [], hits  # refused before any sample was sent
    assert not (tmp_path / "run").exists()
    return line


def test_a_truncated_gguf_is_one_line_before_any_sample(tmp_path: Path) -> None:
    whole = tiny_gguf(tmp_path / "whole.gguf").read_bytes()
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(whole[: len(whole) * 2 // 3])
    outcome, hits = eval_run(tmp_path, f"llamacpp:{cut}")
    refused(outcome, hits, tmp_path, f"llamacpp:{cut}", "llama.cpp cannot load", "truncated or damaged")


def test_crafted_bytes_after_the_magic_are_one_line(tmp_path: Path) -> None:
    crafted = tmp_path / "crafted.gguf"
    crafted.write_bytes(b"GGUF" + bytes([3, 0, 0, 0]) + b"\xff" * 16 + b"junk" * 100)
    outcome, hits = eval_run(tmp_path, f"llamacpp:{crafted}")
    refused(outcome, hits, tmp_path, "llama.cpp cannot load")


def test_a_gguf_llama_cpp_aborts_on_is_one_line_not_a_crash(tmp_path: Path) -> None:
    """A vocabulary with a repeated token string fails a ``GGML_ASSERT`` in llama.cpp, which aborts the
    process (SIGABRT, no traceback, no line: found by the fuzz suite's long profile among GGUFs with a
    flipped byte); the child-process probe turns it into one line naming the assertion."""
    whole = tiny_gguf(tmp_path / "whole.gguf").read_bytes()
    first, second = "\u0100".encode(), "\u0101".encode()  # two byte-alphabet tokens, both 2 bytes long
    length = len(first).to_bytes(8, "little")
    assert whole.count(length + first) == 1
    twice = tmp_path / "twice.gguf"
    twice.write_bytes(whole.replace(length + first, length + second))
    outcome, hits = eval_run(tmp_path, f"llamacpp:{twice}")
    refused(outcome, hits, tmp_path, f"llamacpp:{twice}", "llama.cpp crashed (SIGABRT)", "GGML_ASSERT")


def test_a_text_file_named_gguf_is_one_line_for_both_backends(tmp_path: Path) -> None:
    text = tmp_path / "model.gguf"
    text.write_text("hello\n")
    for backend in ("llamacpp", "transformers"):
        outcome, hits = eval_run(tmp_path, f"{backend}:{text}")
        refused(outcome, hits, tmp_path, "is not a GGUF file")


def test_a_gguf_without_a_chat_template_is_one_line(tmp_path: Path) -> None:
    bare = tiny_gguf(tmp_path / "bare.gguf", template=None)
    outcome, hits = eval_run(tmp_path, f"llamacpp:{bare}")
    refused(outcome, hits, tmp_path, "has no chat template")


@pytest.mark.parametrize(("template", "said"), [
    (SANDBOXED, "the Jinja sandbox stopped it"),
    ("{{ raise_exception('this template renders nothing') }}", "this template renders nothing"),
    ("{% for m in messages %}{{ m.content | no_such_filter }}{% endfor %}", "does not compile"),
    ("{{ messages[0].content + 3 }}", "cannot render a user message: TypeError"),
])
def test_a_template_that_cannot_render_is_one_line_naming_it(tmp_path: Path, template: str,
                                                             said: str) -> None:
    model = tiny_gguf(tmp_path / "t.gguf", template=template)
    outcome, hits = eval_run(tmp_path, f"llamacpp:{model}")
    line = refused(outcome, hits, tmp_path, "chat template", said)
    assert "Traceback" not in line


def _ask(backend: Any, *messages: Message) -> Any:
    async def go() -> Any:
        try:
            return await backend.complete(ChatRequest(messages=messages, max_tokens=2, temperature=0))
        finally:
            await backend.aclose()

    return asyncio.run(go())


def test_a_refused_system_role_is_folded_into_the_first_user_turn(tmp_path: Path) -> None:
    model = tiny_gguf(tmp_path / "nosys.gguf", template=NO_SYSTEM)
    system, user = Message(role="system", content="S" * 40), Message(role="user", content="ls")
    backend = create_backend(f"llamacpp:{model}")
    backend.ready()
    assert backend.system_role is False
    with_system = _ask(backend, system, user)
    backend = create_backend(f"llamacpp:{model}")
    alone = _ask(backend, user)
    # every byte is a token here: the system text (and the newline joining it) reached the prompt
    assert with_system.usage.prompt_tokens == alone.usage.prompt_tokens + len(system.content) + 1
    chatml = create_backend(f"llamacpp:{tiny_gguf(tmp_path / 'chatml.gguf', template=CHATML)}")
    chatml.ready()
    assert chatml.system_role is True


def test_eval_run_with_a_template_refusing_the_system_role_predicts_every_sample(tmp_path: Path) -> None:
    model = tiny_gguf(tmp_path / "nosys.gguf", template=NO_SYSTEM)
    outcome, _ = eval_run(tmp_path, f"llamacpp:{model}", "--no-judge")
    assert_clean(outcome)
    assert outcome.code == 0, outcome.describe()
    rows = [json.loads(line) for line in (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all(row["error"] is None for row in rows)


def test_a_template_failing_on_one_request_fails_that_request_only(tmp_path: Path) -> None:
    backend = create_backend(f"llamacpp:{tiny_gguf(tmp_path / 'alt.gguf', template=ALTERNATE)}")
    backend.ready()
    user = Message(role="user", content="ls")

    async def go() -> list[Any]:
        try:
            return list(await asyncio.gather(
                backend.complete(ChatRequest(messages=(user, user), max_tokens=2)),
                backend.complete(ChatRequest(messages=(user,), max_tokens=2)), return_exceptions=True))
        finally:
            await backend.aclose()

    failed, fine = asyncio.run(go())
    assert isinstance(failed, BackendError), failed
    said = "chat template failed on this request: ValueError: Conversation roles must alternate"
    assert said in str(failed)
    assert fine.usage.completion_tokens > 0


def test_build_backend_waits_for_the_load(tmp_path: Path) -> None:
    from agentworld.endpoints import build_backend

    cut = tmp_path / "cut.gguf"
    cut.write_bytes(tiny_gguf(tmp_path / "whole.gguf").read_bytes()[:3000])
    with pytest.raises(AgentWorldError, match=r"llama\.cpp cannot load"):
        build_backend(f"llamacpp:{cut}")


# -- transformers folders --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from agentworld.train.tiny import build_tiny

    return build_tiny(tmp_path_factory.mktemp("tiny") / "model", hidden_size=16, layers=1)


def _copy(folder: Path, into: Path) -> Path:
    into.mkdir()
    for path in folder.iterdir():
        (into / path.name).write_bytes(path.read_bytes())
    return into


@pytest.mark.parametrize("damage", ["garbage-config", "wrong-config", "truncated-weights", "no-weights",
                                    "no-template"])
def test_an_unloadable_model_folder_is_refused_at_once(tmp_path: Path, tiny_folder: Path,
                                                       damage: str) -> None:
    from agentworld.endpoints import build_backend

    folder = _copy(tiny_folder, tmp_path / "m")
    if damage == "garbage-config":
        (folder / "config.json").write_text('{"model_type": "qwen2", "hidden_size": [')
    elif damage == "wrong-config":
        (folder / "config.json").write_text(json.dumps({"model_type": "llama", "hidden_size": -3}))
    elif damage == "truncated-weights":
        weights = folder / "model.safetensors"
        weights.write_bytes(weights.read_bytes()[:1000])
    elif damage == "no-weights":
        (folder / "model.safetensors").unlink()
    else:
        config = json.loads((folder / "tokenizer_config.json").read_text())
        config.pop("chat_template", None)
        (folder / "tokenizer_config.json").write_text(json.dumps(config))
        (folder / "chat_template.jinja").unlink(missing_ok=True)
    with pytest.raises(AgentWorldError, match=re.escape(f"transformers:{folder}: ")) as caught:
        build_backend(f"transformers:{folder}", concurrency=1)
    assert "\n" not in str(caught.value)


def test_eval_run_with_an_unloadable_folder_is_one_line_before_any_sample(tmp_path: Path,
                                                                         tiny_folder: Path) -> None:
    folder = _copy(tiny_folder, tmp_path / "m")
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])
    outcome, hits = eval_run(tmp_path, f"transformers:{folder}")
    refused(outcome, hits, tmp_path, f"transformers:{folder}: cannot load the model")


def test_a_tokenizer_template_refusing_the_system_role_is_folded_too(tmp_path: Path,
                                                                   tiny_folder: Path) -> None:
    from agentworld.endpoints import build_backend

    folder = _copy(tiny_folder, tmp_path / "m")
    (folder / "chat_template.jinja").write_text(NO_SYSTEM)
    backend = build_backend(f"transformers:{folder}", concurrency=1)
    assert backend.system_role is False
    answer = _ask(backend, Message(role="system", content="Be brief."), Message(role="user", content="ls"))
    assert answer.usage.completion_tokens > 0
