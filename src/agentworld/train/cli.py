"""``agentworld train``: the training recipes, each driven by one YAML/JSON config file.

The config file is the source of truth (it is stored in ``output_dir/config.json``); the few
options here override it for quick reruns and resumes.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from agentworld.cli_support import new_app
from agentworld.train.common import TrainResult

app = new_app("Train world models (CPT, SFT, RL) and run Sim RL rollouts.")

ConfigOpt = typer.Option(..., "--config", "-c", help="YAML/JSON config file (see agentworld.train.config).")
MaxStepsOpt = typer.Option(None, "--max-steps", help="Override max_steps.")
OutputOpt = typer.Option(None, "--output-dir", help="Override output_dir.")
ResumeOpt = typer.Option(None, "--resume/--no-resume", help="Override resume.")


def _report(result: TrainResult) -> None:
    Console().print_json(data={k: (str(v) if isinstance(v, Path) else v) for k, v in vars(result).items()})


@app.command("cpt")
def cpt(config: Path = ConfigOpt, max_steps: int | None = MaxStepsOpt, output_dir: Path | None = OutputOpt,
        resume: bool | None = ResumeOpt) -> None:
    """Continued pre-training on trajectories (loss on kept observations) plus text corpora."""
    from agentworld.train.config import CPTConfig
    from agentworld.train.cpt import run_cpt

    cfg = CPTConfig.load(config, max_steps=max_steps, resume=resume)
    _report(run_cpt(cfg if output_dir is None else cfg.model_copy(update={"output_dir": output_dir})))


@app.command("sft")
def sft(config: Path = ConfigOpt, max_steps: int | None = MaxStepsOpt, output_dir: Path | None = OutputOpt,
        resume: bool | None = ResumeOpt) -> None:
    """Supervised fine-tuning: reasoning trace + tagged prediction over system-prompt variants."""
    from agentworld.train.config import SFTConfig
    from agentworld.train.sft import run_sft

    cfg = SFTConfig.load(config, max_steps=max_steps, resume=resume)
    _report(run_sft(cfg if output_dir is None else cfg.model_copy(update={"output_dir": output_dir})))


@app.command("rl")
def rl(config: Path = ConfigOpt, max_steps: int | None = MaxStepsOpt,
       output_dir: Path | None = OutputOpt) -> None:
    """GSPO (GRPOTrainer, sequence-level importance sampling) with the hybrid rubric + rule reward."""
    import yaml

    from agentworld.train.rl import RLConfig, run_rl

    data = yaml.safe_load(config.read_text("utf-8")) or {}
    overrides = {k: v for k, v in {"max_steps": max_steps, "output_dir": output_dir}.items() if v is not None}
    result = run_rl(RLConfig.model_validate({**data, **overrides}))
    Console().print_json(data={"output_dir": str(result.output_dir), "steps": result.steps,
                               "rewards": list(result.rewards)})


from agentworld.train.rollout_cli import rollout  # noqa: E402  (Sim RL rollouts are a training step)

app.command("rollout")(rollout)
