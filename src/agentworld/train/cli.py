"""``agentworld train``: the training recipes (each driven by one YAML/JSON config file) and Sim RL rollouts.

The config file is the source of truth (stored in ``output_dir/config.json``); the few options of
:class:`RecipeOptions` override it for quick reruns and resumes. ``train rollout`` runs an agent
endpoint in the simulator under a fault curriculum. Every command is generated from its config
class; the recipes' heavy imports (torch, TRL) happen only when a command runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agentworld.cli_support import cli_flags, config_command, new_app
from agentworld.endpoints import AgentEndpoint, ModelEndpoint

app = new_app("Train world models (CPT, SFT, RL) and run Sim RL rollouts.")


class RecipeOptions(BaseModel):
    """A training recipe run from its config file, with a few overrides."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    config: Path = Field(description="YAML/JSON config file (fields documented in agentworld.train.config "
                         "and, for rl, agentworld.train.rl).",
                         json_schema_extra=cli_flags("--config", "-c"))
    max_steps: int | None = Field(None, ge=1, description="Override max_steps of the config.")
    output_dir: Path | None = Field(None, description="Override output_dir of the config.",
                                    json_schema_extra={"output": "folder"})
    resume: bool | None = Field(None, description="Override resume: continue from the last checkpoint.",
                                json_schema_extra=cli_flags("--resume/--no-resume"))
    model: str | None = Field(None, description="Override model of the config (a hub id or a model folder).")
    dry_run: bool = Field(False, description="Check the config and stop: every path exists, the model folder "
                          "is a model, the data reads and yields samples; prints what the run would use, "
                          "writes nothing.")

    def owns_output(self, field: str, path: Path) -> bool:
        """A training run's folder from before the lock file: its ``config.json`` is a recipe's."""
        from agentworld.io import loads

        try:
            stored = loads((path / "config.json").read_bytes())
        except (OSError, ValueError):
            return False
        return isinstance(stored, dict) and {"model", "learning_rate", "lora"} <= set(stored)


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
                                                                        ".sweep.json", ".journal.jsonl"]})
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


C = TypeVar("C", bound=BaseModel)


def _overridden(config: C, options: RecipeOptions) -> C:
    """``config`` with the command line's ``--output-dir``/``--model`` (relative to the working directory).

    An ``output_dir`` that comes from the config file gets the same guard as ``--output-dir`` (the
    command line's was claimed before this runs): refused when not ours, locked for one writer.
    """
    pairs = (("output_dir", options.output_dir), ("model", options.model))
    update = {k: v for k, v in pairs if v is not None}
    config = config.model_copy(update=update) if update else config
    folder = getattr(config, "output_dir", None)
    if options.output_dir is None and folder is not None and not options.dry_run:
        from agentworld.cli_support import command_label
        from agentworld.outputs import claim_folder

        claim_folder(Path(folder), kind=type(options).__name__, command=command_label(),
                     flag=f"output_dir (in {options.config})",
                     ours=lambda path: options.owns_output("output_dir", path))
    return config


def _cpt(options: RecipeOptions) -> None:
    from agentworld.train.config import CPTConfig
    from agentworld.train.cpt import run_cpt

    cfg = _overridden(CPTConfig.load(options.config, max_steps=options.max_steps, resume=options.resume),
                      options)
    if not _dry_run(options, cfg):
        _report(run_cpt(cfg))


def _sft(options: RecipeOptions) -> None:
    from agentworld.train.config import SFTConfig
    from agentworld.train.sft import run_sft

    cfg = _overridden(SFTConfig.load(options.config, max_steps=options.max_steps, resume=options.resume),
                      options)
    if not _dry_run(options, cfg):
        _report(run_sft(cfg))


def _rl(options: RecipeOptions) -> None:
    from rich.console import Console

    from agentworld.train.rl import RLConfig, run_rl

    config = _overridden(RLConfig.load(options.config, max_steps=options.max_steps), options)
    if _dry_run(options, config):
        return
    result = run_rl(config)
    Console().print_json(data={"output_dir": str(result.output_dir), "steps": result.steps,
                               "rewards": list(result.rewards)})


def _dry_run(options: RecipeOptions, config: Any) -> bool:
    """With ``--dry-run``: check ``config``, print what the run would use, and say so (True)."""
    if not options.dry_run:
        return False
    from agentworld.train.dryrun import dry_run

    _report(dry_run(config))
    return True


def _rollout(options: RolloutOptions) -> None:
    from agentworld.train.rollout_cli import run_rollout_command

    run_rollout_command(options)


config_command(app, RecipeOptions, _cpt, name="cpt",
               help="Continued pre-training on trajectories (loss on kept observations) plus text corpora.")
config_command(app, RecipeOptions, _sft, name="sft",
               help="Supervised fine-tuning: reasoning trace + tagged prediction over system-prompt "
                    "variants.")
config_command(app, RecipeOptions, _rl, name="rl", exclude=("resume",),
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
