"""The templates of the real MCP task suite and the concrete values of their instances.

Why: a template is a kind of task (move a file, relate two entities, commit on a new branch); its
instances only change values. Values are written out here, not drawn at import, so a task id names
the same task everywhere. Each builder returns what the user asks, the starting files, a plan on the
real servers' tools, the trace a simulator can check, and the real expectations.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from agentworld.domains.mcp.servers import DISPLAY_ROOT as W
from agentworld.domains.mcp.task_records import (
    EntityIs,
    Expectation,
    FileIs,
    HeadIs,
    Missing,
    NoEntity,
    RealTask,
    RefIs,
    RelationIs,
    Split,
    TaskServer,
)


class Draft(NamedTuple):
    """A task without its id, template, split and server (which the template gives)."""

    instruction: str
    reference_plan: tuple[dict[str, Any], ...]
    trace: tuple[dict[str, Any], ...]
    expect: tuple[Expectation, ...]
    files: dict[str, str]
    changes: dict[str, str]


@dataclass(frozen=True)
class Template:
    """A kind of task: its server, its side of the split, its builder and one value tuple per instance."""

    name: str
    server: TaskServer
    split: Split
    build: Callable[..., Draft]
    values: tuple[tuple[Any, ...], ...]

    def tasks(self) -> tuple[RealTask, ...]:
        """The instances, ids ``{name}-{n}`` from 1."""
        return tuple(RealTask(id=f"{self.name}-{n}", template=self.name, split=self.split, server=self.server,
                              **self.build(*v)._asdict()) for n, v in enumerate(self.values, 1))


def _call(tool: str, **arguments: Any) -> dict[str, Any]:
    return {"tool": tool, "arguments": arguments}


def _draft(instruction: str, plan: Sequence[dict[str, Any]], trace: Sequence[dict[str, Any]],
           expect: Sequence[Expectation], files: dict[str, str] | None = None,
           changes: dict[str, str] | None = None) -> Draft:
    return Draft(instruction, tuple(plan), tuple(trace), tuple(expect), dict(files or {}),
                 dict(changes or {}))


def fs_write_file(rel: str, content: str, files: dict[str, str]) -> Draft:
    write = _call("write_file", path=f"{W}/{rel}", content=content)
    return _draft(f"Create the file {W}/{rel} with exactly this content:\n{content}", [write], [write],
                  [FileIs(path=f"{W}/{rel}", content=content)], files)


def fs_edit_line(rel: str, text: str, old: str, new: str) -> Draft:
    edit = _call("edit_file", path=f"{W}/{rel}", edits=[{"oldText": old, "newText": new}])
    return _draft(f"In {W}/{rel}, replace the line `{old}` with `{new}` and leave the other lines as they "
                  "are.", [edit], [edit], [FileIs(path=f"{W}/{rel}", content=text.replace(old, new))],
                  {rel: text})


def fs_first_line(src: str, text: str, dest: str) -> Draft:
    first = text.splitlines()[0]
    write = _call("write_file", path=f"{W}/{dest}", content=first)
    return _draft(f"Read {W}/{src} and write its first line, and nothing else, into {W}/{dest}.",
                  [_call("read_text_file", path=f"{W}/{src}"), write], [write],
                  [FileIs(path=f"{W}/{dest}", content=first)], {src: text})


def fs_mkdir_write(folder: str, name: str, content: str) -> Draft:
    plan = [_call("create_directory", path=f"{W}/{folder}"),
            _call("write_file", path=f"{W}/{folder}/{name}", content=content)]
    return _draft(f"Create the directory {W}/{folder} and in it a file {name} containing exactly:\n{content}",
                  plan, plan, [FileIs(path=f"{W}/{folder}/{name}", content=content)],
                  {"README.md": "Files\n"})


def fs_move_file(src: str, dest: str, content: str, files: dict[str, str]) -> Draft:
    move = _call("move_file", source=f"{W}/{src}", destination=f"{W}/{dest}")
    return _draft(f"Move the file {W}/{src} to {W}/{dest}.", [move], [move],
                  [FileIs(path=f"{W}/{dest}", content=content), Missing(path=f"{W}/{src}")],
                  {**files, src: content})


def fs_word_count(src: str, text: str, dest: str, files: dict[str, str]) -> Draft:
    count = str(len(text.split()))
    write = _call("write_file", path=f"{W}/{dest}", content=count)
    return _draft(f"Count the words (separated by whitespace) in {W}/{src} and write just the number into "
                  f"{W}/{dest}.", [_call("read_text_file", path=f"{W}/{src}"), write], [write],
                  [FileIs(path=f"{W}/{dest}", content=count)], {**files, src: text})


Entity = tuple[str, str, tuple[str, ...]]
WORLD: tuple[Entity, ...] = (
    ("Ada", "person", ("works at Acme",)), ("Ben", "person", ("is a manager",)),
    ("Acme", "company", ("makes rockets",)), ("Oslo", "city", ("capital of Norway",)),
    ("Norway", "country", ()), ("Project Falcon", "project", ("deadline is 2025-06-30",)))
WORLD_RELATIONS = (("Ada", "Acme", "works_at"), ("Oslo", "Norway", "located_in"))
STAFF: tuple[Entity, ...] = (
    ("Ada", "person", ("works at Acme",)), ("Ben", "person", ("works at Globex",)),
    ("Chen", "person", ("works at Initech",)), ("Dana", "person", ("works at Umbrella",)))


def memory_file(entities: Sequence[Entity], relations: Sequence[tuple[str, str, str]] = ()) -> dict[str, str]:
    """A seeded ``memory.jsonl`` in the memory server's own format (one JSON object a line)."""
    lines = [{"type": "entity", "name": n, "entityType": t, "observations": list(o)} for n, t, o in entities]
    lines += [{"type": "relation", "from": a, "to": b, "relationType": r} for a, b, r in relations]
    return {"memory.jsonl": "\n".join(json.dumps(line, separators=(",", ":")) for line in lines)}


