"""``agentworld shell``: its options; the loop is :func:`~agentworld.serve.shell.run_shell`."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from agentworld.cli_support import config_command, new_app
from agentworld.domains import DEFAULT_DOMAIN
from agentworld.endpoints import ModelEndpoint

app = new_app("Type into a simulated environment.", no_args_is_help=False)


class ShellConfig(ModelEndpoint):
    """Type commands into a simulated terminal (or JSON tool calls into an MCP server) and see what the world
    model answers, each observation tagged with its source."""

    model: str = Field("retrieval", description="World model: the served model name with "
                       "--model-base-url; without it a backend name (retrieval: the offline baseline; none: "
                       "real sandbox only).")
    domain: str = Field(DEFAULT_DOMAIN, description="Domain to simulate: terminal, mcp, or another "
                        "registered one.")
    route: Literal["auto", "model", "real"] = Field(
        "auto", description="auto: safe actions run in the domain's real environment (the terminal's "
        "sandbox), the rest is predicted; model: all predicted; real: all real (an error for a domain "
        "without a real environment).")
    spec: Path | None = Field(None, description="WorldSpec JSON file (tools, facts, faults, initial "
                              "state).")
    show_reasoning: bool = Field(False, description="Show the model's reasoning.")
    seed: int = Field(0, description="Episode seed (sandbox hostname, fault draws).")
    max_tokens: int | None = Field(None, ge=1, description="max_tokens of world-model requests when --spec "
                                   "sets none (a thinking world model needs 16384 or more).")


def run_shell_command(config: ShellConfig) -> None:
    """Build the world model, the router and the simulator from ``config``, then read lines from stdin."""
    import sys

    from agentworld.serve.shell import run_shell
    from agentworld.sim.router import Router
    from agentworld.sim.session import Simulator
    from agentworld.sim.types import WorldSpec

    if config.spec is not None:
        from agentworld.configfile import load_config_file

        world = load_config_file(WorldSpec, config.spec)
    else:
        world = WorldSpec(domain=config.domain)
    backend = None
    if config.model != "none" or config.model_base_url:
        backend = config.model_endpoint().backend(domains=[world.domain], max_tokens=config.max_tokens)
    router = None if config.route == "model" else Router("rules" if config.route == "auto" else "real",
                                                         seed=config.seed, domain=world.domain)
    simulator = Simulator(backend, router=router)
    try:
        run_shell(simulator, sys.stdin, sys.stdout, spec=world, seed=config.seed,
                  show_reasoning=config.show_reasoning, color=sys.stdout.isatty())
    finally:
        simulator.close()
        if router is not None:
            router.close()


config_command(app, ShellConfig, run_shell_command, name="shell")
