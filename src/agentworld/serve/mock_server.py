"""A mock OpenAI-compatible server that replays AgentWorldBench ground truth and plays the judge.

Tests, benchmarks and users' own pipelines need a server that behaves like vLLM/SGLang — real
HTTP, latency, 429s and 500s, truncation, reasoning fields, broken judge JSON — but answers
deterministically and knows the right answer. This one:

* answers **world-model requests** (everything that is not a judge request) with the ground truth
  of the sample whose :meth:`BenchSample.messages` equals the request's message list exactly,
  wrapped in ``<predicted_observation>``; a seeded, *nested* subset of samples is corrupted
  (raising ``corruption_rate`` only adds samples to the set), so scores fall monotonically;
* answers **judge requests** (see docs/CONTRACTS.md): rubric verdicts scored from the similarity of
  the simulated and real blocks, ``\\boxed{A|B}`` for Turing and reference comparison;
* streams when asked (``"stream": true``: server-sent events, :mod:`agentworld.serve.mock_stream`);
* injects failures deterministically: whether the *k*-th request with a given message list fails
  is a hash of (seed, message list, k), so a retry of the same request can succeed and the outcome
  does not depend on how concurrent requests interleave.

Start it with :func:`run_mock_server` (a background thread, for tests) or :func:`serve_forever`
(the ``agentworld serve mock`` command). Its settings are :class:`agentworld.serve.config.MockConfig`.
"""

from __future__ import annotations

import asyncio
import difflib
import hashlib
import hmac
import json
import re
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson
from fastapi import FastAPI, Request
from fastapi.responses import Response, StreamingResponse

from agentworld.domains import domain_names
from agentworld.eval import templates
from agentworld.eval.rules.corruptions import corrupt_observation, hash_uniform
from agentworld.schema import OBSERVATION_MARKER, BenchSample, load_samples
from agentworld.schema import strip_marker as _strip
from agentworld.serve import mock_flavours as flavours
from agentworld.serve import mock_stream
from agentworld.serve.config import MALFORMED_KINDS as MALFORMED_KINDS
from agentworld.serve.config import MockConfig as MockConfig
from agentworld.serve.net import bind_tcp, token_bytes, uvicorn_config

RESPONSE_TAG = "predicted_observation"
JUDGE_TAG = "final_evaluation"

FATAL_MALFORMED_KINDS: frozenset[str] = frozenset({"truncated", "garbage", "bad_scores"})
"""Kinds no parser can recover: :func:`agentworld.models.parsing.parse_judge` must fail on them."""



# -- deterministic helpers -----------------------------------------------------------------------

