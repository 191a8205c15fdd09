"""``agentworld record search``: search scenarios against a local BM25 index (imported when it runs)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from agentworld.domains.base import RecorderCommand
from agentworld.errors import AgentWorldError


class RecordSearchOptions(BaseModel):
    """Run search scenarios (web_search, web_extractor, dict_memory) against a local BM25 index of HTML pages.

    The default collection is the Python documentation of the OS package python3-doc; each page's URL is
    URL_PREFIX plus its path in the folder. Nothing is fetched from the network.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    scenarios: Path = Field(description="Scenario JSON file: a list of {name, calls: [{tool, arguments}]}.")
    out: Path = Field(description="JSONL file of AgentWorldBench rows to write (atomically).")
    docs: Path | None = Field(None, description="Folder of HTML pages to index (default: the python3-doc "
                              "HTML folder).")
    url_prefix: str = Field("https://docs.python.org/3/", description="URL of the docs folder: a page's URL "
                            "is this plus its path in the folder.")
    top_k: int = Field(10, ge=1, le=100, description="Results per query.")
    overwrite: bool = Field(False, description="Replace an existing OUT.")


def record_search_command(options: RecordSearchOptions) -> None:
    from rich.console import Console

    from agentworld.domains import DOMAINS
    from agentworld.domains.terminal.record import trajectory_rows
    from agentworld.envs.search import DOMAIN, load_search_scenarios, record_search
    from agentworld.envs.search_index import SearchIndex, default_docs_dir
    from agentworld.io import atomic_write_jsonl

    out = options.out
    if out.exists() and out.stat().st_size and not options.overwrite:
        raise AgentWorldError(f"{out} exists; pass --overwrite to replace it")
    scenarios = load_search_scenarios(options.scenarios)
    docs = options.docs or default_docs_dir()
    if docs is None:
        raise AgentWorldError("no --docs folder given and python3-doc is not installed "
                              "(apt-get install python3-doc)")
    index = SearchIndex.from_folder(docs, options.url_prefix)
    prompt = DOMAINS[DOMAIN].system_prompt
    rows = [row for sc in scenarios
            for row in trajectory_rows(record_search(sc, index, system_prompt=prompt, top_k=options.top_k))]
    atomic_write_jsonl(out, rows)
    Console(stderr=True).print(f"recorded {len(scenarios)} scenario(s), {len(rows)} row(s) over "
                               f"{len(index.documents)} page(s) → {out}")


COMMAND = RecorderCommand(options=RecordSearchOptions, run=record_search_command)
