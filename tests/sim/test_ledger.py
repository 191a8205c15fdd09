"""The state ledger: each terminal and MCP check and repair, the summary, and no false alarms on the
real recordings of the shipped corpus (they are ground truth, so any contradiction there is a bug)."""

from __future__ import annotations

import json

import pytest

from agentworld.corpus import corpus_path
from agentworld.domains.actions import format_terminal_action
from agentworld.domains.mcp.ledger import McpLedger
from agentworld.domains.terminal.ledger import TerminalLedger, parse_script, printf_format
from agentworld.schema import read_bench_jsonl, strip_marker
from agentworld.sim.ledger import SUMMARY_LIMIT, Contradiction, Ledger, NullLedger, make_ledger
from agentworld.sim.types import WorldSpec

HOST = "root@abc123"
START = f"{HOST}:/app#"


def act(keys: str, first: str | None = None) -> str:
    """A terminal action as the simulator sends it."""
    return format_terminal_action([{"keystrokes": keys, "duration": 0.1}], first)


def screen(cmd: str, *out: str, cwd: str = "/app", after: str | None = None) -> str:
    """A real-looking screen: prompt + command, output, final prompt."""
    return "\n".join([f"{HOST}:{cwd}# {cmd}", *out, f"{HOST}:{after or cwd}#"])


def ledger_after(*steps: tuple[str, str]) -> TerminalLedger:
    """A terminal ledger that has seen these (keystrokes, screen) turns."""
    led = TerminalLedger(initial_screen=START)
    for keys, obs in steps:
        led.update(act(keys), obs)
    return led


def kinds(found: list[Contradiction]) -> list[str]:
    return sorted(c.kind for c in found)


# -- terminal: prompt -------------------------------------------------------------------------------


def test_prompt_must_show_new_cwd_after_cd_and_is_repaired() -> None:
    led = ledger_after()
    wrong = screen("mkdir repo && cd repo")
    found = led.check(act("mkdir repo && cd repo\n"), wrong)
    assert kinds(found) == ["prompt_cwd"] and found[0].expected == "/app/repo"
    fixed = led.repair(act("mkdir repo && cd repo\n"), wrong, found)
    assert fixed == screen("mkdir repo && cd repo", after="/app/repo")
    assert led.check(act("mkdir repo && cd repo\n"), fixed) == []


def test_prompt_must_not_change_host_and_marker_is_tolerated() -> None:
    led = ledger_after()
    wrong = "**Environment Observation:**\nroot@abc123:/app# ls\nroot@ffff00:/app#"
    found = led.check(act("ls\n"), wrong)
    assert kinds(found) == ["prompt_host"]
    assert led.repair(act("ls\n"), wrong, found) == "root@abc123:/app# ls\nroot@abc123:/app#"


def test_cd_error_home_pushd_popd() -> None:
    led = ledger_after(("cd /nope\n", screen("cd /nope", "bash: cd: /nope: No such file or directory")))
    assert led.facts.cwd == "/app"
    assert led.check(act("cd\n"), screen("cd", after="~")) == []
    assert kinds(led.check(act("cd\n"), screen("cd"))) == ["prompt_cwd"]
    led = ledger_after(("pushd /tmp\n", screen("pushd /tmp", "/tmp /app", after="/tmp")))
    assert kinds(led.check(act("popd\n"), screen("popd", "/app", cwd="/tmp", after="/tmp"))) == ["prompt_cwd"]


def test_nested_shell_resyncs_and_running_program_keeps_cwd() -> None:
    led = ledger_after()
    assert led.check(act("ssh other\n"), "root@abc123:/app# ssh other\nroot@other:~#") == []
    led = ledger_after(("sleep 5\n", f"{START} sleep 5"))
    assert kinds(led.check(act("C-c"), "^C\nroot@abc123:/tmp#")) == ["prompt_cwd"]


# -- terminal: files, variables, listings -----------------------------------------------------------


def test_cat_of_heredoc_file_must_show_content_and_is_repaired() -> None:
    keys = "cat > notes.md << 'EOF'\n# Notes\n- milk\nEOF\n"
    led = ledger_after((keys, screen("cat > notes.md << 'EOF'", "> # Notes", "> - milk", "> EOF")))
    wrong = screen("cat notes.md", "# Notes", "- bread")
    found = led.check(act("cat notes.md\n"), wrong)
    assert kinds(found) == ["file_content"]
    assert led.repair(act("cat notes.md\n"), wrong, found) == screen("cat notes.md", "# Notes", "- milk")
    assert led.check(act("head -n 1 notes.md\n"), screen("head -n 1 notes.md", "# Notes")) == []
    tail = screen("tail -1 notes.md", "# Notes")
    assert kinds(led.check(act("tail -1 notes.md\n"), tail)) == ["file_content"]


