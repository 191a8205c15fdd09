"""Domain records and the registry that resolves a sample's domain to its prompts and tags."""

from __future__ import annotations

from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path

from agentworld.errors import DataError
from agentworld.schema import DOMAIN_NAMES, OBSERVATION_MARKER

_DISPLAY = {"mcp": "MCP", "search": "Search", "terminal": "Terminal", "swe": "SWE",
            "android": "Android", "web": "Web", "os": "OS"}
GENERIC_EFFECT = "The environment returns the resulting state, consistent with the history."
_TRACE = {"terminal": ("command", "The shell echoes the command, prints its output and a new prompt."),
          "os": ("command", GENERIC_EFFECT), "swe": ("command", GENERIC_EFFECT)}
"""How the SFT recipe's derived trace names a domain's action and what follows it (default: action)."""


@dataclass(frozen=True)
class Domain:
    """What the harness needs to know about one domain.

    Attributes:
        name: registry key, the last part of a sample's ``task``.
        display: name for tables and reports.
        system_prompt: world-model system prompt (used when simulating; AgentWorldBench rows carry
            their own ``system_str``).
        judge_system_prompt: system prompt of the rubric judge.
        response_tag: tag the world model wraps its prediction in.
        judge_tag: tag the judge wraps its JSON verdict in.
        marker: text every observation starts with.
        prompts_source: where the prompt texts came from (``builtin`` or a folder), for run logs.
    """

    name: str
    display: str
    system_prompt: str
    judge_system_prompt: str
    response_tag: str = "predicted_observation"
    judge_tag: str = "final_evaluation"
    marker: str = OBSERVATION_MARKER
    prompts_source: str = "builtin"
    action_word: str = "action"
    """What the derived reasoning trace calls an action (``command`` for shells)."""
    effect: str = GENERIC_EFFECT
    """The derived trace's sentence on what an action's observation shows."""

    def clean_marker(self, text: str) -> str:
        """Drop the observation marker, as the official harness does before judging."""
        return text.replace(self.marker, "").strip() if self.marker else text.strip()


def _builtin_text(domain: str, name: str) -> str:
    return (resources.files("agentworld.domains") / "prompts" / domain / f"{name}.txt").read_text("utf-8")


class DomainRegistry:
    """Name → :class:`Domain`; unknown names raise a :class:`DataError` listing the known ones."""

    def __init__(self, domains: dict[str, Domain]) -> None:
        self._domains = dict(domains)

    def __getitem__(self, name: str) -> Domain:
        try:
            return self._domains[name]
        except KeyError:
            raise DataError(f"unknown domain {name!r}; known: {', '.join(self._domains)}",
                            field="task") from None

    def get(self, name: str) -> Domain | None:
        """The domain called ``name``, or None (no error) when there is none."""
        return self._domains.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._domains

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self._domains.values())

    def names(self) -> list[str]:
        return list(self._domains)


def load_domains(prompts_dir: str | Path | None = None) -> DomainRegistry:
    """Build the registry from the built-in prompts, overridden by ``prompts_dir`` where it has files.

    ``prompts_dir`` is laid out like the official repository: ``<dir>/<domain>/system_prompt.txt``
    and ``<dir>/<domain>/judge_system_prompt.txt``; a domain or file missing there keeps the
    built-in text. A folder that matches no domain at all is an error (likely a wrong path).
    """
    domains = {name: Domain(name=name, display=_DISPLAY[name],
                            system_prompt=_builtin_text(name, "system_prompt"),
                            judge_system_prompt=_builtin_text(name, "judge_system_prompt"),
                            **dict(zip(("action_word", "effect"), _TRACE.get(name, ()), strict=False)))
               for name in DOMAIN_NAMES}
    if prompts_dir is None:
        return DomainRegistry(domains)
    root = Path(prompts_dir)
    if not root.is_dir():
        raise DataError("prompts folder does not exist", path=str(root))
    matched = 0
    for name, domain in list(domains.items()):
        changes: dict[str, str] = {}
        for field in ("system_prompt", "judge_system_prompt"):
            file = root / name / f"{field}.txt"
            if file.is_file():
                changes[field] = file.read_text("utf-8")
        if changes:
            matched += 1
            domains[name] = replace(domain, prompts_source=str(root), **changes)
    if not matched:
        raise DataError("no <domain>/system_prompt.txt or judge_system_prompt.txt found "
                        f"(domains: {', '.join(DOMAIN_NAMES)})", path=str(root))
    return DomainRegistry(domains)


DOMAINS = load_domains()
"""The built-in registry."""


def get_domain(name: str) -> Domain:
    return DOMAINS[name]
