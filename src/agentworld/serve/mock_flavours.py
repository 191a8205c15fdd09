"""How the mock server imitates a particular serving stack: vLLM, SGLang or llama.cpp's llama-server.

Real endpoints differ in exactly the places a user trips over when pointing agentworld at one
(``agentworld doctor`` checks them): where the reasoning of a thinking model comes back (vLLM:
``message.reasoning``; SGLang: ``message.reasoning_content``; llama.cpp: inline ``<think>`` in the
content), what they say about the context length (vLLM and SGLang: ``max_model_len`` on each
``/v1/models`` entry; llama.cpp: ``n_ctx`` in ``GET /props``), whether a request naming another
model is refused (vLLM answers 404; SGLang and llama.cpp serve whatever is loaded), that a prompt
plus ``max_tokens`` beyond the context is refused (vLLM and SGLang: 400), and that a long thought
stops at the request's ``max_tokens`` with ``finish_reason: length``.

Tokens here are 4 characters (the mock has no tokenizer), so a budget of ``max_tokens`` is
``4 * max_tokens`` characters of reasoning and answer together, and ``usage.completion_tokens`` is
what was actually generated.
"""

from __future__ import annotations

import math
from typing import Any

from agentworld.serve.config import MockConfig

CHARS_PER_TOKEN = 4
_FILLER = ("Next, check the recorded history for the state this action starts from, and what the "
           "environment printed last time. ")


def tokens(text: str) -> int:
    """The mock's token count of ``text`` (4 characters a token, rounded up)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def placement(config: MockConfig) -> str | None:
    """Where the reasoning goes: a message field name, ``"inline"`` (``<think>`` in the content) or None."""
    if config.reasoning_field:
        return config.reasoning_field
    if config.thinking:
        return "inline"
    by_flavour = {"vllm": "reasoning", "sglang": "reasoning_content", "llamacpp": "inline"}
    return by_flavour.get(config.flavour or "")


def rejects_other_models(config: MockConfig) -> bool:
    """vLLM refuses a request naming a model it does not serve; SGLang and llama.cpp answer anyway."""
    return config.reject_other_models or config.flavour == "vllm"


def long_reasoning(reasoning: str, think_tokens: int) -> str:
    """``reasoning`` padded with deterministic filler to ``think_tokens`` tokens (never shortened)."""
    want = think_tokens * CHARS_PER_TOKEN
    if len(reasoning) >= want:
        return reasoning
    filler = (_FILLER * (want // len(_FILLER) + 1))[: want - len(reasoning) - 1]
    return f"{reasoning}\n{filler}"


def shaped_message(config: MockConfig, answer: str, reasoning: str, max_tokens: Any) -> tuple[
        dict[str, Any], str, int]:
    """``(message, finish_reason, completion_tokens)`` of a thinking, budget-honouring answer.

    The reasoning is generated first, then the answer; whatever does not fit in ``max_tokens``
    (when :attr:`MockConfig.enforce_max_tokens` is set and the request gives one) is not generated:
    a cut in the reasoning leaves no content at all, a cut in the answer leaves its
    ``<predicted_observation>`` unclosed, as a real server's would be.
    """
    where = placement(config)
    thought = long_reasoning(reasoning, config.think_tokens) if where else ""
    inline = where == "inline" and bool(thought)
    stream = f"<think>\n{thought}\n</think>\n\n{answer}" if inline else thought + answer
    enforced = config.enforce_max_tokens and isinstance(max_tokens, int) and max_tokens > 0
    budget = max_tokens if enforced else None
    finish = "stop"
    if budget is not None and tokens(stream) > budget:
        finish = "length"
        stream = stream[: budget * CHARS_PER_TOKEN]
    used = tokens(stream)
    if inline or not thought or where is None:
        return {"role": "assistant", "content": stream}, finish, used
    content = stream[len(thought):]
    return {"role": "assistant", "content": content or None, where: stream[: len(thought)]}, finish, used


def context_error(config: MockConfig, prompt_tokens: int, max_tokens: Any) -> dict[str, Any] | None:
    """vLLM's and SGLang's 400 when the prompt plus ``max_tokens`` exceed the context, else None.

    A real pitfall: ``eval run``'s default ``--max-tokens 32768`` on a server started with
    ``--max-model-len 32768`` has every request refused.
    """
    if config.flavour not in ("vllm", "sglang") or not isinstance(max_tokens, int):
        return None
    if prompt_tokens + max_tokens <= config.context_tokens:
        return None
    return {"error": {"message": f"This model's maximum context length is {config.context_tokens} tokens. "
                      f"However, you requested {prompt_tokens + max_tokens} tokens ({prompt_tokens} in the "
                      f"messages, {max_tokens} in the completion). Please reduce the length of the messages "
                      "or completion.", "type": "BadRequestError", "param": None, "code": 400}}


def model_card(config: MockConfig) -> dict[str, Any]:
    """One ``/v1/models`` entry as the flavour's server lists it."""
    card: dict[str, Any] = {"id": config.model_name, "object": "model", "created": 0,
                            "owned_by": "agentworld-mock"}
    if config.flavour in ("vllm", "sglang"):
        card.update(owned_by=config.flavour, root=config.model_name, max_model_len=config.context_tokens)
    elif config.flavour == "llamacpp":
        card.update(owned_by="llamacpp", meta={"n_ctx_train": config.context_tokens, "n_vocab": 151936})
    return card


def props(config: MockConfig) -> dict[str, Any]:
    """llama-server's ``GET /props`` (the part a client reads: the context size of a slot)."""
    return {"default_generation_settings": {"n_ctx": config.context_tokens, "model": config.model_name},
            "total_slots": 1, "model_path": f"/models/{config.model_name}.gguf"}


def auth_error() -> dict[str, Any]:
    """The 401 body OpenAI sends for a missing or wrong key."""
    return {"error": {"message": "Incorrect API key provided.", "type": "invalid_request_error",
                      "param": None, "code": "invalid_api_key"}}


def model_error(name: str) -> dict[str, Any]:
    """vLLM's 404 for a request naming a model it does not serve."""
    return {"error": {"message": f"The model `{name}` does not exist.", "type": "NotFoundError",
                      "param": "model", "code": 404}}
