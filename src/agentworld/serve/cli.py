"""``agentworld mock-server``: run the mock OpenAI-compatible server from the command line."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agentworld.cli_support import new_app
from agentworld.serve.mock_server import MALFORMED_KINDS, MockConfig, serve_forever

app = new_app("Serving helpers.")


@app.callback()
def _group() -> None:
    """Serving helpers (a callback keeps ``mock-server`` a named sub-command when used standalone)."""


@app.command("mock-server")
def mock_server(
    data: Annotated[list[Path], typer.Option("--data", help="AgentWorldBench JSONL file or folder (repeat).",
                                             show_default=False)],
    host: Annotated[str, typer.Option(help="Address to bind (keep 127.0.0.1 unless needed).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port; 0 picks a free one (the URL is printed).")] = 0,
    latency_ms: Annotated[float, typer.Option(help="Delay before every answer.")] = 0.0,
    corruption_rate: Annotated[float, typer.Option(help="Fraction of samples answered wrongly.")] = 0.0,
    error_rate: Annotated[float, typer.Option(help="Fraction of requests answered with HTTP 500.")] = 0.0,
    rate_limit_rate: Annotated[float, typer.Option(help="Fraction answered with HTTP 429.")] = 0.0,
    malformed_judge_rate: Annotated[float, typer.Option(help="Fraction of judge replies broken.")] = 0.0,
    truncate_rate: Annotated[float, typer.Option(help="Fraction answered with finish_reason=length.")] = 0.0,
    malformed_kind: Annotated[list[str] | None, typer.Option(
        help=f"Broken-verdict kinds to use (repeat; default all: {', '.join(MALFORMED_KINDS)}).")] = None,
    seed: Annotated[int, typer.Option(help="Seed of every injected behaviour.")] = 0,
    thinking: Annotated[bool, typer.Option(help="Prepend <think>…</think> to answers.")] = False,
    reasoning_field: Annotated[str | None, typer.Option(
        help="Put reasoning in this message field instead: reasoning (vLLM) or reasoning_content "
             "(SGLang).")] = None,
) -> None:
    """Serve AgentWorldBench ground truth (and a judge) over the OpenAI chat-completions API."""
    if reasoning_field not in (None, "reasoning", "reasoning_content"):
        raise typer.BadParameter("must be 'reasoning' or 'reasoning_content'", param_hint="--reasoning-field")
    unknown = sorted(set(malformed_kind or ()) - set(MALFORMED_KINDS))
    if unknown:
        raise typer.BadParameter(f"unknown kinds {unknown}; known: {', '.join(MALFORMED_KINDS)}",
                                 param_hint="--malformed-kind")
    config = MockConfig(
        data=data, host=host, port=port, latency_ms=latency_ms, corruption_rate=corruption_rate,
        error_rate=error_rate, rate_limit_rate=rate_limit_rate, malformed_judge_rate=malformed_judge_rate,
        truncate_rate=truncate_rate, seed=seed, thinking=thinking, reasoning_field=reasoning_field,
        malformed_kinds=tuple(malformed_kind) if malformed_kind else MALFORMED_KINDS,
    )
    serve_forever(config, announce=lambda url: typer.echo(f"mock server listening on {url}", err=False))