def _text(content: Any) -> str:
    """Message content as text (a list of content parts is joined)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content)
    return "" if content is None else str(content)


def messages_key(messages: Sequence[Any]) -> str:
    """sha256 of the canonical JSON of a message list (``[{"role", "content"}, …]``).

    Accepts dicts or objects with ``role``/``content`` (e.g. :class:`agentworld.schema.Message`).
    """
    canon = []
    for m in messages:
        role = m.get("role") if isinstance(m, dict) else getattr(m, "role", None)
        content = m.get("content") if isinstance(m, dict) else getattr(m, "content", None)
        canon.append({"role": str(role), "content": _text(content)})
    return hashlib.sha256(orjson.dumps(canon)).hexdigest()


def strip_marker(text: str) -> str:
    """An observation without its marker, as the judge request carries it."""
    return _strip(text).strip()


def similarity(a: str, b: str) -> float:
    """A 0–1 similarity, by characters for short texts and by lines for long ones (bounded cost)."""
    if a == b:
        return 1.0
    if len(a) + len(b) <= 4000:
        return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()
    return difflib.SequenceMatcher(None, a.splitlines(), b.splitlines()).ratio()


# -- judge replies -------------------------------------------------------------------------------

def extract_blocks(text: str, headings: Sequence[str]) -> dict[str, str]:
    """The fenced bodies after each heading (as written by :func:`templates.fenced`), in order.

    A block ends at the last fence before the next heading; the final block ends at the first
    fence followed by a blank line or the end (the judge instructions that follow hold fences).
    """
    found: list[tuple[int, str]] = []
    start = 0
    for heading in headings:
        pos = text.find(heading, start)
        if pos < 0:
            continue
        found.append((pos, heading))
        start = pos + len(heading)
    out: dict[str, str] = {}
    for n, (pos, heading) in enumerate(found):
        open_fence = text.find("```", pos + len(heading))
        if open_fence < 0:
            continue
        newline = text.find("\n", open_fence)
        body_start = len(text) if newline < 0 else newline + 1
        if n + 1 < len(found):
            close = text.rfind("\n```", body_start - 1, found[n + 1][0])
        else:
            m = re.compile(r"\n```[ \t]*(?:\n[ \t]*\n|[ \t]*$)").search(text, body_start - 1)
            close = m.start() if m else -1
        out[heading] = text[body_start:close] if close >= body_start else ""
    return out


def rubric_verdict(predicted: str, truth: str) -> dict[str, Any]:
    """A rubric verdict (the JSON shape of :data:`templates.RUBRIC_USER`) from text similarity."""
    ratio = similarity(predicted.strip(), truth.strip())
    base = 1 + round(4 * ratio)
    bonus = 1 if ratio >= 0.3 else 0
    scores = {"format": min(5, base + bonus) if predicted.strip() else 1, "factuality": base,
              "consistency": base, "realism": min(5, base + bonus), "quality": base}
    strengths = ["Matches the real output closely."] if ratio >= 0.8 else ["Keeps the observation format."]
    weaknesses = [] if ratio >= 0.99 else [f"Differs from the real output (similarity {ratio:.2f})."]
    return {"strengths": strengths, "weaknesses": weaknesses, "scores": scores}


def render_verdict(verdict: dict[str, Any], malformed: str | None = None) -> str:
    """The judge's reply: some reasoning, then the verdict — well-formed or broken as ``malformed``."""
    scores = verdict["scores"]
    reasoning = ("Comparing the simulated observation with the real one, dimension by dimension.\n"
                 + "\n".join(f"- {dim.capitalize()}: {value}/5." for dim, value in scores.items()))
    js = json.dumps(verdict, indent=4, ensure_ascii=False)
    if malformed is None:
        return f"{reasoning}\n\n<{JUDGE_TAG}>\n```json\n{js}\n```\n</{JUDGE_TAG}>"
    if malformed == "no_tag":
        return f"{reasoning}\n\n```json\n{js}\n```"
    if malformed == "trailing_commas":
        broken = re.sub(r'(["\d\]}])(\n\s*[}\]])', r"\1,\2", js)
        return f"{reasoning}\n\n<{JUDGE_TAG}>\n```json\n{broken}\n```\n</{JUDGE_TAG}>"
    if malformed == "unquoted_keys":
        broken = re.sub(r'"(\w+)":', r"\1:", js)
        return f"{reasoning}\n\n<{JUDGE_TAG}>\n```json\n{broken}\n```\n</{JUDGE_TAG}>"
    if malformed == "no_fence":
        return f"{reasoning}\n\n<{JUDGE_TAG}>\n{js}\n</{JUDGE_TAG}>"
    if malformed == "truncated":
        cut = js[: js.index('"scores"') + len('"scores": {"format": ')]
        return f"{reasoning}\n\n<{JUDGE_TAG}>\n```json\n{cut}"
    if malformed == "bad_scores":
        words = {dim: "excellent" for dim in scores}
        bad = json.dumps({**verdict, "scores": words}, indent=4)
        return f"{reasoning}\n\n<{JUDGE_TAG}>\n```json\n{bad}\n```\n</{JUDGE_TAG}>"
    return "Evaluation unavailable :: internal judge failure %%% [[[ ;;; ]]"


