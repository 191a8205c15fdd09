"""``--model vllm:PATH``: a local model folder run in this process by vLLM's offline engine (``vllm.LLM``).

For a GPU machine without a server to run: vLLM's own scheduler batches (continuously) whatever
list of prompts it is given, so the concurrent requests collected by
:class:`~agentworld.models.batching.BatchingBackend` go to one ``LLM.chat`` call, each with its own
``SamplingParams`` (temperature, ``max_tokens``, seed, ``top_p``/``top_k`` from ``request.extra``).
Answers come back as the OpenAI-compatible backend returns them (reasoning separated from the
text, vLLM's ``finish_reason``, token counts). Engine options (``tensor_parallel_size``,
``max_model_len``, ``gpu_memory_utilization``…) are passed through as keyword arguments.

Needs ``pip install vllm`` (not a dependency of agentworld: it pins its own torch and CUDA).
"""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path
from typing import Any

from agentworld.errors import AgentWorldError
from agentworld.models.base import ChatRequest, ChatResult, Usage, register_backend
from agentworld.models.batching import BatchingBackend
from agentworld.models.openai_compat import extract_reasoning
from agentworld.models.transformers_backend import model_folder


class VLLMBackend(BatchingBackend):
    """A :class:`~agentworld.models.base.ChatBackend` over ``vllm.LLM`` (see the module docstring).

    Raises:
        AgentWorldError: vLLM is not installed, or ``path`` is not a model folder.
    """

    install_hint = "pip install vllm, on a machine with a GPU"

    def __init__(self, path: str | Path, *, max_batch_size: int = 256, seed: int = 0,
                 **engine: Any) -> None:
        if importlib.util.find_spec("vllm") is None:
            raise AgentWorldError("--model vllm:PATH needs vLLM (pip install vllm, on a machine with a GPU); "
                                  "use transformers:PATH to run the model with transformers instead")
        super().__init__(max_batch_size=max_batch_size)
        self.path = model_folder(path)
        self.name = f"vllm:{path}"
        self.seed = seed
        self._engine = engine
        self._llm: Any = None
        self.start_loading(self._load)

    def _load(self) -> None:
        import vllm

        self._llm = vllm.LLM(model=str(self.path), seed=self.seed, **self._engine)

    def _params(self, request: ChatRequest) -> Any:
        import vllm

        seed = request.seed if request.seed is not None else self.seed ^ int(request.key()[:8], 16)
        return vllm.SamplingParams(temperature=float(request.temperature or 0.0),
                                   max_tokens=request.max_tokens, seed=seed,
                                   top_p=float(request.extra.get("top_p", 1.0)),
                                   top_k=int(request.extra.get("top_k", -1)))

    def run_batch(self, requests: list[ChatRequest]) -> list[ChatResult | BaseException]:
        """One ``LLM.chat`` call for the batch; vLLM schedules the rows itself."""
        self.ready()
        conversations = [[{"role": m.role, "content": m.content} for m in r.messages] for r in requests]
        options = requests[0].extra.get("chat_template_kwargs") or None
        started = time.perf_counter()
        outputs = self._llm.chat(conversations, [self._params(r) for r in requests], use_tqdm=False,
                                 chat_template_kwargs=options)
        latency = time.perf_counter() - started
        results: list[ChatResult | BaseException] = []
        for output in outputs:
            answer = output.outputs[0]
            content, reasoning = extract_reasoning({"content": answer.text})
            results.append(ChatResult(
                content=content, reasoning=reasoning, finish_reason=answer.finish_reason,
                usage=Usage(prompt_tokens=len(output.prompt_token_ids or []),
                            completion_tokens=len(answer.token_ids)),
                latency_s=latency, model=str(self.path), source=self.name))
        return results


@register_backend("vllm")
def _vllm(path: str, *, concurrency: int = 256, seed: int = 0, max_retries: int | None = None,
          timeout_s: float | None = None, backoff_base_s: float | None = None,
          max_response_bytes: int | None = None, **engine: Any) -> VLLMBackend:
    return VLLMBackend(path, max_batch_size=concurrency, seed=seed, **engine)
