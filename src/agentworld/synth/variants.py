"""Variants of a seed for the offline generator: other data, other tools, multi-step tasks.

Why: one seed replayed as it was makes one world, and forty trajectories of one airline desk make
forty copies of one world (the near-duplicate check kept 16 of 40). A variant ``k`` of a seed keeps
the seed's kinds of entities and field names but draws new ones from a random stream fixed by the
seed and ``k``: new ids, names, values and counts (3–6 entities of the main kind), a tool set that
differs by variant (reads, lists, writes named in several ways, plus some of the seed's own tools)
and 2–3 tasks composed read → decide → write → verify (2–4 calls) whose targets are named by an
attribute, never by id, so the agent must read before it writes. Success is stated on the final
entity state (the target changed, a sibling not), so a task's check is the state, not the trace.

The rules a task's reference plan relies on are :mod:`agentworld.synth.state_model`'s (a status
verb sets ``status``, an update sets the fields it names, a delete removes): ``synth envs --model
world-state`` runs those plans in the simulator and keeps only worlds whose plans reach their goals.
"""

from __future__ import annotations

import functools
import hashlib
import json
import random
import re
import string
from typing import Any

from agentworld.domains.mcp.ledger import LIST_VERBS, entities, is_mutating, parse_json, tool_noun
from agentworld.synth.state_model import apply_call, plural
from agentworld.synth.template import schema_of

Entities = dict[str, dict[str, dict[str, Any]]]
MAX_FIELDS = 10
FIRST = ("Ana", "Ben", "Chen", "Dara", "Eli", "Fatima", "Goran", "Hana", "Ivan", "Jun", "Kofi", "Lena",
         "Mateo", "Nia", "Omar", "Priya", "Quinn", "Rosa", "Sven", "Tara", "Umar", "Vera", "Wei", "Yara")
LAST = ("Abe", "Brown", "Costa", "Diaz", "Eze", "Fischer", "Garcia", "Hill", "Ito", "Jensen", "Khan",
        "Lopez", "Meyer", "Novak", "Okafor", "Park", "Rossi", "Silva", "Tanaka", "Usman", "Vogel", "Wu")
POOLS = {"status": ["active", "pending", "on_hold", "confirmed"], "cabin": ["basic_economy", "economy",
         "business"], "insurance": ["yes", "no"], "membership": ["regular", "silver", "gold"],
         "flight_type": ["one_way", "round_trip"], "priority": ["low", "normal", "high", "urgent"]}
UPDATE_VERBS = ("update", "edit", "modify")
_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})")


