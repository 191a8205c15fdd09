"""Fuzz: hostile model paths and hostile HTTP answers (issue 31, items 2, 3 and 5).

Model paths: cuts of a tiny valid GGUF file at random points, its header with random bytes flipped,
random bytes after the magic, text named ``.gguf`` (for ``llamacpp:PATH``); model folders with a
``config.json`` of random or wrong content and missing, random, pickled or truncated weights (for
``transformers:PATH``); both, and bases, given to ``train export``. Each must end in a model that
loads or in one red line before any sample is sent (a loopback judge counts the requests it gets:
none), with no traceback, nothing written or left behind, and no connection leaving the machine
(``HF_ENDPOINT`` points at a loopback server that records any request, with offline mode unset).

HTTP answers: a loopback server answers the OpenAI-compatible backend with a random status and
a random body: JSON of any shape, bytes that are not JSON, bodies without end (chunked, until close,
server-sent events), a lying ``Content-Length``, a gzip stream without end, header lines without
end, bytes that are not HTTP. Each must be an answer, a request's error, or the one-line stop of a
body over the cap, within the time and memory bound.

The CLI properties fork one command per case (:func:`fuzz_harness.run_cli`); the in-process ones call
the loader or the backend, many more cases in the same time.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import pickle
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentworld.errors import AgentWorldError, BackendError
from agentworld.models.base import ChatRequest
from agentworld.schema import Message
from eval_helpers import bench_rows, write_bench
from fuzz_harness import FOUND, Outcome, count, problems, run_cli, snapshot
from hostile_http import (
    Answer,
    chat_completion,
    endless_chunked,
    endless_sse,
    endless_until_close,
    garbage,
    gzip_bomb,
    hostile_server,
    huge_headers,
    json_answer,
    lying_length,
    raw_answer,
)

pytestmark = pytest.mark.fuzz

PROFILE = settings.default.max_examples


def share(part: int, least: int = 2) -> int:
    """Examples of a CLI property: ``1/part`` of the profile's (a child that imports torch costs seconds)."""
    return max(least, PROFILE // part)


ONLINE = {"HF_HUB_OFFLINE": "", "TRANSFORMERS_OFFLINE": ""}
"""Offline mode unset in the child: the loaders must not try the Hub on their own."""

_scalar = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
_json = st.recursive(_scalar,
                     lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner,
                                                                                  max_size=4),
                     max_leaves=10)


def _model_run_problems(outcome: Outcome, work: Path, hits_before: int, hits_after: int) -> list[str]:
    """What is wrong with an ``eval run`` of a hostile model: refused after work began, or a run whose
    samples failed for the model instead of the model failing once."""
    found = problems(outcome)
    if outcome.code == 2:
        if hits_after != hits_before:
            found.append(f"{hits_after - hits_before} request(s) sent before the refusal")
        if (work / "run").exists():
            found.append("a run folder was left behind")
    elif outcome.code == 0:
        rows = [json.loads(line) for line in (work / "run" / "predictions.jsonl").read_text().splitlines()]
        errors = [row["error"] for row in rows if row.get("error")]
        if errors:
            found.append(f"exit 0 with {len(errors)} prediction error(s): {errors[0][:200]}")
    return found


def _broke(target: str, found: list[str], describe: str) -> None:
    if found:
        FOUND[target] += 1
    assert not found, f"{'; '.join(found)}\n{describe}"


