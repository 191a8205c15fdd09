"""``agentworld record notes``: run scenarios against a fresh notebook each and write their rows.

Generated from :data:`COMMAND`: its options become ``--scenarios``, ``--out`` and ``--overwrite``.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from agentworld.domains.base import RecorderCommand
from agentworld.errors import AgentWorldError, DataError
from agentworld.io import atomic_write_jsonl
from agentworld.schema import OBSERVATION_MARKER, Trajectory, Turn
from example_domain import PLUGIN


class Scenario(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    actions: list[str]


class RecordNotesOptions(BaseModel):
    """Run each scenario's commands against a fresh notebook and write its AgentWorldBench rows to OUT."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    scenarios: Path = Field(description="JSON file: a list of {name, actions: [command, ...]}.")
    out: Path = Field(description="JSONL file of AgentWorldBench rows to write.")
    overwrite: bool = Field(False, description="Replace an existing OUT.")


def record_notes(options: RecordNotesOptions) -> None:
    from agentworld.domains import DOMAINS
    from example_domain.env import open_environment

    if options.out.exists() and not options.overwrite:
        raise AgentWorldError(f"{options.out} exists; pass --overwrite to replace it")
    try:
        scenarios = TypeAdapter(list[Scenario]).validate_json(options.scenarios.read_bytes())
    except ValidationError as exc:
        error = exc.errors()[0]
        raise DataError(error["msg"], path=str(options.scenarios),
                        field=".".join(str(p) for p in error["loc"])) from None
    prompt = DOMAINS[PLUGIN.name].system_prompt
    rows = []
    for scenario in scenarios:
        env = open_environment()
        try:
            turns = [Turn(action=action, observation=f"{OBSERVATION_MARKER}\n{env.step(action)}")
                     for action in scenario.actions]
        finally:
            env.close()
        trajectory = Trajectory(id=scenario.name, domain=PLUGIN.name, system_prompt=prompt,
                                turns=tuple(turns))
        rows += [sample.to_row() for sample in trajectory.samples()]
    atomic_write_jsonl(options.out, rows)


COMMAND = RecorderCommand(options=RecordNotesOptions, run=record_notes)
