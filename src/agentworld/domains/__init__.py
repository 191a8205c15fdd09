"""The world-model domains: one package per domain (``domains/<name>/``), one registry.

Each package defines ``PLUGIN`` (:class:`~agentworld.domains.base.DomainPlugin`) and ships its prompt
texts under ``prompts/``; :mod:`agentworld.domains.registry` builds the :class:`Domain` records from
them. ``load_domains(prompts_dir)`` swaps in a folder laid out like the official
``prompts/<domain>/{system_prompt,judge_system_prompt}.txt`` so users can score with the official judge
prompts. See ``docs/adding-a-domain.md``.

The registry's names are imported on first use, so importing a domain's plugin (which imports this
package first) stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentworld.domains.registry import (
        DOMAINS,
        Domain,
        DomainRegistry,
        domain_names,
        get_domain,
        load_domains,
        report_order,
    )

__all__ = ["BENCHMARK_DOMAINS", "DEFAULT_DOMAIN", "DOMAINS", "OFFICIAL_DEFAULT_DOMAIN", "TOOLS_DOMAIN",
           "Domain", "DomainRegistry", "domain_names", "get_domain", "load_domains", "report_order"]

BENCHMARK_DOMAINS: tuple[str, ...] = ("mcp", "search", "terminal", "swe", "android", "web", "os")
"""AgentWorldBench's seven domains, in the order its report lists them: the registry lists them first,
in this order, and reports follow it (:func:`~agentworld.domains.registry.report_order`). Which domains
a loader accepts is the registry's answer (:func:`~agentworld.domains.registry.domain_names`), never this
list: a domain registered beyond them is as valid."""

OFFICIAL_DEFAULT_DOMAIN = "mcp"
"""The domain the official ``eval.py`` gives a row without ``task`` (its ``job.get("task", "mcp")``): what
reproducing its scores from its ``judged.jsonl`` must do too."""

DEFAULT_DOMAIN = "terminal"
"""The domain used when none is named (``agentworld shell``, a ``WorldSpec``, generic trajectory rows and
dataset columns without one, the training demo): the one with a real environment, a recorder and a corpus
out of the box."""

TOOLS_DOMAIN = "mcp"
"""The domain of a bare list of MCP tool schemas: what a simulated tool server (``agentworld serve mcp``,
the TRL tool environment, ``agentworld train rollout --tools``) simulates and chat-completions tool-call
logs record."""


def __getattr__(name: str) -> Any:
    if name in __all__:
        from agentworld.domains import registry

        return getattr(registry, name)
    raise AttributeError(f"module 'agentworld.domains' has no attribute {name!r}")
