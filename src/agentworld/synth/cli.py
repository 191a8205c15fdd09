"""``agentworld synth envs``: generate environments (world folders) from seeds with a generator model."""

from __future__ import annotations

from agentworld.cli_support import config_command, new_app
from agentworld.synth.check_cli import register as register_check
from agentworld.synth.config import SynthEnvsConfig
from agentworld.synth.fiction.config import FictionConfig

app = new_app("Synthesize environments: world folders from seeds and a generator model.")


@app.callback()
def _group() -> None:
    """Synthesize environments: world folders from seeds and a generator model."""


def _envs(config: SynthEnvsConfig) -> None:
    import asyncio
    import sys

    import typer

    from agentworld.report_style import StageProgress
    from agentworld.synth import template  # noqa: F401  (registers the offline generator)
    from agentworld.synth.check_cli import SynthCheckConfig, check_worlds, skipped_note
    from agentworld.synth.envs import Factory, env_name, record_verdicts
    from agentworld.synth.seeds import read_seeds
    from agentworld.synth.stages import STAGES

    seeds = read_seeds(config.seeds, config.limit)
    backend = config.generator_endpoint().backend(concurrency=config.concurrency)
    config.out.mkdir(parents=True, exist_ok=True)
    plain = config.progress and not sys.stderr.isatty()
    counts = dict.fromkeys(STAGES, 0)
    total = len(seeds) * config.per_seed

    def advance_plain(stage: str) -> None:
        counts[stage] += 1
        if counts[stage] == total:
            typer.echo(f"stage {stage}: {total}/{total} environments", err=True)

    with StageProgress(config.progress, total, STAGES) as advance:
        step = advance_plain if plain else advance
        factory = Factory(backend, config.out, model=config.generator_model, concurrency=config.concurrency,
                          max_tokens=config.max_tokens, advance=step, controls=config.controls,
                          per_seed=config.per_seed)
        generation = asyncio.run(factory.run(seeds))
    folders = [config.out / env_name(i) for i in range(len(seeds) * config.per_seed)]
    worlds = [folder for folder in folders if (folder / "world.json").is_file()]
    fields = set(SynthCheckConfig.model_fields) & set(SynthEnvsConfig.model_fields) - {"out"}
    # every check over every world, near-duplicates included; world-model answers journaled
    report = check_worlds(SynthCheckConfig(out=config.out, cache=config.out / "world_model_cache.jsonl",
                                           **{k: getattr(config, k) for k in fields}), worlds)
    summary = record_verdicts(config.out, generation, report)
    reasons = ", ".join(f"{k} {v}" for k, v in summary.rejected_by_reason.items()) or "none"
    typer.echo(f"kept {summary.kept} of {summary.environments} environments in {config.out} "
               f"({summary.generated} generated; rejected by reason: {reasons}{skipped_note(report)}; "
               f"{summary.requests_sent} generator requests sent, {summary.requests_cached} from the cache)")
    typer.echo(f"report: {config.out / 'report.json'} and {config.out / 'report.html'}")


config_command(app, SynthEnvsConfig, _envs, name="envs", help="Generate environments from seeds in stages "
               "(scenario, tools, initial state, tasks, reference plans); resumable, concurrent.")


def _world(config: FictionConfig) -> None:
    from agentworld.synth.fiction.cli import run

    run(config)


config_command(app, FictionConfig, _world, name="world", help="Make a fictional world: a checked world "
               "bible, then a search or MCP world that answers from it, with tasks and reference answers.")
register_check(app)
