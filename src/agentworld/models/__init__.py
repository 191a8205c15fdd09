"""World-model and judge backends behind one protocol (:class:`ChatBackend`)."""

from agentworld.models.base import (
    ChatBackend,
    ChatRequest,
    ChatResult,
    Usage,
    backend_names,
    create_backend,
    register_backend,
)
from agentworld.models.openai_compat import OpenAIBackend
from agentworld.models.scripted import ScriptedBackend

__all__ = [
    "ChatBackend",
    "ChatRequest",
    "ChatResult",
    "OpenAIBackend",
    "ScriptedBackend",
    "Usage",
    "backend_names",
    "create_backend",
    "register_backend",
]

from agentworld.models.retrieval import (
    EmptyCorpusError,
    RetrievalBackend,
    RetrievalIndex,
    Transition,
)

__all__ += ["EmptyCorpusError", "RetrievalBackend", "RetrievalIndex", "Transition"]
