"""``--model transformers:PATH``: a local model folder, a GGUF file or a packaged alias (``smollm2``) run in
this process with Hugging Face transformers (a GGUF file dequantized to float32).

No server to start: the folder's tokenizer renders each request with its chat template, concurrent
requests are generated as one left-padded batch (:mod:`agentworld.models.batching`) on the GPU when
there is one, else the CPU, and the answer comes back as the OpenAI-compatible backend returns it:
reasoning separated (:func:`~agentworld.models.openai_compat.extract_reasoning`, inline
``<think>``), ``finish_reason="length"`` when ``max_tokens`` ran out before a stop token, token counts
and latency.

Decoding is done per row by one logits processor (:class:`_RowDecoder`) rather than by
``generate``'s own sampling: a batch mixes requests with different temperatures, seeds and token
budgets, and ``generate`` takes one setting for the whole batch and one global random stream, so a
sampled answer would depend on which other requests shared its batch. Here temperature 0 (or None)
is the argmax, anything else samples from the row's own generator seeded by the request's ``seed``
(or, without one, by a hash of the request), so the same request gives the same answer alone or
batched. Stop tokens are the tokenizer's end-of-sequence and the model's generation config's
``eos_token_id`` (a list for chat models); the generation config's sampling defaults are not applied.

Loading reads local files only (``local_files_only``: a name that is no folder never reaches the
Hugging Face Hub), and a folder that cannot load (a foreign ``config.json``, missing or broken
weights, a tokenizer without a usable chat template: :mod:`agentworld.models.chat_template`) fails
the backend's construction once, before any request
(:meth:`~agentworld.models.batching.BatchingBackend.ready`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentworld.domains.prompt_view import VIEW_FILE, PromptView, read_view
from agentworld.errors import AgentWorldError, BackendError
from agentworld.models import chat_template
from agentworld.models.base import ChatRequest, ChatResult, ModelLoadError, Usage, register_backend
from agentworld.models.batching import BatchingBackend
from agentworld.models.openai_compat import extract_reasoning


def model_folder(path: str | Path) -> Path:
    """The model ``path`` names: a GGUF file (or a packaged alias such as ``smollm2``, resolved to its
    file), or a folder checked to hold a ``config.json``.

    Raises:
        AgentWorldError: no such folder or file, or not a model folder.
    """
    from agentworld.models.packaged import gguf_file, is_gguf, resolve_model_path

    resolved = resolve_model_path(path)
    if is_gguf(resolved):
        return gguf_file(resolved)
    folder = Path(path).expanduser()
    if not folder.is_dir():
        raise AgentWorldError(f"model folder {folder} does not exist (give a local folder saved with "
                              "save_pretrained or downloaded from a hub)")
    if not (folder / "config.json").is_file():
        raise AgentWorldError(f"{folder} holds no config.json: not a transformers model folder")
    return folder


@dataclass
class _Row:
    """One request's decoding settings inside a batch."""

    max_tokens: int
    temperature: float
    top_p: float
    top_k: int
    seed: int
    generator: Any = None


class _RowDecoder:
    """A logits processor that picks each row's next token itself (see the module docstring).

    It returns ``-inf`` everywhere but the chosen token, so ``generate``'s greedy step keeps that
    choice; a row past its own budget is given a stop token (and is reported as truncated).
    """

    def __init__(self, rows: list[_Row], prompt_len: int, stop_id: int) -> None:
        self.rows = rows
        self.prompt_len = prompt_len
        self.stop_id = stop_id

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        step = input_ids.shape[1] - self.prompt_len
        chosen = torch.full_like(scores, float("-inf"))
        for i, row in enumerate(self.rows):
            if step >= row.max_tokens:
                token = self.stop_id
            elif row.temperature > 0:
                token = self._sample(scores[i].float(), row)
            else:
                token = int(scores[i].argmax())
            chosen[i, token] = 0.0
        return chosen

    @staticmethod
    def _sample(logits: Any, row: _Row) -> int:
        import torch

        if row.generator is None:
            row.generator = torch.Generator(device=logits.device).manual_seed(row.seed)
        logits = logits / row.temperature
        if 0 < row.top_k < logits.shape[-1]:
            floor = torch.topk(logits, row.top_k).values[-1]
            logits = logits.masked_fill(logits < floor, float("-inf"))
        probs = torch.softmax(logits, dim=-1)
        if row.top_p < 1.0:
            ordered, order = torch.sort(probs, descending=True)
            drop = torch.cumsum(ordered, dim=-1) - ordered > row.top_p
            probs = probs.clone()
            probs[order[drop]] = 0.0
        return int(torch.multinomial(probs, 1, generator=row.generator))


