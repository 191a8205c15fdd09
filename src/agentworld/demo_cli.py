"""``agentworld demo`` and ``agentworld demo train``: the offline demos, options from their configs."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from agentworld.cli_support import config_command, new_app
from agentworld.demo import DemoConfig

app = new_app("Offline demos: the evaluation demo (no sub-command) and 'demo train'.", no_args_is_help=False)


class TrainDemoOptions(BaseModel):
    """Fine-tune SmolLM2-135M-Instruct (the packaged GGUF, nothing downloaded) into a terminal world model on
    the bundled real recordings, on the CPU (about ten minutes on two cores), and report held-out rule tier,
    closed tags and loss before and after, beside the trivial predictors."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    out: Path = Field(Path("agentworld-demo-train"), description="Folder for the run, the GGUF export, the "
                      "eval runs and the report.",
                      json_schema_extra={"output": "folder"})
    steps: int = Field(36, ge=1, description="SFT steps of 4 rows (about 10 s each on a 2-core CPU).")
    seed: int = Field(0, description="Seed of the model, the split and the sampling.")


def _demo(config: DemoConfig) -> None:
    from agentworld.demo import run_demo

    run_demo(config)


def _train(options: TrainDemoOptions) -> None:
    from agentworld.train.demo import TrainDemoConfig, run_train_demo

    run_train_demo(TrainDemoConfig(out=str(options.out), steps=options.steps, seed=options.seed))


config_command(app, DemoConfig, _demo, name=None)
config_command(app, TrainDemoOptions, _train, name="train")
