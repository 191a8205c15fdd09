"""Sim-to-real routing: which terminal steps run in the real sandbox and which the world model predicts.

Why: a real sandboxed bash is exact and free for safe local commands (``ls``, ``git status``), but
has no network, hardware or privileges, so ``curl``, ``pip install``, ``systemctl`` must be imagined by
the world model. The Simulator asks :meth:`Router.route` once per step, awaits :meth:`Router.execute`
for ``"real"`` and records the real screen in its history, so the model sees every turn. The reverse
does not hold: after the model imagined a step that may change the world (a clone, an install) the
sandbox no longer matches, so later steps stay with the model (:attr:`Router.diverged`). Input to a
program still running in the sandbox (a REPL) goes real; bare keys (``C-c``, waits) follow the last step.
"""

from __future__ import annotations

import asyncio
import json
import re
import shlex
import shutil
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from agentworld.domains.actions import PROMPT_RE
from agentworld.envs.sandbox import DEFAULT_PATH as SANDBOX_PATH

Route = Literal["real", "model"]
Policy = Literal["rules", "real", "model"]
Prefer = Literal["fidelity", "cost"]
Action = str | Mapping[str, Any] | Sequence[Any]
POLICIES: tuple[str, ...] = ("rules", "real", "model")


def words(text: str) -> frozenset[str]:
    return frozenset(text.split())


NETWORK = words(
    "curl wget ssh scp sftp rsync ping ping6 nc ncat netcat telnet ftp dig nslookup host whois traceroute "
    "apt apt-get aptitude yum dnf apk brew pacman zypper gh aws gcloud az kubectl helm http")
PRIVILEGED = words(
    "systemctl service journalctl mount umount docker podman docker-compose modprobe insmod rmmod reboot "
    "shutdown poweroff halt sysctl iptables ip6tables nft nvidia-smi lspci lsusb lsblk dmidecode fdisk "
    "parted mkfs sudo su chroot useradd userdel usermod groupadd passwd crontab dpkg rpm snap swapon "
    "swapoff hwclock timedatectl hostnamectl ufw")
_NETWORK_SUBCOMMANDS = (
    "git:clone,push,fetch,pull,ls-remote,submodule pip,pip3:install,download,wheel,search,index "
    "npm,yarn,pnpm:install,i,ci,add,update,upgrade,publish,view,search,audit,outdated "
    "gem:install,update,fetch cargo:install,fetch,update,publish,search,add,build,run go:get,install,mod "
    "conda:install,create,update uv:pip,add,sync,lock,tool,run poetry:install,add,update,lock")
NETWORK_SUBCOMMANDS: dict[str, frozenset[str]] = {
    name: frozenset(subs.split(",")) for entry in _NETWORK_SUBCOMMANDS.split()
    for names, subs in [entry.split(":")] for name in names.split(",")}
HARMLESS_REMOTE = words("ping ping6 dig nslookup host whois traceroute")
"""Network commands that print without changing local state: the sandbox stays consistent."""
CHEAP = words(
    "ls cat echo printf grep egrep fgrep wc head tail sort uniq cut tr sed awk find pwd cd mkdir rmdir touch "
    "cp mv rm ln chmod stat file du df basename dirname realpath readlink date whoami id hostname uname env "
    "printenv export unset set alias type which true false test [ seq tee xargs diff cmp md5sum sha256sum "
    "base64 tar gzip gunzip unzip zcat nl rev column od xxd paste join comm fold expr bc tree ps kill "
    "jobs clear history sleep python python3 git source . exit")
"""Commands ``prefer="cost"`` runs for real: quick, well known, no surprises."""
BUILTINS = words(
    "cd export source . alias unalias set unset type history jobs fg bg wait read exit echo printf pwd test "
    "[ [[ ]] true false let declare local shopt umask ulimit trap eval exec command builtin hash help popd "
    "pushd dirs kill return shift getopts disown mapfile readarray times : logout")
