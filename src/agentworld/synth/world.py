"""The world folder (version 1): a synthesized environment as files, and the rules that score a task on it.

A world folder is what ``agentworld synth`` writes and what ``serve mcp --world DIR``, ``serve http``,
the adapters and ``train rollout`` read::

    DIR/world.json        name, scenario, MCP tools, initial entities, provenance
    DIR/tasks.jsonl       one Task per line: instruction, success conditions, reference plan
    DIR/controls/*.yaml   optional ControlSpec files (fault curricula)

Success is decided by rules, never by a model: conditions over the final entity state (the initial
entities updated by what the simulated tool results showed, read with the MCP ledger's entity
extraction) and over the tool-call trace. So "the reference plan reaches the goal" and "the initial
state does not already satisfy it" are both measured in the simulator.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentworld import inputs
from agentworld.domains import TOOLS_DOMAIN
from agentworld.domains.mcp.ledger import entities, is_mutating, parse_json, tool_noun
from agentworld.domains.records_file import read_records, validated
from agentworld.domains.spec import ControlSpec, WorldSpec, load_control_spec
from agentworld.errors import DataError
from agentworld.io import atomic_write_jsonl, atomic_write_text
from agentworld.schema import strip_marker

WORLD_VERSION = 1

Entities = dict[str, dict[str, dict[str, Any]]]
"""``{kind: {id: {field: value}}}``: the form the state ledger holds."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class Scenario(_Frozen):
    """What service the world simulates, who uses it and what can go wrong."""

    service: str = Field(min_length=1, max_length=200)
    description: str = Field("", max_length=20_000)
    users: list[str] = Field(default_factory=list)
    failure_modes: list[str] = Field(default_factory=list)


class ToolDef(BaseModel):
    """One MCP ``tools/list`` entry (extra MCP fields such as ``annotations`` are kept)."""

    model_config = ConfigDict(frozen=True, extra="allow", allow_inf_nan=False)

    name: str = Field(min_length=1, max_length=128)
    description: str = Field("", max_length=20_000)
    inputSchema: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})


class InitialState(_Frozen):
    entities: Entities = Field(default_factory=dict)


class Provenance(_Frozen):
    seeds: list[str] = Field(default_factory=list)
    generator: str = ""
    stage_versions: dict[str, int] = Field(default_factory=dict)


class StateCondition(_Frozen):
    """A rule over the final entity state; ``field`` empty means the entity itself (exists/absent)."""

    kind: str = Field(min_length=1)
    id: str = Field(min_length=1)
    field: str = ""
    op: Literal["eq", "ne", "contains", "exists", "absent", "gt", "lt"] = "eq"
    value: Any = None


class TraceCondition(_Frozen):
    """A rule over the tool-call trace: some call of ``tool`` whose arguments include ``arguments``."""

    tool: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)
    op: Literal["called", "not_called"] = "called"


class Success(_Frozen):
    state: list[StateCondition] = Field(default_factory=list)
    trace: list[TraceCondition] = Field(default_factory=list)


class PlanStep(_Frozen):
    tool: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)


class Task(_Frozen):
    id: str = Field(min_length=1, max_length=200)
    instruction: str = Field(min_length=1)
    success: Success = Field(default_factory=Success)
    reference_plan: list[PlanStep] = Field(default_factory=list)
    reference_answer: Any = None


class WorldDoc(_Frozen):
    """The content of ``world.json``."""

    version: Literal[1] = 1
    name: str = Field(min_length=1, max_length=200)
    domain: str = TOOLS_DOMAIN
    scenario: Scenario
    tools: list[ToolDef] = Field(default_factory=list)
    initial_state: InitialState = Field(default_factory=InitialState)
    provenance: Provenance = Field(default_factory=Provenance)


class World(WorldDoc):
    """A loaded world folder: ``world.json`` plus its tasks and control specs (by file stem)."""

    tasks: list[Task] = Field(default_factory=list)
    controls: dict[str, ControlSpec] = Field(default_factory=dict)

    def tool(self, name: str) -> ToolDef | None:
        return next((t for t in self.tools if t.name == name), None)

    def to_spec(self, controls: ControlSpec | None = None) -> WorldSpec:
        """The :class:`WorldSpec` that serves this world: its tools, and its entities as the initial state.

        The entities are rendered as JSON objects that carry their ``id`` under their kind, so the MCP
        ledger (:func:`agentworld.domains.mcp.ledger.open_ledger`) starts out knowing them and the
        world model reads them in its prompt.
        """
        return WorldSpec(domain=self.domain, name=self.name, tools=[t.model_dump() for t in self.tools],
                         initial_state=render_entities(self.initial_state.entities),
                         controls=controls or ControlSpec())


class ToolStep(NamedTuple):
    """One simulated call and the observation the world model returned."""

    tool: str
    arguments: dict[str, Any]
    observation: str


