"""The offline demo: record real sessions of every real domain, simulate them, score them, write the report.

Runs on a fresh machine with no network and no key. Each real domain's package ships held-out
scenarios (never in its corpus); the demo records them fresh in the domain's real environment. The
world model is the retrieval baseline built from the shipped corpora *without* the demo's
trajectories (so it predicts sessions it has never seen); the score is the judge-free rule tier, one
row per domain. With ``model_base_url`` the demo uses that world
model instead, and with a judge it adds the rubric scores.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import Field

from agentworld.endpoints import JudgeEndpoint, ModelEndpoint

if TYPE_CHECKING:
    from rich.console import Console

    from agentworld.domains.base import DomainPlugin

class DemoConfig(ModelEndpoint, JudgeEndpoint):
    """Offline demo: record held-out scenarios of every real domain (terminal, MCP, web, SWE, search),
    simulate them, score them by the rule tier with one row per domain, write the report (one run folder
    per world model)."""

    out: Path = Field(Path("agentworld-demo"), description="Folder for the recordings, the runs and the "
                      "report (resumed when it exists).",
                      json_schema_extra={"output": "folder"})
    model: str = Field("retrieval", description="World model: the served model name with --model-base-url; "
                       "without it a backend name (default: the offline retrieval baseline, built from the "
                       "shipped corpora without the demo's recordings).")
    seed: int = Field(0, description="Seed of the sandbox hostnames and any sampling.")
    domains: list[str] = Field(default_factory=list, description="Real domain to record and simulate "
                               "(repeat the option or separate by commas; default: every domain with a real "
                               "environment).")


def demo_domains(config: DemoConfig) -> list[DomainPlugin]:
    """The real domains the demo covers: those whose package ships a recorder and held-out scenarios."""
    from agentworld.domains.base import plugins
    from agentworld.errors import AgentWorldError

    real = {name: p for name, p in plugins().items() if p.recorder and p.data_file(p.heldout_scenarios)}
    wanted = [d for item in config.domains for d in item.split(",") if d.strip()] or list(real)
    unknown = [d for d in wanted if d not in real]
    if unknown:
        raise AgentWorldError(f"--domains: no real environment for {', '.join(unknown)}; "
                              f"real domains: {', '.join(real) or 'none'}")
    return [real[d.strip()] for d in wanted]


def record_domain(plugin: DomainPlugin, data_file: Path, seed: int, console: Console) -> bool:
    """Record ``plugin``'s held-out scenarios into ``data_file`` (resumes); False when it could not."""
    from rich.markup import escape

    from agentworld.domains.base import resolve
    from agentworld.errors import AgentWorldError

    try:
        command = resolve(plugin.recorder or "")
        fields = command.options.model_fields
        options: dict[str, object] = {"scenarios": plugin.data_file(plugin.heldout_scenarios),
                                      "out": data_file, "resume": True}
        if "seed" in fields:
            options["seed"] = seed
        with console.status(f"recording {plugin.display}: real environment"):
            command.run(command.options(**{k: v for k, v in options.items() if k in fields}))
    except AgentWorldError as exc:
        console.print(f"[yellow]{plugin.display}: not recorded: {exc}[/]")
        return False
    except ImportError as exc:  # an install without the domain's extra: skip it, run the others
        missing = (exc.name or str(exc)).split(".")[0]
        how = f"pip install 'agentworld[{plugin.pip_extra}]'" if plugin.pip_extra else f"install {missing}"
        console.print(f"[yellow]{plugin.display}: skipped: {missing} is not installed ({escape(how)})[/]",
                      highlight=False)
        return False
    rows = sum(1 for line in data_file.open("rb") if line.strip()) if data_file.is_file() else 0
    console.print(f"{plugin.display}: {rows} real turn(s) in {data_file}")
    return rows > 0


def run_demo(config: DemoConfig, console: Console | None = None) -> Path:
    """Run the whole demo; returns the path of the HTML report."""
    from rich.console import Console

    from agentworld.eval.config import EvalConfig
    from agentworld.eval.report import write_report
    from agentworld.eval.runner import run_eval
    from agentworld.eval.score import render
    from agentworld.models.base import ChatBackend

    console = console or Console()
    out = Path(config.out)
    domains = demo_domains(config)
    console.rule(f"1. record held-out scenarios of {len(domains)} real domain(s)")
    data_files = [out / "data" / f"{p.name}_test.jsonl" for p in domains]
    recorded = [f for p, f in zip(domains, data_files, strict=True)
                if record_domain(p, f, config.seed, console)]
    if not recorded:
        from agentworld.errors import AgentWorldError

        raise AgentWorldError("no domain could be recorded; run ./install.sh for the sandbox, the browser "
                              "and the MCP servers")

    model: ChatBackend | None = None
    if config.model_base_url is None and config.model == "retrieval":
        # Built by the run: --exclude-own's default leaves each held-out session's own recording out.
        console.print("world model: the retrieval baseline over "
                      f"{'--model-corpus' if config.model_corpus else 'the shipped corpora'}, without the "
                      "recordings of the held-out scenarios")
    elif config.model_base_url is None:
        model = config.model_endpoint().backend()
    console.rule("2. simulate them with the world model, 3. score")
    judge_tag = f"+{config.judge_model}" if config.judge_base_url else ""
    run_dir = out / "runs" / re.sub(r"[^A-Za-z0-9._-]+", "_", f"{config.model}{judge_tag}")
    run_config = EvalConfig(
        data=recorded, out=run_dir, model=config.model, model_base_url=config.model_base_url,
        model_corpus=config.model_corpus if model is None and config.model_base_url is None else [],
        model_api_key=config.model_api_key, judge_base_url=config.judge_base_url,
        judge_model=config.judge_model, judge_api_key=config.judge_api_key,
        no_judge=config.judge_base_url is None, temperature=0.0 if model is not None else 0.6,
        seed=config.seed)
    report = run_eval(run_config, model=model)
    render(report, console)
    path = write_report(run_dir)
    console.rule("done")
    console.print(f"report: {path.resolve()}")
    return path
