"""Tool definitions (MCP ``tools/list`` entries) from a file or a client: read, checked, applied to arguments.

Why here (``sim``): the MCP server, Sim RL rollouts, the verl config and world synthesis all load tool
lists and check calls against them the same way, and all of them sit above the simulator; the checks
themselves are :mod:`agentworld.sim.toolschema`'s safe schema compiler.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentworld.errors import DataError
from agentworld.inputs import parse_json, read_text
from agentworld.sim import toolschema

__all__ = ["check_arguments", "check_tools", "load_tools"]


def load_tools(path: str | Path) -> list[dict[str, Any]]:
    """Read MCP tool definitions (``{"tools": [...]}`` or a bare list) and check each entry.

    Raises:
        DataError: unreadable JSON, or an entry without a string ``name`` or an object
            ``inputSchema`` that the server can apply safely; the message names file, index and field.
    """
    where = str(path)
    data = parse_json(read_text(path, what="tools file"), path=where)
    tools = data.get("tools") if isinstance(data, dict) else data
    if not isinstance(tools, list):
        raise DataError('expected {"tools": [...]} or a list of tools', path=where)
    return check_tools(tools, where)


def check_tools(tools: list[Any], where: str) -> list[dict[str, Any]]:
    """The entries of a tool list, each checked as :func:`load_tools` does (errors name ``where``)."""
    seen: set[str] = set()
    for i, tool in enumerate(tools):
        _check_tool(tool, f"{where} [tool {i}]", seen)
    return [dict(t) for t in tools]


def _check_tool(tool: Any, where: str, seen: set[str]) -> None:
    if not isinstance(tool, dict):
        raise DataError(f"a tool must be an object, got {type(tool).__name__}", path=where)
    name = tool.get("name")
    if not isinstance(name, str) or not name:
        raise DataError("missing or empty tool name", path=where, field="name")
    if name in seen:
        raise DataError(f"duplicate tool name {name!r}", path=where, field="name")
    seen.add(name)
    schema = tool.get("inputSchema")
    if not isinstance(schema, dict):
        raise DataError(f"tool {name!r}: missing inputSchema (a JSON schema object)", path=where,
                        field="inputSchema")
    if schema.get("type") != "object":
        raise DataError(f'tool {name!r}: inputSchema must have "type": "object"', path=where,
                        field="inputSchema")
    try:
        toolschema.compile_schema(schema)
    except ValueError as exc:
        raise DataError(f"tool {name!r}: invalid inputSchema: {exc}", path=where,
                        field="inputSchema") from exc


def check_arguments(schema: dict[str, Any], arguments: dict[str, Any]) -> str | None:
    """Why ``arguments`` break ``schema`` (every problem, with its JSON path), or None when valid.

    Raises:
        ValueError: ``schema`` cannot be applied safely
            (see :func:`~agentworld.sim.toolschema.compile_schema`).
    """
    problem = toolschema.argument_problem(arguments)
    if problem is not None:
        return problem
    try:
        errors = toolschema.iter_problems(toolschema.compile_schema(schema), arguments)
    except toolschema.SchemaTooComplex:
        return "the arguments are too complex to check against the inputSchema"
    if not errors:
        return None
    return "; ".join(f"{toolschema.location(e)}: {toolschema.message(e)}" for e in errors)
