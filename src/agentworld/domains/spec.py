"""What is simulated: the world spec and its controls (faults, facts), read by the domains' hooks.

Why here and not in ``sim/``: a domain's ledger, initial observation and fault templates read the
spec, and domain packages must not import the simulator (imports run ``domains`` ← ``sim``).
:mod:`agentworld.sim.types` re-exports these records, so the simulator's API is unchanged.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from agentworld.domains import DEFAULT_DOMAIN
from agentworld.errors import DataError
from agentworld.inputs import parse_json, parse_yaml, read_text

FaultKind = Literal["timeout", "server_error", "rate_limit", "permission_denied", "pagination",
                    "truncated", "stale"]
FAULT_KINDS: tuple[str, ...] = ("timeout", "server_error", "rate_limit", "permission_denied", "pagination",
                                "truncated", "stale")

Seed = Annotated[int, Field(ge=-(2**63), le=2**63 - 1)]
"""A seed: any 64-bit integer (larger ones, and non-integers such as ``1e400``, are refused)."""


class _Params(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class TimeoutParams(_Params):
    timeout_s: float = Field(30, gt=0, le=86_400, description="Seconds the request is said to have waited.")


class ServerErrorParams(_Params):
    status: int = Field(503, ge=500, le=599, description="HTTP status shown.")
    reason: str = Field("Service Unavailable", max_length=200, description="Reason phrase shown.")


class RateLimitParams(_Params):
    retry_after_s: float = Field(2, ge=0, le=86_400, description="Retry-After shown, in seconds.")


class PaginationParams(_Params):
    page_size: int = Field(5, ge=1, le=100_000, description="List items (or lines) per page.")


class TruncatedParams(_Params):
    keep_fraction: float = Field(0.5, ge=0, le=1, description="Fraction of the items (or lines) kept.")


class NoParams(_Params):
    pass


FAULT_PARAMS: dict[str, type[_Params]] = {
    "timeout": TimeoutParams, "server_error": ServerErrorParams, "rate_limit": RateLimitParams,
    "permission_denied": NoParams, "pagination": PaginationParams, "truncated": TruncatedParams,
    "stale": NoParams}
"""The settings each fault kind takes in ``FaultRule.params`` (anything else is refused)."""


class FaultRule(BaseModel):
    """One seeded fault-injection rule.

    Exactly one trigger applies: ``rate`` (each eligible call faults with this probability, drawn
    from the framework's own RNG), ``count`` (the first N eligible calls fault) or ``schedule``
    (these 1-based eligible-call numbers fault). ``tools`` limits the rule to some tools (MCP tool
    names; for the terminal, the first word of the command); empty means every call.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    kind: FaultKind
    rate: float | None = Field(None, ge=0, le=1)
    count: int | None = Field(None, ge=0)
    schedule: list[Annotated[int, Field(ge=1)]] | None = None
    tools: list[str] = Field(default_factory=list)
    params: dict[str, Any] = Field(default_factory=dict)
    """Kind-specific settings (:data:`FAULT_PARAMS`): ``page_size`` (pagination), ``keep_fraction``
    (truncated), ``retry_after_s`` (rate_limit), ``timeout_s`` (timeout), ``status`` and ``reason``
    (server_error); checked for type and range."""

    @field_validator("params")
    @classmethod
    def _known_params(cls, params: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        allowed = FAULT_PARAMS.get(info.data.get("kind", ""))
        if allowed is None:
            return params
        try:
            allowed.model_validate(params, strict=True)
            return params
        except ValidationError as exc:
            problems = [f"{'.'.join(str(p) for p in e['loc']) or 'params'}: {e['msg']}" for e in exc.errors()]
            known = ", ".join(allowed.model_fields) or "none"
            raise ValueError(f"{info.data['kind']} params: {'; '.join(problems)} (known: {known})") from None

    @model_validator(mode="after")
    def _one_trigger(self) -> FaultRule:
        given = [name for name in ("rate", "count", "schedule") if getattr(self, name) is not None]
        if len(given) != 1:
            raise ValueError(f"fault rule {self.kind!r}: give exactly one of rate, count, schedule "
                             f"(got {', '.join(given) or 'none'})")
        return self


class ControlSpec(BaseModel):
    """Controls enforced by the framework, not left to the model: faults and fictional-world facts."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    faults: list[FaultRule] = Field(default_factory=list)
    facts: list[str] = Field(default_factory=list)
    """Fictional-world constraints and facts, appended to the system prompt for the whole episode."""
    seed: Seed | None = None
    """Overrides the episode seed for fault decisions when set."""

    @classmethod
    def load(cls, path: str | Path) -> ControlSpec:
        """Read a control spec from YAML or JSON (errors name the file)."""
        return load_control_spec(path)


class WorldSpec(BaseModel):
    """What is simulated: domain, prompt, tools, initial state and controls."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    domain: str = DEFAULT_DOMAIN
    name: str = ""
    system_prompt: str | None = None
    """Full system prompt; default: the domain's template plus tools, state and facts."""
    tools: list[dict[str, Any]] = Field(default_factory=list)
    """MCP ``tools/list`` entries (``name``, ``description``, ``inputSchema``)."""
    initial_state: str = ""
    """Description of the starting state (terminal: the first screen; default a fresh prompt)."""
    controls: ControlSpec = Field(default_factory=ControlSpec)
    history_budget_tokens: int = Field(24_000, ge=256, le=10_000_000)
    """History kept in the prompt; older whole turns are replaced by a state summary."""
    max_tokens: int | None = Field(None, ge=1, le=10_000_000)
    temperature: float | None = Field(0.0, ge=0, le=2)


class InjectedFault(BaseModel):
    model_config = ConfigDict(frozen=True)

    kind: FaultKind
    rule: int
    """Index of the rule in ``ControlSpec.faults`` that fired."""
    tool: str | None = None
    detail: dict[str, Any] = Field(default_factory=dict)


def load_control_spec(path: str | Path, *, root: str | Path | None = None) -> ControlSpec:
    """Read a :class:`ControlSpec` from YAML (``.yaml``/``.yml``) or JSON; errors name file and field.

    Only a bounded regular file is read (:func:`agentworld.inputs.read_text`), confined to ``root``
    when given (a world folder's ``controls/``).
    """
    p = Path(path)
    text = read_text(p, root=root, what="control spec")
    data = parse_yaml(text, path=p) if p.suffix.lower() in (".yaml", ".yml") else parse_json(text, path=p)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise DataError(f"expected a mapping at the top level, got {type(data).__name__}", path=str(p))
    try:
        return ControlSpec.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(x) for x in err["loc"]) or None
        raise DataError(err["msg"], path=str(p), field=field) from None
