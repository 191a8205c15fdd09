"""The kinds of model endpoint a command can talk to, named the same way everywhere.

Why one module: ``eval``, ``serve``, ``shell``, ``demo`` and ``train rollout`` all reach a *world
model* (``--model-base-url/--model/--model-api-key``), some a *judge* (``--judge-…``) and an
*agent* (``--agent-…``), ``optimize prompts`` an *optimizer* (``--optimizer-…``). Declaring
the fields once keeps the flags, help texts, environment variables and the backend construction
identical across commands. Keys are :class:`SecretStr`
(never dumped, never printed) and are best given through the environment variables, since a
key on the command line shows in ``ps``.

This module only imports pydantic, so configs built from it stay cheap to import for ``--help``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

from agentworld.errors import AgentWorldError

MODEL_KEY_ENV = ("AGENTWORLD_MODEL_API_KEY", "OPENAI_API_KEY")
JUDGE_KEY_ENV = "AGENTWORLD_JUDGE_API_KEY"
AGENT_KEY_ENV = "AGENTWORLD_AGENT_API_KEY"
OPTIMIZER_KEY_ENV = "AGENTWORLD_OPTIMIZER_API_KEY"
_KEY_HELP = "prefer the environment variable: a key on the command line shows in ps; never written to disk"


@dataclass(frozen=True)
class Endpoint:
    """One endpoint as a value: a model served at ``base_url`` (several comma-separated: a pool) with
    ``api_key``, or, without a URL, a registered backend by name (``corpus``: the retrieval backend's
    recordings). The configs hand theirs out (:meth:`ModelEndpoint.model_endpoint`,
    :meth:`JudgeEndpoint.judge_endpoint` …) so no caller carries the three fields loose; it pickles
    (a Ray actor builds its backends from it) and never shows the key.
    """

    model: str
    base_url: str | None = None
    api_key: SecretStr | None = field(default=None, repr=False)
    corpus: tuple[Path, ...] = ()

    def backend(self, **options: Any) -> Any:
        """Its backend (:func:`build_backend`; ``options``: ``domains``, ``exclude`` and the client's)."""
        return build_backend(self.model, self.base_url, self.api_key, corpus=list(self.corpus) or None,
                             **options)

    def secret(self) -> str | None:
        """The plain key, only where a client or a redaction needs it."""
        return secret(self.api_key)


class ModelEndpoint(BaseModel):
    """The world model: an OpenAI-compatible endpoint, or a registered backend by name."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str = Field(description="World model: the served model name with --model-base-url; without it "
                       "a backend name (retrieval: the offline baseline; transformers:PATH or vllm:PATH: a "
                       "local model folder run in this process, no server; llamacpp:PATH: a GGUF file run by "
                       "llama.cpp in this process; PATH may be the alias smollm2; scripted: tests).")
    model_base_url: str | None = Field(
        None, description="OpenAI-compatible base URL of the world model (vLLM, SGLang, llama.cpp server, a "
        "hosted API). Several make a pool of endpoints serving the same model (least-loaded first, "
        "failover, health checks): repeat the option, separate URLs with commas, or give @FILE with one "
        "URL per line.", json_schema_extra={"repeatable": True})
    model_api_key: SecretStr | None = Field(
        None, description=f"World-model API key ({_KEY_HELP}).",
        json_schema_extra={"runtime": True, "envvar": list(MODEL_KEY_ENV)})
    model_corpus: list[Path] = Field(
        default_factory=list,
        description="Retrieval backend only: recordings to build it from (AgentWorldBench or unified "
                    "JSONL files or folders; repeat or several after one flag); default: the shipped "
                    "terminal corpus.")

    def model_endpoint(self) -> Endpoint:
        """The world model's :class:`Endpoint`."""
        return Endpoint(self.model or "", self.model_base_url, self.model_api_key, tuple(self.model_corpus))

    @field_validator("model_base_url", mode="before")
    @classmethod
    def _pool(cls, value: Any) -> str | None:
        """Repeated options, comma lists and ``@FILE`` become one comma-separated list (one URL: as given)."""
        if value is None:
            return None
        urls = base_urls(value)
        return ",".join(urls) if urls else None


class JudgeEndpoint(BaseModel):
    """The judge that scores predictions (rubric, Turing or reference mode)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    judge_base_url: str | None = Field(None, description="OpenAI-compatible base URL of the judge.",
                                       json_schema_extra={"judge": True})
    judge_model: str | None = Field(None, description="Judge model name (or a backend name without a URL).",
                                    json_schema_extra={"judge": True})
    judge_api_key: SecretStr | None = Field(
        None, description=f"Judge API key ({_KEY_HELP}).",
        json_schema_extra={"runtime": True, "envvar": JUDGE_KEY_ENV})

    def judge_endpoint(self) -> Endpoint:
        """The judge's :class:`Endpoint` (model ``""`` when none is named)."""
        return Endpoint(self.judge_model or "", self.judge_base_url, self.judge_api_key)


class AgentEndpoint(BaseModel):
    """The agent acting in a simulated world (rollouts)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    agent_base_url: str = Field(description="OpenAI-compatible base URL of the agent.")
    agent_model: str = Field(description="Agent model name.")
    agent_api_key: SecretStr | None = Field(
        None, description=f"Agent API key ({_KEY_HELP}).",
        json_schema_extra={"runtime": True, "envvar": AGENT_KEY_ENV})

    def agent_endpoint(self) -> Endpoint:
        """The agent's :class:`Endpoint`."""
        return Endpoint(self.agent_model, self.agent_base_url, self.agent_api_key)


class OptimizerEndpoint(BaseModel):
    """The model that proposes revised system prompts (``optimize prompts``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    optimizer_base_url: str = Field(description="OpenAI-compatible base URL of the optimizer model.")
    optimizer_model: str = Field(description="Optimizer model name.")
    optimizer_api_key: SecretStr | None = Field(
        None, description=f"Optimizer API key ({_KEY_HELP}).",
        json_schema_extra={"runtime": True, "envvar": OPTIMIZER_KEY_ENV})

    def optimizer_endpoint(self) -> Endpoint:
        """The optimizer's :class:`Endpoint`."""
        return Endpoint(self.optimizer_model, self.optimizer_base_url, self.optimizer_api_key)


def max_response_field() -> Any:
    """The ``max_response_bytes`` field of a command's HTTP clients (one name and help text for every
    command that has the flag; commands without it take ``$AGENTWORLD_MAX_RESPONSE_BYTES``, see
    :mod:`agentworld.http_limits`)."""
    from agentworld.http_limits import MAX_RESPONSE_HELP

    return Field(None, ge=1, description=MAX_RESPONSE_HELP, json_schema_extra={"runtime": True})


def base_urls(value: str | list[str] | tuple[str, ...]) -> list[str]:
    """The endpoint URLs in ``--model-base-url`` values: each may be a URL, a comma-separated list of
    URLs, or ``@FILE`` naming a file with one URL per line (blank lines and ``#`` comments skipped).

    Why commas: a list fits every way a value arrives (the option repeated, an environment variable, a
    config file, a Python string) and no base URL needs a literal comma (write ``%2C``).

    Raises:
        ValueError: an unreadable file, an entry that is not an http(s) URL in a pool, or a URL listed
            twice; the text names the entry with its credentials redacted.
    """
    from agentworld.redact import redact_url

    items = [value] if isinstance(value, str) else list(value)
    urls: list[str] = []
    places: list[str] = []
    from_file = False
    for item in items:
        if item.startswith("@"):
            from_file = True
            path = Path(item[1:]).expanduser()
            from agentworld.inputs import read_text

            try:
                lines = read_text(path, what="list of URLs").splitlines()
            except AgentWorldError as exc:  # missing, a FIFO, a device, too large, not UTF-8
                raise ValueError(str(exc)) from None
            entries = [(f"{path}:{n}", line.split("#", 1)[0].strip()) for n, line in enumerate(lines, 1)]
        else:
            entries = [("", part.strip()) for part in item.split(",")]
        for where, url in entries:
            if not url:
                continue
            if url in urls:
                raise ValueError(f"{where + ': ' if where else ''}{redact_url(url)} is listed twice")
            urls.append(url)
            places.append(where)
    if from_file and not urls:
        raise ValueError("the list of URLs is empty")
    for url, where in zip(urls, places, strict=True):
        if (from_file or len(urls) > 1) and not url.startswith(("http://", "https://")):
            raise ValueError(f"{where + ': ' if where else ''}{redact_url(url)!r} is not an http(s) URL")
    return urls


def secret(value: SecretStr | None) -> str | None:
    """The plain key, only at the point where a client needs it."""
    return value.get_secret_value() if value is not None else None


def build_backend(name: str, base_url: str | None = None, api_key: SecretStr | str | None = None, *,
                  corpus: list[Path] | None = None, domains: list[str] | None = None,
                  exclude: Callable[[Any], bool] | None = None, **client: Any) -> Any:
    """The backend for one endpoint: an OpenAI-compatible client when ``base_url`` is set (a
    :class:`~agentworld.models.pool.PoolBackend` when it lists several URLs, see :func:`base_urls`),
    otherwise the registered backend called ``name`` (``retrieval`` built from ``corpus`` when given;
    ``transformers:PATH`` and ``vllm:PATH`` run the model folder in this process, ``concurrency``
    being their batch size).

    Args:
        domains: the domains it will be asked about; a backend that knows it cannot answer one (the
            retrieval baseline without recordings of it) refuses here, before any request.
        exclude: retrieval only: corpus rows to leave out (a sample's own recording,
            :func:`agentworld.models.retrieval_own.leaving_out`).
        client: options of the OpenAI-compatible client (``concurrency``, ``max_retries``,
            ``timeout_s``, ``backoff_base_s``, ``max_response_bytes``); ignored by named backends.

    A model run in this process (``NAME:PATH``) is loaded before this returns: one that cannot load
    fails here (:class:`~agentworld.models.base.ModelLoadError`), before any request is sent.

    Raises:
        AgentWorldError: an unknown backend name, a corpus given to a backend that takes none, a
            domain the backend cannot answer, or a model that cannot load.
    """
    from agentworld.models.base import PATH_BACKENDS, backend_names, create_backend, split_backend_name

    key = api_key.get_secret_value() if isinstance(api_key, SecretStr) else api_key
    if base_url:
        if corpus:
            raise AgentWorldError("--model-corpus applies to the retrieval backend only, not to an endpoint "
                                  "given with --model-base-url")
        try:
            urls = base_urls(base_url)
        except ValueError as exc:
            raise AgentWorldError(f"base URL: {exc}") from None
        if len(urls) == 1:
            return create_backend("openai", base_url=urls[0], model=name, api_key=key, **client)
        from agentworld.models.pool import PoolBackend

        single = {**client, "max_retries": 0}  # the pool retries, on another endpoint
        members: list[Any] = [create_backend("openai", base_url=url, model=name, api_key=key, **single)
                              for url in urls]
        return PoolBackend(members, name=f"openai:{name}", max_retries=client.get("max_retries", 5),
                           backoff_base_s=client.get("backoff_base_s", 0.5),
                           backoff_max_s=client.get("backoff_max_s", 30))
    known = [f"{n}:PATH" if n in PATH_BACKENDS else n for n in backend_names()]
    prefix, path = split_backend_name(name)
    if path or prefix in PATH_BACKENDS:
        if corpus:
            raise AgentWorldError(f"--model-corpus applies to the retrieval backend only, not to {name!r}")
        if not path:
            raise AgentWorldError(f"backend {prefix!r} needs a local model folder: {prefix}:PATH")
        backend = create_backend(name, **client)
        ready = getattr(backend, "ready", None)
        if ready is not None:  # a model that cannot load fails here, once, before any request
            ready()
        return backend
    if name not in known or name == "openai":
        hint = "" if name == "openai" else f"unknown world-model backend {name!r}; "
        raise AgentWorldError(f"{hint}give --model-base-url for a served model, or --model with one of: "
                              f"{', '.join(n for n in known if n != 'openai')}")
    if corpus and name != "retrieval":
        raise AgentWorldError(f"--model-corpus applies to the retrieval backend only, not to {name!r}")
    options: dict[str, Any] = {"corpus": list(corpus)} if corpus else {}
    if exclude is not None:
        options["exclude"] = exclude
    backend = create_backend(name, **options)
    check = getattr(backend, "check_domains", None)
    if domains and check is not None:
        check(domains)
    return backend
