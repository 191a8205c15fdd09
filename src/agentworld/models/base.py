"""The one protocol every world-model and judge backend implements, and the backend registry.

A backend turns a :class:`ChatRequest` (messages + sampling settings) into a :class:`ChatResult`
(content, reasoning, finish reason, usage, latency). Backends register under a name with
:func:`register_backend` so a run log can say exactly what produced each result.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from agentworld.errors import AgentWorldError
from agentworld.schema import Message


class ModelLoadError(AgentWorldError):
    """A model run in this process cannot load (a missing, truncated or foreign file, a folder that is
    not a model, a chat template that cannot render, a missing package).

    Not a :class:`~agentworld.errors.BackendError`: no request's failure is recorded for it, the
    command stops with one line, before any sample is sent (:func:`agentworld.endpoints.build_backend`
    waits for the load).
    """


class ChatRequest(BaseModel):
    """What is sent to a backend. ``key()`` identifies it for the response cache."""

    model_config = ConfigDict(frozen=True)

    messages: tuple[Message, ...]
    model: str = ""
    max_tokens: int | None = None
    temperature: float | None = None
    seed: int | None = None
    extra: dict[str, Any] = Field(default_factory=dict)

    def key(self) -> str:
        """A stable hash of everything that affects the answer (used as the cache key)."""
        import hashlib

        import orjson

        payload = orjson.dumps(self.model_dump(mode="json"), option=orjson.OPT_SORT_KEYS)
        return hashlib.sha256(payload).hexdigest()


class Usage(BaseModel):
    model_config = ConfigDict(frozen=True)

    prompt_tokens: int = 0
    completion_tokens: int = 0


class ChatResult(BaseModel):
    """A backend's answer, with what is needed to account for it.

    Attributes:
        content: the answer text with reasoning removed where the server separated it.
        reasoning: reasoning text (``reasoning``/``reasoning_content`` fields or inline ``<think>``).
        finish_reason: as reported; ``"length"`` means the answer was truncated.
        source: the backend that produced it (``openai:<model>``, ``retrieval``, ``scripted``, ``cache``).
    """

    model_config = ConfigDict(frozen=True)

    content: str
    reasoning: str | None = None
    finish_reason: str | None = "stop"
    usage: Usage = Field(default_factory=Usage)
    latency_s: float = 0.0
    model: str = ""
    source: str = ""
    attempts: int = 1
    meta: dict[str, Any] = Field(default_factory=dict)

    @property
    def truncated(self) -> bool:
        return self.finish_reason == "length"


@runtime_checkable
class ChatBackend(Protocol):
    """Anything that answers chat requests asynchronously."""

    name: str

    async def complete(self, request: ChatRequest) -> ChatResult: ...


_REGISTRY: dict[str, Callable[..., ChatBackend]] = {}
_BUILTIN = {"openai": "agentworld.models.openai_compat", "retrieval": "agentworld.models.retrieval",
            "llamacpp": "agentworld.models.llamacpp_backend",
            "scripted": "agentworld.models.scripted",
            "transformers": "agentworld.models.transformers_backend",
            "vllm": "agentworld.models.vllm_backend",
            "synth-template": "agentworld.synth.template", "world-state": "agentworld.synth.state_model"}
"""Built-in backends, imported only when asked for: the ``openai`` SDK alone takes over a second."""

PATH_BACKENDS: tuple[str, ...] = ("transformers", "vllm", "llamacpp")
"""Backends named with a model folder, ``NAME:PATH`` (e.g. ``transformers:./my-model``)."""


def split_backend_name(name: str) -> tuple[str, str | None]:
    """``(backend, path)``: ``("transformers", "DIR")`` for ``transformers:DIR``, else ``(name, None)``."""
    prefix, sep, path = name.partition(":")
    return (prefix, path) if sep and prefix in PATH_BACKENDS else (name, None)


def is_backend_name(name: str | None) -> bool:
    """Whether ``name`` is a backend :func:`create_backend` accepts (a ``NAME:PATH`` form included)."""
    if not name:
        return False
    prefix, path = split_backend_name(name)
    return bool(path) if prefix in PATH_BACKENDS else name in backend_names()


def register_backend(name: str) -> Callable[[Callable[..., ChatBackend]], Callable[..., ChatBackend]]:
    """Decorator: register a backend factory under ``name`` (see :func:`create_backend`)."""

    def wrap(factory: Callable[..., ChatBackend]) -> Callable[..., ChatBackend]:
        _REGISTRY[name] = factory
        return factory

    return wrap


def create_backend(name: str, **options: Any) -> ChatBackend:
    """Build a registered backend by name, e.g. ``create_backend("openai", base_url=..., model=...)``;
    ``NAME:PATH`` (:data:`PATH_BACKENDS`) passes ``path=PATH`` to the backend called ``NAME``."""
    name, path = split_backend_name(name)
    if path is not None:
        if not path:
            raise ValueError(f"backend {name!r} needs a model folder: {name}:PATH")
        options = {**options, "path": path}
    if name not in _REGISTRY and name in _BUILTIN:
        importlib.import_module(_BUILTIN[name])
    try:
        factory = _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown backend {name!r}; known: {', '.join(backend_names())}") from None
    return factory(**options)


def backend_names() -> list[str]:
    """Every backend name :func:`create_backend` accepts (built-in and registered)."""
    return sorted(set(_REGISTRY) | set(_BUILTIN))
