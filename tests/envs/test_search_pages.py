"""A ``--docs`` folder with hostile pages: each bad page costs that page only, and is named.

Pages in UTF-16 (with a BOM), in a declared Latin-1, or with invalid UTF-8 bytes are indexed by their
real text; a symlink out of the folder and a FIFO are skipped; ``record search`` finishes and warns by
page name. On the old code the invalid-UTF-8 page raised ``UnicodeDecodeError`` and lost the index.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentworld.cli import app
from agentworld.envs.search_index import SearchIndex, html_to_text
from agentworld.envs.search_pages import declared_encoding, decode_page
from agentworld.schema import load_samples

runner = CliRunner()
URL = "https://docs.example/"


def _page(title: str, body: str, meta: str = "") -> str:
    return f"<html><head>{meta}<title>{title}</title></head><body><p>{body}</p></body></html>"


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "good.html").write_text(_page("Good", "plain ascii page about gardens"))
    (root / "bad.html").write_bytes(_page("Broken", "tulips caf\xe9 \xff\xfe here").encode("latin-1"))
    wide = _page("Wide", "orchids café", '<meta charset="utf-16">')
    (root / "wide.html").write_bytes(wide.encode("utf-16"))
    (root / "latin.html").write_bytes(
        _page("Latin", "daffodils naïve", '<meta http-equiv="Content-Type" content="text/html; '
              'charset=iso-8859-1">').encode("latin-1"))
    outside = tmp_path / "secret.html"
    outside.write_text(_page("Secret", "password hunter2 outside the folder"))
    (root / "link.html").symlink_to(outside)
    (root / "inside.html").symlink_to(root / "good.html")  # a link that stays inside is a page
    os.mkfifo(root / "pipe.html")  # reading it would block forever
    (root / "sub").symlink_to(tmp_path, target_is_directory=True)  # a folder link is not entered
    return root


def test_declared_and_bom_encodings_decode_and_bad_bytes_are_replaced() -> None:
    assert declared_encoding("<p>x</p>".encode("utf-16")) == "utf-16"
    assert declared_encoding(b'<meta charset="windows-1252"><p>x') == "cp1252"
    assert declared_encoding(b'<meta charset="utf-16"><p>x') is None  # ASCII bytes cannot be UTF-16
    assert declared_encoding(b'<meta charset="no-such-codec">') is None
    assert decode_page("é".encode("utf-16-le").join([b"<\x00", b""])) == ("<é", False)  # BOM-less UTF-16
    assert decode_page(b"caf\xe9") == ("caf\ufffd", True)
    assert html_to_text(b"<title>T</title><p>caf\xe9</p>") == ("T", "caf\ufffd")


def test_bad_pages_cost_only_themselves(docs: Path) -> None:
    index = SearchIndex.from_folder(docs, URL)
    texts = {d.url.removeprefix(URL): d.text for d in index.documents}
    assert texts == {"bad.html": "tulips caf\ufffd \ufffd\ufffd here",
                     "good.html": "plain ascii page about gardens",
                     "inside.html": "plain ascii page about gardens", "latin.html": "daffodils naïve",
                     "wide.html": "orchids café"}
    issues = {(i.path, i.skipped): i.reason for i in index.issues}
    assert issues == {("bad.html", False): "not valid in its encoding: undecodable bytes replaced",
                      ("link.html", True): "a symlink out of the folder",
                      ("pipe.html", True): "not a regular file"}
    assert index.search("orchids")[0].document.url == URL + "wide.html"
    assert not index.search("hunter2")


def test_record_search_over_a_folder_with_bad_pages_warns_by_name_and_finishes(docs: Path,
                                                                               tmp_path: Path) -> None:
    scenarios = tmp_path / "s.jsonl"
    scenarios.write_text(json.dumps({"name": "flowers", "calls": [
        {"tool": "web_search", "arguments": {"query": "tulips orchids daffodils"}}]}) + "\n")
    out = tmp_path / "out.jsonl"
    result = runner.invoke(app, ["record", "search", "--scenarios", str(scenarios), "--out", str(out),
                                 "--docs", str(docs), "--url-prefix", URL])
    assert result.exit_code == 0, result.output
    assert "page bad.html indexed with replacement characters" in result.output
    assert "page link.html skipped: a symlink out of the folder" in result.output
    assert "page pipe.html skipped: not a regular file" in result.output
    answer = load_samples([out])[0].ground_truth
    assert all(URL + name in answer for name in ("bad.html", "wide.html", "latin.html"))
    assert "hunter2" not in out.read_text()
