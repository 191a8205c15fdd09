"""The seven world-model domains: prompts, tags and observation markers, one registry.

Each domain's system prompt (for the world model) and judge system prompt are text files that
the project writes itself, under ``domains/prompts/<domain>/``. ``load_domains(prompts_dir)``
swaps in a folder laid out like the official ``prompts/<domain>/{system_prompt,judge_system_prompt}.txt``
so users can score with the official judge prompts.
"""

from agentworld.domains.registry import (
    DOMAINS,
    Domain,
    DomainRegistry,
    get_domain,
    load_domains,
)

__all__ = ["DOMAINS", "Domain", "DomainRegistry", "get_domain", "load_domains"]
