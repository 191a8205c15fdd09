"""The interactive shell: piped input, a scripted world model, and the real sandbox."""

from __future__ import annotations

import io
import shutil

import pytest
from typer.testing import CliRunner

from agentworld.envs.sandbox import missing_tools
from agentworld.models.base import ChatResult
from agentworld.models.scripted import ScriptedBackend
from agentworld.serve.shell import run_shell, shell_action
from agentworld.serve.shell_cli import app
from agentworld.sim import Simulator, WorldSpec


def reply(text: str) -> str:
    return f"<predicted_observation>\n{text}\n</predicted_observation>"


def test_typed_lines_become_actions() -> None:
    assert shell_action("ls -la", "terminal") == [{"keystrokes": "ls -la\n", "duration": 1.0}]
    assert shell_action("^C", "terminal") == [{"keystrokes": "C-c", "duration": 0.5}]
    assert shell_action(":wait 3", "terminal") == [{"keystrokes": "", "duration": 3.0}]
    assert shell_action('{"tool_name": "x", "arguments": {}}', "mcp") == {"tool_name": "x", "arguments": {}}
    with pytest.raises(ValueError, match="JSON tool call"):
        shell_action("x(1)", "mcp")


def test_shell_session_with_a_scripted_model() -> None:
    prompt = "root@abc123:/app#"
    model = ScriptedBackend([
        ChatResult(content=reply(f"{prompt} mkdir src && cd src\n{prompt[:-1]}/src#"), reasoning="cd moves"),
        reply(f"{prompt[:-1]}/src# echo hi\nhi\n{prompt[:-1]}/src#"),
    ])
    out = io.StringIO()
    lines = "mkdir src && cd src\necho hi\n:state\n:help\n:quit\nnever read\n"
    steps = run_shell(Simulator(model), io.StringIO(lines), out, spec=WorldSpec(initial_state=prompt),
                      show_reasoning=True)
    text = out.getvalue()
    assert steps == 2
    model.assert_complete()
    assert text.startswith(f"{prompt} mkdir src && cd src\n[model]\n│ cd moves\n")
    assert "root@abc123:/app/src# echo hi\n[model]\nhi\nroot@abc123:/app/src# :state\nturn 2" in text
    assert "cwd /app/src" in text  # the ledger tracks the working directory
    assert ":wait N" in text and "never read" not in text
    assert text.count("echo hi") == 1  # the typed line is not repeated from the observation


def test_shell_mcp_lines_are_json_tool_calls() -> None:
    tools = [{"name": "echo", "description": "Echo.", "inputSchema": {
        "type": "object", "required": ["text"], "properties": {"text": {"type": "string"}}}}]
    model = ScriptedBackend([reply('{"echo": "hi"}')])
    out = io.StringIO()
    run_shell(Simulator(model), io.StringIO('{"tool_name": "echo", "arguments": {"text": "hi"}}\nnot json\n'
                                            '{"tool_name": "echo", "arguments": {}}\n'), out,
              spec=WorldSpec(domain="mcp", tools=tools))
    text = out.getvalue()
    assert "1 tools available" in text or "echo" in text.splitlines()[1]
    assert '[model]\n{"echo": "hi"}' in text
    assert "error: type a JSON tool call" in text
    assert "[template]\nError:" in text  # arguments breaking the schema never reach the model


def test_cli_without_a_model_reports_the_error_and_continues() -> None:
    result = CliRunner().invoke(app, ["--route", "model", "--model", "none"], input="ls\n:quit\n")
    assert result.exit_code == 0, result.output
    assert "error: no world model" in result.output


@pytest.mark.sandbox
@pytest.mark.skipif(bool(missing_tools()) or shutil.which("tmux") is None, reason="needs bubblewrap and tmux")
def test_cli_route_real_runs_in_the_sandbox() -> None:
    result = CliRunner().invoke(app, ["--route", "real", "--model", "none", "--seed", "5"],
                                input="echo $((6 * 7))\npwd\n:quit\n")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("root@") and lines[0].endswith(":/app# echo $((6 * 7))")
    assert lines[1:3] == ["[real]", "42"]
    assert "[real]\n/app\n" in result.output
