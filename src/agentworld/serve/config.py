"""Typed settings of ``agentworld serve mcp|http|mock``: each option documented once, here.

The CLI is generated from these classes (:func:`agentworld.cli_support.config_command`) and the
Python API takes them unchanged, so a setting means the same in both. This module imports only
pydantic (not even :mod:`agentworld.sim`), so ``agentworld serve --help`` stays fast.

Why the limits: a simulator spends model compute for whoever reaches it, and its clients send
schemas and arguments that end up in prompts; every size and count has a bound with a flag.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal, get_args

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, SecretStr, model_validator
from pydantic_core import PydanticCustomError

from agentworld.endpoints import ModelEndpoint
from agentworld.errors import AgentWorldError

TOKEN_ENV = "AGENTWORLD_TOKEN"
MOCK_TOKEN_ENV = "AGENTWORLD_MOCK_TOKEN"

MALFORMED_KINDS: tuple[str, ...] = ("no_tag", "trailing_commas", "unquoted_keys", "no_fence",
                                    "truncated", "garbage", "bad_scores")
"""Broken rubric verdicts the mock server can send. A lenient parser recovers the first four."""
MalformedKind = Literal["no_tag", "trailing_commas", "unquoted_keys", "no_fence", "truncated", "garbage",
                        "bad_scores"]
_ALL_MALFORMED: tuple[MalformedKind, ...] = get_args(MalformedKind)


def _set_or_unset(token: SecretStr | None) -> SecretStr | None:
    """Refuse an empty token when the options are read, before anything starts.

    The rule is :func:`agentworld.serve.net.token_bytes` (the one definition the guards use too).
    """
    from agentworld.serve.net import token_bytes

    try:
        token_bytes(token.get_secret_value() if token is not None else None)
    except AgentWorldError:
        raise PydanticCustomError("empty_token", "an empty token is no token: give a non-empty one, or "
                                  "leave it unset") from None
    return token


Token = Annotated[SecretStr | None, AfterValidator(_set_or_unset)]
"""A bearer token: unset (None) or non-empty; ``""`` is a user error, never "no token"."""


class ServerFields(BaseModel):
    """Binding, access and limits shared by the simulator servers."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    host: str = Field("127.0.0.1", description="Address to bind. Anything but loopback needs --token (or "
                      "--allow-no-token): whoever reaches the port spends your model's compute.")
    port: int = Field(8765, ge=0, le=65535, description="TCP port; 0 picks a free one (the URL is printed "
                      "on stderr).")
    token: Token = Field(None, description="Bearer token every client must send (Authorization: "
                                    "Bearer TOKEN); prefer the environment variable, a token on the command "
                                    "line shows in ps.", json_schema_extra={"envvar": TOKEN_ENV})
    allow_no_token: bool = Field(False, description="Serve on a non-loopback --host without --token anyway "
                                 "(a warning is printed).")
    allowed_hosts: list[str] = Field(default_factory=list, description="Another name clients reach this "
                                     "server by (repeat): requests whose Host or Origin is not --host, "
                                     "localhost, 127.0.0.1, [::1] or one of these answer 421/403 (DNS "
                                     "rebinding). With a wildcard --host (0.0.0.0) and none given, any Host "
                                     "is answered.", json_schema_extra={"flags": ["--allowed-host"]})
    idle_timeout_s: float = Field(600.0, gt=0, description="Close sessions unused for this many seconds.")
    max_sessions: int = Field(256, ge=1, description="Most sessions open at once; more are refused until "
                              "one closes or expires.")
    max_body_bytes: int = Field(1_048_576, ge=1024, description="Largest request body; larger ones answer "
                                "413 before they are parsed.")
    max_argument_bytes: int = Field(65_536, ge=256, description="Largest tool-call arguments (or terminal "
                                    "action), as JSON bytes; larger ones are refused before validation or "
                                    "the model sees them.")
    concurrency: int = Field(64, ge=1, description="Most world-model requests in flight at once (one pool "
                             "shared by all sessions).")
    max_tokens: int | None = Field(None, ge=1, description="max_tokens of world-model requests whose "
                                   "session's spec sets none (a thinking world model needs 16384 or more; "
                                   "default: the server's own).")


    @model_validator(mode="after")
    def _host_names(self) -> ServerFields:
        for name in self.allowed_hosts:
            if not name.strip() or any(c in name for c in "/@ \t") or "://" in name:
                raise PydanticCustomError("host_name", "--allowed-host {name} is not a host name (give e.g. "
                                          "sim.example.org or 10.0.0.5, without scheme or path)",
                                          {"name": repr(name)})
        return self


class HttpServeConfig(ServerFields, ModelEndpoint):
    """``agentworld serve http``: many simulator sessions behind the JSON session API (/v1/sessions)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    worlds_root: Path | None = Field(None, description='Folder of world folders a session may name '
                                     '({"world": "NAME"} in POST /v1/sessions); paths outside it are '
                                     "refused. Without it, sessions cannot name world folders.")
    max_cached_worlds: int = Field(64, ge=1, description="Parsed world folders kept in memory (least "
                                   "recently used dropped first); a world is parsed again only when its "
                                   "world.json changes.")


class McpFields(BaseModel):
    """What ``serve mcp`` simulates and how it is reached."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    tools: Path | None = Field(None, description='tools/list JSON: {"tools": [...]} or a list of tools, each '
                               "with a name and an inputSchema (give this or --world).")
    world: Path | None = Field(None, description="World folder (world.json, tasks.jsonl) whose tools are "
                               "served with its initial entities as the starting state (or --tools).")
    control: Path | None = Field(None, description="Control spec (faults, facts), YAML or JSON.")
    transport: Literal["stdio", "http"] = Field("stdio", description="stdio (one episode per process) or "
                                                "http (streamable HTTP at /mcp and /episodes/EPISODE/mcp).")
    seed: int = Field(0, ge=-(2**63), le=2**63 - 1, description="Episode seed (fault decisions, sampling); "
                      "POST /v1/episodes may give its own.")
    initial_state: str = Field("", description="Description of the world's starting state (with --world: "
                               "added after the world's entities).")

    @model_validator(mode="after")
    def _tools_or_world(self) -> McpFields:
        if (self.tools is None) == (self.world is None):
            raise ValueError("give exactly one of --tools FILE and --world DIR")
        return self


