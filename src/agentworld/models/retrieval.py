"""A non-parametric world model: answer with the observation of the most similar recorded transition.

Every (action, observation) pair of every AgentWorldBench row becomes a :class:`Transition`. A
request is answered by the nearest transition of the same domain (character n-gram TF-IDF cosine
on the normalised action, a bonus for the exact same command, a small weight for the recent
context), adapted only where that is safe: for the terminal, the prompt (host, cwd) and the echoed
command line are rewritten to the current session's. It is the offline baseline and a few-shot
source for LLM backends (:meth:`RetrievalIndex.nearest`).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from agentworld.domains.actions import (
    PROMPT_RE,
    detect_domain,
    last_prompt,
    normalise_action,
    strip_marker,
    terminal_keystrokes,
    terminal_state,
)
from agentworld.errors import AgentWorldError
from agentworld.models.base import ChatRequest, ChatResult, register_backend
from agentworld.schema import (
    OBSERVATION_MARKER,
    BenchSample,
    Message,
    discover_data,
    parse_row,
    read_bench_jsonl,
)


class EmptyCorpusError(AgentWorldError):
    """The retrieval index holds no transitions (no corpus given, or everything was excluded)."""


@dataclass(frozen=True)
class Transition:
    """One recorded (action, observation) pair, with what similarity is computed on."""

    domain: str
    action: str
    key: str
    """Normalised action: terminal keystrokes joined, MCP ``tool k=v`` with sorted arguments."""
    context: str
    """Previous normalised action and the cwd before this action (``"ls -la cwd=/app"``)."""
    observation: str
    source: str
    """Id of the row whose ``turn_idx`` is this turn (else the first row holding it)."""
    turn: int


@dataclass(frozen=True)
class Neighbour:
    transition: Transition
    similarity: float


def _context(prev_action: str | None, prev_obs: str | None, first_action: str, domain: str) -> str:
    cwd = ""
    if domain == "terminal":
        screen = strip_marker(prev_obs) if prev_obs else (terminal_state(first_action) or "")
        m = last_prompt(screen)
        cwd = m.group("cwd") if m else ""
    prev = normalise_action(prev_action, domain) if prev_action else ""
    return f"{prev} cwd={cwd}".strip()


def _features(text: str) -> Counter[str]:
    low = f" {text.lower()} "
    grams: Counter[str] = Counter(low[i:i + 3] for i in range(len(low) - 2))
    grams.update(f"w:{w}" for w in re.findall(r"[\w./-]+", low))
    return grams


def _norm(vec: dict[str, float]) -> dict[str, float]:
    size = math.sqrt(sum(v * v for v in vec.values())) or 1.0
    return {k: v / size for k, v in vec.items()}


def _cos(a: dict[str, float], b: dict[str, float]) -> float:
    if len(a) > len(b):
        a, b = b, a
    return sum(v * b.get(k, 0.0) for k, v in a.items())


def _load_rows(corpus: Iterable[str | Path | BenchSample | dict[str, Any]]) -> Iterable[BenchSample]:
    for item in corpus:
        if isinstance(item, BenchSample):
            yield item
        elif isinstance(item, dict):
            yield parse_row(item)
        else:
            for file in discover_data([item]):
                yield from read_bench_jsonl(file)


class RetrievalIndex:
    """Transitions of a corpus with a TF-IDF index over their normalised actions.

    Args:
        corpus: AgentWorldBench files/folders, rows (dicts) or :class:`BenchSample` objects.
        exclude: rows for which this is true are left out, so a demo can evaluate scenarios
            the index has never seen.
    """

    ACTION_W, CONTEXT_W, EXACT_W = 0.75, 0.15, 0.10
    MODE_PENALTY = 0.5
    """Subtracted when a terminal transition starts in another mode (at a shell prompt or inside a
    program) than the current screen: ``echo done`` typed at a prompt is not a heredoc line."""

    def __init__(self, corpus: Iterable[str | Path | BenchSample | dict[str, Any]],
                 exclude: Callable[[BenchSample], bool] | None = None) -> None:
        seen: dict[tuple[str, str, str, str], int] = {}
        self.transitions: list[Transition] = []
        for row in _load_rows(corpus):
            if exclude is not None and exclude(row):
                continue
            dom = row.domain
            for j, (act, obs) in enumerate(zip(row.prompt, row.response, strict=False)):
                key = normalise_action(act, dom)
                ctx = _context(row.prompt[j - 1] if j else None, row.response[j - 1] if j else None,
                               row.prompt[0], dom)
                ident = (dom, key, ctx, obs)
                if ident not in seen:
                    seen[ident] = len(self.transitions)
                    self.transitions.append(Transition(dom, act, key, ctx, obs, row.id, j + 1))
                elif row.turn_idx == j + 1:  # the row that asks for this turn names it
                    at = seen[ident]
                    self.transitions[at] = replace(self.transitions[at], source=row.id)
        counts = [_features(t.key) for t in self.transitions]
        df: Counter[str] = Counter(f for c in counts for f in c)
        n = len(counts)
        self._idf = {f: math.log((1 + n) / (1 + d)) + 1.0 for f, d in df.items()}
        self._vecs = [_norm({f: tf * self._idf[f] for f, tf in c.items()}) for c in counts]
        self._ctx_vecs = [_norm(dict(_features(t.context))) for t in self.transitions]
        self._postings: dict[str, list[int]] = {}
        for i, vec in enumerate(self._vecs):
            for f in vec:
                self._postings.setdefault(f, []).append(i)

    def __len__(self) -> int:
        return len(self.transitions)

    def _query_vec(self, key: str) -> dict[str, float]:
        return _norm({f: tf * self._idf[f] for f, tf in _features(key).items() if f in self._idf})

    def nearest(self, query: BenchSample | ChatRequest | Sequence[Message], k: int = 1,
                domain: str | None = None) -> list[Transition]:
        """The ``k`` most similar transitions (same domain when it is known), best first."""
        return [n.transition for n in self.search(query, k, domain)]

    def search(self, query: BenchSample | ChatRequest | Sequence[Message], k: int = 1,
               domain: str | None = None) -> list[Neighbour]:
        """Like :meth:`nearest`, with similarities in [0, 1]."""
        if not self.transitions:
            raise EmptyCorpusError("the retrieval index is empty: pass corpus=[files or rows] "
                                   "(or record the terminal corpus) and check the exclude predicate")
        q = parse_query(query, domain)
        key = normalise_action(q.action, q.domain)
        ctx = _context(q.prev_action, q.prev_obs, q.first_action, q.domain or "")
        qvec = self._query_vec(key)
        scores: dict[int, float] = {}
        for f, w in qvec.items():
            for i in self._postings.get(f, ()):
                scores[i] = scores.get(i, 0.0) + w * self._vecs[i].get(f, 0.0)
        cands = [i for i in scores if q.domain is None or self.transitions[i].domain == q.domain]
        if not cands:
            cands = [i for i, t in enumerate(self.transitions) if q.domain is None or t.domain == q.domain]
        cands.sort(key=lambda i: -scores.get(i, 0.0))
        cvec = _norm(dict(_features(ctx)))
        mode = _at_prompt(q)
        out = []
        for i in cands[:max(50, k)]:
            t = self.transitions[i]
            sim = (self.ACTION_W * scores.get(i, 0.0) + self.CONTEXT_W * _cos(cvec, self._ctx_vecs[i])
                   + self.EXACT_W * (t.key == key))
            if mode is not None and t.domain == "terminal" and _starts_at_prompt(t.observation) != mode:
                sim -= self.MODE_PENALTY
            out.append(Neighbour(t, round(min(max(sim, 0.0), 1.0), 6)))
        out.sort(key=lambda n: -n.similarity)
        return out[:k]


@dataclass(frozen=True)
class Query:
    action: str
    domain: str | None
    prev_action: str | None
    prev_obs: str | None
    first_action: str
    screens: tuple[str, ...] = ()
    """Every earlier screen, oldest first (the first turn's state, then each observation)."""


def parse_query(query: BenchSample | ChatRequest | Sequence[Message], domain: str | None = None) -> Query:
    """Current action, history and domain of a sample or a chat message list."""
    if isinstance(query, BenchSample):
        hist = query.history()
        first = query.prompt[0] if query.prompt else query.action
        return Query(query.action, domain or query.domain, hist[-1][0] if hist else None,
                     hist[-1][1] if hist else None, first,
                     (terminal_state(first) or "", *(obs for _, obs in hist)))
    messages = list(query.messages) if isinstance(query, ChatRequest) else list(query)
    if isinstance(query, ChatRequest):
        domain = domain or query.extra.get("domain")
    users = [i for i, m in enumerate(messages) if m.role == "user"]
    if not users:
        raise ValueError("the request holds no user message (the current action)")
    # The current action is the last user message that reads as one: a simulator may follow it
    # with control messages (a re-ask naming a conflict, a fault to render) that are not actions.
    at = next((i for i in reversed(users) if detect_domain(messages[i].content)), users[-1])
    action = messages[at].content
    before = messages[:at]
    prev_obs = next((m.content for m in reversed(before) if m.role == "assistant"), None)
    prev_users = [m.content for m in before if m.role == "user"]
    first = messages[users[0]].content
    return Query(action, domain or detect_domain(action), prev_users[-1] if prev_users else None,
                 prev_obs, first,
                 (terminal_state(first) or "", *(m.content for m in before if m.role == "assistant")))


def _starts_at_prompt(observation: str) -> bool:
    first = strip_marker(observation).split("\n", 1)[0]
    return PROMPT_RE.match(first.rstrip()) is not None


def _at_prompt(query: Query) -> bool | None:
    """Whether the current screen ends at a bare shell prompt (None when unknown or not a terminal)."""
    if query.domain not in (None, "terminal"):
        return None
    screen = strip_marker(query.prev_obs) if query.prev_obs else terminal_state(query.first_action)
    if not screen or not screen.strip():
        return None
    m = PROMPT_RE.match(screen.rstrip().splitlines()[-1].rstrip())
    return m is not None and not m.group("cmd")


def adapt_terminal(observation: str, query: Query) -> str:
    """Rewrite prompts to the current host/cwd and the echoed command to the current keystrokes."""
    # The last prompt of any earlier screen: the previous one may show a running program instead.
    here = next((m for m in (last_prompt(strip_marker(s)) for s in reversed(query.screens)) if m), None)
    lines = strip_marker(observation).splitlines()
    if here is None or not lines:
        return observation
    first = PROMPT_RE.match(lines[0])
    old_cwd = first.group("cwd") if first else None
    recorded = next((m.group("host") for m in map(PROMPT_RE.match, lines) if m), None)
    if recorded and recorded != here.group("host"):
        # The recorded container's id is this session's id wherever it appears (e.g. `hostname`).
        lines = [line if PROMPT_RE.match(line) else line.replace(recorded, here.group("host"))
                 for line in lines]
    keys = terminal_keystrokes(query.action) or ""
    command = keys.split("\n")[0].rstrip()
    for n, line in enumerate(lines):
        m = PROMPT_RE.match(line)
        if m:
            cwd = here.group("cwd") if m.group("cwd") == old_cwd else m.group("cwd")
            head = f"{here.group('user')}@{here.group('host')}:{cwd}{m.group('sigil')}"
            cmd = m.group("cmd")
            if n == 0 and cmd is not None and command and not re.fullmatch(r"C-\w", command):
                cmd = command
            lines[n] = f"{head} {cmd}" if cmd is not None else head
    return f"{OBSERVATION_MARKER}\n" + "\n".join(lines)


class RetrievalBackend:
    """A :class:`~agentworld.models.base.ChatBackend` answering from a :class:`RetrievalIndex`."""

    def __init__(self, index: RetrievalIndex, name: str = "retrieval") -> None:
        if not len(index):
            raise EmptyCorpusError("the retrieval corpus is empty: "
                                   "pass corpus=[AgentWorldBench files or rows]")
        self.index = index
        self.name = name

    async def complete(self, request: ChatRequest) -> ChatResult:
        query = parse_query(request)
        best = self.index.search(request, k=1, domain=query.domain)[0]
        observation = best.transition.observation
        if best.transition.domain == "terminal":
            observation = adapt_terminal(observation, query)
        return ChatResult(content=f"<predicted_observation>{observation}</predicted_observation>",
                          model=request.model or self.name, source="retrieval",
                          meta={"neighbour": f"{best.transition.source}#{best.transition.turn}",
                                "similarity": best.similarity})


def default_corpus() -> list[Path]:
    """The shipped terminal corpus, when it is installed."""
    try:
        from agentworld.corpus import corpus_path  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return []
    path = Path(corpus_path("terminal"))
    return [path] if path.is_file() else []


@register_backend("retrieval")
def _retrieval(corpus: Iterable[str | Path | BenchSample | dict[str, Any]] | None = None,
               exclude: Callable[[BenchSample], bool] | None = None) -> RetrievalBackend:
    return RetrievalBackend(RetrievalIndex(default_corpus() if corpus is None else corpus, exclude))
