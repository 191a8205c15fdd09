"""What a world model is shown of a turn: which system prompt, how much history — the same in training
and in evaluation.

The official message list (:meth:`BenchSample.messages`) is the domain's long system prompt (1,200 to
6,000 tokens), then every earlier turn. A small model on a CPU can afford neither: SmolLM2-135M
trains at about 100-150 tokens a second on two cores, and its context is 8,192. A
:class:`PromptView` names a cheaper view that training (``train sft|rl``) and evaluation
(``eval run``) both take, so the model is evaluated on exactly the kind of prompt it was trained on:

- ``system="brief"``: the domain's short prompt (``prompts/brief_prompt.txt`` of its package, or a
  generic one built from its name and response tag) instead of the official one;
- ``history_turns``: only the last N earlier turns (0: the action alone);
- ``history_chars``: each earlier observation cut to its first N characters (web pages and search
  results run to thousands), with a marker saying so.

Scoring is unaffected: the rule tier and the baselines still read the whole sample.

A model trained on a view carries it: ``train sft`` writes it to ``final/agentworld_view.json`` and the
GGUF export into the file's metadata (:data:`GGUF_KEY`), and the in-process backends
(``transformers:PATH``, ``llamacpp:PATH``) apply it to every request (:meth:`PromptView.apply`), so
``eval closed-loop``, ``eval probes``, planning and serving ask the model as it was trained without an
option. :meth:`apply` is idempotent: a request already in the view passes unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agentworld.schema import BenchSample, Message

CUT_MARK = "\n[... cut ...]"
VIEW_FILE = "agentworld_view.json"
"""The view of a model folder trained on one (written by ``train sft`` beside the weights)."""
GGUF_KEY = "agentworld.prompt_view"
"""The GGUF metadata key holding the view of an exported model (JSON)."""


class PromptView(BaseModel):
    """Which system prompt and how much history a world model is shown (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    system: Literal["official", "brief"] = Field(
        "official", description="System prompt: 'official' (the sample's own, AgentWorldBench's long prompt) "
        "or 'brief' (the domain's short prompt, for small models).")
    history_turns: int | None = Field(None, ge=0,
                                      description="Earlier turns shown (the last N); default: all.")
    history_chars: int | None = Field(None, ge=16, description="Each earlier observation cut to this many "
                                      "characters; default: whole.")

    @property
    def is_official(self) -> bool:
        return self.system == "official" and self.history_turns is None and self.history_chars is None

    def label(self) -> str:
        """A short description for reports, e.g. ``brief prompt, last 1 turn(s), history cut at 600 chars``.
        """
        parts = [f"{self.system} prompt"]
        parts.append("all turns" if self.history_turns is None else f"last {self.history_turns} turn(s)")
        if self.history_chars is not None:
            parts.append(f"history cut at {self.history_chars} chars")
        return ", ".join(parts)

    def system_prompt(self, domain: str, official: str) -> str:
        """The system prompt of a turn of ``domain`` whose official one is ``official``."""
        if self.system == "official":
            return official
        from agentworld.domains.registry import DOMAINS

        return DOMAINS[domain].brief_prompt

    def history(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
        """The earlier (action, observation) pairs shown."""
        kept = list(pairs) if self.history_turns is None else list(pairs)[len(pairs) - self.history_turns:] \
            if self.history_turns else []
        if self.history_chars is None:
            return kept
        limit = self.history_chars
        return [(a, o if len(o) <= limit else o[:limit] + CUT_MARK) for a, o in kept]

    def messages(self, domain: str, official_system: str, pairs: Sequence[tuple[str, str]],
                 action: str) -> list[Message]:
        """The message list of one turn under this view."""
        out: list[Message] = []
        system = self.system_prompt(domain, official_system)
        if system:
            out.append(Message(role="system", content=system))
        for act, obs in self.history(pairs):
            out.append(Message(role="user", content=act))
            out.append(Message(role="assistant", content=obs))
        out.append(Message(role="user", content=action))
        return out

    def apply(self, messages: Sequence[Message]) -> list[Message]:
        """An official-format message list (system, user/assistant pairs, the action) under this view.

        The system prompt becomes the brief one of the domain whose official (or brief) prompt it is or
        starts with (the sections the simulator appends are dropped, as in training); a system prompt of no
        registered domain is kept. Idempotent.
        """
        items = list(messages)
        if self.is_official or not items:
            return items
        system = items[0] if items[0].role == "system" else None
        body = items[1:] if system else items
        if system is not None and self.system == "brief":
            domain = domain_of_system(system.content)
            if domain is not None:
                system = Message(role="system", content=self.system_prompt(domain, system.content))
        earlier, action = body[:-1], body[-1:]
        pairs = [(earlier[i].content, earlier[i + 1].content) for i in range(0, len(earlier) - 1, 2)
                 if earlier[i].role == "user" and earlier[i + 1].role == "assistant"]
        if len(pairs) * 2 != len(earlier):  # not a plain alternation: leave the turns alone
            return items if system is None else [system, *body]
        out = [system] if system is not None else []
        for act, obs in self.history(pairs):
            out += [Message(role="user", content=act), Message(role="assistant", content=obs)]
        return [*out, *action]

    def sample_messages(self, sample: BenchSample) -> list[Message]:
        """``sample``'s message list under this view (the official one unchanged when :attr:`is_official`)."""
        if self.is_official:
            return sample.messages()
        return self.messages(sample.domain, sample.system_str, sample.history(), sample.action)


OFFICIAL = PromptView()
"""The official message list, unchanged."""


def domain_of_system(text: str) -> str | None:
    """The registered domain whose official or brief system prompt ``text`` is, or starts with (the simulator
    appends sections to the official one: tools, initial and session state); None: no domain's."""
    from agentworld.domains.registry import DOMAINS

    stripped = text.strip()
    for domain in DOMAINS:
        if stripped == domain.brief_prompt.strip() or stripped.startswith(domain.system_prompt.strip()):
            return domain.name
    return None


def read_view(text: str | bytes | None) -> PromptView | None:
    """A view stored as JSON (a model folder's :data:`VIEW_FILE`, a GGUF's :data:`GGUF_KEY`); None if absent.
    """
    if not text:
        return None
    view = PromptView.model_validate_json(text)
    return None if view.is_official else view