class Verdict(NamedTuple):
    passed: bool
    reasons: list[str]


def render_entities(state: Entities) -> str:
    """The initial state as the world model and the ledger read it (empty text when there is none)."""
    if not state:
        return ""
    doc = {kind: [{**fields, "id": ident} for ident, fields in items.items()]
           for kind, items in state.items()}
    return ("The service's data at the start (entities by kind; unchanged unless a call changes them):\n"
            + json.dumps(doc, ensure_ascii=False, indent=1))


# -- reading and writing -----------------------------------------------------------------------------

def _located(exc: ValidationError, path: Path, line: int | None = None,
             sample: str | None = None) -> DataError:
    err = exc.errors()[0]
    field = ".".join(str(x) for x in err["loc"]) or None
    return DataError(err["msg"], path=str(path), line=line, sample_id=sample, field=field)


def _read(path: Path, root: Path) -> str:
    if not path.exists() and not path.is_symlink():
        raise DataError("missing (a world folder holds world.json and tasks.jsonl)", path=str(path))
    return inputs.read_text(path, root=root)


def load_world(directory: str | Path, *, tasks: bool = True, controls: bool = True) -> World:
    """Read and validate a world folder; errors name the file, line, task id and field.

    Every file is read through :func:`agentworld.inputs.read_text`: regular files inside the folder
    (a link that leaves it is refused), at most :func:`agentworld.inputs.max_input_bytes` each
    (64 MiB unless ``AGENTWORLD_MAX_INPUT_BYTES`` says otherwise), JSON/YAML nested at most
    :data:`agentworld.inputs.MAX_DEPTH` deep. ``tasks=False`` skips ``tasks.jsonl`` and
    ``controls=False`` the control specs (a server that only serves the world need not parse a
    hundred thousand tasks).
    """
    root = Path(directory)
    if not root.is_dir():
        raise DataError("not a world folder (no such directory)", path=str(root))
    world_path = root / "world.json"
    data = inputs.parse_json(_read(world_path, root), path=world_path)
    if not isinstance(data, dict):
        raise DataError("expected a JSON object", path=str(world_path))
    if data.get("version", WORLD_VERSION) != WORLD_VERSION:
        raise DataError(f"world folder version {data.get('version')!r} is not supported (this agentworld "
                        f"reads version {WORLD_VERSION})", path=str(world_path), field="version")
    try:
        doc = WorldDoc.model_validate(data)
    except ValidationError as exc:
        raise _located(exc, world_path) from None
    task_path = root / "tasks.jsonl"
    listed = tasks and (task_path.exists() or task_path.is_symlink())
    loaded = load_tasks(task_path, root=root) if listed else []
    specs = {p.stem: load_control_spec(p, root=root) for p in sorted((root / "controls").glob("*.y*ml"))
             if p.suffix in (".yaml", ".yml")} if controls and (root / "controls").is_dir() else {}
    return World(**dict(doc), tasks=loaded, controls=specs)


def load_tasks(path: Path, *, root: Path | None = None) -> list[Task]:
    """Tasks from a JSONL file (ids unique; blank lines skipped); ``root`` confines it to a folder."""
    return read_records(path, lambda item, line: validated(Task, item, path=path, line=line, key="id"),
                        lambda t: t.id, what="task", key="id", allow_empty=True, root=root)


def save_world(world: World, directory: str | Path) -> Path:
    """Write ``world.json`` and ``tasks.jsonl`` (atomically) and any control specs; returns the folder."""
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    doc = world.model_dump(mode="json", exclude={"tasks", "controls"})
    atomic_write_text(root / "world.json", json.dumps(doc, ensure_ascii=False, indent=1) + "\n")
    atomic_write_jsonl(root / "tasks.jsonl", (t.model_dump(mode="json") for t in world.tasks))
    if world.controls:
        import yaml

        (root / "controls").mkdir(exist_ok=True)
        for stem, spec in world.controls.items():
            atomic_write_text(root / "controls" / f"{stem}.yaml",
                              yaml.safe_dump(spec.model_dump(mode="json", exclude_defaults=True)))
    return root


# -- the state a run leaves, and the rules over it ---------------------------------------------------

def final_state(world: World, steps: Iterable[ToolStep | Sequence[Any]]) -> Entities:
    """The initial entities, updated by what each simulated tool result showed.

    Objects in a JSON result are identified as the MCP ledger does (``id``, ``<kind>_id``, …, kind from
    the enclosing key or the tool's noun); an identified object's fields overwrite the entity's. An
    entity the world already holds under another kind with the same id is updated there (the
    generator may name kinds differently from the tools). A successful deleting call removes the
    entities its id arguments name unless its result shows them again. Error results change nothing.
    """
    state: Entities = copy.deepcopy(world.initial_state.entities)
    for raw in steps:
        step = raw if isinstance(raw, ToolStep) else ToolStep(*raw)
        observation = strip_marker(step.observation)
        parsed = parse_json(observation)
        if _is_error(observation):
            continue
        shown: set[tuple[str, str]] = set()
        for (kind, ident), obj in entities(parsed[0], tool_noun(step.tool)) if parsed else []:
            home = _home(state, kind, ident)
            state.setdefault(home, {}).setdefault(ident, {}).update(copy.deepcopy(obj))
            shown.add((home, ident))
        if is_mutating(step.tool) and _deletes(step.tool):
            for ident in _named_ids(step.arguments):
                for kind, items in state.items():
                    if ident in items and (kind, ident) not in shown:
                        del items[ident]
    return state