@contextlib.contextmanager
def _no_connections() -> Iterator[list[str]]:
    """Record (and refuse) every connection of this process that is not to 127.0.0.1 or a Unix socket."""
    tried: list[str] = []
    real_connect, real_lookup = socket.socket.connect, socket.getaddrinfo

    def connect(sock: socket.socket, address: Any) -> Any:
        if sock.family != socket.AF_UNIX and address[0] not in ("127.0.0.1", "::1", "localhost"):
            tried.append(f"connect {address}")
            raise OSError("fuzz: no connection may leave the machine")
        return real_connect(sock, address)

    def lookup(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host not in ("127.0.0.1", "::1", "localhost", None):
            tried.append(f"lookup {host}")
            raise OSError("fuzz: no connection may leave the machine")
        return real_lookup(host, *args, **kwargs)

    socket.socket.connect = connect  # type: ignore[method-assign]
    socket.getaddrinfo = lookup  # type: ignore[assignment]
    try:
        yield tried
    finally:
        socket.socket.connect = real_connect  # type: ignore[method-assign]
        socket.getaddrinfo = real_lookup


# -- GGUF files for llamacpp:PATH ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_gguf_bytes() -> bytes:
    pytest.importorskip("gguf")
    pytest.importorskip("llama_cpp")
    from gguf_helpers import tiny_gguf

    with tempfile.TemporaryDirectory() as folder:
        return tiny_gguf(Path(folder) / "tiny.gguf").read_bytes()


@st.composite
def hostile_gguf(draw: st.DrawFn, whole: bytes) -> tuple[str, bytes]:
    """A GGUF-looking file that is not a loadable model (most of the time: a flip may miss)."""
    kind = draw(st.sampled_from(["cut", "flipped", "magic+random", "text"]))
    if kind == "cut":
        return kind, whole[:draw(st.integers(0, len(whole) - 1))]
    if kind == "flipped":
        data = bytearray(whole)
        for at in draw(st.lists(st.integers(4, min(len(whole), 8192) - 1), min_size=1, max_size=6)):
            data[at] = draw(st.integers(0, 255))
        return kind, bytes(data)
    if kind == "magic+random":
        return kind, b"GGUF" + draw(st.binary(max_size=2048))
    return kind, draw(st.text(max_size=200)).encode()


@pytest.fixture(scope="module")
def judge() -> Iterator[tuple[str, Any]]:
    with hostile_server({"POST /v1/chat/completions": chat_completion("no verdict")}) as (url, server):
        yield url, server


def _run_llamacpp(model: Path, work: Path, judge_url: str) -> Outcome:
    data = write_bench(work / "data", bench_rows(1, 1))
    return run_cli(["eval", "run", "--data", str(data), "--out", str(work / "run"),
                    "--model", f"llamacpp:{model}",
                    "--judge-base-url", f"{judge_url}/v1", "--judge-model", "j", "--max-tokens", "2",
                    "--judge-retries", "1", "--no-progress"], cwd=work, timeout_s=60)


@given(data=st.data())
def test_a_hostile_gguf_file_loads_or_is_one_line_before_any_sample(
        tiny_gguf_bytes: bytes, judge: tuple[str, Any], data: Any) -> None:
    kind, content = data.draw(hostile_gguf(tiny_gguf_bytes))
    count("model-path: eval run llamacpp:PATH")
    url, server = judge
    with tempfile.TemporaryDirectory(prefix="aw-fuzz-gguf-") as folder:
        work = Path(folder)
        model = work / "model.gguf"
        model.write_bytes(content)
        before = len(server.hits)
        outcome = _run_llamacpp(model, work, url)
        found = _model_run_problems(outcome, work, before, len(server.hits))
        _broke("model-path: eval run llamacpp:PATH", found, f"{kind}: {outcome.describe()}")
        assert model.read_bytes() == content


# -- model folders for transformers:PATH ------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_folder_files() -> dict[str, bytes]:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from agentworld.train.tiny import build_tiny

    with tempfile.TemporaryDirectory() as folder:
        built = build_tiny(Path(folder) / "m", hidden_size=16, layers=1)
        return {p.name: p.read_bytes() for p in built.iterdir()}


class _Payload:
    def __reduce__(self) -> tuple[Any, tuple[str]]:
        import os

        return os.system, ("touch PWNED",)


@st.composite
def hostile_folder(draw: st.DrawFn, files: dict[str, bytes]) -> tuple[str, dict[str, bytes]]:
    """A model folder with its config, weights or tokenizer replaced by something hostile."""
    out = dict(files)
    config = json.loads(files["config.json"])
    how = draw(st.sampled_from(["random-json", "field", "not-json", "keep"]))
    if how == "random-json":
        out["config.json"] = json.dumps(draw(_json)).encode()
    elif how == "field":
        config[draw(st.sampled_from(sorted(config)))] = draw(_json)
        out["config.json"] = json.dumps(config).encode()
    elif how == "not-json":
        out["config.json"] = draw(st.binary(max_size=200))
    weights = draw(st.sampled_from(["none", "random", "cut", "pickle", "pickle-random", "keep"]))
    whole = out.pop("model.safetensors")
    if weights == "random":
        out["model.safetensors"] = draw(st.binary(max_size=2000))
    elif weights == "cut":
        out["model.safetensors"] = whole[:draw(st.integers(0, len(whole) - 1))]
    elif weights == "pickle":
        out["pytorch_model.bin"] = pickle.dumps({"model.embed_tokens.weight": _Payload()})
    elif weights == "pickle-random":
        out["pytorch_model.bin"] = draw(st.binary(max_size=500))
    elif weights == "keep":
        out["model.safetensors"] = whole
    if draw(st.booleans()):
        out["tokenizer.json"] = draw(st.binary(max_size=100))
    if draw(st.integers(0, 3)) == 0:  # the prompt view a trained model carries
        out["agentworld_view.json"] = draw(st.one_of(st.binary(max_size=100), _json.map(
            lambda doc: json.dumps(doc).encode())))
    return f"config {how}, weights {weights}", out


def _write(folder: Path, files: dict[str, bytes]) -> Path:
    folder.mkdir()
    for name, content in files.items():
        (folder / name).write_bytes(content)
    return folder


def _answers(backend: Any) -> list[str]:
    async def ask() -> list[str]:
        try:
            await backend.complete(ChatRequest(messages=(Message(role="user", content="ls"),), max_tokens=2))
        except Exception as exc:
            return [f"a backend that was made does not answer: {type(exc).__name__}: {exc}"[:400]]
        finally:
            await backend.aclose()
        return []

    return asyncio.run(ask())


@given(data=st.data())
def test_a_hostile_model_folder_loads_or_is_refused_in_one_line(tiny_folder_files: dict[str, bytes],
                                                               data: Any) -> None:
    from agentworld.endpoints import build_backend

    how, files = data.draw(hostile_folder(tiny_folder_files))
    count("model-path: transformers:PATH (in process)")
    found: list[str] = []
    with tempfile.TemporaryDirectory(prefix="aw-fuzz-tf-") as root:
        folder = _write(Path(root) / "m", files)
        before = snapshot(root)
        with _no_connections() as tried:
            try:
                backend = build_backend(f"transformers:{folder}", concurrency=1)
            except AgentWorldError as exc:
                if "\n" in str(exc):
                    found.append(f"a refusal of several lines: {exc!r}")
            except Exception as exc:
                found.append(f"{type(exc).__name__} escaped: {exc!r}"[:400])
            else:  # a backend that loaded answers
                found += _answers(backend)
        found += [f"a connection was tried: {t}" for t in tried]
        if snapshot(root) != before:
            found.append("the folder changed")
        if Path("PWNED").exists() or (folder / "PWNED").exists():
            found.append("the pickle ran")
    _broke("model-path: transformers:PATH (in process)", found, how)


@settings(max_examples=share(12))
@given(data=st.data())
def test_eval_run_with_a_hostile_model_folder_is_one_line_before_any_sample(
        tiny_folder_files: dict[str, bytes], judge: tuple[str, Any], data: Any) -> None:
    how, files = data.draw(hostile_folder(tiny_folder_files))
    count("model-path: eval run transformers:PATH")
    url, server = judge
    with tempfile.TemporaryDirectory(prefix="aw-fuzz-tfcli-") as root, \
            hostile_server({}) as (hub, hub_server):
        work = Path(root)
        folder = _write(work / "m", files)
        data_file = write_bench(work / "data", bench_rows(1, 1))
        before = len(server.hits)
        outcome = run_cli(["eval", "run", "--data", str(data_file), "--out", str(work / "run"),
                           "--model", f"transformers:{folder}", "--judge-base-url", f"{url}/v1",
                           "--judge-model", "j", "--max-tokens", "2", "--judge-retries", "1",
                           "--no-progress"],
                          cwd=work, timeout_s=120, env={"HF_ENDPOINT": hub, **ONLINE})
        found = _model_run_problems(outcome, work, before, len(server.hits))
        found += [f"the Hub was asked: {hit}" for hit in hub_server.hits]
    _broke("model-path: eval run transformers:PATH", found, f"{how}: {outcome.describe()}")


# -- train export -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def export_inputs() -> dict[str, Any]:
    """A tiny llama folder's files and the base GGUF it fits."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("gguf")
    from gguf_helpers import tiny_gguf, tiny_llama_folder

    with tempfile.TemporaryDirectory() as folder:
        base = tiny_gguf(Path(folder) / "base.gguf").read_bytes()
        model = tiny_llama_folder(Path(folder) / "m")
        return {"base": base, "files": {p.name: p.read_bytes() for p in model.iterdir()}}


@st.composite
def export_case(draw: st.DrawFn, inputs: dict[str, Any]) -> tuple[str, dict[str, bytes] | str, bytes]:
    """A model folder (hostile or whole, or a name that is no folder) and a base (hostile or whole)."""
    model: dict[str, bytes] | str
    which = draw(st.sampled_from(["folder", "hostile-folder", "name"]))
    if which == "name":
        model = draw(st.sampled_from(["HuggingFaceTB/SmolLM2-135M", "gpt2", "org/model"]))
    elif which == "hostile-folder":
        model = draw(hostile_folder(inputs["files"]))[1]
    else:
        model = dict(inputs["files"])
    base_kind, base = draw(st.one_of(st.just(("whole", inputs["base"])), hostile_gguf(inputs["base"])))
    return f"model {which}, base {base_kind}", model, base


def _export_paths(work: Path, model: dict[str, bytes] | str, base: bytes) -> tuple[str, Path]:
    (work / "base.gguf").write_bytes(base)
    return (model if isinstance(model, str) else str(_write(work / "m", model))), work / "base.gguf"


@given(data=st.data())
def test_train_export_of_hostile_inputs_exports_or_is_refused_leaving_nothing(export_inputs: dict[str, Any],
                                                                            data: Any) -> None:
    from agentworld.train.export import export

    how, model, base = data.draw(export_case(export_inputs))
    count("model-path: train export (in process)")
    found: list[str] = []
    with tempfile.TemporaryDirectory(prefix="aw-fuzz-export-") as root:
        work = Path(root)
        model_arg, base_path = _export_paths(work, model, base)
        before = snapshot(work)
        out = work / "out"
        with _no_connections() as tried:
            try:
                export(model_arg, base_path, out, "f16")
                exported = True
            except AgentWorldError as exc:
                exported = False
                if "\n" in str(exc):
                    found.append(f"a refusal of several lines: {exc!r}")
            except Exception as exc:
                exported = False
                found.append(f"{type(exc).__name__} escaped: {exc!r}"[:400])
        found += [f"a connection was tried: {t}" for t in tried]
        if not exported and out.exists():
            found.append(f"a failed export left {sorted(p.name for p in out.iterdir())}")
        if {k: v for k, v in snapshot(work).items() if not k.startswith("out")} != before:
            found.append("an input changed")
    _broke("model-path: train export (in process)", found, how)


@settings(max_examples=share(12))
@given(data=st.data())
def test_train_export_cli_of_hostile_inputs_never_reaches_the_hub(export_inputs: dict[str, Any],
                                                                  data: Any) -> None:
    how, model, base = data.draw(export_case(export_inputs))
    count("model-path: train export")
    with tempfile.TemporaryDirectory(prefix="aw-fuzz-exportcli-") as root, \
            hostile_server({}) as (hub, server):
        work = Path(root)
        model_arg, base_path = _export_paths(work, model, base)
        outcome = run_cli(["train", "export", "--model", model_arg, "--base", str(base_path), "--out",
                           str(work / "out"), "--quant", "f16"], cwd=work, timeout_s=120,
                          env={"HF_ENDPOINT": hub, **ONLINE})
        found = problems(outcome)
        if outcome.code == 2 and (work / "out").exists():
            found.append("a failed export left its output folder")
        found += [f"the Hub was asked: {hit}" for hit in server.hits]
    _broke("model-path: train export", found, f"{how}: {outcome.describe()}")


# -- hostile HTTP answers for the OpenAI-compatible backend -------------------------------------------

STATUS = st.sampled_from([200, 200, 200, 201, 204, 400, 401, 404, 413, 429, 500, 503])
CAP = 1 << 20
"""The cap the in-process cases read under (an endless answer is cut after 1 MiB, not 32)."""


@st.composite
def hostile_answer(draw: st.DrawFn) -> tuple[str, Answer]:
    kind = draw(st.sampled_from(["json", "choices", "bytes", "endless-chunked", "endless-close", "sse",
                                 "sse-line", "lying-length", "gzip-bomb", "headers", "garbage", "big"]))
    status = draw(STATUS)
    if kind == "json":
        return kind, json_answer(draw(_json), status)
    if kind == "choices":  # the right shape, with anything in its fields
        choice = {"message": draw(_json), "finish_reason": draw(_json)}
        return kind, json_answer({"choices": draw(st.sampled_from([[choice], choice, [], None])),
                                  "usage": draw(_json), "model": draw(_json)}, status)
    if kind == "bytes":
        return kind, raw_answer(draw(st.binary(max_size=2000)), status)
    if kind == "big":
        return kind, raw_answer(b"[" * draw(st.integers(CAP - 10, CAP + 10)), status)
    if kind == "endless-chunked":
        return kind, endless_chunked(status=status)
    if kind == "endless-close":
        return kind, endless_until_close()
    if kind == "sse":
        return kind, endless_sse()
    if kind == "sse-line":
        return kind, endless_sse(line_breaks=False)
    if kind == "lying-length":
        return kind, lying_length(draw(st.integers(0, 2 ** 62)))
    if kind == "gzip-bomb":
        return kind, gzip_bomb()
    if kind == "headers":
        return kind, huge_headers(draw(st.integers(1, 300)), draw(st.integers(1, 20000)))
    return kind, garbage(draw(st.binary(min_size=1, max_size=2000)))


@given(answer=hostile_answer())
def test_the_openai_backend_meets_a_hostile_answer_with_a_result_or_one_error(
        answer: tuple[str, Answer]) -> None:
    # without the cap (code before it), an endless answer read in this process would take the machine
    limits = pytest.importorskip("agentworld.http_limits")
    ResponseTooLargeError = limits.ResponseTooLargeError
    from agentworld.models.openai_compat import OpenAIBackend

    kind, write = answer
    count("http-answer: OpenAIBackend (in process)")
    found: list[str] = []

    async def ask(url: str) -> None:
        backend = OpenAIBackend(f"{url}/v1", "m", max_retries=0, timeout_s=10, max_response_bytes=CAP)
        try:
            await backend.complete(ChatRequest(messages=(Message(role="user", content="hi"),), max_tokens=4))
        except (BackendError, ResponseTooLargeError) as exc:
            if "\n" in str(exc):
                found.append(f"an error of several lines: {exc!r}"[:400])
        except Exception as exc:
            found.append(f"{type(exc).__name__} escaped: {exc!r}"[:400])
        finally:
            await backend.aclose()

    with hostile_server({"POST /v1/chat/completions": write}) as (url, _):
        asyncio.run(asyncio.wait_for(ask(url), 30))
    _broke("http-answer: OpenAIBackend (in process)", found, kind)


@settings(max_examples=share(3, least=3))
@given(answer=hostile_answer())
def test_eval_run_meets_a_hostile_answer_with_a_row_or_one_line(answer: tuple[str, Answer]) -> None:
    kind, write = answer
    count("http-answer: eval run --model-base-url")
    with tempfile.TemporaryDirectory(prefix="aw-fuzz-http-") as root, \
            hostile_server({"POST /v1/chat/completions": write}) as (url, _):
        work = Path(root)
        data_file = write_bench(work / "data", bench_rows(1, 1))
        outcome = run_cli(["eval", "run", "--data", str(data_file), "--out", str(work / "run"),
                           "--model-base-url", f"{url}/v1", "--model", "m", "--no-judge",
                           "--max-retries", "0", "--timeout-s", "10", "--no-progress"],
                          cwd=work, timeout_s=60, memory_bytes=2 << 30)
    _broke("http-answer: eval run --model-base-url", problems(outcome), f"{kind}: {outcome.describe()}")
