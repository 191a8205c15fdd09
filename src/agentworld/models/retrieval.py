"""A non-parametric world model: answer with the observation of the most similar recorded transition.

Every (action, observation) pair of every recorded row becomes a :class:`Transition`. A request is
answered by the nearest transition of the same domain: character n-gram TF-IDF cosine on the
normalised action (plus the domain's extra tokens, e.g. MCP argument pairs), restricted to the same
*group* when the corpus has one (the MCP tool name), a bonus for the exact same action, a small
weight for the recent context. What is compared, and what of the recorded observation may be
rewritten for the current session, is the domain's business
(:mod:`agentworld.domains.retrieval_keys`): the terminal rewrites prompt and echo, tool results are
returned as recorded. A domain the corpus has no transitions of is a clear, non-retryable error
(:class:`DomainNotCoveredError`), also raised up front by :meth:`RetrievalIndex.check_domains`.
It is the offline baseline and a few-shot source for LLM backends (:meth:`RetrievalIndex.nearest`).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from agentworld.domains.actions import detect_domain
from agentworld.domains.retrieval_keys import ActionKey, retrieval_keys
from agentworld.errors import AgentWorldError, BackendError
from agentworld.models.base import ChatRequest, ChatResult, register_backend
from agentworld.models.retrieval_corpus import CorpusItem, corpus_rows, default_corpus, describe_corpus
from agentworld.models.retrieval_own import Recording, SelfAnswers, recording_of, self_answers
from agentworld.schema import BenchSample, Message

FIX = "--model-corpus PATH (AgentWorldBench or unified JSONL files or folders)"


class EmptyCorpusError(AgentWorldError):
    """The retrieval index holds no transitions (no corpus given, or everything was excluded)."""


class DomainNotCoveredError(EmptyCorpusError, BackendError):
    """The corpus holds no transitions of a domain asked for; retrying cannot help (``retryable`` False).

    Attributes:
        domains: the domains without transitions.
        held: transitions per domain the corpus does hold.
    """

    def __init__(self, domains: Sequence[str], held: dict[str, int], corpus: str) -> None:
        self.domains = tuple(domains)
        self.held = dict(held)
        holds = ", ".join(f"{n} {d}" for d, n in sorted(held.items())) + " transitions" if held else "nothing"
        which = "that domain" if len(self.domains) == 1 else "those domains"
        super().__init__(f"the retrieval world model has no {', '.join(self.domains)} transitions: its "
                         f"corpus ({corpus}) holds {holds}; build it from recordings of {which} with {FIX}")


@dataclass(frozen=True)
class Transition:
    """One recorded (action, observation) pair, with what similarity is computed on."""

    domain: str
    action: str
    key: str
    """Normalised action: terminal keystrokes joined, MCP ``tool k=v`` with sorted arguments."""
    context: str
    """Previous normalised action (terminal: and the cwd before this action, ``"ls -la cwd=/app"``)."""
    observation: str
    source: str
    """Id of the row whose ``turn_idx`` is this turn (else the first row holding it)."""
    turn: int
    group: str | None = None
    """What a neighbour should share with the query (the MCP tool name); None where nothing is."""


@dataclass(frozen=True)
class Neighbour:
    transition: Transition
    similarity: float


def _features(key: ActionKey | str) -> Counter[str]:
    text = key if isinstance(key, str) else key.text
    low = f" {text.lower()} "
    grams: Counter[str] = Counter(low[i:i + 3] for i in range(len(low) - 2))
    grams.update(f"w:{w}" for w in re.findall(r"[\w./-]+", low))
    if isinstance(key, ActionKey):
        grams.update(key.tokens)
    return grams


def _norm(vec: dict[str, float]) -> dict[str, float]:
    size = math.sqrt(sum(v * v for v in vec.values())) or 1.0
    return {k: v / size for k, v in vec.items()}


def _cos(a: dict[str, float], b: dict[str, float]) -> float:
    if len(a) > len(b):
        a, b = b, a
    return sum(v * b.get(k, 0.0) for k, v in a.items())


class RetrievalIndex:
    """Transitions of a corpus with a TF-IDF index over their normalised actions.

    Args:
        corpus: AgentWorldBench or unified-trajectory JSONL files and folders, rows (dicts or
            :class:`BenchSample`) or :class:`~agentworld.schema.Trajectory` objects, of any domains.
        exclude: rows for which this is true are left out, so a demo can evaluate scenarios
            the index has never seen (:func:`~agentworld.models.retrieval_own.leaving_out`).
        label: what the corpus is, for error messages (default: the paths given).

    Attributes:
        recordings: the recordings (domain, trajectory) the index holds rows of.
        left_out: the recordings ``exclude`` left out.
    """

    EXACT_W = 0.10
    """Bonus for the identical action; the context takes the domain's ``context_weight``, the action
    the rest."""
    MODE_PENALTY = 0.5
    """Subtracted when a transition starts in another mode (at a shell prompt or inside a program)
    than the current screen: ``echo done`` typed at a prompt is not a heredoc line."""

    def __init__(self, corpus: Iterable[CorpusItem], exclude: Callable[[BenchSample], bool] | None = None,
                 *, label: str | None = None) -> None:
        items = [corpus] if isinstance(corpus, str | Path) else list(corpus)
        self.label = label or describe_corpus(items)
        seen: dict[tuple[str, str, str, str], int] = {}
        self.transitions: list[Transition] = []
        system_domains: dict[str, set[str]] = {}
        counts: list[Counter[str]] = []
        indexed: set[Recording] = set()
        left_out: set[Recording] = set()
        for row in corpus_rows(items):
            if exclude is not None and exclude(row):
                left_out.add(recording_of(row))
                continue
            indexed.add(recording_of(row))
            dom, keys = row.domain, retrieval_keys(row.domain)
            system_domains.setdefault(row.system_str.strip(), set()).add(dom)
            for j, (act, obs) in enumerate(zip(row.prompt, row.response, strict=False)):
                key = keys.key(act)
                ctx = keys.context(row.prompt[j - 1] if j else None, row.response[j - 1] if j else None,
                                   row.prompt[0])
                ident = (dom, key.text, ctx, obs)
                if ident not in seen:
                    seen[ident] = len(self.transitions)
                    self.transitions.append(Transition(dom, act, key.text, ctx, obs, row.id, j + 1,
                                                       key.group))
                    counts.append(_features(key))
                elif row.turn_idx == j + 1:  # the row that asks for this turn names it
                    at = seen[ident]
                    self.transitions[at] = replace(self.transitions[at], source=row.id)
        self.recordings, self.left_out = frozenset(indexed), frozenset(left_out)
        df: Counter[str] = Counter(f for c in counts for f in c)
        n = len(counts)
        self._idf = {f: math.log((1 + n) / (1 + d)) + 1.0 for f, d in df.items()}
        self._vecs = [_norm({f: tf * self._idf[f] for f, tf in c.items()}) for c in counts]
        self._ctx_vecs = [_norm(dict(_features(t.context))) for t in self.transitions]
        self._modes = [retrieval_keys(t.domain).observation_mode(t.observation) for t in self.transitions]
        self._postings: dict[str, list[int]] = {}
        for i, vec in enumerate(self._vecs):
            for f in vec:
                self._postings.setdefault(f, []).append(i)
        self._domains = Counter(t.domain for t in self.transitions)
        self._system_domains = {text: doms.pop() for text, doms in system_domains.items()
                                if text and len(doms) == 1}

    def domain_of(self, request: ChatRequest) -> str | None:
        """The domain of a request whose system prompt is that of corpus rows of exactly one domain.

        Why: a request carries no domain, and its action alone cannot tell tool-call domains apart
        (a search call reads like an MCP call); the system prompt a recorded domain's rows share can.
        Compared without surrounding whitespace (the simulator sends its prompt stripped, rows may end
        in a newline); failing that, the longest such prompt the request's begins with, as the
        simulator's does when it appends sections (the initial state, facts) to the domain's prompt.
        """
        system = next((m.content for m in request.messages if m.role == "system"), None)
        if not system:
            return None
        system = system.strip()
        found = self._system_domains.get(system)
        if found is None:
            heads = [text for text in self._system_domains if system.startswith(text + "\n")]
            found = self._system_domains[max(heads, key=len)] if heads else None
        return found

    def __len__(self) -> int:
        return len(self.transitions)

    def domain_counts(self) -> dict[str, int]:
        """Transitions per domain."""
        return dict(self._domains)

    def check_domains(self, domains: Iterable[str]) -> None:
        """Refuse, before any request, domains the corpus holds no transitions of.

        Raises:
            EmptyCorpusError: the index is empty.
            DomainNotCoveredError: naming the missing domains, what the corpus holds and the fix.
        """
        if not self.transitions:
            raise EmptyCorpusError(f"the retrieval corpus ({self.label}) is empty: build it from recordings "
                                   f"with {FIX}, and check the exclude predicate")
        missing = sorted(set(domains) - set(self._domains))
        if missing:
            raise DomainNotCoveredError(missing, self.domain_counts(), self.label)

    def _query_vec(self, key: ActionKey) -> dict[str, float]:
        return _norm({f: tf * self._idf[f] for f, tf in _features(key).items() if f in self._idf})

    def _shortlist(self, ranked: list[int], key: ActionKey, exact_first: bool,
                   width: int) -> dict[int, tuple[bool, bool]]:
        """The ``width`` best-scored candidates of each tier (another group; another action where
        identical actions rank first), every identical one kept: the tier ranks before similarity."""
        tiers: dict[int, tuple[bool, bool]] = {}
        shown: Counter[tuple[bool, bool]] = Counter()
        for i in ranked:
            t = self.transitions[i]
            tier = (key.group is not None and t.group != key.group, exact_first and t.key != key.text)
            if shown[tier] < width or (exact_first and not tier[1]):
                tiers[i] = tier
                shown[tier] += 1
        return tiers

    def nearest(self, query: BenchSample | ChatRequest | Sequence[Message], k: int = 1,
                domain: str | None = None) -> list[Transition]:
        """The ``k`` most similar transitions (same domain when it is known), best first."""
        return [n.transition for n in self.search(query, k, domain)]

    def search(self, query: BenchSample | ChatRequest | Sequence[Message] | Query, k: int = 1,
               domain: str | None = None) -> list[Neighbour]:
        """Like :meth:`nearest`, with similarities in [0, 1].

        Raises:
            EmptyCorpusError: the index is empty.
            DomainNotCoveredError: the query's domain is known and the corpus has none of it.
        """
        q = query if isinstance(query, Query) else parse_query(query, domain)
        self.check_domains([q.domain] if q.domain is not None else [])
        keys = retrieval_keys(q.domain)
        key = keys.key(q.action)
        qvec = self._query_vec(key)
        scores: dict[int, float] = {}
        for f, w in qvec.items():
            for i in self._postings.get(f, ()):
                scores[i] = scores.get(i, 0.0) + w * self._vecs[i].get(f, 0.0)
        cands = [i for i in scores if q.domain is None or self.transitions[i].domain == q.domain]
        if not cands:
            cands = [i for i, t in enumerate(self.transitions) if q.domain is None or t.domain == q.domain]
        cands.sort(key=lambda i: -scores.get(i, 0.0))
        tiers = self._shortlist(cands, key, keys.exact_first, max(50, k))
        cvec = _norm(dict(_features(keys.context(q.prev_action, q.prev_obs, q.first_action))))
        mode = keys.query_mode(q.prev_obs, q.first_action)
        action_w = 1.0 - keys.context_weight - self.EXACT_W
        out = []
        for i in tiers:
            t = self.transitions[i]
            sim = (action_w * scores.get(i, 0.0) + keys.context_weight * _cos(cvec, self._ctx_vecs[i])
                   + self.EXACT_W * (t.key == key.text))
            if mode is not None and self._modes[i] is not None and self._modes[i] != mode:
                sim -= self.MODE_PENALTY
            out.append((tiers[i], Neighbour(t, round(min(max(sim, 0.0), 1.0), 6))))
        out.sort(key=lambda x: (x[0], -x[1].similarity))
        return [n for _, n in out[:k]]


@dataclass(frozen=True)
class Query:
    """A request as retrieval reads it: the current action, the turn before it, the domain."""

    action: str
    domain: str | None
    prev_action: str | None
    prev_obs: str | None
    first_action: str
    observations: tuple[str, ...] = ()
    """Every earlier observation, oldest first."""


def parse_query(query: BenchSample | ChatRequest | Sequence[Message], domain: str | None = None) -> Query:
    """Current action, history and domain of a sample or a chat message list."""
    if isinstance(query, BenchSample):
        hist = query.history()
        first = query.prompt[0] if query.prompt else query.action
        return Query(query.action, domain or query.domain, hist[-1][0] if hist else None,
                     hist[-1][1] if hist else None, first, tuple(obs for _, obs in hist))
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
    return Query(action, domain or detect_domain(action), prev_users[-1] if prev_users else None,
                 prev_obs, messages[users[0]].content,
                 tuple(m.content for m in before if m.role == "assistant"))


class RetrievalBackend:
    """A :class:`~agentworld.models.base.ChatBackend` answering from a :class:`RetrievalIndex`."""

    def __init__(self, index: RetrievalIndex, name: str = "retrieval") -> None:
        if not len(index):
            why = (f" once the {len(index.left_out)} recording(s) of the evaluated samples are left out "
                   "(--keep-own keeps them)" if index.left_out else "")
            raise EmptyCorpusError(f"the retrieval corpus ({index.label}) is empty{why}: build it from "
                                   f"recordings with {FIX}")
        self.index = index
        self.name = name

    def check_domains(self, domains: Iterable[str]) -> None:
        """Refuse up front what :meth:`complete` would refuse (:meth:`RetrievalIndex.check_domains`)."""
        self.index.check_domains(domains)

    def self_answers(self, samples: Sequence[BenchSample]) -> SelfAnswers:
        """How many of ``samples`` the index would answer from their own recording."""
        return self_answers(samples, self.index.recordings)

    async def complete(self, request: ChatRequest) -> ChatResult:
        query = parse_query(request, self.index.domain_of(request))
        best = self.index.search(query, k=1)[0]
        t = best.transition
        observation = retrieval_keys(t.domain).adapt(t.observation, query.action, query.first_action,
                                                     query.observations)
        return ChatResult(content=f"<predicted_observation>{observation}</predicted_observation>",
                          model=request.model or self.name, source="retrieval",
                          meta={"neighbour": f"{t.source}#{t.turn}", "similarity": best.similarity})


@register_backend("retrieval")
def _retrieval(corpus: Iterable[CorpusItem] | None = None,
               exclude: Callable[[BenchSample], bool] | None = None) -> RetrievalBackend:
    if corpus is None:
        from agentworld.corpus import shipped_corpora

        names = list(shipped_corpora())
        label = f"the shipped {', '.join(names) or 'no'} {'corpus' if len(names) < 2 else 'corpora'}"
        return RetrievalBackend(RetrievalIndex(default_corpus(), exclude, label=label))
    return RetrievalBackend(RetrievalIndex(corpus, exclude))


__all__ = ["DomainNotCoveredError", "EmptyCorpusError", "Neighbour", "Query", "RetrievalBackend",
           "RetrievalIndex", "Transition", "default_corpus", "parse_query"]