KEYWORDS = words("if then else elif fi do done while until case esac { } ! function select time")
WRAPPERS = words("nohup nice env command builtin exec xargs timeout stdbuf time")
ENTER_KEYS = frozenset({"Enter", "C-m", "KPEnter", "C-j"})
_PUNCT = "();<>|&\n"
_HEREDOC_RE = re.compile(r"(?<!<)<<(-?)\s*(['\"]?)([\w.-]+)\2")


class RealTerminal(Protocol):
    """What the router needs from :class:`agentworld.envs.terminal.TerminalSession`."""

    def initial_screen(self) -> str: ...
    def step(self, actions: Sequence[Mapping[str, Any]]) -> str: ...
    def close(self) -> None: ...


@dataclass(frozen=True)
class RouteDecision:
    """A routing decision, its reason, and whether a model step may change the world."""

    route: Route
    reason: str
    side_effects: bool = True


def _strip_heredocs(text: str) -> str:
    """Drop here-document bodies: they are data for a command, not commands."""
    lines, out, i = text.split("\n"), [], 0
    while i < len(lines):
        out.append(lines[i])
        i += 1
        for match in _HEREDOC_RE.finditer(out[-1]):
            dash, delim = match.group(1), match.group(3)
            while i < len(lines) and (lines[i].lstrip("\t") if dash else lines[i]) != delim:
                i += 1
            i += 1
    return "\n".join(out)


def command_words(text: str) -> list[list[str]]:
    """Each simple command of a script as its words (pipelines, ``&&``, ``$(…)`` split apart).

    Raises ValueError on unbalanced quotes.
    """
    lex = shlex.shlex(_strip_heredocs(text).replace("`", " ; "), posix=True, punctuation_chars=_PUNCT)
    lex.whitespace, lex.whitespace_split = " \t\r", True
    commands: list[list[str]] = [[]]
    for token in lex:
        if set(token) <= set(_PUNCT) and not set(token) & {"<", ">"}:
            commands.append([])
        else:
            commands[-1].append(token)
    return [words for words in commands if words]


def _program(words: list[str]) -> list[str]:
    """The words from the program name on: skips keywords, ``VAR=x`` prefixes and wrapper commands."""
    i = 0
    while i < len(words):
        word = words[i]
        if word in ("for", "case", "select", "in"):
            return []
        if word in KEYWORDS or re.match(r"^\w+=", word) or word.startswith(("<", ">")) or word.isdigit():
            i += 1
        elif word in WRAPPERS and i + 1 < len(words):
            i += 1
            while i < len(words) and (words[i].startswith("-") or re.match(r"^[\d.]+[smhd]?$", words[i])):
                i += 1
        else:
            return words[i:]
    return []


def classify_command(words: list[str], *, strict: bool = False) -> RouteDecision:
    """Route one simple command: real when it is safe and local, model when it needs the world."""
    words = _program(words)
    if not words or not re.search(r"[A-Za-z]", words[0]):
        return RouteDecision("real", "no program", side_effects=False)
    name = words[0]
    sub = next((w for w in words[1:] if not w.startswith("-")), "")
    if name in PRIVILEGED:
        return RouteDecision("model", f"{name} needs privileges or hardware the sandbox lacks")
    if name in NETWORK:
        harmless = name in HARMLESS_REMOTE or (name == "curl" and not any(
            w in ("-o", "-O", "--output", "--remote-name") or re.match(r"^-\w*[oO]", w) for w in words[1:]))
        return RouteDecision("model", f"{name} needs the network", side_effects=not harmless)
    if sub in NETWORK_SUBCOMMANDS.get(name, ()):
        return RouteDecision("model", f"{name} {sub} needs the network")
    if name.startswith("python") and " -m pip install " in f" {' '.join(words)} ":
        return RouteDecision("model", "pip install needs the network")
    if name in BUILTINS or (strict and name in CHEAP) or "/" in name:
        return RouteDecision("real", f"{name} is safe and local")
    if strict:
        return RouteDecision("model", f"{name} is not a known cheap command (prefer=cost)")
    if shutil.which(name, path=SANDBOX_PATH) is None:
        return RouteDecision("model", f"{name} is not installed in the sandbox")
    return RouteDecision("real", f"{name} is installed in the sandbox")


