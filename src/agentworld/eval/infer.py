"""World-model inference: one request per sample, exactly the official message list, one journal row.

The messages are :meth:`BenchSample.messages` unchanged; the prediction is
:func:`parse_prediction` of the content (reasoning already separated by the backend), and the raw
content is kept so a later judging or re-parsing never needs the model again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from agentworld.domains.prompt_view import OFFICIAL, PromptView
from agentworld.domains.registry import DomainRegistry, domain_names
from agentworld.endpoints import Endpoint
from agentworld.errors import AgentWorldError, BackendError, DataError
from agentworld.eval.config import InferFields
from agentworld.eval.records import PredictionRow
from agentworld.models.base import ChatBackend, ChatRequest
from agentworld.models.cache import ResponseCache
from agentworld.models.parsing import parse_prediction
from agentworld.redact import redact_text
from agentworld.schema import BenchSample, load_samples

BACKEND_ERRORS: tuple[type[BaseException], ...] = (BackendError, TimeoutError, OSError)
"""Failures that belong to one request: recorded on the sample, the run goes on."""


def model_request(sample: BenchSample, model: str, max_tokens: int, temperature: float,
                  view: PromptView = OFFICIAL) -> ChatRequest:
    """The world-model request of a sample: its message list under ``view`` (default: the official one,
    unchanged) and the sampling settings."""
    return ChatRequest(messages=tuple(view.sample_messages(sample)), model=model, max_tokens=max_tokens,
                       temperature=temperature)


async def predict(sample: BenchSample, request: ChatRequest, backend: ChatBackend, cache: ResponseCache,
                  domains: DomainRegistry) -> PredictionRow:
    """Ask the world model (or the cache); a backend failure becomes the row's ``error``."""
    try:
        result, _ = await cache.call(backend, request)
    except BACKEND_ERRORS as exc:
        return PredictionRow(id=sample.id, domain=sample.domain, source=backend.name,
                             error=redact_text(f"{type(exc).__name__}: {exc}"))
    tag = domains[sample.domain].response_tag
    return PredictionRow(
        id=sample.id, domain=sample.domain, prediction=parse_prediction(result.content, tag),
        raw=result.content, reasoning=result.reasoning, finish_reason=result.finish_reason,
        truncated=result.truncated, usage=result.usage, latency_s=result.latency_s,
        source=result.source or backend.name, meta=result.meta)


def select_samples(config: InferFields) -> list[BenchSample]:
    """Load (raising a located :class:`DataError` before anything is written), filter, limit.

    Raises:
        DataError: a bad row, an unknown domain, or no sample at all (an empty file is a mistake,
            not a run with nothing to score: ``data convert`` refuses the same file).
    """
    known = domain_names()
    samples = load_samples(config.data, known_domains=known)
    if not samples:
        raise DataError("no samples: the data holds no AgentWorldBench rows; give a non-empty file",
                        path=", ".join(str(p) for p in config.data))
    if config.domains:
        unknown = sorted(set(config.domains) - set(known))
        if unknown:
            raise DataError(f"unknown domain(s) {', '.join(unknown)}; known: {', '.join(known)}",
                            field="domains")
        samples = [s for s in samples if s.domain in config.domains]
    return samples[: config.limit] if config.limit else samples


class ClientSettings(Protocol):
    """A run's HTTP settings for its clients (:class:`RuntimeFields`, or a command's own fields)."""

    @property
    def concurrency(self) -> int: ...
    @property
    def max_retries(self) -> int: ...
    @property
    def timeout_s(self) -> float: ...
    @property
    def backoff_s(self) -> float: ...
    @property
    def max_response_bytes(self) -> int | None: ...


def make_backend(endpoint: Endpoint, config: ClientSettings,
                 exclude: Callable[[BenchSample], bool] | None = None,
                 domains: list[str] | None = None) -> ChatBackend:
    """The backend of one endpoint (:meth:`agentworld.endpoints.Endpoint.backend`) with the run's HTTP
    settings (``domains``: those it will be asked about, refused at once when it cannot answer one).

    Raises:
        AgentWorldError: an unknown backend name or unusable settings; the text holds no credential.
    """
    try:
        backend: ChatBackend = endpoint.backend(
            exclude=exclude, domains=domains, concurrency=config.concurrency, max_retries=config.max_retries,
            timeout_s=config.timeout_s, backoff_base_s=config.backoff_s,
            max_response_bytes=config.max_response_bytes)
    except (TypeError, ValueError) as exc:
        raise AgentWorldError(redact_text(f"cannot create backend {endpoint.model!r}: {exc}",
                                          [endpoint.secret()])) from None
    return backend
