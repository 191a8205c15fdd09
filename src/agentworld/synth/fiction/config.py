"""The typed settings of ``agentworld synth world`` (light: pydantic only, imported by the CLI)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

from agentworld.domains import TOOLS_DOMAIN
from agentworld.domains.search import PLUGIN as SEARCH_PLUGIN
from agentworld.endpoints import Endpoint

WORLD_DOMAINS = (SEARCH_PLUGIN.name, TOOLS_DOMAIN)
"""The domains a fictional world is made for (their plugins' names)."""


class FictionConfig(BaseModel):
    """Make a fictional world: a checked world bible, then a search or MCP world that answers from it, with
    tasks whose reference answers come from the bible."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    domain: str = Field(
        description="Which world: search (BM25 over the bible's pages, the official search tools) or mcp "
                    "(the bible's entity store as a world folder).")
    topic: str = Field(min_length=1, max_length=500, description="What the world is about, e.g. 'the Amber "
                       "Coast, a trading coast of guilds'.")
    out: Path = Field(description="Folder to write (bible.json, tasks.jsonl, report.json; mcp: world.json).",
                      json_schema_extra={"output": "folder"})
    generator_model: str | None = Field(None, description="Generator model name with --generator-base-url; "
                                        "without a URL the bible is made offline from seeded invented names.")
    generator_base_url: str | None = Field(None, description="OpenAI-compatible base URL of the generator.")
    generator_api_key: SecretStr | None = Field(
        None, description="Generator API key (default: the AGENTWORLD_GENERATOR_API_KEY environment "
                          "variable).",
        json_schema_extra={"runtime": True, "envvar": "AGENTWORLD_GENERATOR_API_KEY"})
    entities: int = Field(18, ge=2, le=500, description="Entities to ask the generator for (offline: 6 "
                          "per kind, 3 kinds).")
    concurrency: int = Field(8, ge=1, le=256, description="Generator requests in flight at once.")
    fact_tasks: int = Field(30, ge=0, le=10_000, description="Single-fact question tasks to write (table "
                            "tasks are always written, one or two per entity kind).")
    seed: int = Field(0, description="Seed of the invented world and of the task sample.")
    progress: bool = Field(True, description="Show a progress bar per generator stage (on a terminal).")

    @field_validator("domain")
    @classmethod
    def _known(cls, value: str) -> str:
        if value not in WORLD_DOMAINS:
            raise ValueError(f"expected one of {', '.join(WORLD_DOMAINS)}, got {value!r}")
        return value

    def generator_endpoint(self) -> Endpoint:
        """The generator's :class:`Endpoint`."""
        return Endpoint(self.generator_model or "", self.generator_base_url, self.generator_api_key)
