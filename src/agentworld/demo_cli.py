"""``agentworld demo`` and ``agentworld demo train``: the offline demos, options from their configs."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from agentworld.cli_support import config_command, new_app
from agentworld.demo import DemoConfig

app = new_app("Offline demos: the evaluation demo (no sub-command) and 'demo train'.", no_args_is_help=False)


class TrainDemoOptions(BaseModel):
    """Train a tiny world model on the bundled real terminal recordings (CPU, nothing downloaded) and report
    held-out loss and rule tier before and after."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    out: Path = Field(Path("agentworld-demo-train"), description="Folder for the tiny model, the run and "
                      "the report.",
                      json_schema_extra={"output": "folder"})
    steps: int = Field(500, ge=1, description="SFT steps (about half a second each on a 2-core CPU).")
    seed: int = Field(0, description="Seed of the model, the split and the sampling.")


def _demo(config: DemoConfig) -> None:
    from agentworld.demo import run_demo

    run_demo(config)


def _train(options: TrainDemoOptions) -> None:
    from agentworld.train.demo import TrainDemoConfig, run_train_demo

    run_train_demo(TrainDemoConfig(out=str(options.out), steps=options.steps, seed=options.seed))


config_command(app, DemoConfig, _demo, name=None)
config_command(app, TrainDemoOptions, _train, name="train")
