"""What the doctor found: one row per check, one report per endpoint (frozen records, JSON-ready)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Status = Literal["ok", "warn", "fail", "info"]


@dataclass(frozen=True)
class Finding:
    """One row of the verdict table."""

    check: str
    status: Status
    detail: str
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class EndpointReport:
    """Everything checked on one endpoint; ``reason`` is set (one line) when it is not usable."""

    role: Literal["model", "judge"]
    url: str
    model: str
    findings: list[Finding] = field(default_factory=list)
    reason: str | None = None
    reasoning: str | None = None
    context_tokens: int | None = None
    max_tokens: int | None = None
    """The --max-tokens to use: the one given, or larger where an answer was cut or came close."""
    room: int | None = None
    """The most answer tokens the context leaves beside the longest prompt probed (None: unknown)."""

    def add(self, check: str, status: Status, detail: str, **data: Any) -> None:
        self.findings.append(Finding(check, status, detail, data))

    def fail(self, check: str, detail: str, reason: str, **data: Any) -> None:
        """A check that makes the endpoint unusable: its row, and the one-line reason for the exit."""
        self.add(check, "fail", detail, **data)
        if self.reason is None:
            self.reason = reason

    @property
    def usable(self) -> bool:
        return self.reason is None

    def to_json(self) -> dict[str, Any]:
        return {"role": self.role, "url": self.url, "model": self.model, "usable": self.usable,
                "reason": self.reason, "reasoning": self.reasoning, "context_tokens": self.context_tokens,
                "max_tokens": self.max_tokens, "room": self.room,
                "checks": [asdict(f) for f in self.findings]}