def classify_script(text: str, *, strict: bool = False) -> RouteDecision:
    """Route a typed command line: real only when every command in it is (pipelines, ``&&``, ``$(…)``)."""
    try:
        commands = command_words(text)
    except ValueError:
        return RouteDecision("model", "cannot parse the command line")
    decisions = [classify_command(words, strict=strict) for words in commands]
    model = [d for d in decisions if d.route == "model"]
    if model:
        alone = len(commands) == 1 and not any(w.startswith(">") or w.endswith(">") for w in commands[0])
        return RouteDecision("model", model[0].reason, side_effects=model[0].side_effects or not alone)
    names = ", ".join(dict.fromkeys(words[0] for words in map(_program, commands) if words))
    return RouteDecision("real", f"safe and local: {names}" if names else "no program", side_effects=False)


def keystroke_steps(action: Action) -> list[dict[str, Any]]:
    """A terminal action as a keystroke list (from the list, one step, its JSON or ``**Action:**`` text).

    Raises ValueError when it is none of these.
    """
    steps: Any = action
    if isinstance(action, str):
        fenced = re.search(r"```(?:json)?\s*(.*?)```", action, re.S)
        try:
            steps = json.loads(fenced.group(1) if fenced else action)
        except ValueError:
            raise ValueError(f"not a terminal keystroke action: {action[:80]!r}") from None
    steps = [steps] if isinstance(steps, Mapping) else steps
    if not isinstance(steps, list | tuple) or not all(
            isinstance(s, Mapping) and isinstance(s.get("keystrokes", ""), str) for s in steps):
        raise ValueError("a terminal action is a list of {\"keystrokes\": str, \"duration\": float} objects")
    return [dict(step) for step in steps]


def typed_text(steps: Sequence[Mapping[str, Any]]) -> str:
    """The text the keystrokes type: named keys dropped, Enter keys as newlines."""
    from agentworld.envs.terminal import is_key_name

    keys = [str(step.get("keystrokes") or "") for step in steps]
    return "".join(("\n" if k in ENTER_KEYS else "") if is_key_name(k) else k for k in keys)


def at_shell_prompt(screen: str) -> bool:
    """Whether a screen ends at a bare shell prompt (no program is still running in the pane)."""
    lines = screen.rstrip().splitlines()
    match = PROMPT_RE.match(lines[-1].rstrip()) if lines else None
    return match is not None and not (match.group("cmd") or "").strip()


def _default_session(seed: int) -> RealTerminal:
    from agentworld.envs.terminal import TerminalSession

    return TerminalSession(seed=seed)


