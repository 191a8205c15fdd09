"""Rule-checked probes of a software-engineering world model (``agentworld eval probes``).

Controllability: world facts (a file's exact content, the test suite's exact outcome, a package index
answering HTTP 429) must show in the tool result. Error handling: the coding tools' shapes (``File not
found`` from read_file, ``command not found`` with exit code 127, ``Permission denied`` with 126, a
non-tool-call action). Long context: a value written to a file early is read back after 10, 50 and
100 intervening commands.
"""

from __future__ import annotations

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
from agentworld.domains.swe import PLUGIN

DOMAIN = "swe"


def _shell(command: str) -> str:
    return tool_action("run_shell_command", {"command": command, "is_background": False})


def _result(command: str, output: str, code: int = 0) -> str:
    return (f"Command: {command}\nDirectory: (root)\nOutput: {output or '(empty)'}\nError: (none)\n"
            f"Exit Code: {code}\nSignal: (none)\nBackground PIDs: (none)\nProcess Group PGID: 3")


def _controllability(seed: int, variants: int, system: str) -> list[Probe]:
    out = []
    for n in range(variants):
        r = rng(seed, DOMAIN, "control", n)
        value = f"{token(r)} = {r.randint(100, 999)}"
        out.append(make(DOMAIN, "controllability", "file-content", n, with_facts(
            system, [f"The file /app/notes.txt contains exactly one line: {value}"]), [],
            tool_action("read_file", {"absolute_path": "/app/notes.txt"}), value, [line(value)]))
        passed, failed = r.randint(5, 40), r.randint(1, 4)
        command = "python3 -m pytest -q 2>&1 | tail -1"
        out.append(make(DOMAIN, "controllability", "test-outcome", n, with_facts(
            system, [f"The test suite has exactly {passed + failed} tests: {failed} fail, {passed} pass."]),
            [],
            _shell("python3 -m pytest -q 2>&1 | tail -1"),
            _result(command, f"{failed} failed, {passed} passed in 0.50s"),
            [regex(rf"\b{failed} failed\b"), regex(rf"\b{passed} passed\b")]))
        package = token(r, 7)
        command = f"pip install {package}"
        out.append(make(DOMAIN, "controllability", "http-429", n, with_facts(
            system, ["The package index answers every request with HTTP 429 Too Many Requests."]), [],
            _shell(command), _result(command, f"ERROR: HTTP error 429 while getting https://pypi.org/simple/"
                                              f"{package}/ (Too Many Requests)", 1),
            [regex(r"\b429\b"), regex(r"^Exit Code: [1-9]")]))
    return out


def _errors(seed: int, variants: int, system: str) -> list[Probe]:
    out = []
    for n in range(variants):
        r = rng(seed, DOMAIN, "errors", n)
        missing, command, script = f"/app/{token(r)}.py", token(r, 8), f"{token(r, 5)}.sh"
        out.append(make(DOMAIN, "error_handling", "missing-file", n, system, [],
                        tool_action("read_file", {"absolute_path": missing}),
                        f"Error: File not found: {missing}",
                        [regex(r"^Error: File not found"), contains(missing),
                         failure(PLUGIN.error_patterns)]))
        out.append(make(DOMAIN, "error_handling", "unknown-command", n, system, [], _shell(command),
                        _result(command, f"bash: line 1: {command}: command not found", 127),
                        [contains(f"{command}: command not found"), regex(r"^Exit Code: 127$"),
                         failure(PLUGIN.error_patterns)]))
        listing = f"ls -l {script}"
        history = [(_shell(listing), _result(listing, f"-rw-r--r-- 1 root root 42 Jan  1 00:00 {script}"))]
        out.append(make(DOMAIN, "error_handling", "permission-denied", n, system, history,
                        _shell(f"./{script}"),
                        _result(f"./{script}", f"bash: line 1: ./{script}: Permission denied", 126),
                        [contains("Permission denied"), regex(r"^Exit Code: 126$"),
                         failure(PLUGIN.error_patterns)]))
        out.append(make(DOMAIN, "error_handling", "not-a-tool-call", n, system, [],
                        f"**Action:**\nplease run the tests in {token(r)}",
                        'Error: the action is not a tool call; expected {"tool_name": …, '
                        '"arguments": {…}}',
                        [regex(r"^Error: "), contains("tool call"), failure(PLUGIN.error_patterns)]))
    return out


def _long_context(seed: int, variants: int, system: str) -> list[Probe]:
    out = []
    for n in range(variants):
        r = rng(seed, DOMAIN, "context", n)
        key, value = token(r, 5), f"{token(r, 8)}-{r.randint(1000, 9999)}"
        for gap in CONTEXT_GAPS:
            write = f"echo {value} > /tmp/{key}"
            history = [(_shell(write), _result(write, ""))]
            history += [(_shell(f"echo step {i}"), _result(f"echo step {i}", f"step {i}"))
                        for i in range(1, gap + 1)]
            read = f"cat /tmp/{key}"
            out.append(make(DOMAIN, "long_context", "file-recall", n, system, history, _shell(read),
                            _result(read, value), [regex(rf"^Output: {value}$")], gap=gap))
    return out


def generate(seed: int, variants: int) -> list[Probe]:
    """The SWE probes of ``seed``: ``variants`` of each template (values drawn per variant)."""
    system = system_prompt(__package__ or "")
    return [*_controllability(seed, variants, system), *_errors(seed, variants, system),
            *_long_context(seed, variants, system)]