def render_choice(choice: str, malformed: bool = False) -> str:
    """A Turing/reference reply ending in ``\\boxed{A|B}`` (or, malformed, with no boxed answer)."""
    text = ("Analysing both responses step by step: format, factual details, consistency with the "
            "history and realism.")
    if malformed:
        return f"{text}\nOverall, Response {choice} looks better."
    return f"{text}\nResponse {choice} is the better match.\n\n\\boxed{{{choice}}}"


# -- server state --------------------------------------------------------------------------------

@dataclass
class Plan:
    """What to answer one request with (decided at once, sent after the latency delay)."""

    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


class MockState:
    """Loaded data, counters and the request log of one server (thread-safe)."""

    def __init__(self, config: MockConfig) -> None:
        self.config = config
        self.samples: dict[str, BenchSample] = {}
        self.truths: dict[str, str] = {}
        self.duplicates = 0
        """Rows whose message list equals an earlier row's: the earlier row's ground truth is served."""
        for sample in load_samples(config.data, known_domains=domain_names()) if config.data else []:
            key = messages_key(sample.messages())
            if key in self.samples:
                self.duplicates += 1
            self.samples.setdefault(key, sample)
            self.truths.setdefault(strip_marker(sample.ground_truth), sample.id)
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        """Forget the log, counters and per-request attempt numbers (failure draws start over)."""
        with self._lock:
            self.log: list[dict[str, Any]] = []
            self.stats: Counter[str] = Counter()
            self.seen: Counter[str] = Counter()
            self.in_flight = 0
            self.max_in_flight = 0
            """Most chat requests being answered at once since the last reset (latency included)."""

    @contextmanager
    def answering(self) -> Iterator[None]:
        """Count one chat request as in flight while it is answered (``max_in_flight`` in the stats)."""
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            yield
        finally:
            with self._lock:
                self.in_flight -= 1

    def is_corrupted(self, sample_id: str) -> bool:
        """Nested by design: a sample corrupted at some rate stays corrupted at every higher rate."""
        return hash_uniform(self.config.seed, "corrupt", sample_id) < self.config.corruption_rate

    def plan(self, body: Any) -> tuple[Plan, dict[str, Any]]:
        """Decide the answer to one request and log it."""
        with self._lock:
            n = len(self.log) + 1
            self.stats["requests"] += 1
            messages = body.get("messages") if isinstance(body, dict) else None
            if not isinstance(messages, list) or not messages:
                self.stats["bad_request"] += 1
                entry = {"n": n, "kind": "invalid", "status": 400, "key": None, "sample_id": None}
                self.log.append(entry)
                return Plan(400, _error_body("'messages' must be a non-empty list", "invalid_request_error",
                                             400)), entry
            key = messages_key(messages)
            attempt = self.seen[key]
            self.seen[key] += 1
            entry = {"n": n, "key": key, "attempt": attempt, "sample_id": None, "messages": messages}
            plan = self._decide(body, messages, key, attempt, entry)
            entry["status"] = plan.status
            self.log.append(entry)
            return plan, entry

    def _decide(self, body: dict[str, Any], messages: list[Any], key: str, attempt: int,
                entry: dict[str, Any]) -> Plan:
        cfg = self.config
        user = next((_text(m.get("content")) for m in reversed(messages)
                     if isinstance(m, dict) and m.get("role") == "user"), "")
        mode = judge_mode(user)
        synth = synth_answer(user) if mode is None and cfg.synth else None
        entry["kind"] = "synth" if synth is not None else "world" if mode is None else "judge"
        entry["mode"] = mode or entry["kind"]
        self.stats[entry["kind"]] += 1
        u = hash_uniform(cfg.seed, "fail", key, attempt)
        if u < cfg.error_rate:
            self.stats["errors"] += 1
            return Plan(500, _error_body("mock: injected server error", "server_error", 500))
        if u < cfg.error_rate + cfg.rate_limit_rate:
            self.stats["rate_limited"] += 1
            return Plan(429, _error_body("mock: injected rate limit", "rate_limit_error", 429),
                        {"Retry-After": "0"})
        if synth is not None:
            answer, reasoning = synth, "Designing the environment stage from its inputs."
        elif mode is None:
            answer, reasoning = self._world(key, entry)
        else:
            answer, reasoning = self._judge(user, mode, key, attempt, entry)
        finish = "stop"
        if hash_uniform(cfg.seed, "truncate", key, attempt) < cfg.truncate_rate:
            self.stats["truncated"] += 1
            finish, answer = "length", ""
            reasoning = reasoning[: len(reasoning) // 2]
        if finish == "stop" and (cfg.flavour or cfg.think_tokens or cfg.enforce_max_tokens):
            message, finish, used = flavours.shaped_message(cfg, answer, reasoning, body.get("max_tokens"))
            self.stats["truncated"] += finish == "length"
            entry["finish_reason"] = finish
            return Plan(200, self._response(body, messages, message, finish, used))
        entry["finish_reason"] = finish
        return Plan(200, self._completion(body, messages, answer, reasoning, finish))

    def _world(self, key: str, entry: dict[str, Any]) -> tuple[str, str]:
        sample = self.samples.get(key)
        if sample is None:
            self.stats["unmatched"] += 1
            entry["matched"] = False
            observation = f"{OBSERVATION_MARKER}\nCommand completed successfully."
            return (f"<{RESPONSE_TAG}>\n{observation}\n</{RESPONSE_TAG}>",
                    "This action is not in the loaded data; answering a generic observation.")
        self.stats["matched"] += 1
        entry.update(matched=True, sample_id=sample.id, corrupted=False)
        observation = sample.ground_truth
        if self.is_corrupted(sample.id):
            self.stats["corrupted"] += 1
            entry["corrupted"] = True
            observation = corrupt_observation(observation, f"{self.config.seed}:{sample.id}")
        return (f"<{RESPONSE_TAG}>{observation}</{RESPONSE_TAG}>",
                "Considering how the environment responds to this action, given the history.")

    def _judge(self, user: str, mode: str, key: str, attempt: int, entry: dict[str, Any]) -> tuple[str, str]:
        cfg = self.config
        malformed = hash_uniform(cfg.seed, "malformed", key, attempt) < cfg.malformed_judge_rate
        reasoning = "Comparing the candidate output with the real environment's behaviour."
        entry["malformed"] = None
        if mode == "rubric":
            blocks = extract_blocks(user, (templates.PREDICTED_HEADING, templates.TRUTH_HEADING))
            verdict = rubric_verdict(blocks.get(templates.PREDICTED_HEADING, ""),
                                     blocks.get(templates.TRUTH_HEADING, ""))
            kind = None
            if malformed and cfg.malformed_kinds:
                kinds = cfg.malformed_kinds
                kind = kinds[int(hash_uniform(cfg.seed, "kind", key, attempt) * len(kinds))]
                self.stats["malformed"] += 1
                entry["malformed"] = kind
            entry["scores"] = verdict["scores"]
            return render_verdict(verdict, kind), reasoning
        headings = (templates.RESPONSE_A_HEADING, templates.RESPONSE_B_HEADING, templates.TRUTH_HEADING)
        blocks = extract_blocks(user, headings)
        a = blocks.get(templates.RESPONSE_A_HEADING, "")
        b = blocks.get(templates.RESPONSE_B_HEADING, "")
        if mode == "reference":
            truth = blocks.get(templates.TRUTH_HEADING, "")
            choice = "A" if similarity(a, truth) >= similarity(b, truth) else "B"
        else:
            choice = self._turing_choice(a, b, key)
        entry["choice"] = choice
        if malformed:
            self.stats["malformed"] += 1
            entry["malformed"] = "no_box"
        return render_choice(choice, malformed), reasoning

    def _turing_choice(self, a: str, b: str, key: str) -> str:
        """The response that is a known ground truth; with neither or both, a seeded guess."""
        a_real, b_real = a.strip() in self.truths, b.strip() in self.truths
        if a_real != b_real:
            return "A" if a_real else "B"
        return "A" if hash_uniform(self.config.seed, "turing", key) < 0.5 else "B"

    def _completion(self, body: dict[str, Any], messages: list[Any], answer: str, reasoning: str,
                    finish: str) -> dict[str, Any]:
        cfg = self.config
        message: dict[str, Any] = {"role": "assistant", "content": answer}
        if cfg.reasoning_field:
            message[cfg.reasoning_field] = reasoning
        elif cfg.thinking and finish != "length":
            message["content"] = f"<think>\n{reasoning}\n</think>\n\n{answer}"
        elif cfg.thinking:
            message["content"] = f"<think>\n{reasoning}"
        with_reasoning = cfg.thinking or cfg.reasoning_field
        completion_chars = len(answer) + (len(reasoning) if with_reasoning else 0)
        return self._response(body, messages, message, finish, completion_chars // 4 + 1)

    def _response(self, body: dict[str, Any], messages: list[Any], message: dict[str, Any], finish: str,
                  completion_tokens: int) -> dict[str, Any]:
        cfg = self.config
        prompt_tokens = sum(len(_text(m.get("content"))) for m in messages if isinstance(m, dict)) // 4 + 1
        return {
            "id": f"chatcmpl-mock-{len(self.log) + 1}", "object": "chat.completion",
            "created": int(time.time()), "model": body.get("model") or cfg.model_name,
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        }

    def snapshot(self, full: bool) -> list[dict[str, Any]]:
        with self._lock:
            return [e if full else {k: v for k, v in e.items() if k != "messages"} for e in self.log]


def judge_mode(user: str) -> Literal["rubric", "turing", "reference"] | None:
    """Which judge request this is (docs/CONTRACTS.md), or None for a world-model request."""
    has_truth = templates.TRUTH_HEADING in user
    has_a = templates.RESPONSE_A_HEADING in user
    if has_truth:
        return "reference" if has_a else "rubric"
    return "turing" if has_a else None


def synth_answer(user: str) -> str | None:
    """The offline generator's answer to a ``synth envs`` stage prompt, or None for any other request."""
    from agentworld.models.base import ChatRequest
    from agentworld.schema import Message
    from agentworld.synth.template import answer

    if not user.startswith("Stage: ") or "<inputs>" not in user:
        return None
    try:
        return answer(ChatRequest(messages=(Message(role="user", content=user),)))
    except (ValueError, KeyError, TypeError):
        return None


def _error_body(message: str, kind: str, code: int) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


# -- app and server ------------------------------------------------------------------------------

def _json(status: int, body: Any, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(body), status_code=status, headers=headers, media_type="application/json")


def create_app(config: MockConfig) -> FastAPI:
    """The FastAPI app; ``app.state.mock`` is its :class:`MockState`."""
    state = MockState(config)
    app = FastAPI(title="agentworld mock server", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.mock = state
    delay = config.latency_ms / 1000
    token = token_bytes(config.token.get_secret_value() if config.token is not None else None)

    def refused(request: Request) -> Response | None:
        if token is None:
            return None
        scheme, _, given = request.headers.get("authorization", "").encode().partition(b" ")
        if scheme.lower() == b"bearer" and hmac.compare_digest(given.strip(), token):
            return None
        return _json(401, flavours.auth_error())

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request) -> Response:
        if (denied := refused(request)) is not None:
            return denied
        try:
            body = orjson.loads(await request.body())
        except orjson.JSONDecodeError:
            body = None
        named = body.get("model") if isinstance(body, dict) else None
        if flavours.rejects_other_models(config) and named != config.model_name:
            return _json(404, flavours.model_error(str(named)))
        if isinstance(body, dict) and isinstance(body.get("messages"), list):
            chars = sum(len(_text(m.get("content"))) for m in body["messages"] if isinstance(m, dict))
            prompt = chars // 4 + 1
            too_long = flavours.context_error(config, prompt, body.get("max_tokens"))
            if too_long is not None:
                return _json(400, too_long)
        with state.answering():
            plan, _ = state.plan(body)
            if delay:
                await asyncio.sleep(delay)
        if plan.status == 200 and mock_stream.wants_stream(body):
            events = mock_stream.sse_events(plan.body, include_usage=mock_stream.wants_usage(body))
            return StreamingResponse(events, media_type="text/event-stream",
                                     headers={"Cache-Control": "no-cache"})
        return _json(plan.status, plan.body, plan.headers)

    @app.get("/v1/models")
    async def models(request: Request) -> Response:
        if (denied := refused(request)) is not None:
            return denied
        return _json(200, {"object": "list", "data": [flavours.model_card(config)]})

    if config.flavour == "llamacpp":
        @app.get("/props")
        async def props(request: Request) -> Response:
            return refused(request) or _json(200, flavours.props(config))

    @app.get("/_mock/requests")
    async def requests(request: Request, full: int = 0) -> Response:
        return refused(request) or _json(200, state.snapshot(bool(full)))

    @app.get("/_mock/stats")
    async def stats(request: Request) -> Response:
        return refused(request) or _json(200, {
            "samples": len(state.samples), "duplicate_rows": state.duplicates,
            "max_in_flight": state.max_in_flight, **state.stats})

    @app.post("/_mock/reset")
    async def reset(request: Request) -> Response:
        if (denied := refused(request)) is not None:
            return denied
        state.reset()
        return _json(200, {"ok": True})

    return app


def _bind(host: str, port: int) -> socket.socket:
    return bind_tcp(host, port, backlog=4096)


def _server(app: Any) -> Any:
    """A uvicorn server tuned for many concurrent short requests (no access log, high limits)."""
    import uvicorn

    return uvicorn.Server(uvicorn_config(app, lifespan="off", backlog=4096, timeout_graceful_shutdown=2))


def base_url(sock: socket.socket) -> str:
    """``http://HOST:PORT/v1`` of a bound socket."""
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}/v1" if ":" in host else f"http://{host}:{port}/v1"


@contextmanager
def serve_app_in_thread(app: Any, host: str = "127.0.0.1", port: int = 0, *,
                        startup_timeout_s: float = 30) -> Iterator[str]:
    """Serve any ASGI app from a background thread; yield ``http://HOST:PORT/v1``.

    The port is bound before the thread starts (0 picks a free one), so there is no race on it;
    the server is stopped and its thread joined on exit. Tests use it for ad-hoc fake servers.
    """
    server = _server(app)
    sock = _bind(host, port)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="agentworld-serve",
                              daemon=True)
    thread.start()
    deadline = time.monotonic() + startup_timeout_s
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            thread.join(timeout=5)
            sock.close()
            raise RuntimeError("server failed to start")
        time.sleep(0.005)
    try:
        yield base_url(sock)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@contextmanager
def run_mock_server(config: MockConfig, *, startup_timeout_s: float = 30) -> Iterator[str]:
    """Run the mock server in a background thread; yield its base URL (``http://127.0.0.1:PORT/v1``)."""
    with serve_app_in_thread(create_app(config), config.host, config.port,
                             startup_timeout_s=startup_timeout_s) as url:
        yield url


def serve_forever(config: MockConfig, announce: Any = print) -> None:
    """Run the server in this thread until interrupted (Ctrl-C); ``announce`` gets the base URL."""
    from agentworld.serve.net import tune_gc

    server = _server(create_app(config))
    sock = _bind(config.host, config.port)
    announce(base_url(sock))
    tune_gc()
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