def _entity(name: str, world: Sequence[Entity] = WORLD) -> Entity:
    return next(e for e in world if e[0] == name)


def _kept(name: str, world: Sequence[Entity], added: Sequence[str] = ()) -> EntityIs:
    _, kind, observations = _entity(name, world)
    return EntityIs(name=name, entity_type=kind, observations=(*observations, *added))


def mem_create_entity(name: str, kind: str, observation: str) -> Draft:
    create = _call("create_entities", entities=[{"name": name, "entityType": kind,
                                                  "observations": [observation]}])
    return _draft(f"Add an entity named '{name}' of type '{kind}' to the memory graph, with the observation "
                  f"'{observation}'.", [create], [create],
                  [EntityIs(name=name, entity_type=kind, observations=(observation,))], memory_file(WORLD))


def mem_relate(source: str, target: str, kind: str) -> Draft:
    relate = _call("create_relations", relations=[{"from": source, "to": target, "relationType": kind}])
    return _draft(f"In the memory graph, record that '{source}' {kind} '{target}': a relation of type "
                  f"'{kind}' from '{source}' to '{target}' (both entities already exist).", [relate],
                  [relate],
                  [RelationIs(source=source, target=target, relation_type=kind)],
                  memory_file(WORLD, WORLD_RELATIONS))


def mem_create_and_relate(name: str, kind: str, observation: str, relation: str, target: str) -> Draft:
    plan = [_call("create_entities", entities=[{"name": name, "entityType": kind,
                                                "observations": [observation]}]),
            _call("create_relations", relations=[{"from": name, "to": target, "relationType": relation}])]
    return _draft(f"Add '{name}' (type '{kind}', observation '{observation}') to the memory graph and "
                  f"relate it to the existing entity '{target}' with a '{relation}' relation from '{name}' "
                  f"to '{target}'.", plan, plan,
                  [EntityIs(name=name, entity_type=kind, observations=(observation,)),
                   RelationIs(source=name, target=target, relation_type=relation)],
                  memory_file(WORLD, WORLD_RELATIONS))


def mem_add_observation(name: str, observation: str) -> Draft:
    add = _call("add_observations", observations=[{"entityName": name, "contents": [observation]}])
    return _draft(f"The memory graph has an entity '{name}'. Add the observation '{observation}' to it and "
                  "keep its other observations.", [add], [add], [_kept(name, WORLD, [observation])],
                  memory_file(WORLD, WORLD_RELATIONS))


def mem_delete_entity(name: str) -> Draft:
    delete = _call("delete_entities", entityNames=[name])
    others = [_kept(e[0], WORLD) for e in WORLD if e[0] != name]
    return _draft(f"Delete the entity '{name}' from the memory graph; keep every other entity.", [delete],
                  [delete], [NoEntity(name=name), *others], memory_file(WORLD, WORLD_RELATIONS))