class Router:
    """Decides real vs model per terminal step and runs the real ones in a lazily started sandbox.

    Args:
        policy: ``rules`` (safe local commands real, the rest model), ``real`` (every terminal step
            real) or ``model`` (never real).
        prefer: ``fidelity`` runs everything the rules allow for real, including any program on the
            sandbox PATH; ``cost`` runs only well-known cheap commands whose keystroke durations sum
            to at most ``max_real_duration_s``, so slow builds and sleeps are predicted instead.
        max_real_steps: after this many real steps the episode continues with the model.
        max_real_duration_s: with ``prefer="cost"``, the longest action run for real.
        seed: sandbox seed (its hostname); :meth:`reset` may change it per episode.
        session_factory: builds the real terminal from a seed (default: a sandboxed ``TerminalSession``).
    """

    def __init__(self, policy: Policy = "rules", *, prefer: Prefer = "fidelity",
                 max_real_steps: int | None = None, max_real_duration_s: float = 5.0, seed: int = 0,
                 session_factory: Callable[[int], RealTerminal] | None = None) -> None:
        if policy not in POLICIES:
            raise ValueError(f"unknown route policy {policy!r}; use one of {', '.join(POLICIES)}")
        if prefer not in ("fidelity", "cost"):
            raise ValueError(f"prefer must be 'fidelity' or 'cost', not {prefer!r}")
        self.policy, self.prefer, self.seed = policy, prefer, seed
        self.max_real_steps, self.max_real_duration_s = max_real_steps, max_real_duration_s
        self._factory = session_factory or _default_session
        self._session: RealTerminal | None = None
        self._lock = threading.Lock()
        self.real_steps = 0
        self.diverged = False
        """A model step may have changed the world, so the sandbox no longer matches the model's view."""
        self._busy = False
        self._last: Route = "model"

    def route(self, domain: str, action: Action) -> Route:
        """``"real"`` or ``"model"`` for this step (call once per step: it records the decision)."""
        return self.decide(domain, action).route

    def decide(self, domain: str, action: Action) -> RouteDecision:
        """Like :meth:`route`, with the reason; updates the episode's routing state."""
        decision = self._decide(domain, action)
        if domain == "terminal" and decision.route == "model" and decision.side_effects:
            self.diverged = True
        self._last = decision.route
        return decision

    def _decide(self, domain: str, action: Action) -> RouteDecision:
        if domain != "terminal":
            return RouteDecision("model", f"no real environment for domain {domain!r}", side_effects=False)
        if self.policy == "model":
            return RouteDecision("model", "route policy 'model'", side_effects=False)
        if self.max_real_steps is not None and self.real_steps >= self.max_real_steps:
            return RouteDecision("model", f"real-step budget of {self.max_real_steps} used")
        if self.policy == "real":
            return RouteDecision("real", "route policy 'real'")
        if self.diverged:
            return RouteDecision("model", "an earlier model step changed the world")
        try:
            steps = keystroke_steps(action)
        except ValueError as exc:
            return RouteDecision("model", str(exc))
        if self._busy:
            return RouteDecision("real", "input to a program still running in the sandbox")
        text = typed_text(steps)
        if not text.strip():
            return RouteDecision(self._last, "keys and waits follow the previous step", side_effects=False)
        duration = sum(float(step.get("duration", 1.0) or 0.0) for step in steps)
        if self.prefer == "cost" and duration > self.max_real_duration_s:
            return RouteDecision("model", f"{duration:g}s is longer than {self.max_real_duration_s:g}s")
        return classify_script(text, strict=self.prefer == "cost")

    async def execute(self, action: Action) -> str:
        """Run one terminal action in the real sandbox and return its screen (in a worker thread)."""
        steps = keystroke_steps(action)
        return await asyncio.to_thread(self._execute, steps)

    def _execute(self, steps: list[dict[str, Any]]) -> str:
        with self._lock:
            screen = self._terminal().step(steps)
            self.real_steps += 1
            self._busy, self._last = not at_shell_prompt(screen), "real"
            return screen

    def initial_screen(self) -> str:
        """The real sandbox's first screen (starts it), so a model episode can begin from the same prompt."""
        with self._lock:
            return self._terminal().initial_screen()

    def _terminal(self) -> RealTerminal:
        if self._session is None:
            self._session = self._factory(self.seed)
        return self._session

    def reset(self, seed: int | None = None) -> None:
        """Start a new episode: drop the sandbox (a fresh one starts on the next real step)."""
        self.close()
        self.seed = self.seed if seed is None else seed
        self.real_steps, self.diverged, self._busy, self._last = 0, False, False, "model"

    def close(self) -> None:
        """Stop the real sandbox, if one was started (idempotent)."""
        with self._lock:
            session, self._session = self._session, None
        if session is not None:
            session.close()
