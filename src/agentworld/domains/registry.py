"""Domain records built from the domain plugins: prompts, tags and trace wording, one registry.

Each domain package (``agentworld/domains/<name>/``, or one registered with
:func:`~agentworld.domains.base.register_domain`) ships its own prompt texts under
``prompts/system_prompt.txt`` and ``prompts/judge_system_prompt.txt``. :data:`DOMAINS` follows the
plugins as they are registered; :func:`load_domains` takes a snapshot, optionally with prompts from a
folder laid out like the official repository.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path

from agentworld.domains import BENCHMARK_DOMAINS
from agentworld.domains.base import GENERIC_EFFECT, DomainPlugin, plugins
from agentworld.errors import DataError
from agentworld.schema import OBSERVATION_MARKER

__all__ = ["DOMAINS", "GENERIC_EFFECT", "Domain", "DomainRegistry", "domain_names", "get_domain",
           "load_domains", "report_order"]

PROMPT_FILES = ("system_prompt", "judge_system_prompt")


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
        plugin: the domain's plugin (rules, retrieval keys, real environment …).
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
    brief_prompt: str = ""
    """A short system prompt for small models (:class:`~agentworld.domains.prompt_view.PromptView`)."""
    plugin: DomainPlugin | None = field(default=None, compare=False, repr=False)

    def clean_marker(self, text: str) -> str:
        """Drop the observation marker, as the official harness does before judging."""
        return text.replace(self.marker, "").strip() if self.marker else text.strip()


def _prompt(plugin: DomainPlugin, name: str) -> str:
    try:
        return (resources.files(plugin.package) / "prompts" / f"{name}.txt").read_text("utf-8")
    except (FileNotFoundError, ModuleNotFoundError, NotADirectoryError, TypeError):
        raise DataError(f"domain {plugin.name!r}: its package {plugin.package!r} has no "
                        f"prompts/{name}.txt") from None


def _brief(plugin: DomainPlugin) -> str:
    """The package's ``prompts/brief_prompt.txt``, else a generic short prompt from the domain's name."""
    try:
        return (resources.files(plugin.package) / "prompts" / "brief_prompt.txt").read_text("utf-8").strip()
    except (FileNotFoundError, ModuleNotFoundError, NotADirectoryError, TypeError):
        return (f"You are a world model of the {plugin.display} environment: given the agent's "
                f"{plugin.action_word}, "
                "answer with exactly the observation the environment returns, inside "
                "<predicted_observation></predicted_observation> tags.")


def _domain(plugin: DomainPlugin) -> Domain:
    return Domain(name=plugin.name, display=plugin.display, system_prompt=_prompt(plugin, "system_prompt"),
                  judge_system_prompt=_prompt(plugin, "judge_system_prompt"), action_word=plugin.action_word,
                  effect=plugin.effect, brief_prompt=_brief(plugin), plugin=plugin)


def _ordered() -> list[DomainPlugin]:
    """The plugins, AgentWorldBench's seven in the report's order first, then any others."""
    found = plugins()
    return [found[n] for n in BENCHMARK_DOMAINS if n in found] + [p for n, p in found.items()
                                                                 if n not in BENCHMARK_DOMAINS]


def domain_names() -> tuple[str, ...]:
    """Every registered domain's name (the benchmark's seven first): what data loaders accept.

    The one answer to "which domains are there": built-in packages, packages named in
    ``AGENTWORLD_DOMAIN_PACKAGES`` and plugins given to :func:`~agentworld.domains.base.register_domain`.
    Loaders pass it to :mod:`agentworld.schema`, which names no domain itself.
    """
    return tuple(p.name for p in _ordered())


def report_order(names: Iterable[str]) -> list[str]:
    """``names`` in the order tables list domains: the registry's order, then unknown names sorted.

    >>> report_order(["web", "zzz", "mcp", "aaa"])
    ['mcp', 'web', 'aaa', 'zzz']
    """
    present = set(names)
    known = [n for n in domain_names() if n in present]
    return known + sorted(present - set(known))


_BUILT: dict[int, tuple[DomainPlugin, Domain]] = {}


def _current() -> dict[str, Domain]:
    """The registered domains, each built once per plugin object (its prompt files read once)."""
    domains: dict[str, Domain] = {}
    for plugin in _ordered():
        cached = _BUILT.get(id(plugin))
        if cached is None or cached[0] is not plugin:
            cached = _BUILT[id(plugin)] = (plugin, _domain(plugin))
        domains[plugin.name] = cached[1]
    return domains


class DomainRegistry:
    """Name → :class:`Domain`; unknown names raise a :class:`DataError` listing the known ones.

    Without ``domains`` the registry is live: it follows the plugins as they are registered.
    """

    def __init__(self, domains: dict[str, Domain] | None = None) -> None:
        self._fixed = None if domains is None else dict(domains)

    @property
    def _domains(self) -> dict[str, Domain]:
        return self._fixed if self._fixed is not None else _current()

    def __getitem__(self, name: str) -> Domain:
        domains = self._domains
        try:
            return domains[name]
        except KeyError:
            raise DataError(f"unknown domain {name!r}; known: {', '.join(domains)}", field="task") from None

    def get(self, name: str) -> Domain | None:
        """The domain called ``name``, or None (no error) when there is none."""
        return self._domains.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._domains

    def __iter__(self) -> Iterator[Domain]:
        return iter(list(self._domains.values()))

    def names(self) -> list[str]:
        return list(self._domains)


def load_domains(prompts_dir: str | Path | None = None) -> DomainRegistry:
    """A snapshot of the registered domains, prompts overridden by ``prompts_dir`` where it has files.

    ``prompts_dir`` is laid out like the official repository: ``<dir>/<domain>/system_prompt.txt``
    and ``<dir>/<domain>/judge_system_prompt.txt``; a domain or file missing there keeps the
    built-in text. A folder that matches no domain at all is an error (likely a wrong path).
    """
    domains = _current()
    if prompts_dir is None:
        return DomainRegistry(domains)
    root = Path(prompts_dir)
    if not root.is_dir():
        raise DataError("prompts folder does not exist", path=str(root))
    matched = 0
    for name, domain in list(domains.items()):
        changes: dict[str, str] = {}
        for file_field in PROMPT_FILES:
            file = root / name / f"{file_field}.txt"
            if file.is_file():
                changes[file_field] = file.read_text("utf-8")
        if changes:
            matched += 1
            domains[name] = replace(domain, prompts_source=str(root),
                                    system_prompt=changes.get("system_prompt", domain.system_prompt),
                                    judge_system_prompt=changes.get("judge_system_prompt",
                                                                    domain.judge_system_prompt))
    if not matched:
        raise DataError("no <domain>/system_prompt.txt or judge_system_prompt.txt found "
                        f"(domains: {', '.join(domains)})", path=str(root))
    return DomainRegistry(domains)


DOMAINS = DomainRegistry()
"""The registered domains (live: a domain registered later is in it too)."""


def get_domain(name: str) -> Domain:
    return DOMAINS[name]
