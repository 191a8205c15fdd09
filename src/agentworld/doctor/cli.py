"""``agentworld doctor``: the command (options from :class:`~agentworld.doctor.config.DoctorConfig`).

Exit code 0 when every endpoint is usable (warnings included: they come with the flags that fix
them), 2 with a one-line reason when one is not: a dead port, a refused key, an unknown model, a
failed prediction, a judge verdict that does not parse.
"""

from __future__ import annotations

from agentworld.cli_support import config_command, new_app
from agentworld.doctor.config import DoctorConfig

app = new_app("Check a world-model endpoint (and a judge) before a run: reachable, key, model name, "
              "reasoning field, context length, a prediction per domain, the --max-tokens to use.")


def _doctor(config: DoctorConfig) -> None:
    import asyncio

    from agentworld.doctor.report import print_reports, reason
    from agentworld.doctor.run import examine
    from agentworld.errors import AgentWorldError

    reports = asyncio.run(examine(config))
    print_reports(reports, config.json_output)
    failed = reason(reports)
    if failed:
        raise AgentWorldError(failed)


config_command(app, DoctorConfig, _doctor, name="doctor", exclude=("model_corpus",),
               help="Check each --model-base-url (and --judge-base-url) in order: reachable and key "
               "accepted; model listed; a chat completion; where the reasoning comes back; the context "
               "length; a prediction on one shipped sample per domain (latency, tokens/s, thinking tokens, "
               "<predicted_observation> closed or cut at --max-tokens); the judge's verdict parses. Prints "
               "a verdict table and the flags to use; exit 0 when usable, 2 with the reason when not.")
