"""Seeds of synthesized environments: what a generator is shown to imagine a service from.

A seed is one recorded trajectory (any format :mod:`agentworld.data.ingest` reads: tau-bench
airline, AgentWorldBench rows, OpenAI tool-call logs) or one bare ``tools/list`` file. It is
reduced to a bounded, JSON-serialisable digest: the system prompt's opening, the tool calls with
their (truncated) results, and the tools when the seed lists them. One seed makes one environment.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agentworld.domains.actions import tool_call
from agentworld.errors import DataError
from agentworld.inputs import check_file, parse_json, read_bytes

MAX_CALLS = 24
MAX_OBSERVATION_CHARS = 2_000
MAX_PROMPT_CHARS = 1_500


class SeedCall(BaseModel):
    model_config = ConfigDict(frozen=True)

    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    observation: str = ""


class Seed(BaseModel):
    """A digest of one seed (bounded in size, so prompts stay bounded whatever the input)."""

    model_config = ConfigDict(frozen=True)

    id: str
    source: str
    context: str = ""
    calls: list[SeedCall] = Field(default_factory=list)
    tools: list[dict[str, Any]] = Field(default_factory=list)


def _tools_list(path: Path) -> list[dict[str, Any]] | None:
    """The tools of a bare ``tools/list`` file, or None when the file is something else."""
    if path.suffix.lower() != ".json":
        return None
    raw = read_bytes(path, what="seed file")  # a FIFO or /dev/zero is refused, not read
    try:
        data = parse_json(raw, path=path)
    except DataError:
        return None  # something else (a recording); ingest says what is wrong with it
    tools = data.get("tools") if isinstance(data, dict) and set(data) <= {"tools", "nextCursor"} else data
    if isinstance(tools, list) and tools and all(isinstance(t, dict) and "inputSchema" in t for t in tools):
        return tools
    return None


def read_seeds(paths: Sequence[Path], limit: int | None = None) -> list[Seed]:
    """Every seed of the files (in order), at most ``limit``; errors name the file."""
    seeds: list[Seed] = []
    for path in paths:
        for seed in _read_one(Path(path)):
            if limit is not None and len(seeds) >= limit:
                return seeds
            seeds.append(seed)
    return seeds


def _read_one(path: Path) -> Iterator[Seed]:
    from agentworld.data.ingest import ingest

    if not path.exists():
        raise DataError("no such seed file", path=str(path))
    check_file(path, what="seed file")  # a FIFO or /dev/zero would hang or fill memory
    tools = _tools_list(path)
    if tools is not None:
        from agentworld.sim.toolfile import check_tools

        yield Seed(id=path.stem, source=str(path), tools=check_tools(tools, str(path)))
        return
    for traj in ingest(path):
        calls: list[SeedCall] = []
        for turn in traj.turns:
            call = tool_call(turn.action)
            if call is not None and len(calls) < MAX_CALLS:
                observation = turn.observation.replace("**Environment Observation:**", "").strip()
                calls.append(
                    SeedCall(tool=call[0], arguments=call[1], observation=observation[:MAX_OBSERVATION_CHARS])
                )
        yield Seed(
            id=f"{path.name}:{traj.id}",
            source=str(path),
            context=traj.system_prompt[:MAX_PROMPT_CHARS],
            calls=calls,
        )
