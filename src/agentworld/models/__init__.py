"""World-model and judge backends behind one protocol (:class:`ChatBackend`).

The concrete backends are imported on first use: the ``openai`` SDK alone takes over a second
to import, and most commands (``--help``, the retrieval baseline, data tools) never need it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from agentworld.models.base import (
    ChatBackend,
    ChatRequest,
    ChatResult,
    Usage,
    backend_names,
    create_backend,
    register_backend,
)

if TYPE_CHECKING:
    from agentworld.models.cache import ResponseCache, response_key
    from agentworld.models.openai_compat import OpenAIBackend
    from agentworld.models.retrieval import (
        DomainNotCoveredError,
        EmptyCorpusError,
        RetrievalBackend,
        RetrievalIndex,
        Transition,
    )
    from agentworld.models.scripted import ScriptedBackend
    from agentworld.models.transformers_backend import TransformersBackend
    from agentworld.models.vllm_backend import VLLMBackend

_LAZY = {
    "ResponseCache": "agentworld.models.cache",
    "response_key": "agentworld.models.cache",
    "OpenAIBackend": "agentworld.models.openai_compat",
    "ScriptedBackend": "agentworld.models.scripted",
    "DomainNotCoveredError": "agentworld.models.retrieval",
    "EmptyCorpusError": "agentworld.models.retrieval",
    "RetrievalBackend": "agentworld.models.retrieval",
    "RetrievalIndex": "agentworld.models.retrieval",
    "Transition": "agentworld.models.retrieval",
    "TransformersBackend": "agentworld.models.transformers_backend",
    "VLLMBackend": "agentworld.models.vllm_backend",
}

__all__ = [
    "ChatBackend",
    "ChatRequest",
    "ChatResult",
    "DomainNotCoveredError",
    "EmptyCorpusError",
    "OpenAIBackend",
    "ResponseCache",
    "RetrievalBackend",
    "RetrievalIndex",
    "ScriptedBackend",
    "TransformersBackend",
    "Transition",
    "Usage",
    "VLLMBackend",
    "backend_names",
    "create_backend",
    "register_backend",
    "response_key",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'agentworld.models' has no attribute {name!r}")
