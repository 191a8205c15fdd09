"""The real web environment: headless Chromium (the OS package) on the local shop and MiniWoB++ pages,
driven by BrowserGym actions. Real browser, real loopback servers; a few browser starts in all."""

from __future__ import annotations

import asyncio
import http.server
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentworld.domains.base import RouteDecision, plugin, resolve
from agentworld.domains.web.actions import format_web_action, web_call, web_state
from agentworld.domains.web.record import load_web_scenarios, resolve_placeholders
from agentworld.domains.web.routing import decide
from agentworld.errors import DataError
from agentworld.schema import load_samples

HAVE_BROWSER = shutil.which("chromium") is not None and __import__("importlib").util.find_spec(
    "browsergym") is not None
browser = pytest.mark.skipif(not HAVE_BROWSER, reason="needs chromium (apt) and the web extra")
CORPUS = Path(__file__).resolve().parents[2] / "src" / "agentworld" / "domains" / "web" / "corpus.jsonl"
SMALL = [
    {"name": "buy", "start": "/", "actions": ["click({{link 'Catalog'}})", "click({{link 'Quiet Kitchens'}})",
                                              "select_option({{combobox 'Quantity'}}, '2')",
                                              "click({{button 'Add to cart'}})", "click({{link 'Home'}})"]},
    {"name": "errors", "start": "/checkout", "actions": ["fill({{textbox 'Email'}}, 'nope')",
                                                         "click({{button 'Place order'}})"]},
    {"name": "wob", "start": "miniwob/login-user", "seed": 1,
     "actions": ["fill({{textbox '' #1}}, 'keli')", "click({{button 'Login'}})"]},
]


def _write(path: Path, scenarios: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(s) + "\n" for s in scenarios))
    return path


def _run(args: list[str], **kw: object) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    env.update(kw.pop("env", {}))  # type: ignore[arg-type]
    return subprocess.Popen([sys.executable, "-m", "agentworld", *args], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)  # type: ignore[call-overload]


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                data = Path(f"/proc/{entry}/stat").read_bytes()
            except OSError:
                continue
            children.setdefault(int(data[data.rfind(b")") + 2:].split()[1]), []).append(int(entry))
    out, todo = set(), [pid]
    while todo:
        for kid in children.get(todo.pop(), []):
            out.add(kid)
            todo.append(kid)
    return out


def _alive(pid: int) -> bool:
    try:
        data = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return data[data.rfind(b")") + 2:][:1] != b"Z"


# -- without a browser -----------------------------------------------------------------------------

def test_decide_reading_actions_are_safe_and_state_changes_diverge() -> None:
    assert decide(format_web_action("scroll(0, 300)")).route == "real"
    assert decide("hover('12')").side_effects is False
    assert decide("noop(500)") == RouteDecision("real", "noop only reads the page", side_effects=False)
    click = decide(format_web_action("click('12')", current_state="Tab 0 (current): x"))
    assert (click.route, click.side_effects) == ("real", True)
    assert decide("goto('http://localhost:8000/cart')").route == "real"
    assert decide("goto('http://localhost:3000/')").route == "model"  # not the local site's origin
    outside = decide("goto('https://github.com/login')")
    assert (outside.route, outside.side_effects) == ("model", True) and "network" in outside.reason
    junk = decide("import os; os.system('id')")
    assert (junk.route, junk.side_effects) == ("model", False)
    assert decide("upload_file('3', '/etc/passwd')").route == "model"  # not in the official action space


def test_action_text_round_trip_and_placeholders() -> None:
    text = format_web_action("fill('17', 'moss')", current_state="Tab 0 (current): Home\nURL: u\n\nRoot")
    assert web_call(text) == "fill('17', 'moss')"
    assert web_state(text) == "Tab 0 (current): Home\nURL: u\n\nRoot"
    page = "\t[7] link 'Home', url='x'\n\t[9] textbox '' value='a'\n\t[12] textbox ''\n\t[13] button 'Go'"
    assert resolve_placeholders("fill({{textbox '' #2}}, 'v')", page) == "fill('12', 'v')"
    assert resolve_placeholders("click({{link 'Home'}})", page) == "click('7')"
    with pytest.raises(Exception, match=r"no node button 'Stop' with a bid"):
        resolve_placeholders("click({{button 'Stop'}})", page)


def test_bad_scenarios_name_line_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "s.jsonl"
    bad.write_text('{"name": "ok", "actions": ["noop()"]}\n{"name": "x", "actions": [], "start": "/"}\n')
    with pytest.raises(DataError, match=r"s\.jsonl:2, sample 'x', field 'actions': actions must be "
                                         r"a non-empty list") as info:
        load_web_scenarios(bad)
    assert info.value.field == "actions" and info.value.line == 2 and str(bad) in str(info.value)