def rng(seed_id: str, variant: int) -> random.Random:
    digest = hashlib.sha256(f"{seed_id}:{variant}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _flat(obj: dict[str, Any]) -> dict[str, Any]:
    """Scalar fields, nested objects of scalars one level up (``name.first_name`` → ``first_name``)."""
    out: dict[str, Any] = {}
    for key, value in obj.items():
        if isinstance(value, dict) and all(not isinstance(v, dict | list) for v in value.values()):
            for sub, inner in value.items():
                name = sub if sub.startswith(key) or "_" in sub else f"{key}_{sub}"
                out.setdefault(name, inner)
        elif not isinstance(value, dict | list) and value is not None:
            out[key] = value
        if len(out) >= MAX_FIELDS:
            break
    return out


def seed_entities(calls: list[dict[str, Any]]) -> Entities:
    """The entities a seed's reads showed (flattened), and those only its writes' ids name."""
    state: Entities = {}
    for call in calls:
        parsed = parse_json(call.get("observation", ""))
        if is_mutating(call["tool"]) or parsed is None or not isinstance(parsed[0], dict):
            continue
        noun = tool_noun(call["tool"])
        found = [((kind, ident), obj) for (kind, ident), obj in entities(parsed[0], noun) if obj is parsed[0]]
        if not found:
            ids = [(k, v) for k, v in call["arguments"].items() if k.endswith("_id") and isinstance(v, str)]
            found = [((k[:-3], v), parsed[0]) for k, v in ids[:1]]
        for (kind, ident), obj in found:
            fields = {k: v for k, v in _flat(obj).items() if k not in ("id", f"{kind}_id")}
            state.setdefault(kind, {})[ident] = fields
    for call in calls:
        for key, value in call["arguments"].items():
            if key.endswith("_id") and isinstance(value, str) and key[:-3] not in state:
                state.setdefault(key[:-3], {})[value] = {}
    return state


def _shape(value: str, r: random.Random) -> str:
    """A new string of the same shape: each letter and digit replaced by one of its class."""
    return "".join(r.choice(string.ascii_uppercase) if c.isupper() else r.choice(string.ascii_lowercase)
                   if c.islower() else r.choice(string.digits) if c.isdigit() else c for c in value)


def _value(field: str, value: Any, seen: list[Any], r: random.Random) -> Any:
    if isinstance(value, bool):
        return r.choice([True, False])
    if isinstance(value, int):
        return max(0, round(value * r.uniform(0.5, 1.5)) + r.randint(0, 3))
    if isinstance(value, float):
        return round(value * r.uniform(0.5, 1.5), 2)
    text = str(value)
    low = field.lower()
    if low in POOLS:
        return r.choice(sorted({*POOLS[low], *(str(s) for s in seen)}))
    if "first_name" in low:
        return r.choice(FIRST)
    if "last_name" in low:
        return r.choice(LAST)
    if "email" in low:
        return f"{r.choice(FIRST).lower()}.{r.choice(LAST).lower()}{r.randint(10, 9999)}@example.com"
    if "name" in low:
        return f"{r.choice(FIRST)} {r.choice(LAST)}"
    if m := _DATE.match(text):
        day = min(28, max(1, int(m.group(3)) + r.randint(-9, 9)))
        return f"{m.group(1)}-{m.group(2)}-{day:02d}" + text[10:]
    distinct = sorted({str(s) for s in seen})
    if 1 < len(distinct) <= 8 and len(text) <= 24:
        return r.choice(distinct)
    return _shape(text, r)


def _kind_counts(base: Entities, main: str, r: random.Random) -> dict[str, int]:
    return {kind: (r.randint(3, 6) if kind == main else r.randint(1, 3) if len(items) else 1)
            for kind, items in base.items()}


def _main_kind(base: Entities) -> str:
    """The kind tasks act on: the most numerous one that refers to another (reservations of users)."""
    def score(kind: str) -> tuple[int, int]:
        refs = any(f"{other}_id" in f for other in base if other != kind for f in base[kind].values())
        return (refs, len(base[kind]))
    return max(sorted(base), key=score)


def variant_entities(base: Entities, r: random.Random) -> tuple[Entities, str, str | None]:
    """New entities of the seed's kinds; returns them, the main kind, and the kind owning it."""
    if not base:
        base = {"ticket": {"T-100": {"title": "Printer jam", "priority": "normal", "status": "open"}}}
    main = _main_kind(base)
    owner = next((k for k in sorted(base) if k != main and any(f"{k}_id" in f for f in base[main].values())),
                 None)
    counts = _kind_counts(base, main, r)
    order = sorted(base, key=lambda k: k == main)  # owners first, so references can point at them
    state: Entities = {}
    for kind in order:
        items = base[kind]
        default = {"name": "Ana Silva", "priority": "normal", "amount": 100}  # a kind only ids named
        templates = [(i, f or dict(default)) for i, f in items.items()]
        templates = templates or [(f"{kind[:3].upper()}-100", default)]
        seen = {f: [v for _, fields in templates if f in fields for v in [fields[f]]]
                for _, fields in templates for f in fields}
        made: dict[str, dict[str, Any]] = {}
        while len(made) < counts[kind]:
            old_id, fields = r.choice(templates)
            ident = _shape(old_id, r)
            new: dict[str, Any] = {}
            for f, v in fields.items():
                ref = f[:-3] if f.endswith("_id") else ""
                if state.get(ref):
                    new[f] = r.choice(sorted(state[ref]))
                else:
                    new[f] = _value(f, v, seen.get(f, []), r)
            if kind == main and owner and f"{owner}_id" not in new and state.get(owner):
                new[f"{owner}_id"] = r.choice(sorted(state[owner]))
            if kind == main:
                new["status"] = r.choice(["active", "pending", "confirmed"])
            if re.fullmatch(r"[a-z]+_[a-z]+_\d+", old_id) and {"first_name", "last_name"} <= set(new):
                ident = f"{new['first_name']}_{new['last_name']}_{r.randint(1000, 9999)}".lower()
            made[ident] = new
        state[kind] = made
    if main and owner and state.get(owner):  # most main entities belong to the first owner: choices
        first = sorted(state[owner])[0]
        for fields in list(state[main].values())[: max(3, len(state[main]) - 1)]:
            fields[f"{owner}_id"] = first
    return state, main, owner


class _Builder:
    """One variant: its entities, its tool names, and tasks with plans checked by the state rules."""

    def __init__(self, seed: dict[str, Any], variant: int) -> None:
        self.seed, self.r = seed, rng(seed["id"], variant)
        calls = list(seed.get("calls", []))
        self.state, self.main, self.owner = variant_entities(seed_entities(calls), self.r)
        self.seed_tools = {c["tool"]: c["arguments"] for c in calls}
        r, main = self.r, self.main
        reads = {tool_noun(t): t for t in self.seed_tools if not is_mutating(t)
                 and not set(t.split("_")) & set(LIST_VERBS)}
        self.get = {kind: reads.get(kind, f"get_{kind}_details") for kind in self.state}
        self.list = f"{r.choice(LIST_VERBS[:3])}_{plural(main)}"  # list_, search_ or find_
        self.update = {kind: f"{r.choice(UPDATE_VERBS)}_{kind}" for kind in self.state}
        self.cancel = next((t for t in self.seed_tools if t.startswith("cancel_") and tool_noun(t) == main),
                           f"cancel_{main}")
        self.delete = f"{r.choice(['delete', 'remove'])}_{main}"
        self.tasks: list[dict[str, Any]] = []
        self.used: set[str] = set()

    # -- tasks -----------------------------------------------------------------------------------
    def _attribute(self, target: str, among: list[str]) -> tuple[str, Any] | None:
        """A field whose value tells ``target`` apart from the others in ``among``."""
        fields = self.state[self.main][target]
        options = [(f, v) for f, v in sorted(fields.items())
                   if f not in ("status",) and not f.endswith("_id") and isinstance(v, str | int)
                   and not isinstance(v, bool)
                   and all(self.state[self.main][o].get(f) != v for o in among if o != target)]
        return self.r.choice(options) if options else None

    def _scope(self) -> tuple[dict[str, Any], list[str], str]:
        """The list call's arguments, the entities it shows, and how the instruction names the scope."""
        items = sorted(self.state[self.main])
        if self.owner:
            key = f"{self.owner}_id"
            owners = sorted({self.state[self.main][i].get(key) for i in items} - {None}, key=str)
            who = self.r.choice([o for o in owners if sum(self.state[self.main][i].get(key) == o
                                                          for i in items) >= 2] or owners)
            return ({key: who}, [i for i in items if self.state[self.main][i].get(key) == who],
                    f"{self.owner.replace('_', ' ')} {who}")
        return {}, items, "the service"

    def _pick(self) -> tuple[dict[str, Any], list[str], str, str, tuple[str, Any]] | None:
        args, among, who = self._scope()
        for target in self.r.sample(among, len(among)):
            attribute = self._attribute(target, among)
            if attribute is not None and len(among) >= 2:
                return args, among, who, target, attribute
        return None

    def _described(self, attribute: tuple[str, Any]) -> str:
        return f"whose {attribute[0].replace('_', ' ')} is {json.dumps(attribute[1])}"

    def task_cancel(self) -> dict[str, Any] | None:
        picked = self._pick()
        if picked is None:
            return None
        args, among, who, target, attribute = picked
        sibling = next(o for o in among if o != target)
        kind = self.main.replace("_", " ")
        return self._task(
            f"For {who}: cancel the {kind} {self._described(attribute)} (only that one), then list them "
            f"again to confirm it shows as cancelled.",
            [(self.list, args), (self.cancel, {f"{self.main}_id": target}), (self.list, args)],
            [{"kind": self.main, "id": target, "field": "status", "op": "eq", "value": "cancelled"},
             {"kind": self.main, "id": sibling, "field": "status", "op": "ne", "value": "cancelled"}])

    def task_update(self) -> dict[str, Any] | None:
        picked = self._pick()
        if picked is None:
            return None
        args, _among, who, target, attribute = picked
        fields = self.state[self.main][target]
        choices = [f for f, v in sorted(fields.items()) if f != attribute[0] and f != "status"
                   and not f.endswith("_id") and isinstance(v, str | int) and not isinstance(v, bool)]
        if not choices:
            return None
        field = self.r.choice(choices)
        seen = [f.get(field) for f in self.state[self.main].values() if field in f]
        new = _value(field, fields[field], seen, self.r)
        if new == fields[field]:
            new = f"{fields[field]}-2" if isinstance(new, str) else new + 1
        kind = self.main.replace("_", " ")
        key = {f"{self.main}_id": target}
        plan = [(self.list, args), (self.get[self.main], key),
                (self.update[self.main], {**key, field: new}), (self.get[self.main], key)]
        if self.owner and self.r.random() < 0.5:
            owner_id = args.get(f"{self.owner}_id")
            plan.insert(0, (self.get[self.owner], {f"{self.owner}_id": owner_id}))
        return self._task(
            f"For {who}: set the {field.replace('_', ' ')} of the {kind} {self._described(attribute)} to "
            f"{json.dumps(new)} (open it first), then read it back to confirm.", plan,
            [{"kind": self.main, "id": target, "field": field, "op": "eq", "value": new}])

    def task_delete(self) -> dict[str, Any] | None:
        picked = self._pick()
        if picked is None:
            return None
        args, among, who, target, attribute = picked
        sibling = next(o for o in among if o != target)
        kind = self.main.replace("_", " ")
        return self._task(
            f"For {who}: delete the {kind} {self._described(attribute)} and keep the others; list them "
            f"again to check it is gone.",
            [(self.list, args), (self.delete, {f"{self.main}_id": target}), (self.list, args)],
            [{"kind": self.main, "id": target, "op": "absent"},
             {"kind": self.main, "id": sibling, "op": "exists"}])

    def task_check_then_cancel(self) -> dict[str, Any] | None:
        picked = self._pick()
        if picked is None:
            return None
        args, _among, who, target, attribute = picked
        fields = self.state[self.main][target]
        shown = [(f, v) for f, v in sorted(fields.items()) if f not in ("status", attribute[0])
                 and isinstance(v, str | int) and not isinstance(v, bool) and not f.endswith("_id")]
        if not shown:
            return None
        field, value = self.r.choice(shown)
        kind = self.main.replace("_", " ")
        key = {f"{self.main}_id": target}
        return self._task(
            f"For {who}: find the {kind} {self._described(attribute)}, open its details, and if its "
            f"{field.replace('_', ' ')} is {json.dumps(value)} cancel it; then confirm its status.",
            [(self.list, args), (self.get[self.main], key), (self.cancel, key), (self.get[self.main], key)],
            [{"kind": self.main, "id": target, "field": "status", "op": "eq", "value": "cancelled"}])

    def task_owner_update(self) -> dict[str, Any] | None:
        if not self.owner or not self.state.get(self.owner):
            return None
        key = f"{self.owner}_id"
        owned = [i for i, f in sorted(self.state[self.main].items()) if f.get(key) in self.state[self.owner]]
        if not owned:
            return None
        item = self.r.choice(owned)
        owner_id = self.state[self.main][item][key]
        fields = self.state[self.owner][owner_id]
        choices = [f for f, v in sorted(fields.items()) if isinstance(v, str) and not f.endswith("_id")]
        if not choices:
            return None
        field = self.r.choice(choices)
        new = _value(field, fields[field], [], self.r)
        if new == fields[field]:
            new = f"{new}-2"
        kind, who = self.main.replace("_", " "), self.owner.replace("_", " ")
        return self._task(
            f"The {who} who holds {kind} {item} asks to change their {field.replace('_', ' ')} to "
            f"{json.dumps(new)}. Find them through the {kind}, open their record, update it, and read it "
            "back.",
            [(self.get[self.main], {f"{self.main}_id": item}), (self.get[self.owner], {key: owner_id}),
             (self.update[self.owner], {key: owner_id, field: new}), (self.get[self.owner], {key: owner_id})],
            [{"kind": self.owner, "id": owner_id, "field": field, "op": "eq", "value": new}])

    def _task(self, instruction: str, plan: list[tuple[str, dict[str, Any]]],
              state: list[dict[str, Any]]) -> dict[str, Any]:
        return {"instruction": instruction, "plan": [{"tool": t, "arguments": a} for t, a in plan],
                "state": state}

    def build_tasks(self) -> None:
        makers = [self.task_cancel, self.task_update, self.task_delete, self.task_check_then_cancel,
                  self.task_owner_update]
        wanted = self.r.randint(2, 3)
        for maker in self.r.sample(makers, len(makers)):
            if len(self.tasks) >= wanted:
                break
            task = maker()
            if task is not None and self._reaches(task):
                self.tasks.append({**task, "id": f"task-{len(self.tasks) + 1}"})
                self.used |= {step["tool"] for step in task["plan"]}

    def _reaches(self, task: dict[str, Any]) -> bool:
        """Whether the plan, run by the state rules, meets the task (and the start does not)."""
        import copy

        from agentworld.synth.world import StateCondition, Success, Task, evaluate

        state = copy.deepcopy(self.state)
        for step in task["plan"]:
            if apply_call(state, step["tool"], step["arguments"]).startswith("Error"):
                return False
        check = Task(id="t", instruction="t", success=Success(
            state=[StateCondition.model_validate(c) for c in task["state"]]))
        return evaluate(check, state, []).passed and not evaluate(check, self.state, []).passed

    # -- tools and scenario ----------------------------------------------------------------------
    def tools(self) -> list[dict[str, Any]]:
        tools: dict[str, dict[str, Any]] = {}
        main = self.main
        for kind, items in self.state.items():
            tools[self.get[kind]] = self._tool(self.get[kind], f"Show one {kind} by id.",
                                               {f"{kind}_id": {"type": "string"}}, [f"{kind}_id"])
            fields = {f: schema_of(v) for one in items.values() for f, v in one.items()
                      if not f.endswith("_id")}
            props = {f"{kind}_id": {"type": "string"}, **fields}
            tools[self.update[kind]] = self._tool(self.update[kind], f"Change fields of one {kind}.", props,
                                                  [f"{kind}_id"])
        scope = {f"{self.owner}_id": {"type": "string"}} if self.owner else {}
        tools[self.list] = self._tool(self.list, f"List {plural(main)} (filtered by the arguments given).",
                                      {**scope, "status": {"type": "string"}}, [])
        one = {f"{main}_id": {"type": "string"}}
        tools[self.cancel] = self._tool(self.cancel, f"Cancel one {main}.", one, [f"{main}_id"])
        tools[self.delete] = self._tool(self.delete, f"Delete one {main} for good.",
                                        {f"{main}_id": {"type": "string"}}, [f"{main}_id"])
        for name, args in self.seed_tools.items():
            if name not in tools:
                props = {k: schema_of(v) for k, v in args.items()}
                about = f"{name.replace('_', ' ')} (from the seed)."
                tools[name] = self._tool(name, about, props, sorted(props))
        keep = [n for n in tools if n in self.used or self.r.random() < 0.5]
        return [tools[n] for n in keep]

    @staticmethod
    def _tool(name: str, description: str, props: dict[str, Any], required: list[str]) -> dict[str, Any]:
        return {"name": name, "description": description,
                "inputSchema": {"type": "object", "properties": props, "required": required}}

    def scenario(self) -> dict[str, Any]:
        context = self.seed.get("context", "")
        title = next((ln.lstrip("# ").strip() for ln in context.splitlines() if ln.startswith("#")), "")
        main = self.main.replace("_", " ")
        shown = "; ".join(f"{ident} ({', '.join(f'{v}' for v in list(f.values())[:4])})"
                          for ident, f in list(self.state[self.main].items())[:6])
        kinds = ", ".join(f"{len(items)} {plural(k)}" for k, items in self.state.items())
        jobs = "; ".join(t["instruction"].split(":")[0][:60] + ": " + t["plan"][-2]["tool"]
                         for t in self.tasks)
        return {"service": f"{title or self.seed['id']} — {main} desk"[:200],
                "description": f"Holds {kinds}. The {plural(main)}: {shown}. Typical work: {jobs}."[:2000],
                "users": sorted({(self.owner or "customer").replace("_", " "), "support agent"}),
                "failure_modes": ["an id that does not exist", "acting on the wrong " + main]}


@functools.lru_cache(maxsize=256)
def _blueprint(seed_json: str, variant: int) -> dict[str, Any]:
    builder = _Builder(json.loads(seed_json), variant)
    builder.build_tasks()
    tools = builder.tools()
    return {"scenario": builder.scenario(), "tools": tools, "entities": builder.state,
            "tasks": builder.tasks}


def blueprint(seed: dict[str, Any], variant: int) -> dict[str, Any]:
    """Everything variant ``variant`` of ``seed`` answers, stage by stage (deterministic, cached)."""
    return _blueprint(json.dumps(seed, sort_keys=True), variant)
