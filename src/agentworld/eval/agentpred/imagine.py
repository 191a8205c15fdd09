"""An agent that predicts by imagining: ``eval agent-predictions --model NAME`` without an agent endpoint.

Why: the command measures an agent's own predictions, which needs an agent model; an agent whose
imagination *is* a world model (it asks the world model what its action will show, given the real
history it has seen) makes the command runnable offline, with the retrieval baseline, and shows
how far a world model carries an agent that has no other knowledge.

Why the tasks' own recordings are left out of the retrieval index by default: the shipped corpus
holds the built-in held-out tasks' sessions (``agentworld demo`` leaves them out the same way), and
an index that has seen the very sessions it predicts recalls them (94 instead of 23 on the terminal's
held-out tasks). ``--keep-heldout`` keeps them, as an upper bound.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agentworld.errors import AgentWorldError
from agentworld.eval.agentpred.prompt import (
    CLOSE,
    NEXT_ACTION,
    OBSERVATION,
    OPEN,
    SETUP,
    SYSTEM,
    read_history,
    read_prediction,
)
from agentworld.models.base import ChatBackend, ChatRequest, ChatResult
from agentworld.models.parsing import split_thinking
from agentworld.models.retrieval_own import Recording, leaving_out
from agentworld.schema import OBSERVATION_MARKER, Message

if TYPE_CHECKING:
    from agentworld.eval.agentpred.config import AgentPredConfig
    from agentworld.eval.agentpred.tasks import PredictionTask


@dataclass(frozen=True)
class WorldPrompt:
    """How a domain's world model is asked: its system prompt, and whether the first action carries
    the initial observation (``DomainActions.initial_in_action``, the terminal's ``**Current State:**``)."""

    system_prompt: str
    initial_in_action: bool


class ImaginingAgent:
    """A scripted agent that predicts each observation by asking a world model (its imagination).

    It reads the episode back from its own conversation (:func:`read_history`): the initial
    observation, the setup and fixed actions, and the real observations it was shown, and sends the
    world model the AgentWorldBench-shaped request for the pending action. The task's domain is the
    one whose display name the agent's system prompt names (a request carries no domain).
    """

    def __init__(self, world_model: ChatBackend, prompts: Mapping[str, WorldPrompt],
                 name: str | None = None) -> None:
        self.world_model, self.prompts = world_model, dict(prompts)
        self.name = name or f"imagining:{world_model.name}"

    def _prompt(self, messages: tuple[Message, ...]) -> WorldPrompt:
        system = next((m.content for m in messages if m.role == "system"), "")
        for display, prompt in self.prompts.items():
            if system.startswith(SYSTEM.format(display=display, mode="").rstrip("\n")):
                return prompt
        raise AgentWorldError(f"the imagining agent has no world-model prompt for this task's domain "
                              f"(known: {', '.join(sorted(self.prompts))})")

    def world_request(self, messages: tuple[Message, ...]) -> ChatRequest:
        """The world model's request for the pending action, the episode so far as its history."""
        prompt = self._prompt(messages)
        sections = read_history(messages)
        initial = sections[0][1]
        actions = [text for label, text in sections[1:] if label in (SETUP, NEXT_ACTION)]
        screens = [text for label, text in sections[1:] if label == OBSERVATION]
        if not actions:
            raise AgentWorldError("the imagining agent only predicts fixed actions: give tasks with steps")
        if prompt.initial_in_action:
            actions[0] = f"**Current State:**\n{initial}\n\n{actions[0]}"
        out = [Message(role="system", content=prompt.system_prompt)]
        for action, screen in zip(actions, screens, strict=False):
            out += [Message(role="user", content=action),
                    Message(role="assistant", content=f"{OBSERVATION_MARKER}\n{screen}")]
        out.append(Message(role="user", content=actions[-1]))
        return ChatRequest(messages=tuple(out))

    async def complete(self, request: ChatRequest) -> ChatResult:
        answer = await self.world_model.complete(self.world_request(request.messages))
        imagined = split_thinking(answer.content, "predicted_observation")[0]
        observation = read_prediction(imagined) or imagined
        return ChatResult(content=f"{OPEN}\n{observation}\n{CLOSE}", source=self.name)


def world_prompts(domains: Iterable[str]) -> dict[str, WorldPrompt]:
    """The world-model prompt of each domain, keyed by the display name the agent's prompt shows."""
    from agentworld.domains.base import plugin_of
    from agentworld.domains.hooks import domain_actions
    from agentworld.domains.registry import DOMAINS

    out: dict[str, WorldPrompt] = {}
    for domain in domains:
        found = plugin_of(domain)
        out[found.display] = WorldPrompt(DOMAINS[domain].system_prompt,
                                         domain_actions(found).initial_in_action)
    return out


def imagination(config: AgentPredConfig, tasks: list[PredictionTask]) -> ChatBackend:
    """The world model the agent imagines with (``--model`` and its endpoint options).

    The retrieval backend (shipped corpus or ``--model-corpus``) is built without the recordings of
    the run's own tasks unless ``--keep-heldout``; any other backend or endpoint is built as
    ``eval run`` builds it.

    Raises:
        AgentWorldError: an unknown backend, or a domain the world model cannot answer.
    """

    domains = sorted({t.domain for t in tasks})
    assert config.model is not None
    if config.model_base_url or config.model != "retrieval":
        backend: ChatBackend = config.model_endpoint().backend(
            domains=domains, concurrency=config.concurrency, max_retries=config.max_retries,
            timeout_s=config.timeout_s, max_response_bytes=config.max_response_bytes)
        return backend
    from agentworld.models.base import create_backend
    from agentworld.models.retrieval import RetrievalBackend

    held_out = set() if config.keep_heldout else {Recording(t.domain, t.id) for t in tasks}
    retrieval = create_backend("retrieval", corpus=list(config.model_corpus) or None,
                               exclude=leaving_out(held_out))
    assert isinstance(retrieval, RetrievalBackend)
    retrieval.check_domains(domains)
    return retrieval


def imagining_agent(config: AgentPredConfig, tasks: list[PredictionTask]) -> ImaginingAgent:
    """The imagining agent of a run without an agent endpoint.

    Raises:
        AgentWorldError: a task whose actions the agent would choose (it only predicts fixed ones),
            or what :func:`imagination` raises.
    """
    choosing = [t.id for t in tasks if t.steps is None]
    if choosing:
        raise AgentWorldError(f"task {choosing[0]!r} has a goal, not fixed steps: an agent imagining with "
                              "--model only predicts fixed actions; give tasks with steps, or an agent "
                              "endpoint (--agent-base-url)")
    return ImaginingAgent(imagination(config, tasks), world_prompts({t.domain for t in tasks}),
                          name=config.agent_name)