def _home(state: Entities, kind: str, ident: str) -> str:
    if ident in state.get(kind, {}):
        return kind
    owners = [k for k, items in state.items() if ident in items]
    return owners[0] if len(owners) == 1 else kind


def _deletes(tool: str) -> bool:
    words = tool.replace("-", "_").lower().split("_")
    return any(w in ("delete", "remove", "destroy", "drop") for w in words) or tool.lower().startswith(
        ("delete", "remove"))


def _named_ids(arguments: Mapping[str, Any]) -> list[str]:
    return [str(v) for k, v in arguments.items()
            if (k == "id" or k.endswith("_id")) and isinstance(v, str | int)]


def _is_error(text: str) -> bool:
    head = text.lstrip()[:200].lower()
    return head.startswith(("error", '{"error"', '{"iserror": true')) or '"iserror": true' in head


def evaluate(task: Task, state: Mapping[str, Mapping[str, Mapping[str, Any]]],
             trace: Sequence[Mapping[str, Any] | PlanStep]) -> Verdict:
    """Whether the final state and the trace meet the task's success conditions, and why not.

    A task with no condition never passes: a goal nothing checks is not a goal.
    """
    reasons = [r for c in task.success.state if (r := _state_failure(c, state))]
    calls = [c if isinstance(c, PlanStep) else PlanStep.model_validate(
        {"tool": c.get("tool", ""), "arguments": c.get("arguments") or {}}) for c in trace]
    reasons += [r for c in task.success.trace if (r := _trace_failure(c, calls))]
    if not task.success.state and not task.success.trace:
        reasons.append("the task has no success condition")
    return Verdict(not reasons, reasons)


def _state_failure(cond: StateCondition, state: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> str | None:
    where = f"{cond.kind} {cond.id}" + (f" field {cond.field!r}" if cond.field else "")
    entity = state.get(cond.kind, {}).get(cond.id)
    present = entity is not None and (not cond.field or cond.field in entity)
    if cond.op == "absent":
        return f"{where} should be absent but is present" if present else None
    if not present:
        return f"{where} is missing (wanted {cond.op} {json.dumps(cond.value)})"
    if cond.op == "exists":
        return None
    assert entity is not None
    actual = entity[cond.field] if cond.field else entity
    if _holds(cond.op, actual, cond.value):
        return None
    return f"{where} is {json.dumps(actual, default=str)}, wanted {cond.op} {json.dumps(cond.value)}"


def _holds(op: str, actual: Any, value: Any) -> bool:
    if op in ("gt", "lt"):
        x, y = _number(actual), _number(value)
        return x is not None and y is not None and (x > y if op == "gt" else x < y)
    if op == "contains":
        return _contains(actual, value)
    return _same(actual, value) is (op == "eq")


def _trace_failure(cond: TraceCondition, calls: Sequence[PlanStep]) -> str | None:
    hit = any(c.tool == cond.tool and _subset(cond.arguments, c.arguments) for c in calls)
    shown = f"{cond.tool}({json.dumps(cond.arguments, sort_keys=True)})"
    if cond.op == "called" and not hit:
        return f"no call {shown}"
    if cond.op == "not_called" and hit:
        return f"a forbidden call {shown} was made"
    return None


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None


def _same(a: Any, b: Any) -> bool:
    if a == b:
        return True
    x, y = _number(a), _number(b)
    if x is not None and y is not None:
        return x == y
    return isinstance(a, str) and isinstance(b, str) and a.strip().lower() == b.strip().lower()


def _contains(container: Any, item: Any) -> bool:
    if isinstance(container, str):
        return isinstance(item, str) and item.lower() in container.lower()
    if isinstance(container, list):
        return any(_same(x, item) or (isinstance(item, dict) and _subset(item, x)) for x in container)
    if isinstance(container, dict):
        if isinstance(item, dict):
            return _subset(item, container)
        return isinstance(item, str) and item in container
    return False


def _subset(want: Any, got: Any) -> bool:
    if isinstance(want, dict):
        return isinstance(got, dict) and all(k in got and _subset(v, got[k]) for k, v in want.items())
    if isinstance(want, list):
        return isinstance(got, list) and len(want) == len(got) and all(map(_subset, want, got))
    return _same(want, got)
