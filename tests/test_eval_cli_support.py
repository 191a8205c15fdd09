"""The typer command generated from a pydantic config: options, help, lists, flags, choices, env vars."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import typer
from pydantic import BaseModel, Field, SecretStr
from typer.testing import CliRunner

from agentworld.cli_support import config_command


class Demo(BaseModel):
    """A demo entry point."""

    paths: list[Path] = Field(description="Input files.")
    count: int = Field(3, description="How many.")
    ratio: float | None = Field(None, description="A ratio.")
    fast: bool = Field(False, description="Go fast.")
    color: bool = Field(True, description="Colour output.")
    mode: Literal["a", "b"] = Field("a", description="Which mode.")
    key: SecretStr | None = Field(None, description="A secret.", json_schema_extra={"envvar": "DEMO_KEY"})


def _app(seen: list[tuple[Demo, dict[str, object]]]) -> typer.Typer:
    app = typer.Typer()
    config_command(app, Demo, lambda c, **extra: seen.append((c, extra)), name="go",
                   extra={"verbose": (bool, typer.Option(False, "--verbose", help="Talk more."))})

    @app.command()
    def other() -> None:  # a second command keeps typer from collapsing the group
        """Nothing."""

    return app


def test_fields_become_options_with_their_types() -> None:
    seen: list[tuple[Demo, dict[str, object]]] = []
    args = ["go", "--paths", "a.jsonl", "--paths", "b", "--count", "5", "--ratio", "0.5", "--fast",
            "--no-color", "--mode", "b", "--verbose"]
    result = CliRunner().invoke(_app(seen), args, env={"DEMO_KEY": "s3cret"})
    assert result.exit_code == 0, result.output
    (config, extra), = seen
    assert config.paths == [Path("a.jsonl"), Path("b")] and config.count == 5 and config.ratio == 0.5
    assert config.fast and not config.color and config.mode == "b" and extra == {"verbose": True}
    assert config.key is not None and config.key.get_secret_value() == "s3cret"


def test_defaults_required_and_help() -> None:
    seen: list[tuple[Demo, dict[str, object]]] = []
    app = _app(seen)
    assert CliRunner().invoke(app, ["go", "--paths", "x"]).exit_code == 0
    assert seen[0][0] == Demo(paths=[Path("x")])
    missing = CliRunner().invoke(app, ["go"])
    assert missing.exit_code == 2 and "--paths" in missing.output
    text = CliRunner().invoke(app, ["go", "--help"], env={"COLUMNS": "200"}).output
    for snippet in ("Input files.", "How many.", "--color", "--no-color", "DEMO_KEY", "A demo entry point"):
        assert snippet in text
    assert CliRunner().invoke(app, ["go", "--paths", "x", "--mode", "c"]).exit_code == 2