def mem_find_then_observe(employer: str, observation: str) -> Draft:
    person = next(e[0] for e in STAFF if e[2] == (f"works at {employer}",))
    add = _call("add_observations", observations=[{"entityName": person, "contents": [observation]}])
    return _draft(f"Exactly one person in the memory graph works at {employer}. Find that person and add "
                  f"the observation '{observation}' to them.", [_call("search_nodes", query=employer), add],
                  [add], [_kept(person, STAFF, [observation])], memory_file(STAFF))


REPO = {"README.md": "# Demo project\n", "src/app.py": "print('hello')\n", "notes.md": "- first note\n"}


def _repo_call(tool: str, **arguments: Any) -> dict[str, Any]:
    return _call(tool, repo_path=W, **arguments)


def git_commit_change(rel: str, content: str, message: str) -> Draft:
    plan = [_repo_call("git_add", files=[rel]), _repo_call("git_commit", message=message)]
    trace = [_call("git_add", files=[rel]), _call("git_commit", message=message)]
    return _draft(f"In the git repository at {W}, the file {rel} has changes that are not committed yet. "
                  f"Stage that file and commit it on main with the message '{message}'.", plan, trace,
                  [RefIs(ref="main", message=message, files={rel: content})], REPO, {rel: content})


def git_branch_checkout(branch: str) -> Draft:
    plan = [_repo_call("git_create_branch", branch_name=branch, base_branch="main"),
            _repo_call("git_checkout", branch_name=branch)]
    trace = [_call("git_create_branch", branch_name=branch), _call("git_checkout", branch_name=branch)]
    return _draft(f"In the git repository at {W}, create a branch named '{branch}' from main and switch to "
                  "it.", plan, trace, [RefIs(ref=branch, message="Initial commit"), HeadIs(branch=branch)],
                  REPO)


def git_create_branch(branch: str) -> Draft:
    create = _repo_call("git_create_branch", branch_name=branch, base_branch="main")
    return _draft(f"In the git repository at {W}, create a branch named '{branch}' from main, but stay on "
                  "main.", [create], [_call("git_create_branch", branch_name=branch)],
                  [RefIs(ref=branch, message="Initial commit"), HeadIs(branch="main")], REPO)


def git_commit_on_branch(branch: str, rel: str, content: str, message: str) -> Draft:
    plan = [_repo_call("git_create_branch", branch_name=branch, base_branch="main"),
            _repo_call("git_checkout", branch_name=branch), _repo_call("git_add", files=[rel]),
            _repo_call("git_commit", message=message)]
    trace = [_call("git_create_branch", branch_name=branch), _call("git_checkout", branch_name=branch),
             _call("git_add", files=[rel]), _call("git_commit", message=message)]
    return _draft(f"In the git repository at {W}, the file {rel} has uncommitted changes. Commit them on a "
                  f"new branch '{branch}' made from main, with the message '{message}'; main must stay as "
                  "it is.", plan, trace, [RefIs(ref=branch, message=message, files={rel: content}),
                                          RefIs(ref="main", message="Initial commit")], REPO, {rel: content})