def test_plugin_references_resolve() -> None:
    web = plugin("web")
    assert web is not None and web.corpus == "corpus.jsonl"
    assert resolve(web.routing or "")("noop()").route == "real"
    assert resolve(web.rules or "").frame is not None


def test_web_corpus_holds_the_rule_tier_contract() -> None:
    from agentworld.eval.rules.contract import measure_contract

    samples = load_samples([CORPUS])
    assert len(samples) >= 250 and {s.domain for s in samples} == {"web"}
    report = measure_contract(samples)
    assert report.violations() == [], report
    assert report.retrieval is not None and report.retrieval > report.baselines["repeat_previous"]


# -- with the browser ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def canary() -> Iterator[tuple[str, list[str]]]:
    """An HTTP server on another loopback address: the browser must never reach it."""
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"<title>leaked</title>")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.2", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.2:{server.server_address[1]}", hits
    server.shutdown()


@browser
def test_env_steps_and_blocks_every_other_host(canary: tuple[str, list[str]]) -> None:
    from agentworld.domains.web.env import open_environment

    url, hits = canary
    env = open_environment(seed=0, start="/catalog")
    try:
        first = env.initial_observation()
        assert first.startswith("Tab 0 (current): Catalog - Loopback Books\nURL: http://localhost:8000/catalog")
        call = resolve_placeholders("fill({{searchbox 'Search'}}, 'moss')", first)
        filled = env.step(format_web_action(call))
        assert "searchbox 'Search' value='moss', focused" in filled
        searched = env.step("keyboard_press('Enter')")
        assert "URL: http://localhost:8000/catalog?q=moss&sort=title" in searched
        assert "2 book(s) found" in searched
        outside = env.step(f"goto('{url}/secret')")
        assert "Error: " in outside and "ERR_BLOCKED_BY_CLIENT" in outside
        env.step("goto('http://example.com/')")
        assert "ERR_BLOCKED_BY_CLIENT" in env.step("goto('file:///etc/hostname')")  # no local files either
        env.step(f"goto('{CANONICAL}/')")
        page = f'data:text/html,<img src="{url}/pixel.png"><script>fetch("{url}/api")</script>'
        inline = env.step(f"goto('{page}')")
        assert "ERR_BLOCKED_BY_CLIENT" in inline  # no top-level data: pages either
        env.step("noop(300)")
        assert hits == []
        assert any(b.startswith(url) for b in env.blocked) and any("example.com" in b for b in env.blocked)
        assert "file:///etc/hostname" in env.blocked
        unknown = env.step("click('9999')")
        assert 'Error: ValueError: Could not find element with bid "9999"' in unknown
    finally:
        env.close()
        env.close()
    assert env.browser is None


CANONICAL = "http://localhost:8000"


@browser
def test_goto_opens_only_allowed_http_pages_and_about_blank() -> None:
    """``chrome://version`` used to load (route interception never sees the browser's own pages) and
    wrote Chromium's command line and temp folders into the recording."""
    from agentworld.domains.web.env import open_environment

    env = open_environment(seed=0, start="/catalog")
    try:
        env.initial_observation()
        for target in ("chrome://version", "chrome://settings", "view-source:http://localhost:8000/",
                       "javascript:void(document.body.remove())", "file:///etc/hostname", "about:version"):
            seen = env.step(f"goto('{target}')")
            assert f"Error: net::ERR_BLOCKED_BY_CLIENT at {target}" in seen, seen
            assert "URL: http://localhost:8000/catalog" in seen, seen
            assert "user-data-dir" not in seen and "Command Line" not in seen
            assert env.blocked[-1].split(":")[0] == target.split(":")[0]  # origins there are the real ones
        assert "URL: about:blank" in env.step("goto('about:blank')")
        assert "Catalog - Loopback Books" in env.step(f"goto('{CANONICAL}/catalog')")
    finally:
        env.close()


@browser
def test_the_router_runs_local_steps_for_real_until_a_model_step_may_change_the_world() -> None:
    from agentworld.sim.router import Router

    router = Router(seed=0, environment_options={"start": "/catalog"})
    try:
        assert router.route("web", "scroll(0, 200)") == "real"
        page = asyncio.run(router.execute("scroll(0, 200)"))  # each run: another event loop and thread
        call = resolve_placeholders("fill({{searchbox 'Search'}}, 'sail')", page)
        assert router.route("web", format_web_action(call)) == "real"
        assert "value='sail'" in asyncio.run(router.execute(format_web_action(call)))
        assert router.route("web", "goto('https://github.com/')") == "model"
        assert router.diverged
        later = router.decide("web", "keyboard_press('Enter')")
        assert (later.route, later.reason) == ("model", "an earlier model step changed the world")
    finally:
        router.close()


