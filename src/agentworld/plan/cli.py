"""``agentworld plan``: a quick look at what the planner would choose, and why.

Why a command: before wiring the planner into an agent loop, one wants to see, for one situation
(a domain, the episode so far, a few candidate actions), what the world model imagines each
candidate shows and how the scorer ranks them. The options are :class:`PlanConfig`; the heavy
parts (model clients, the simulator) are imported inside :func:`run_plan`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr

from agentworld.cli_support import cli_flags, config_command, new_app
from agentworld.domains import DEFAULT_DOMAIN
from agentworld.endpoints import AGENT_KEY_ENV, Endpoint, JudgeEndpoint, ModelEndpoint

app = new_app("Predict before acting: imagine candidate actions with a world model, score them, rank them.")


class PlanConfig(ModelEndpoint, JudgeEndpoint):
    """Imagine each candidate action with the world model (on forks of the episode) and print them ranked
    best first, each with its imagined observation."""

    model: str = Field("retrieval", description="World model: the served model name with --model-base-url; "
                       "without it a backend name (retrieval: the offline baseline).")
    domain: str = Field(DEFAULT_DOMAIN, description="Domain of the episode: terminal, mcp, or another "
                        "registered one.")
    candidate: list[str] = Field(default_factory=list, description="A candidate action: a JSON action of the "
                                 "domain, or a line as typed into agentworld shell (terminal: a command). "
                                 "Repeat for each candidate.")
    task: str = Field("", description="What the agent is trying to do (for the judge and the agent).")
    initial_state: str | None = Field(None, description="The first observation of the episode (terminal: "
                                      "the screen); default: the domain's.")
    history: Path | None = Field(None, description="JSON file with the episode so far: a list of "
                                 "{\"action\": ..., \"observation\": \"...\"} objects, oldest first.")
    agent_base_url: str | None = Field(None, description="OpenAI-compatible base URL of an agent that "
                                       "proposes candidates (when none are given) and continues rollouts.")
    agent_model: str | None = Field(None, description="Agent model name.")
    agent_api_key: SecretStr | None = Field(None, description="Agent API key (prefer the environment "
                                            "variable: a key on the command line shows in ps).",
                                            json_schema_extra={"runtime": True, "envvar": AGENT_KEY_ENV})
    max_candidates: int = Field(4, ge=1, le=64, description="K: at most this many candidates are imagined.")
    horizon: int = Field(1, ge=1, le=20, description="H: imagined steps per rollout; after the candidate "
                         "the agent continues (needs --agent-base-url when above 1).")
    samples: int = Field(1, ge=1, le=32, description="S: imagined rollouts per candidate, each with its own "
                         "seed.")
    scorer: Literal["auto", "judge", "rule"] = Field(
        "auto", description="judge: the judge's success / on track / failure (1 / 0.5 / 0); rule: no error "
        "pattern of the domain on the imagined screens (plus --must-contain, --error-pattern, "
        "--end-at-prompt); auto: judge when --judge-model is given, else rule.")
    must_contain: list[str] = Field(default_factory=list, description="Rule scorer: a string some imagined "
                                    "observation must show (repeatable).")
    error_pattern: list[str] = Field(default_factory=list, description="Rule scorer: a regular expression "
                                     "that marks an imagined observation as failed, besides the domain's "
                                     "(repeatable).")
    end_at_prompt: bool = Field(False, description="Rule scorer: the last imagined observation must end at "
                                "the domain's input prompt (a command still running fails).")
    concurrency: int = Field(8, ge=1, le=256, description="Imagined rollouts run at once.")
    seed: int = Field(0, description="Episode seed; sample j uses seed + j.")
    cache: Path | None = Field(None, description="Response cache file (JSONL): a repeated plan sends nothing "
                               "again.")
    json_output: bool = Field(False, description="Print the ranked candidates with their imagined rollouts "
                              "as JSON.", json_schema_extra=cli_flags("--json"))

    def agent_endpoint(self) -> Endpoint:
        """The proposing agent's :class:`Endpoint`."""
        return Endpoint(self.agent_model or "", self.agent_base_url, self.agent_api_key)


def run_plan(config: PlanConfig) -> None:
    """Build the world model, judge, agent and episode from ``config``; plan; print the ranking."""
    import asyncio

    from agentworld.plan.cli_run import plan_from_config, render_plan

    result = asyncio.run(plan_from_config(config))
    print(result.model_dump_json(indent=2) if config.json_output else render_plan(result))


config_command(app, PlanConfig, run_plan, name=None)