class TransformersBackend(BatchingBackend):
    """A :class:`~agentworld.models.base.ChatBackend` generating with a local transformers model.

    Args:
        path: the model folder (tokenizer with a chat template, config, weights).
        max_batch_size: most requests generated together (``eval run --concurrency`` sets it).
        device: ``auto`` (``cuda`` when available, else ``cpu``), or a torch device name.
        dtype: weights' dtype: ``auto`` (as saved) or a torch dtype name such as ``bfloat16``.
        seed: mixed into the seed of a sampled request that has none.

    The model loads in the worker thread as soon as the backend is made, so start-up overlaps
    with the caller's; the first batch waits for it (:meth:`ready`;
    :func:`~agentworld.endpoints.build_backend` waits at once).
    """

    install_hint = "bash install.sh --train"

    def __init__(self, path: str | Path, *, max_batch_size: int = 16, device: str = "auto",
                 dtype: str = "auto", seed: int = 0, batch_wait_s: float = 0.005) -> None:
        super().__init__(max_batch_size=max_batch_size, batch_wait_s=batch_wait_s)
        self.path = model_folder(path)
        self.name = f"transformers:{path}"
        self.device = device
        self.dtype = dtype
        self.seed = seed
        self._model: Any = None
        self._tokenizer: Any = None
        self._stop_ids: list[int] = []
        self.system_role = True
        """Whether the chat template renders a system message (else it is folded into the user turn)."""
        self.view: PromptView | None = None
        """The prompt view the model was trained on (its folder's view file), applied to every request."""
        self.start_loading(self._load)

    def __repr__(self) -> str:
        return f"TransformersBackend(path={str(self.path)!r}, device={self.device!r}, " \
               f"max_batch_size={self.max_batch_size})"

    def _load(self) -> None:
        import torch
        import transformers

        device = self.device
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        from agentworld.models.packaged import hf_source

        view_file = self.path / VIEW_FILE if self.path.is_dir() else None
        if view_file is not None and view_file.is_file():
            self.view = read_view(view_file.read_text(encoding="utf-8"))
        source, options = hf_source(self.path)  # local files only; a GGUF file is dequantized to float32
        tokenizer = transformers.AutoTokenizer.from_pretrained(source, **options)
        if not getattr(tokenizer, "chat_template", None):
            raise ModelLoadError(f"{self.name}: the tokenizer in {self.path} has no chat template")
        support = chat_template.probe(lambda messages: str(tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=True)), self.name)
        self.system_role = support.system_role
        dtype: Any = self.dtype if self.dtype == "auto" else getattr(torch, self.dtype)
        model: Any = transformers.AutoModelForCausalLM.from_pretrained(source, dtype=dtype, **options)
        model.to(device).eval()
        configured = model.generation_config.eos_token_id
        configured = configured if isinstance(configured, list) else [configured]
        stops = [tokenizer.eos_token_id, *configured]
        self._stop_ids = list(dict.fromkeys(int(t) for t in stops if t is not None))
        if not self._stop_ids:
            raise ModelLoadError(f"{self.name}: neither the tokenizer nor the generation config names an "
                                 "end-of-sequence token")
        self._tokenizer, self._model = tokenizer, model

    def _prompt_ids(self, request: ChatRequest) -> list[int]:
        shown = self.view.apply(request.messages) if self.view else request.messages
        messages = [{"role": m.role, "content": m.content} for m in shown]
        if not self.system_role:
            messages = chat_template.fold_system(messages)
        options = request.extra.get("chat_template_kwargs") or {}
        text = chat_template.render_or_fail(lambda: self._tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=True, **options), self.name)
        return list(self._tokenizer(text, add_special_tokens=False)["input_ids"])

    def _row(self, request: ChatRequest, prompt_tokens: int) -> _Row:
        context = int(getattr(self._model.config, "max_position_embeddings", 0) or 0)
        room = context - prompt_tokens if context else None
        if room is not None and room < 1:
            raise BackendError(f"{self.name}: the prompt has {prompt_tokens} tokens; the model's context "
                               f"is {context}", retryable=False)
        budget = request.max_tokens or room or 4096
        if room is not None:
            budget = min(budget, room)
        seed = request.seed if request.seed is not None else self.seed ^ int(request.key()[:8], 16)
        return _Row(max_tokens=budget, temperature=float(request.temperature or 0.0),
                    top_p=float(request.extra.get("top_p", 1.0)), top_k=int(request.extra.get("top_k", 0)),
                    seed=seed)

    def run_batch(self, requests: list[ChatRequest]) -> list[ChatResult | BaseException]:
        """Generate every request of the batch in one left-padded ``generate`` call."""
        import torch
        import transformers

        self.ready()
        out: list[ChatResult | BaseException | None] = [None] * len(requests)
        prompts: list[tuple[int, list[int], _Row]] = []
        for i, request in enumerate(requests):
            try:
                ids = self._prompt_ids(request)
                prompts.append((i, ids, self._row(request, len(ids))))
            except BackendError as exc:
                out[i] = exc
        if prompts:
            width = max(len(ids) for _, ids, _ in prompts)
            pad = self._tokenizer.pad_token_id
            pad = self._stop_ids[0] if pad is None else pad
            device = self._model.device
            input_ids = torch.tensor([[pad] * (width - len(ids)) + ids for _, ids, _ in prompts],
                                     device=device)
            mask = torch.tensor([[0] * (width - len(ids)) + [1] * len(ids) for _, ids, _ in prompts],
                                device=device)
            rows = [row for _, _, row in prompts]
            config = transformers.GenerationConfig(
                max_new_tokens=max(r.max_tokens for r in rows) + 1, do_sample=False,
                eos_token_id=self._stop_ids, pad_token_id=pad)
            started = time.perf_counter()
            decoder = _RowDecoder(rows, width, self._stop_ids[0])
            with torch.inference_mode():
                generated = self._model.generate(
                    input_ids=input_ids, attention_mask=mask, generation_config=config,
                    logits_processor=transformers.LogitsProcessorList([decoder]))
            latency = time.perf_counter() - started
            for (i, ids, row), tokens in zip(prompts, generated[:, width:].tolist(), strict=True):
                out[i] = self._result(tokens, row, len(ids), latency)
        return [r if r is not None else BackendError("no result", retryable=False) for r in out]

    def _result(self, tokens: list[int], row: _Row, prompt_tokens: int, latency: float) -> ChatResult:
        """The row's answer: its tokens up to the first stop token within its budget, else truncated."""
        stop = next((n for n, t in enumerate(tokens[:row.max_tokens]) if t in self._stop_ids), None)
        kept = tokens[:row.max_tokens] if stop is None else tokens[:stop + 1]
        text = self._tokenizer.decode(kept, skip_special_tokens=True)
        content, reasoning = extract_reasoning({"content": text})
        return ChatResult(content=content, reasoning=reasoning,
                          finish_reason="length" if stop is None else "stop",
                          usage=Usage(prompt_tokens=prompt_tokens, completion_tokens=len(kept)),
                          latency_s=latency, model=str(self.path), source=self.name)


@register_backend("transformers")
def _transformers(path: str, *, concurrency: int = 16, device: str = "auto", dtype: str = "auto",
                  seed: int = 0, **_client: Any) -> TransformersBackend:
    return TransformersBackend(path, max_batch_size=concurrency, device=device, dtype=dtype, seed=seed)