@browser
def test_recording_twice_gives_the_same_observations(tmp_path: Path) -> None:
    from agentworld.domains.web.record import record_web_to_jsonl

    scenarios = load_web_scenarios(_write(tmp_path / "s.jsonl", SMALL))
    outs = []
    for n in (1, 2):
        recorded, rows, failed = record_web_to_jsonl(scenarios, tmp_path / f"r{n}.jsonl")
        assert (recorded, rows, failed) == (3, 9, [])
        outs.append([json.loads(x) for x in (tmp_path / f"r{n}.jsonl").read_text().splitlines()])
    def seen(row: dict[str, object]) -> str:
        return row["response"][row["turn_idx"] - 1]  # type: ignore[index,operator]

    same = [seen(a) == seen(b) for a, b in zip(*outs, strict=True)]
    assert sum(same) / len(same) >= 0.95
    last = {r["id"]: seen(r) for r in outs[0]}
    assert "link 'Cart (2)'" in last["buy-t5"]  # the cart persists across pages
    assert "nope is not a valid email address." in last["errors-t2"]
    assert "Full name is required." in last["errors-t2"]
    first = outs[0][0]["prompt"][0]
    assert first.startswith("**Current State:**\nTab 0 (current): Welcome - Loopback Books")
    assert first.endswith("**Action:**\n```\nclick('8')\n```")


@browser
@pytest.mark.parametrize("long_temp", [False, True], ids=["short-TMPDIR", "long-TMPDIR"])
def test_sigkill_of_the_recorder_leaves_no_browser_and_no_temp_folder(tmp_path: Path,
                                                                      long_temp: bool) -> None:
    """A recorder killed with SIGKILL leaves no browser process and no folder behind.

    The long TMPDIR (pytest's own, ~60 characters) also checks that Chromium starts there: its
    singleton socket path would pass the 107-byte Unix socket limit if its folder sat under it.
    """
    many = [{"name": f"s{i}", "start": "/", "actions": ["click({{link 'Catalog'}})", "noop(2000)"] * 5}
            for i in range(5)]
    temp = tmp_path / "tmp" if long_temp else Path(tempfile.mkdtemp(prefix="aw", dir="/tmp"))
    temp.mkdir(exist_ok=True)
    proc = _run(["record", "web", "--scenarios", str(_write(tmp_path / "s.jsonl", many)), "--out",
                 str(tmp_path / "out.jsonl")], env={"TMPDIR": str(temp)})
    deadline = time.monotonic() + 120
    kids: set[int] = set()
    folders: set[str] = set()
    while time.monotonic() < deadline and proc.poll() is None:
        kids = _descendants(proc.pid)
        folders = {m.decode() for k in kids for m in re.findall(rb"/[^\0=]*agentworld-browser-[^/\0]+",
                                                                _cmdline(k))}
        if any(b"chrom" in _cmdline(k) for k in kids) and folders:
            break
        time.sleep(0.2)
    assert proc.poll() is None, proc.communicate()
    (folder,) = folders  # Chromium's profile and the driver's TMPDIR are inside the browser's own folder
    assert Path(folder).parent == (temp if not long_temp else Path("/tmp"))
    kids = _descendants(proc.pid)
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(timeout=30) == -signal.SIGKILL
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (any(_alive(k) for k in kids) or Path(folder).exists()):
        time.sleep(0.2)
    assert [k for k in kids if _alive(k)] == []
    assert not Path(folder).exists()
    assert list(temp.iterdir()) == []
    mentioning = [p for p in os.listdir("/proc") if p.isdigit() and _alive(int(p)) and folder.encode()
                  in _cmdline(int(p))]  # e.g. Chromium's crash handler, which leaves the process tree
    assert mentioning == []
    if not long_temp:
        temp.rmdir()


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


@browser
def test_a_chromium_that_dies_while_starting_is_started_again(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from agentworld.envs.browser import BrowserSession, find_chromium

    real = find_chromium()
    marker = tmp_path / "died-once"
    wrapper = tmp_path / "chromium"
    wrapper.write_text(f"#!/bin/sh\nif [ ! -e {marker} ]; then touch {marker}; exit 1; fi\n"
                       f"exec {real} \"$@\"\n")
    wrapper.chmod(0o755)
    monkeypatch.setenv("AGENTWORLD_CHROMIUM", str(wrapper))
    with BrowserSession(allowed_origins=("http://127.0.0.1:1",)) as session:
        assert marker.exists() and session.page is not None
