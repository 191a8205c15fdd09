"""``--model llamacpp:PATH``: a GGUF file (or a packaged alias such as ``smollm2``) run in this process
by llama-cpp-python.

Why beside ``transformers:PATH``: on a CPU, llama.cpp generates a small model several times faster
than transformers in float32 (quantized weights, fused kernels), and it keeps the KV cache of the
last prompt: a request whose messages start as the previous one's did (the same system prompt, the
same history) only pays for the new tokens. The batch a :class:`BatchingBackend` collects is
therefore answered one request at a time, *in the order of their messages*, so requests sharing a
prefix run back to back and reuse it; llama-cpp-python has no batched generation of several
prompts. The answers come back as the other backends give them (reasoning separated,
``finish_reason="length"`` when the budget ran out, token counts).

Decoding follows the request as the transformers backend does: temperature 0 (or None) is greedy;
otherwise sampling with the request's ``seed`` (or a hash of the request), ``top_p``/``top_k`` from
its ``extra``, and llama.cpp's own defaults that the other backends do not apply (min-p, repeat
penalty) switched off.

A GGUF file exported from a model trained on a prompt view (``agentworld train export``) carries the
view in its metadata, and every request is asked through it
(:meth:`~agentworld.domains.prompt_view.PromptView.apply`).

A file that cannot load (truncated, crafted, not GGUF, without a chat template, with a template that
cannot render a user message: :mod:`agentworld.models.chat_template`) fails the backend's
construction through :meth:`~agentworld.models.batching.BatchingBackend.ready`, once, before any
request; a template without a system role gets the system prompt in the first user turn. A file that
llama.cpp itself aborts on (a failed ``GGML_ASSERT``) is caught the same way: it is loaded in a child
process first (:mod:`agentworld.models.llamacpp_probe`).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from agentworld.domains.prompt_view import GGUF_KEY, PromptView, read_view
from agentworld.errors import BackendError
from agentworld.models import chat_template
from agentworld.models.base import ChatRequest, ChatResult, ModelLoadError, Usage, register_backend
from agentworld.models.batching import BatchingBackend
from agentworld.models.llamacpp_probe import probe_load
from agentworld.models.openai_compat import extract_reasoning
from agentworld.models.packaged import gguf_file


def cpu_threads() -> int:
    """The cores this process may use (llama-cpp-python's default is half the machine's)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


