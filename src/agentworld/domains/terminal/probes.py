"""Rule-checked probes of a terminal world model (``agentworld eval probes``).

Controllability: world facts in the system prompt (a file's exact content, the hostname, an HTTP 429
from an API, a directory's listing) must show on the screen. Error handling: bash's and coreutils'
exact error lines (missing file, unknown command, permission denied, unknown option, ``cd`` into a
missing directory). Long context: a value written to a file is read back after 10, 50 and 100
intervening commands.
"""

from __future__ import annotations

import json
import re

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
    with_facts,
)
from agentworld.domains.terminal import PLUGIN

DOMAIN = "terminal"


def _action(keystrokes: str, prompt: str | None = None) -> str:
    batch = json.dumps([{"keystrokes": keystrokes + "\n", "duration": 0.5}], indent=2)
    state = f"**Current State:**\n{prompt}\n\n" if prompt is not None else ""
    return f"{state}**Action:**\n```json\n{batch}\n```"


class _Shell:
    """One imagined shell session: its prompt, and the screens its commands print."""

    def __init__(self, host: str, user: str = "root", cwd: str = "/app") -> None:
        sign = "#" if user == "root" else "$"
        self.prompt = f"{user}@{host}:{cwd}{sign}"
        self.started = False

    def turn(self, command: str, output: str = "") -> tuple[str, str]:
        action = _action(command, None if self.started else self.prompt)
        self.started = True
        body = f"{output}\n" if output else ""
        return action, f"{self.prompt} {command}\n{body}{self.prompt}"


def _controllability(seed: int, variants: int, system: str) -> list[Probe]:
    out = []
    for n in range(variants):
        r = rng(seed, DOMAIN, "control", n)
        host = token(r, 12)
        value = f"{token(r)}-{r.randint(100, 999)}"
        sh = _Shell(host)
        action, screen = sh.turn("cat notes.txt", value)
        out.append(make(DOMAIN, "controllability", "file-content", n, with_facts(
            system, [f"The file /app/notes.txt contains exactly one line: {value}"]), [], action, screen,
            [line(value)]))
        name = f"{token(r, 5)}-{r.randint(10, 99)}"
        sh = _Shell(host)
        action, screen = sh.turn("hostname", name)
        out.append(make(DOMAIN, "controllability", "hostname", n, with_facts(
            system, [f"The machine's hostname is {name}."]), [], action, screen, [line(name)]))
        url = f"https://api.{token(r)}.example/v1/items"
        command = f"curl -s -o /dev/null -w '%{{http_code}}\\n' {url}"
        sh = _Shell(host)
        action, screen = sh.turn(command, "429")
        out.append(make(DOMAIN, "controllability", "http-429", n, with_facts(
            system, [f"Every request to {url} fails with HTTP 429 Too Many Requests."]), [], action, screen,
            [line("429")]))
        files = sorted(f"{token(r, 5)}.csv" for _ in range(3))
        sh = _Shell(host)
        action, screen = sh.turn("ls data", "  ".join(files))
        out.append(make(DOMAIN, "controllability", "listing", n, with_facts(
            system, [f"The directory /app/data holds exactly three files: {', '.join(files)}."]), [], action,
            screen, [contains(f) for f in files]))
    return out


def _errors(seed: int, variants: int, system: str) -> list[Probe]:
    out = []
    for n in range(variants):
        r = rng(seed, DOMAIN, "errors", n)
        host = token(r, 12)
        missing, command, option, folder = token(r), token(r, 8), token(r, 7), token(r)
        cases = [
            ("missing-file", _Shell(host), f"cat {missing}.txt",
             f"cat: {missing}.txt: No such file or directory"),
            ("unknown-command", _Shell(host), command, f"bash: {command}: command not found"),
            ("permission-denied", _Shell(host, "agent", "~"), "cat /etc/shadow",
             "cat: /etc/shadow: Permission denied"),
            ("invalid-option", _Shell(host), f"ls --{option}",
             f"ls: unrecognized option '--{option}'\nTry 'ls --help' for more information."),
            ("missing-dir", _Shell(host), f"cd /{folder}", f"bash: cd: /{folder}: No such file or directory"),
        ]
        for name, sh, typed, error in cases:
            action, screen = sh.turn(typed, error)
            first = error.splitlines()[0]
            checks = [line(first), regex(rf"^{re.escape(sh.prompt)}\s*$"), failure(PLUGIN.error_patterns)]
            out.append(make(DOMAIN, "error_handling", name, n, system, [], action, screen, checks))
    return out


def _long_context(seed: int, variants: int, system: str) -> list[Probe]:
    out = []
    for n in range(variants):
        r = rng(seed, DOMAIN, "context", n)
        host, key, value = token(r, 12), token(r, 5), f"{token(r, 8)}-{r.randint(1000, 9999)}"
        for gap in CONTEXT_GAPS:
            sh = _Shell(host)
            history = [sh.turn(f"echo {value} > /tmp/{key}.txt")]
            history += [sh.turn(f"echo step {i}", f"step {i}") for i in range(1, gap + 1)]
            action, screen = sh.turn(f"cat /tmp/{key}.txt", value)
            out.append(make(DOMAIN, "long_context", "file-recall", n, system, history, action, screen,
                            [line(value)], gap=gap))
    return out


def generate(seed: int, variants: int) -> list[Probe]:
    """The terminal probes of ``seed``: ``variants`` of each template (values drawn per variant)."""
    system = system_prompt(__package__ or "")
    return [*_controllability(seed, variants, system), *_errors(seed, variants, system),
            *_long_context(seed, variants, system)]
