"""The real MCP task suite: its shape and template split, the simulator's trace check, and — on the real
servers, one instance per template — that the reference plan passes the real check and doing nothing
fails it."""

from __future__ import annotations

import doctest
from collections import Counter

import pytest

from agentworld.domains.mcp import task_suite as suite
from agentworld.domains.mcp.servers import preset
from agentworld.domains.mcp.task_records import RealTask
from agentworld.domains.mcp.task_suite import TASKS, check, play, start, trace_check

FIRSTS = {t.template: t for t in reversed(TASKS)}
"""One instance (the first) of every template."""


def _need(server: str) -> None:
    if why := preset(server).missing():
        pytest.skip(why)


def test_suite_has_many_tasks_split_by_template() -> None:
    assert len(TASKS) >= 44 and len(FIRSTS) >= 10
    assert len({t.id for t in TASKS}) == len(TASKS)
    train, test = suite.train_tasks(), suite.test_tasks()
    assert len(train) + len(test) == len(TASKS) and train and test
    train_templates, test_templates = {t.template for t in train}, {t.template for t in test}
    assert not train_templates & test_templates
    assert 0.5 <= len(train) / len(TASKS) <= 0.7
    assert {t.server for t in train} == {t.server for t in test} == {"filesystem", "memory", "git"}
    lengths = Counter(len(t.reference_plan) for t in TASKS)
    assert set(lengths) == {1, 2, 4} and lengths[1] >= 10
    assert all("/workspace" in t.instruction for t in TASKS if t.server != "memory")
    assert RealTask.model_validate_json(TASKS[-1].model_dump_json()) == TASKS[-1]


def test_module_example_runs() -> None:
    assert doctest.testmod(suite).failed == 0


@pytest.mark.parametrize("template", sorted(FIRSTS))
def test_trace_check_passes_the_plan_and_fails_nothing(template: str) -> None:
    task = FIRSTS[template]
    assert trace_check(task, list(task.reference_plan)) == (True, [])
    passed, reasons = trace_check(task, [])
    assert not passed and len(reasons) == len(task.trace)
    assert reasons[0].startswith(f"condition 1: no {task.trace[0]['tool']} call")


def test_trace_check_strips_strings_and_keeps_order() -> None:
    task = FIRSTS["git_commit_change"]
    add, commit = task.reference_plan
    loose = {"tool_name": commit["tool"], "arguments": {**commit["arguments"],
                                                        "message": f"  {commit['arguments']['message']}\n"}}
    assert trace_check(task, [{"tool": "git_status", "arguments": {}}, add, loose]).passed
    passed, reasons = trace_check(task, [commit, add])
    assert not passed and reasons == [
        'condition 2: no git_commit call after call 2 with arguments including {"message": '
        '"Document installation"}']
    other = {"tool": "git_commit", "arguments": {"repo_path": "/workspace", "message": "wip"}}
    assert not trace_check(task, [add, other]).passed


@pytest.mark.parametrize("template", sorted(FIRSTS))
def test_reference_plan_passes_on_the_real_server_and_nothing_fails(template: str) -> None:
    task = FIRSTS[template]
    _need(task.server)
    env = start(task)
    try:
        before = check(task, env)
        assert not before.passed and before.reasons, "the initial state already meets the task"
        results = play(env, task.reference_plan)
        after = check(task, env)
        assert after.passed, (after.reasons, results)
    finally:
        env.close()


def test_wrong_content_fails_with_a_reason_naming_the_path() -> None:
    _need("filesystem")
    task = FIRSTS["fs_write_file"]
    call = task.reference_plan[0]
    env = start(task)
    try:
        play(env, [{"tool": "write_file", "arguments": {**call["arguments"], "content": "Hello, moon!"}}])
        passed, reasons = check(task, env)
        assert not passed and reasons == [
            "/workspace/greeting.txt holds 'Hello, moon!', wanted 'Hello, world!'"]
        fixed = {**call["arguments"], "content": "Hello, world!\n\n"}
        play(env, [{"tool": "write_file", "arguments": fixed}])
        assert check(task, env).passed, "trailing newlines are tolerated"
    finally:
        env.close()


def test_wrong_memory_and_git_states_name_what_is_wrong() -> None:
    _need("memory")
    _need("git")
    task = FIRSTS["mem_create_entity"]
    env = start(task)
    try:
        play(env, [{"tool": "create_entities", "arguments": {"entities": [
            {"name": "Marie Curie", "entityType": "chemist", "observations": []}]}}])
        assert check(task, env).reasons == ["entity 'Marie Curie' has type 'chemist', wanted 'person'"]
    finally:
        env.close()
    task = FIRSTS["git_commit_on_branch"]
    env = start(task)
    try:
        add, commit = task.reference_plan[2:]
        play(env, [add, commit])
        assert check(task, env).reasons == [
            "branch 'feature/dark-mode' does not exist",
            "the last commit on 'main' says 'Add dark theme', wanted 'Initial commit'"]
    finally:
        env.close()