class McpServeConfig(ServerFields, ModelEndpoint, McpFields):
    """``agentworld serve mcp``: the tools of a tools/list file, answered by the world model."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    port: int = Field(8766, ge=0, le=65535, description="HTTP port; 0 picks a free one (the URL is printed "
                      "on stderr).")
    idle_timeout_s: float = Field(1800.0, gt=0, description="End MCP sessions and episodes unused for this "
                                  "many seconds (their simulators are closed).")
    max_sessions: int = Field(1024, ge=1, description="Most episodes (and most MCP sessions) open at once; "
                              "more are refused until one ends or expires.")
    max_body_bytes: int = Field(4_194_304, ge=1024, description="Largest HTTP request body; larger ones "
                                "answer 413 before they are parsed.")


class MockConfig(BaseModel):
    """How the mock OpenAI-compatible server behaves. Every rate is a probability; all draws are seeded."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    data: list[Path] = Field(default_factory=list, description="AgentWorldBench JSONL files or folders whose "
                             "ground truth is served (repeat, or several after one flag); without any, every "
                             "world-model request gets a generic answer.")
    host: str = Field("127.0.0.1", description="Address to bind. Anything but loopback needs --token (or "
                      "--allow-no-token), as for the simulator servers.")
    port: int = Field(0, ge=0, le=65535, description="TCP port; 0 picks a free one (the URL is printed).")
    latency_ms: float = Field(0.0, ge=0, description="Delay before every answer, errors included (does not "
                              "block other requests).")
    corruption_rate: float = Field(0.0, ge=0, le=1, description="Fraction of samples answered with a "
                                   "corrupted ground truth (nested: a higher rate only adds samples).")
    error_rate: float = Field(0.0, ge=0, le=1, description="Fraction of requests answered with HTTP 500.")
    rate_limit_rate: float = Field(0.0, ge=0, le=1, description="Fraction of requests answered with HTTP 429 "
                                   "and Retry-After: 0.")
    malformed_judge_rate: float = Field(0.0, ge=0, le=1, description="Fraction of judge replies that are "
                                        "broken (see --malformed-kinds).")
    truncate_rate: float = Field(0.0, ge=0, le=1, description="Fraction answered with finish_reason=length "
                                 "and empty content.")
    malformed_kinds: list[MalformedKind] = Field(default_factory=lambda: list(_ALL_MALFORMED),
                                                 description="Broken-verdict kinds to draw from (repeat); "
                                                 "default: all.")
    seed: int = Field(0, description="Seed of every injected behaviour.")
    thinking: bool = Field(False, description="Prepend the reasoning as an inline <think>...</think> block.")
    reasoning_field: Literal["reasoning", "reasoning_content"] | None = Field(
        None, description="Put the reasoning in this message field instead: reasoning (vLLM) or "
        "reasoning_content (SGLang).")
    model_name: str = Field("mock", description="Model id listed by /v1/models (requests may name any).")
    synth: bool = Field(False, description="Act as a synth envs generator: answer stage prompts (Stage: NAME "
                        "... <inputs>) with the offline synth-template's JSON, small and deterministic.")
    flavour: Literal["vllm", "sglang", "llamacpp"] | None = Field(
        None, description="Behave like this serving stack: reasoning in message.reasoning (vllm), "
        "message.reasoning_content (sglang) or inline <think> in the content (llamacpp); the context length "
        "in /v1/models max_model_len (vllm, sglang) or GET /props n_ctx (llamacpp); vllm also answers 404 to "
        "another model name.")
    think_tokens: int = Field(0, ge=0, le=1_000_000, description="Think this many tokens (4 characters each) "
                              "before answering, with --flavour, --thinking or --reasoning-field.")
    enforce_max_tokens: bool = Field(False, description="Stop at the request's max_tokens as a real server "
                                     "does: finish_reason=length, usage honest, the answer cut before its "
                                     "closing tag.")
    context_tokens: int = Field(40960, ge=1, description="Context length the --flavour reports; vllm and "
                                "sglang answer 400 when a request's prompt plus max_tokens exceed it.")
    reject_other_models: bool = Field(False, description="Answer 404 model not found to a request naming "
                                      "another model than --model-name (always on with --flavour vllm).")
    token: Token = Field(None, description="API key clients must send (Authorization: Bearer KEY); other "
                         "requests (/v1, /_mock) get 401 with an OpenAI-style error. Anything but a loopback "
                         "--host needs one (or --allow-no-token).",
                         json_schema_extra={"envvar": MOCK_TOKEN_ENV})
    allow_no_token: bool = Field(False, description="Serve on a non-loopback --host without --token anyway "
                                 "(a warning is printed).")

    @model_validator(mode="after")
    def _one_placement(self) -> MockConfig:
        if self.flavour and (self.thinking or self.reasoning_field):
            raise ValueError("--flavour decides where the reasoning goes: drop --thinking/--reasoning-field")
        return self