class LlamaCppBackend(BatchingBackend):
    """A :class:`~agentworld.models.base.ChatBackend` generating with llama-cpp-python in this process.

    Args:
        path: a GGUF file, or a packaged alias (:mod:`agentworld.models.packaged`).
        n_ctx: context length in tokens (prompt plus answer); 0 takes the model's training context.
        n_threads: CPU threads; default: every core this process may use.
        seed: mixed into the seed of a sampled request that has none.
        max_batch_size: most requests collected together (answered in prefix order, see the module).

    The model loads in the worker thread as soon as the backend is made; the first batch waits for it
    (:meth:`ready`; :func:`~agentworld.endpoints.build_backend` waits at once).
    """

    install_hint = "bash install.sh --train, or pip install 'llama-cpp-python[server]'"

    def __init__(self, path: str | Path, *, n_ctx: int = 8192, n_threads: int | None = None, seed: int = 0,
                 max_batch_size: int = 16, batch_wait_s: float = 0.005) -> None:
        super().__init__(max_batch_size=max_batch_size, batch_wait_s=batch_wait_s)
        self.path = gguf_file(path)
        self.name = f"llamacpp:{path}"
        self.n_ctx = n_ctx
        self.n_threads = n_threads or cpu_threads()
        self.seed = seed
        self.prefix_hits = 0
        """Requests that reused at least part of the previous prompt's KV cache."""
        self._llm: Any = None
        self._template: Any = None
        self.system_role = True
        """Whether the chat template renders a system message (else it is folded into the user turn)."""
        self.view: PromptView | None = None
        """The prompt view stored in the GGUF file (a model trained on one), applied to every request."""
        self.start_loading(self._load)

    def __repr__(self) -> str:
        return f"LlamaCppBackend(path={str(self.path)!r}, n_ctx={self.n_ctx}, n_threads={self.n_threads})"

    def _load(self) -> None:
        from llama_cpp import Llama

        probe_load(self.path, self.name)  # a file llama.cpp aborts on kills a child, not this process
        try:
            self._llm = Llama(model_path=str(self.path), n_ctx=self.n_ctx, n_threads=self.n_threads,
                              n_threads_batch=self.n_threads, seed=self.seed, verbose=False)
        except ValueError as exc:  # llama.cpp says only "Failed to load model from file"
            raise ModelLoadError(f"{self.name}: llama.cpp cannot load {self.path} ({exc}): a truncated or "
                                 "damaged GGUF file, or a model llama.cpp does not know") from None
        except Exception as exc:
            if type(exc).__module__.startswith("jinja2"):  # llama-cpp-python compiles the template here
                raise ModelLoadError(f"{self.name}: the model's chat template does not compile: "
                                     f"{chat_template.problem(exc)}") from None
            raise
        try:
            self.view = read_view(self._llm.metadata.get(GGUF_KEY))
            self._template = self._formatter()
            support = chat_template.probe(lambda messages: str(self._template(messages=messages).prompt),
                                          self.name)
        except BaseException:
            self._llm.close()  # here, in its thread: llama-cpp-python's finalizer fails at interpreter exit
            self._llm = None
            raise
        self.system_role = support.system_role

    def _formatter(self) -> Any:
        """llama-cpp-python's renderer of the file's chat template (a Jinja sandbox, as its server uses)."""
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        template = self._llm.metadata.get("tokenizer.chat_template")
        if not template:
            raise ModelLoadError(f"{self.name}: the GGUF file has no chat template (tokenizer.chat_template)")
        model = self._llm._model
        try:
            return Jinja2ChatFormatter(template=template,
                                       eos_token=model.token_get_text(self._llm.token_eos()),
                                       bos_token=model.token_get_text(self._llm.token_bos()))
        except Exception as exc:  # a syntax error, or the sandbox refusing it as it compiles
            raise ModelLoadError(f"{self.name}: the model's chat template does not compile: "
                                 f"{chat_template.problem(exc)}") from None

    async def aclose(self) -> None:
        """Free the model in the worker thread (llama-cpp-python's own finalizer fails at interpreter exit),
        then stop the thread."""
        import asyncio

        def close() -> None:
            if self._llm is not None:
                self._llm.close()
                self._llm = None

        await asyncio.get_running_loop().run_in_executor(self._worker, close)
        await super().aclose()

    @property
    def context(self) -> int:
        """The loaded context length (after the model resolved ``n_ctx=0``)."""
        self.ready()
        return int(self._llm.n_ctx())

    def run_batch(self, requests: list[ChatRequest]) -> list[ChatResult | BaseException]:
        """Answer each request, in the order of their messages (shared prefixes back to back)."""
        self.ready()
        out: list[ChatResult | BaseException] = [BackendError("no result", retryable=False)] * len(requests)
        order = sorted(range(len(requests)),
                       key=lambda i: [(m.role, m.content) for m in requests[i].messages])
        for i in order:
            try:
                out[i] = self._one(requests[i])
            except BackendError as exc:
                out[i] = exc
        return out

    def _one(self, request: ChatRequest) -> ChatResult:
        shown = self.view.apply(request.messages) if self.view else request.messages
        messages = [{"role": m.role, "content": m.content} for m in shown]
        if not self.system_role:
            messages = chat_template.fold_system(messages)
        llm = self._llm
        text = chat_template.render_or_fail(lambda: str(self._template(messages=messages).prompt), self.name)
        prompt = llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)
        context = int(llm.n_ctx())
        room = context - len(prompt)
        if room < 1:
            raise BackendError(f"{self.name}: the prompt has {len(prompt)} tokens; the context is {context} "
                               "(raise n_ctx, or shorten the prompt)", retryable=False)
        budget = min(request.max_tokens or room, room)
        temperature = float(request.temperature or 0.0)
        seed = request.seed if request.seed is not None else self.seed ^ int(request.key()[:8], 16)
        shared = llm.longest_token_prefix(llm._input_ids.tolist(), prompt) if llm.n_tokens else 0
        self.prefix_hits += shared > 0
        started = time.perf_counter()
        try:
            schema = request.extra.get("json_schema")  # constrained decoding (a grammar from the schema)
            answer = llm.create_chat_completion(
                messages=messages, max_tokens=budget, temperature=temperature, seed=seed & 0x7FFFFFFF,
                top_p=float(request.extra.get("top_p", 1.0)), top_k=int(request.extra.get("top_k", 0)),
                min_p=0.0, repeat_penalty=1.0,
                response_format={"type": "json_object", "schema": schema} if schema else None)
        except ValueError as exc:  # llama-cpp-python's "Requested tokens (N) exceed context window of M"
            raise BackendError(f"{self.name}: {exc}", retryable=False) from exc
        latency = time.perf_counter() - started
        choice = answer["choices"][0]
        content, reasoning = extract_reasoning({"content": choice["message"].get("content") or ""})
        usage = answer.get("usage") or {}
        return ChatResult(content=content, reasoning=reasoning,
                          finish_reason=choice.get("finish_reason") or "stop",
                          usage=Usage(prompt_tokens=int(usage.get("prompt_tokens", len(prompt))),
                                      completion_tokens=int(usage.get("completion_tokens", 0))),
                          latency_s=latency, model=str(self.path), source=self.name,
                          meta={"prefix_tokens_reused": shared})


@register_backend("llamacpp")
def _llamacpp(path: str, *, concurrency: int = 16, seed: int = 0, n_ctx: int = 8192,
              **_client: Any) -> LlamaCppBackend:
    return LlamaCppBackend(path, max_batch_size=concurrency, seed=seed, n_ctx=n_ctx)
