"""The real search environment: a BM25 index over a fixture folder, the three official tools, the recorder."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentworld.cli import app
from agentworld.domains.actions import tool_call
from agentworld.domains.search.record import load_search_scenarios
from agentworld.domains.search.tools import SearchTools
from agentworld.envs.search_index import SearchIndex, SearchIndexError, html_to_text
from agentworld.errors import DataError
from agentworld.schema import OBSERVATION_MARKER, load_samples

DOCS = Path(__file__).parent / "fixtures" / "search_docs"
JSON_URL = "https://docs.python.org/3/library/json.html"
RESULT_RE = re.compile(r"^\[(\d+)\] (https://\S+)\nTitle: (.+)\nSnippet: (.+)\nDate: (.+)$")
runner = CliRunner()


@pytest.fixture(scope="module")
def index() -> SearchIndex:
    return SearchIndex.from_folder(DOCS)


def test_query_ranks_the_relevant_page_first_in_the_official_format(index: SearchIndex) -> None:
    out = SearchTools(index).call("web_search", {"queries": ["serialize an object to a JSON string",
                                                             "filesystem paths"]})
    blocks = out.split("\n\n")
    results = [RESULT_RE.match(b) for b in blocks]
    assert all(results), out
    numbers = [int(m.group(1)) for m in results if m]
    assert numbers == list(range(1, len(numbers) + 1))  # numbering runs on across the batch
    first = results[0]
    assert first is not None
    assert first.group(2) == JSON_URL
    assert first.group(3) == "json — JSON encoder and decoder — Python 3 documentation"
    assert "json.dumps() to serialize an object" in first.group(4) and first.group(5) == "N/A"
    urls = [m.group(2) for m in results if m]
    assert "https://docs.python.org/3/library/pathlib.html" in urls[urls.index(JSON_URL) + 1:]


def test_query_with_no_match_says_so(index: SearchIndex) -> None:
    assert SearchTools(index).call("web_search", {"query": "zzyzx"}) == "No results found for 'zzyzx'."
    assert SearchTools(index).call("web_search", {"queries": []}).startswith("Error: web_search needs")


def test_extractor_returns_the_page_text_without_boilerplate(index: SearchIndex) -> None:
    tools = SearchTools(index)
    text = tools.call("web_extractor", {"url": JSON_URL})
    assert text.startswith("# json — JSON encoder and decoder\n")
    assert "## Basic Usage" in text and "- dumps: object to string\n- loads: string to object" in text
    assert "| JSON | Python |" in text and ">>> json.dumps([1, 2])\n'[1, 2]'" in text
    for boilerplate in ("tracking", "color: red", "Previous topic", "Copyright", "¶", "index"):
        assert boilerplate not in text, boilerplate
    assert tools.call("web_extractor", {"url": JSON_URL + "#basic-usage"}) == text
    assert tools.call("web_extractor", {"url": "https://example.com/x"}) == (
        "Error: failed to fetch https://example.com/x: the page is not accessible")


def test_memory_add_retrieve_update_remove_round_trip(index: SearchIndex) -> None:
    tools = SearchTools(index)

    def mem(**arguments: object) -> str:
        return tools.call("dict_memory", dict(arguments))

    assert mem(operation="add", dict={"lib": "json", "n": 2}) == (
        "Successfully added items of ['lib', 'n'] to memory.")
    assert json.loads(mem(operation="retrieve", key_list=["lib"])) == {"lib": "json"}
    assert mem(operation="update", dict={"n": 3}) == "Successfully updated items of ['n'] in memory."
    assert json.loads(mem(operation="retrieve_all")) == {"lib": "json", "n": 3}
    assert mem(operation="retrieve", key_list=["nope"]) == "Key not found: ['nope']"
    assert mem(operation="remove", key_list=["lib"]) == "Successfully removed items of ['lib'] from memory."
    assert mem(operation="retrieve", key_list=["lib"]) == "Key not found: ['lib']"
    assert mem(operation="remove_all") == "Successfully cleared all memory."
    assert mem(operation="retrieve_all") == "Memory is empty."
    assert mem(operation="explode").startswith("Error: dict_memory needs 'operation'")


def test_html_to_text_keeps_title_and_drops_scripts() -> None:
    title, text = html_to_text("<html><head><title>T &amp; U</title><script>x=1</script></head>"
                               "<body><p>a <b>bold</b>\n word</p><nav>menu</nav></body></html>")
    assert (title, text) == ("T & U", "a bold word")


def test_empty_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SearchIndexError, match="holds no readable"):
        SearchIndex.from_folder(tmp_path)


def _scenarios(tmp_path: Path) -> Path:
    path = tmp_path / "scenarios.json"
    path.write_text(json.dumps([
        {"name": "json-lookup", "calls": [
            {"tool": "web_search", "arguments": {"queries": ["json encoder"]}},
            {"tool": "web_extractor", "arguments": {"url": JSON_URL}},
            {"tool": "dict_memory", "arguments": {"operation": "add", "dict": {"module": "json"}}}]},
        {"name": "paths", "calls": [{"tool": "web_search", "arguments": {"query": "pathlib"}}]}]))
    return path


def test_record_search_writes_valid_rows(tmp_path: Path) -> None:
    out = tmp_path / "search.jsonl"
    args = ["record", "search", "--scenarios", str(_scenarios(tmp_path)), "--out", str(out),
            "--docs", str(DOCS)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    samples = load_samples([out])
    assert [s.id for s in samples] == ["json-lookup-t1", "json-lookup-t2", "json-lookup-t3", "paths-t1"]
    assert {s.task for s in samples} == {"search"}
    last = samples[2]
    assert tool_call(last.prompt[0]) == ("web_search", {"queries": ["json encoder"]})
    assert last.prompt[0].startswith("**Action:**\n```json\n{\"tool_name\": \"web_search\"")
    assert last.response[0].startswith(f"{OBSERVATION_MARKER}\n[1] {JSON_URL}\nTitle: json")
    assert last.response[2] == f"{OBSERVATION_MARKER}\nSuccessfully added items of ['module'] to memory."
    again = runner.invoke(app, args)
    assert again.exit_code == 2 and "--overwrite" in again.output


@pytest.mark.parametrize(("content", "message"), [
    ("[{\"name\": \"x\", \"calls\": [{\"tool\": \"browse\", \"arguments\": {}}]}]", r"calls\[0\]"),
    ("{not json", "malformed JSON"),
    ("[{\"name\": \"bad name\", \"calls\": []}]", "name must be"),
])
def test_bad_scenarios_file_is_one_red_line_and_exit_2(tmp_path: Path, content: str, message: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    with pytest.raises(DataError, match=message):
        load_search_scenarios(bad)
    result = runner.invoke(app, ["record", "search", "--scenarios", str(bad),
                                 "--out", str(tmp_path / "o.jsonl"), "--docs", str(DOCS)])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "bad.json" in lines[0], result.output
    assert not (tmp_path / "o.jsonl").exists()
