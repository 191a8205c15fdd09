"""Terminal routing: which keystroke actions may run in the real sandbox and which the model imagines.

Why: a real sandboxed bash is exact and free for safe local commands (``ls``, ``git status``), but
has no network, hardware or privileges, so ``curl``, ``pip install``, ``systemctl`` must be imagined by
the world model. A command line goes real only when every command in it does (pipelines, ``&&``,
``$(…)``); a model step is marked ``side_effects`` unless it only prints (``ping``, ``curl`` to
stdout), so :class:`agentworld.sim.router.Router` keeps later steps with the model after one that may
have changed the world. Bare keys and waits (``C-c``, an empty wait) follow the previous step.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from agentworld.domains.actions import PROMPT_RE
from agentworld.domains.base import RouteDecision
from agentworld.envs.sandbox import DEFAULT_PATH as SANDBOX_PATH

Prefer = Literal["fidelity", "cost"]
Action = str | Mapping[str, Any] | Sequence[Any]
MAX_COST_DURATION_S = 5.0
"""With ``prefer="cost"``, the longest action (summed keystroke durations) run for real."""


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
ACTION_HEAD = "**Action:**"
"""Where the keystrokes start in a row's action text (after the first turn's ``**Current State:**``)."""
_HEREDOC_RE = re.compile(r"(?<!<)<<(-?)\s*(['\"]?)([\w.-]+)\2")


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


def _row_action(text: str) -> Any:
    """The JSON after ``**Action:**`` in a row's action text (the screen before it may hold anything)."""
    for head in re.finditer(re.escape(ACTION_HEAD), text):
        rest = text[head.end():].lstrip()
        if rest.startswith("```"):
            rest = rest[3:].removeprefix("json").lstrip()
        try:
            return json.JSONDecoder().raw_decode(rest)[0]  # backticks typed inside the JSON stay text
        except ValueError:
            continue
    raise ValueError(f"not a terminal keystroke action: {text[:80]!r}")


def _loose_action(text: str) -> Any:
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.S)
    try:
        return json.loads(fenced.group(1) if fenced else text)
    except ValueError:
        raise ValueError(f"not a terminal keystroke action: {text[:80]!r}") from None


def keystroke_steps(action: Action) -> list[dict[str, Any]]:
    """A terminal action as a keystroke list (from the list, one step, its JSON or ``**Action:**`` text).

    Raises ValueError when it is none of these.
    """
    steps: Any = action
    if isinstance(action, str):
        steps = _row_action(action) if ACTION_HEAD in action else _loose_action(action)
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


def decide(action: Action, *, prefer: Prefer = "fidelity") -> RouteDecision:
    """Route one terminal action (its row text, or the keystroke list).

    ``prefer="fidelity"`` runs everything the rules allow for real, including any program on the
    sandbox PATH; ``"cost"`` runs only well-known cheap commands whose keystroke durations sum to at
    most :data:`MAX_COST_DURATION_S`, so slow builds and sleeps are predicted instead.
    """
    try:
        steps = keystroke_steps(action)
    except ValueError as exc:
        return RouteDecision("model", str(exc))
    text = typed_text(steps)
    if not text.strip():
        return RouteDecision("model", "keys and waits follow the previous step", side_effects=False,
                             follow=True)
    duration = sum(float(step.get("duration", 1.0) or 0.0) for step in steps)
    if prefer == "cost" and duration > MAX_COST_DURATION_S:
        return RouteDecision("model", f"{duration:g}s is longer than {MAX_COST_DURATION_S:g}s")
    return classify_script(text, strict=prefer == "cost")