def test_echo_printf_appends_and_cat_n() -> None:
    led = ledger_after(("echo 'hello world' > h.txt\n", screen("echo 'hello world' > h.txt")),
                       ("printf 'a\\tb\\n' >> h.txt\n", screen("printf 'a\\tb\\n' >> h.txt")))
    assert led.facts.files["/app/h.txt"] == "hello world\na\tb\n"
    good = screen("cat -n h.txt", "     1  hello world", "     2  a       b")
    assert led.check(act("cat -n h.txt\n"), good) == []


def test_unknown_command_makes_contents_unknown() -> None:
    led = ledger_after(("echo v1 > f.txt\n", screen("echo v1 > f.txt")),
                       ("git restore f.txt\n", screen("git restore f.txt")))
    assert led.check(act("cat f.txt\n"), screen("cat f.txt", "v0")) == []


def test_removed_file_must_not_be_shown() -> None:
    led = ledger_after(("echo x > a.txt\n", screen("echo x > a.txt")), ("rm a.txt\n", screen("rm a.txt")))
    wrong = screen("cat a.txt", "x")
    found = led.check(act("cat a.txt\n"), wrong)
    assert kinds(found) == ["file_removed"]
    assert led.repair(act("cat a.txt\n"), wrong, found) == screen(
        "cat a.txt", "cat: a.txt: No such file or directory")


def test_echo_of_variable_must_show_value() -> None:
    led = ledger_after(("export GREETING='hi there'\n", screen("export GREETING='hi there'")))
    wrong = screen("echo $GREETING", "hello")
    found = led.check(act("echo $GREETING\n"), wrong)
    assert kinds(found) == ["env_value"]
    assert led.repair(act("echo $GREETING\n"), wrong, found) == screen("echo $GREETING", "hi there")
    assert led.check(act("echo $HOME\n"), screen("echo $HOME", "/anything")) == []


def test_ls_of_fully_created_directory() -> None:
    led = ledger_after(("mkdir d && touch d/a && mv d/a d/b && echo x > d/c\n",
                        screen("mkdir d && touch d/a && mv d/a d/b && echo x > d/c")))
    assert led.check(act("ls d\n"), screen("ls d", "b  c")) == []
    found = led.check(act("ls d\n"), screen("ls d", "a  b  c"))
    assert kinds(found) == ["dir_listing"]
    assert led.repair(act("ls d\n"), screen("ls d", "a  b  c"), found) == screen("ls d", "b  c")
    # /app itself was not created by the session: anything else may be there, but d must be
    assert led.check(act("ls\n"), screen("ls", "anything  d")) == []
    assert kinds(led.check(act("ls\n"), screen("ls", "anything"))) == ["dir_listing"]


def test_ls_must_show_files_the_session_wrote_and_not_those_it_removed() -> None:
    led = ledger_after(("echo x=1 > m.py\n", screen("echo x=1 > m.py")),
                       ("echo old > gone.txt && rm gone.txt\n", screen("echo old > gone.txt && rm gone.txt")))
    wrong = screen("ls", "proj.tar")
    found = led.check(act("ls\n"), wrong)
    assert kinds(found) == ["dir_listing"] and "m.py" in found[0].message
    assert led.repair(act("ls\n"), wrong, found) == screen("ls", "m.py  proj.tar")
    assert kinds(led.check(act("ls\n"), screen("ls", "gone.txt  m.py"))) == ["dir_listing"]
    assert led.check(act("ls\n"), screen("ls", "m.py  proj.tar")) == []
    assert led.check(act("ls -la\n"), screen("ls -la", "total 0")) == []  # long format: not judged


def test_redirected_output_prints_nothing_but_errors() -> None:
    led = ledger_after(("cd /app\n", screen("cd /app")))
    echoed = screen("echo HELLO > m.py", "HELLO")
    found = led.check(act("echo HELLO > m.py\n"), echoed)
    assert kinds(found) == ["redirected_output"]
    assert led.repair(act("echo HELLO > m.py\n"), echoed, found) == screen("echo HELLO > m.py")
    assert led.check(act("echo HELLO > m.py\n"), screen("echo HELLO > m.py")) == []
    denied = screen("echo hi > /proc/x", "bash: /proc/x: Permission denied")
    assert led.check(act("echo hi > /proc/x\n"), denied) == []
    assert led.check(act("python3 run.py > log\n"), screen("python3 run.py > log", "progress 10%")) == []


