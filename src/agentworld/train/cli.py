"""``agentworld train``: the training recipes (each driven by one YAML/JSON config file) and Sim RL rollouts.

A recipe's options are its config's fields (:class:`~agentworld.train.config.CPTConfig`,
:class:`~agentworld.train.config.SFTConfig`, :class:`~agentworld.train.rl.RLConfig`); ``--config FILE``
reads them from YAML/JSON and the options given override the file, as TRL's ``TrlParser`` does. The
resolved config is stored in ``output_dir/config.json``. ``train rollout`` runs an agent
endpoint in the simulator under a fault curriculum. Every command is generated from its config
class; the recipes' heavy imports (torch, TRL) happen only when a command runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agentworld.cli_support import config_command, new_app
from agentworld.endpoints import AgentEndpoint, ModelEndpoint
from agentworld.train.config import CPTConfig, SFTConfig
from agentworld.train.rl import RLConfig

app = new_app("Train world models (CPT, SFT, RL) and run Sim RL rollouts.")


class RolloutOptions(AgentEndpoint, ModelEndpoint):
    """Run Sim RL episodes of an agent against a simulated MCP world; write the episodes as unified
    trajectories to OUT plus OUT.steps.jsonl and OUT.rl.jsonl (RL exports); with --sweep-controls, once
    per control spec of the world folder and a per-spec summary in OUT.sweep.json. Finished episodes are
    journaled in OUT.journal.jsonl until the run ends (--resume continues a killed run); --ray runs them
    on Ray actors."""

    tools: Path | None = Field(None, description='MCP tools/list JSON (a list, or {"tools": [...]}); or give '
                               "--world.")
    world: Path | None = Field(None, description="World folder (world.json, tasks.jsonl, optional "
                               "controls/*.yaml): its tools, initial state and tasks, each task's success "
                               "condition checked at the end of an episode.")
    sweep_controls: bool = Field(False, description="With --world: run the episodes on the clean world and "
                                 "once more under each controls/*.yaml spec; print one row per spec "
                                 "(success, reward, turns, faults injected).")
    out: Path = Field(description="Episodes (unified-schema trajectories) JSONL to write.",
                      json_schema_extra={"output": "file", "siblings": [".steps.jsonl", ".rl.jsonl",
                                                                        ".sweep.json", ".journal.jsonl",
                                                                        ".endpoints.json"]})
    episodes: int = Field(8, ge=1, description="Number of episodes.")
    max_turns: int = Field(10, ge=1, description="Most agent turns per episode.")
    fault_kinds: list[str] = Field(default_factory=list, description="Fault kinds of the curriculum "
                                   "(repeat or comma-separated): timeout, server_error, rate_limit, "
                                   "permission_denied, pagination, truncated, stale.")
    rate_start: float = Field(0.0, ge=0, le=1, description="Fault rate of the first episode.")
    rate_end: float = Field(0.5, ge=0, le=1, description="Fault rate of the last episode.")
    task: str = Field("", description="The agent's task (its first user message).")
    seed: int = Field(0, description="Seed of episode 0 (episode i uses seed + i).")
    resume: bool = Field(False, description="Continue an interrupted run: the episodes journaled in "
                         "OUT.journal.jsonl are kept, only the others run (same options required).")
    ray: str | None = Field(None, description="Run the episodes on Ray actors: 'local' starts a local "
                            "instance, or a cluster address ('auto', 'ray://host:10001'); needs the ray "
                            "extra.")
    ray_actors: int | None = Field(None, ge=1, description="With --ray: how many actors (default: one per "
                                   "cluster CPU, no more than the episodes fill).")
    sessions_per_actor: int = Field(4, ge=1, le=1024, description="With --ray: simulator sessions (episodes "
                                    "in flight) per actor.")

    @field_validator("fault_kinds")
    @classmethod
    def _known_kinds(cls, value: list[str]) -> list[str]:
        from agentworld.sim.types import FAULT_KINDS

        kinds = [part.strip() for item in value for part in item.split(",") if part.strip()]
        unknown = [k for k in kinds if k not in FAULT_KINDS]
        if unknown:
            raise ValueError(f"unknown fault kinds {unknown}; known: {', '.join(FAULT_KINDS)}")
        return kinds

    @model_validator(mode="after")
    def _one_world(self) -> RolloutOptions:
        if (self.tools is None) == (self.world is None):
            raise ValueError("give exactly one of --tools FILE and --world DIR")
        if self.sweep_controls and self.world is None:
            raise ValueError("--sweep-controls sweeps a world folder's controls/*.yaml: give --world")
        if self.world is not None and self.fault_kinds:
            raise ValueError("--fault-kinds is the --tools curriculum; a world's perturbations are its "
                             "controls/*.yaml specs (see --sweep-controls)")
        if self.ray_actors is not None and self.ray is None:
            raise ValueError("--ray-actors sets the actors of a Ray run: give --ray too")
        return self


def _report(result: Any) -> None:
    from rich.console import Console

    Console().print_json(data={k: (str(v) if isinstance(v, Path) else v) for k, v in vars(result).items()})


def _cpt(config: CPTConfig, dry_run: bool = False) -> None:
    from agentworld.train.cpt import run_cpt

    if not _dry_run(dry_run, config):
        _report(run_cpt(config))


def _sft(config: SFTConfig, dry_run: bool = False) -> None:
    from agentworld.train.sft import run_sft

    if not _dry_run(dry_run, config):
        _report(run_sft(config))


def _rl(config: RLConfig, dry_run: bool = False) -> None:
    from rich.console import Console

    from agentworld.train.rl import run_rl

    if _dry_run(dry_run, config):
        return
    result = run_rl(config)
    Console().print_json(data={"output_dir": str(result.output_dir), "steps": result.steps,
                               "rewards": list(result.rewards)})


def _dry_run(enabled: bool, config: Any) -> bool:
    """With ``--dry-run``: check ``config``, print what the run would use, and say so (True)."""
    if not enabled:
        return False
    from agentworld.train.dryrun import dry_run

    _report(dry_run(config))
    return True


def _rollout(options: RolloutOptions) -> None:
    from agentworld.train.rollout_cli import run_rollout_command

    run_rollout_command(options)


DRY_RUN = {"dry_run": (bool, typer.Option(False, "--dry-run", help="Check the config and stop: every path "
                                           "exists, the model folder is a model, the data reads and yields "
                                           "samples; prints what the run would use, writes nothing."))}
FILE_ONLY = ("kind", "lora", "mask", "judge_options")
"""Fields a config file holds but the command line does not (nested settings, the fixed recipe name)."""

config_command(app, CPTConfig, _cpt, name="cpt", from_file=True, exclude=FILE_ONLY, extra=DRY_RUN,
               help="Continued pre-training on trajectories (loss on kept observations) plus text corpora.")
config_command(app, SFTConfig, _sft, name="sft", from_file=True, exclude=FILE_ONLY, extra=DRY_RUN,
               help="Supervised fine-tuning: reasoning trace + tagged prediction over system-prompt "
                    "variants.")
config_command(app, RLConfig, _rl, name="rl", from_file=True, exclude=FILE_ONLY, extra=DRY_RUN,
               help="GSPO (GRPOTrainer, sequence-level importance sampling) with the hybrid rubric + rule "
                    "reward.")
config_command(app, RolloutOptions, _rollout, name="rollout")


def _verl_config(options: VerlConfigOptions) -> None:
    import typer

    from agentworld.train.verl_config import write_verl_config

    for name, path in write_verl_config(options).items():
        typer.echo(f"{name}: {path}")


from agentworld.train.verl_config import VerlConfigOptions  # noqa: E402  (one block for this command)

config_command(app, VerlConfigOptions, _verl_config, name="verl-config")


class ExportOptions(BaseModel):
    """Export a trained model folder (a LoRA adapter merged into its base) to safetensors (OUT/merged) and
    to a GGUF file (OUT/model-QUANT.gguf) that llama.cpp serves: llamacpp:FILE, python -m llama_cpp.server,
    llama-server."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: Path = Field(description="Trained model folder (a run's final/ or a checkpoint; LoRA adapters are "
                        "merged).")
    base: str = Field(description="The GGUF file (or alias, e.g. smollm2) the model was trained from: its "
                      "tokenizer, chat template and settings are copied into the export.")
    out: Path = Field(description="Output folder (merged/ and model-QUANT.gguf).",
                      json_schema_extra={"output": "folder"})
    quant: str = Field("q8_0", description="GGUF weight type: f32, f16, q8_0 (written here) or a llama.cpp "
                       "type such as q4_k_m (quantized by llama.cpp from the f16 file).")


def _export(options: ExportOptions) -> None:
    import typer

    from agentworld.train.export import export

    merged, gguf = export(options.model, options.base, options.out, options.quant)
    typer.echo(f"safetensors: {merged}")
    typer.echo(f"gguf: {gguf} ({gguf.stat().st_size / 1e6:.0f} MB)")


config_command(app, ExportOptions, _export, name="export")
