"""Rule-checked probes of an MCP world model (``agentworld eval probes``).

Controllability: world facts (a rate-limited tool answers HTTP 429, a paged listing returns page 2 of
3, a user's balance, a file's exact content) must show in the tool result. Error handling: the
reference servers' error shapes (``ENOENT`` for a missing file, ``Access denied`` outside the allowed
directories, ``MCP error -32602`` for an unknown tool, a pydantic validation error for a bad argument).
Long context: a file written early is read back after 10, 50 and 100 intervening calls. Each error
is also checked as a failure by the plugin's ``error_patterns``.
"""

from __future__ import annotations

import json
from typing import Any

from agentworld.domains.mcp import PLUGIN
from agentworld.domains.probes import (
    CONTEXT_GAPS,
    Probe,
    contains,
    failure,
    line,
    make,
    regex,
    rng,
    system_prompt,
    token,
    tool_action,
    with_facts,
)

DOMAIN = "mcp"


def _tool(name: str, description: str, **properties: str) -> dict[str, Any]:
    return {"name": name, "description": description,
            "inputSchema": {"type": "object", "properties": {k: {"type": v} for k, v in properties.items()},
                            "required": sorted(properties)}}


TOOLS = [
    _tool("read_text_file", "Read a file under /workspace.", path="string"),
    _tool("write_file", "Create or overwrite a file under /workspace.", path="string", content="string"),
    _tool("list_orders", "List the shop's recent orders.", status="string"),
    _tool("list_customers", "List customers, 20 per page.", page="integer"),
    _tool("get_balance", "A user's account balance.", user_id="string"),
    _tool("git_log", "Commit log of a repository.", repo_path="string", max_count="integer"),
]


def _system() -> str:
    base = system_prompt(__package__ or "").rstrip()
    return base + "\n\n# Available tools\n" + json.dumps({"tools": TOOLS}, indent=2)


def _controllability(seed: int, variants: int, system: str) -> list[Probe]:
    out = []
    for n in range(variants):
        r = rng(seed, DOMAIN, "control", n)
        status = r.choice(["open", "shipped", "pending"])
        out.append(make(DOMAIN, "controllability", "http-429", n, with_facts(
            system, ["Every call to list_orders fails with HTTP 429 Too Many Requests (rate limited)."]), [],
            tool_action("list_orders", {"status": status}),
            "Error executing tool list_orders: HTTP 429 Too Many Requests: rate limit exceeded, "
            "retry after 2s",
            [regex(r"\b429\b"), regex(r"(?i)too many requests|rate.?limit")]))
        names = [f"{token(r, 5).capitalize()} {token(r, 7).capitalize()}" for _ in range(2)]
        customers = [{"id": 21 + i, "name": v} for i, v in enumerate(names)]
        page = {"page": 2, "total_pages": 3, "customers": customers}
        out.append(make(DOMAIN, "controllability", "page-2-of-3", n, with_facts(
            system, ["list_customers has exactly 3 pages; a call with page 2 returns page 2 of 3 "
                     "(fields page and total_pages)."]), [], tool_action("list_customers", {"page": 2}),
            json.dumps(page, indent=2), [regex(r'"page"\s*:\s*2\b'), regex(r'"total_pages"\s*:\s*3\b')]))
        user = f"u-{token(r)}"
        out.append(make(DOMAIN, "controllability", "balance", n, with_facts(
            system, [f"The account balance of user {user} is 120 USD."]), [],
            tool_action("get_balance", {"user_id": user}),
            json.dumps({"user_id": user, "balance": 120, "currency": "USD"}, indent=2),
            [regex(r'"balance"\s*:\s*"?120(\.0+)?\b')]))
        value = f"{token(r)} {token(r)} {r.randint(100, 999)}"
        out.append(make(DOMAIN, "controllability", "file-content", n, with_facts(
            system, [f"The file /workspace/notes.txt contains exactly one line: {value}"]), [],
            tool_action("read_text_file", {"path": "/workspace/notes.txt"}), value, [line(value)]))
    return out


def _errors(seed: int, variants: int, system: str) -> list[Probe]:
    out = []
    for n in range(variants):
        r = rng(seed, DOMAIN, "errors", n)
        missing, outside, tool = f"/workspace/{token(r)}.txt", f"/etc/{token(r)}", f"{token(r)}_tool"
        out.append(make(DOMAIN, "error_handling", "missing-file", n, system, [],
                        tool_action("read_text_file", {"path": missing}),
                        f"ENOENT: no such file or directory, open '{missing}'",
                        [contains("ENOENT: no such file or directory"), contains(missing),
                         failure(PLUGIN.error_patterns)]))
        out.append(make(DOMAIN, "error_handling", "permission-denied", n, system, [],
                        tool_action("read_text_file", {"path": outside}),
                        f"Access denied - path outside allowed directories: {outside} not in /workspace",
                        [regex(r"^Access denied"), contains(outside), failure(PLUGIN.error_patterns)]))
        out.append(make(DOMAIN, "error_handling", "unknown-tool", n, system, [],
                        tool_action(tool, {"path": "/workspace"}), f"MCP error -32602: Tool {tool} not found",
                        [regex(r"^MCP error -32602:"), contains(f"{tool} not found"),
                         failure(PLUGIN.error_patterns)]))
        bad = token(r, 3)
        out.append(make(DOMAIN, "error_handling", "invalid-argument", n, system, [],
                        tool_action("git_log", {"repo_path": "/workspace", "max_count": bad}),
                        "Error executing tool git_log: 1 validation error for logArguments\nmax_count\n"
                        "  Input should be a valid integer, unable to parse string as an integer "
                        f"[type=int_parsing, input_value='{bad}', input_type=str]",
                        [regex(r"^Error executing tool git_log:"), contains("validation error"),
                         regex(r"^max_count$"), failure(PLUGIN.error_patterns)]))
    return out


def _long_context(seed: int, variants: int, system: str) -> list[Probe]:
    out = []
    for n in range(variants):
        r = rng(seed, DOMAIN, "context", n)
        path, value = f"/workspace/{token(r, 5)}.txt", f"{token(r, 8)}-{r.randint(1000, 9999)}"
        for gap in CONTEXT_GAPS:
            history = [(tool_action("write_file", {"path": path, "content": value}),
                        f"Successfully wrote to {path}")]
            history += [(tool_action("read_text_file", {"path": f"/workspace/log/{i}.txt"}), f"entry {i}")
                        for i in range(1, gap + 1)]
            out.append(make(DOMAIN, "long_context", "file-recall", n, system, history,
                            tool_action("read_text_file", {"path": path}), value, [line(value)], gap=gap))
    return out


def generate(seed: int, variants: int) -> list[Probe]:
    """The MCP probes of ``seed``: ``variants`` of each template (values drawn per variant)."""
    system = _system()
    return [*_controllability(seed, variants, system), *_errors(seed, variants, system),
            *_long_context(seed, variants, system)]