def test_shell_reader() -> None:
    script = parse_script("X=1 cat <<EOF > f\nv=$X\nEOF\necho 'a b' | tr a b; ls\nls -l")
    assert [w.text for w in script.commands[0].words] == ["X=1", "cat"]
    assert script.commands[0].heredoc == ("v=$X\n", True) and script.commands[0].redirects[0][0] == ">"
    assert [w.text for w in script.commands[1].words] == ["echo", "a b"]
    assert script.commands[1].pipe_out and script.commands[2].pipe_in and script.rest == "ls -l"
    assert not parse_script("echo 'open\n").complete
    assert parse_script("for i in 1; do cd /; done\n").compound
    assert printf_format("%s=%d\\n", ["a", "1", "b", "2"]) == "a=1\nb=2\n"


# -- summary, factory, corpus -----------------------------------------------------------------------


def test_summary_names_facts_and_is_bounded() -> None:
    led = ledger_after(("cd /tmp && export K=v\n", screen("cd /tmp && export K=v", after="/tmp")),
                       *[(f"echo {i} > f{i}.txt\n", screen(f"echo {i} > f{i}.txt", cwd="/tmp"))
                         for i in range(300)])
    text = led.summary()
    assert "cwd /tmp" in text and "K='v'" in text and "/tmp/f0.txt" in text
    assert len(text) <= SUMMARY_LIMIT and text.endswith("more)")
    assert TerminalLedger().summary() == "" and McpLedger().summary() == ""


def test_make_ledger_per_domain() -> None:
    assert isinstance(make_ledger("terminal", WorldSpec(initial_state=START)), TerminalLedger)
    assert isinstance(make_ledger("mcp"), McpLedger)
    null = make_ledger("web")
    assert isinstance(null, NullLedger) and isinstance(null, Ledger)
    assert (null.summary(), null.check("a", "b"), null.repair("a", "b", []), null.update("a", "b")) == (
        "", [], None, None)
    with pytest.raises(ValueError, match="frozen"):
        Contradiction(kind="x", message="m").model_copy(update={}).__setattr__("kind", "y")


def test_no_false_positives_on_real_corpus() -> None:
    rows = [r for r in read_bench_jsonl(corpus_path("terminal")) if r.turn_idx == len(r.prompt)]
    assert len(rows) > 40
    found = []
    for row in rows:
        led = make_ledger("terminal")
        for action, response in zip(row.prompt, row.response, strict=True):
            obs = strip_marker(response)
            found += [(row.id, c.message) for c in led.check(action, obs)]
            led.update(action, obs)
    assert found == []


# -- MCP --------------------------------------------------------------------------------------------


def call(tool: str, **args: object) -> str:
    return "**Action:**\n```json\n" + json.dumps({"tool_name": tool, "arguments": args}) + "\n```"


ORDER = {"order_id": "A1", "status": "pending", "total": 42.5, "updated_at": "t1",
         "items": [{"id": 7, "name": "pen"}]}


def test_mcp_entity_fields_are_kept_and_repaired() -> None:
    led = McpLedger()
    led.update(call("get_order", order_id="A1"), json.dumps(ORDER))
    wrong = json.dumps({**ORDER, "status": "shipped", "updated_at": "t2"}, indent=2)
    found = led.check(call("get_order", order_id="A1"), wrong)
    assert kinds(found) == ["entity_field"] and "status" in found[0].message
    fixed = led.repair(call("get_order", order_id="A1"), wrong, found)
    assert fixed is not None
    assert (json.loads(fixed)["status"], json.loads(fixed)["updated_at"]) == ("pending", "t2")
    nested = json.dumps({"orders": [{**ORDER, "items": [{"id": 7, "name": "pencil"}]}]})
    assert kinds(led.check(call("list_orders"), nested)) == ["entity_field"]
    assert "order A1" in led.summary()


def test_mcp_lookup_must_return_the_asked_id() -> None:
    led = McpLedger()
    led.update(call("get_order", order_id="A1"), json.dumps(ORDER))
    wrong = json.dumps({**ORDER, "order_id": "A2", "total": 1})
    found = led.check(call("get_order", order_id="A1"), wrong)
    assert kinds(found) == ["entity_field", "entity_id"]
    assert json.loads(led.repair(call("get_order", order_id="A1"), wrong, found) or "")["order_id"] == "A1"


def test_mcp_mutation_allows_change() -> None:
    led = McpLedger()
    led.update(call("get_order", order_id="A1"), json.dumps(ORDER))
    led.update(call("cancelOrder", order_id="A1"), json.dumps({"order_id": "A1", "status": "cancelled"}))
    assert led.check(call("get_order", order_id="A1"), json.dumps({**ORDER, "status": "cancelled"})) == []
    assert led.check(call("get_order", order_id="A1"), "Error: not found") == []