ESSAY = "Small steps taken every day add up to big changes over a year."
TEMPLATES: tuple[Template, ...] = (
    Template("fs_write_file", "filesystem", "train", fs_write_file, (
        ("greeting.txt", "Hello, world!", {}),
        ("config/app.env", "MODE=production\nWORKERS=4", {"config/base.env": "MODE=dev\n"}),
        ("docs/CHANGELOG.md", "# Changelog\n\n- 1.0.0: first release", {"docs/index.md": "# Docs\n"}),
        ("shopping.txt", "eggs\nflour\nsugar", {"README.md": "Lists\n"}))),
    Template("fs_edit_line", "filesystem", "train", fs_edit_line, (
        ("app.ini", "host = localhost\nport = 8080\ndebug = false\n", "port = 8080", "port = 9090"),
        ("src/version.py", '__version__ = "1.2.0"\nRELEASED = False\n', '__version__ = "1.2.0"',
         '__version__ = "1.3.0"'),
        ("README.md", "# Tiny CLI\n\nStatus: beta\nLicense: MIT\n", "Status: beta", "Status: stable"),
        ("crontab.txt", "0 2 * * * backup\n30 6 * * 1 report\n", "30 6 * * 1 report", "45 7 * * 1 report"))),
    Template("fs_first_line", "filesystem", "train", fs_first_line, (
        ("reports/q3.txt", "Revenue grew 12% in Q3\nCosts were flat\nHiring paused\n", "summary.txt"),
        ("inbox/msg-17.eml", "Subject: Server maintenance on Friday\nFrom: ops@example.com\n\nHi all,\n",
         "subject.txt"),
        ("logs/build.log", "BUILD FAILED: missing dependency libfoo\nstep 1 ok\nstep 2 failed\n",
         "status.txt"),
        ("poem.txt", "The fog comes on little cat feet.\nIt sits looking\nover harbor and city\n",
         "first_line.txt"))),
    Template("fs_mkdir_write", "filesystem", "test", fs_mkdir_write, (
        ("projects/alpha", "plan.md", "# Alpha plan\n\n1. Draft the spec"),
        ("backups/2025-01", "manifest.txt", "db.sql\nuploads.tar"),
        ("notes", "todo.txt", "Call the bank\nRenew passport"))),
    Template("fs_move_file", "filesystem", "test", fs_move_file, (
        ("draft.txt", "final.txt", "Final text of the letter.\n", {}),
        ("img_notes.md", "archive/img_notes.md", "- crop the banner\n", {"archive/old.md": "old\n"}),
        ("data/old_name.csv", "data/customers.csv", "id,name\n1,Ana\n2,Ben\n", {}))),
    Template("fs_word_count", "filesystem", "test", fs_word_count, (
        ("essay.txt", ESSAY + "\n", "count.txt", {}),
        ("speech/intro.txt", "Good evening everyone,\nand thank you for coming tonight.\n",
         "speech/word_count.txt", {}),
        ("abstract.md", "We study tiny models.\nThey learn fast\n\nand forget slowly.\n", "stats/words.txt",
         {"stats/README.md": "Numbers\n"}))),
    Template("mem_create_entity", "memory", "train", mem_create_entity, (
        ("Marie Curie", "person", "won two Nobel prizes"), ("Project Heron", "project", "starts in May"),
        ("Lisbon", "city", "capital of Portugal"), ("Rex", "dog", "is a golden retriever"))),
    Template("mem_relate", "memory", "train", mem_relate, (
        ("Ben", "Acme", "works_at"), ("Acme", "Oslo", "headquartered_in"), ("Ben", "Ada", "manages"),
        ("Ada", "Project Falcon", "leads"))),
    Template("mem_create_and_relate", "memory", "train", mem_create_and_relate, (
        ("Chen", "person", "speaks Mandarin", "works_at", "Acme"),
        ("Bergen", "city", "rainiest city in Norway", "located_in", "Norway"),
        ("Globex", "company", "founded in 1989", "competes_with", "Acme"),
        ("Project Kite", "project", "budget is 40k EUR", "owned_by", "Ben"))),
    Template("mem_add_observation", "memory", "test", mem_add_observation, (
        ("Ada", "prefers email over phone"), ("Oslo", "hosts the Nobel Peace Prize ceremony"),
        ("Acme", "has 250 employees"))),
    Template("mem_delete_entity", "memory", "test", mem_delete_entity, (
        ("Ben",), ("Oslo",), ("Project Falcon",))),
    Template("mem_find_then_observe", "memory", "test", mem_find_then_observe, (
        ("Globex", "prefers morning meetings"), ("Initech", "is on leave in March"),
        ("Umbrella", "owns the billing service"))),
    Template("git_commit_change", "git", "train", git_commit_change, (
        ("README.md", "# Demo project\n\nRun `make install` first.\n", "Document installation"),
        ("src/app.py", "print('hello, world')\n", "Greet the world"),
        ("CONTRIBUTING.md", "Open an issue before a pull request.\n", "Add contributing guide"),
        ("notes.md", "- first note\n- second note\n", "Add second note"))),
    Template("git_branch_checkout", "git", "train", git_branch_checkout, (
        ("feature/search",), ("bugfix/login-timeout",), ("release-1.4",), ("docs/api",))),
    Template("git_create_branch", "git", "test", git_create_branch, (
        ("experiment/cache",), ("docs-refresh",), ("hotfix/2.0.1",))),
    Template("git_commit_on_branch", "git", "test", git_commit_on_branch, (
        ("feature/dark-mode", "theme.css", "body { background: #111; }\n", "Add dark theme"),
        ("fix/typo", "README.md", "# Demo project\n\nFixed a typo.\n", "Fix typo in README"),
        ("wip/notes", "notes.md", "- first note\n- draft idea\n", "Draft an idea in notes"))),
)
