"""Write a fictional world folder: the bible, its tasks, a report (and, for MCP, ``world.json``).

Why the folder holds ``bible.json`` for both domains: the bible is the source of truth the ledger
checks against; a search world is loaded back from it (:func:`load_search_world`), an MCP world is
also a version-1 world folder that ``serve mcp --world`` serves.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from agentworld.errors import AgentWorldError, DataError
from agentworld.inputs import parse_json, read_text
from agentworld.io import atomic_write_jsonl, atomic_write_text
from agentworld.outputs import LOCK_NAME
from agentworld.synth.fiction.bible import Bible, check_bible, parse_bible
from agentworld.synth.fiction.config import WORLD_DOMAINS, FictionConfig
from agentworld.synth.fiction.ledger import document_problems
from agentworld.synth.fiction.procedural import procedural_bible
from agentworld.synth.world import Task

OUTPUTS = frozenset({"bible.json", "tasks.jsonl", "report.json", "world.json", "generator_cache.jsonl"})
"""What this command writes; a folder holding anything else is refused, never overwritten."""
MAX_BIBLE_BYTES = 64 * 1024 * 1024


def _bible(config: FictionConfig) -> tuple[Bible, list[str], str]:
    if not config.generator_base_url:
        return procedural_bible(config.topic, config.seed), [], "procedural"
    if not config.generator_model:
        raise AgentWorldError("--generator-base-url needs --generator-model (the served model's name)")
    from agentworld.models.cache import ResponseCache
    from agentworld.synth.fiction.generate import generate_bible

    backend = config.generator_endpoint().backend(concurrency=config.concurrency)
    from agentworld.report_style import StageProgress

    cache = ResponseCache(config.out / "generator_cache.jsonl")
    try:
        with StageProgress(config.progress, config.entities, ("entities", "profiles")) as advance:
            made = generate_bible(config.topic, backend, cache, seed=config.seed, count=config.entities,
                                  concurrency=config.concurrency, advance=advance)
            bible, left_out = asyncio.run(made)
    finally:
        cache.close()
    return bible, left_out, f"openai:{config.generator_model}"


def _search_world(config: FictionConfig, bible: Bible, generator: str) -> list[dict[str, Any]]:
    from agentworld.synth.fiction.tasks import fact_tasks, table_tasks

    return fact_tasks(bible, config.fact_tasks, config.seed) + table_tasks(bible)


def _mcp_world(config: FictionConfig, bible: Bible, generator: str) -> list[dict[str, Any]]:
    from agentworld.synth.fiction.mcp import mcp_tasks, world_document
    from agentworld.synth.world import World, save_world

    tasks = mcp_tasks(bible, limit=0)
    save_world(World.model_validate({**world_document(bible, generator), "tasks": tasks}), config.out)
    return tasks


_WRITERS = dict(zip(WORLD_DOMAINS, (_search_world, _mcp_world), strict=True))
"""What each kind of world adds to the bible: its tasks (and, for MCP, ``world.json``)."""


def build_world(config: FictionConfig) -> dict[str, Any]:
    """Make the world of ``config`` in ``config.out``; returns the report (also written to report.json).

    Raises:
        AgentWorldError: the folder holds files this command did not write, or the bible is inconsistent.
    """
    out = config.out
    if out.exists() and not out.is_dir():
        raise AgentWorldError(f"{out}: exists and is not a folder")
    ours = (*OUTPUTS, LOCK_NAME)  # the writer lock of agentworld.outputs is ours too
    foreign = sorted(p.name for p in out.iterdir() if p.name not in ours) if out.is_dir() else []
    if foreign:
        raise AgentWorldError(f"{out}: holds files this command did not write ({', '.join(foreign[:3])}); "
                              "choose an empty or new folder")
    out.mkdir(parents=True, exist_ok=True)
    bible, left_out, generator = _bible(config)
    problems = check_bible(bible) + document_problems(bible)
    if problems:
        raise AgentWorldError(f"the bible is inconsistent: {problems[0]} ({len(problems)} problems)")
    atomic_write_text(out / "bible.json", bible.model_dump_json(indent=1) + "\n")
    tasks = _WRITERS[config.domain](config, bible, generator)
    atomic_write_jsonl(out / "tasks.jsonl", (Task.model_validate(t).model_dump(mode="json") for t in tasks))
    report = {"domain": config.domain, "topic": config.topic, "generator": generator,
              "entities": len(bible.entities), "documents": len(bible.documents), "tasks": len(tasks),
              "table_tasks": sum(t["id"].startswith("table-") for t in tasks), "left_out": left_out}
    atomic_write_text(out / "report.json", json.dumps(report, indent=1) + "\n")
    return report


def load_bible(folder: str | Path) -> Bible:
    """The bible of a fictional world folder; errors name the file and field."""
    path = Path(folder) / "bible.json"
    if not path.exists() and not path.is_symlink():
        raise DataError("missing (not a fictional world folder)", path=str(path))
    data = parse_json(read_text(path, root=folder, max_bytes=MAX_BIBLE_BYTES), path=path)
    return parse_bible(data, str(path))


def load_search_world(folder: str | Path) -> Any:
    """The :class:`~agentworld.synth.fiction.search.FictionSearchWorld` of a folder's bible."""
    from agentworld.synth.fiction.search import FictionSearchWorld

    return FictionSearchWorld(load_bible(folder))
