"""Information-theoretic loss masking: train on the turns whose next state carries information.

For each (action, observation) pair, on *content tokens* (tokens with a letter or digit, from the
configured tokenizer; punctuation is structure, shared by nearly every JSON or shell text, and
would make everything look familiar), with the observation header and code fences removed:

- ``overlap`` (OL): share of observation tokens whose type occurs in the context (history + action);
- ``novelty`` (Nov): share of observation token *types* absent from the context;
- ``jaccard`` (Jac): Jaccard similarity of the action's and the observation's type sets;
- ``length_ratio`` (R): observation tokens / action tokens (action counted as at least 1);
- ``repeat`` (not in :class:`TurnStats`): share of the observation's non-blank lines that appear
  verbatim as lines of earlier observations — repeated screens and listings.

:func:`classify` takes the first matching rule, in this order (thresholds in :class:`MaskThresholds`):

1. ``empty``: no observation tokens at all;
2. ``error``: the domain's error patterns match (:func:`~agentworld.domains.failures.is_error`);
3. ``echo``: the observation restates the action: Jac ≥ 0.6 and R ≤ 2;
4. ``empty``: nothing beyond the context and short: Nov = 0 and R ≤ 1.5 (a bare prompt after ``cd``);
5. ``boilerplate``: Nov ≤ 0.1 and repeat ≥ 0.8 (the same screen again);
6. ``retrieval``: reads back content already in context: OL ≥ 0.6, Nov ≤ 0.2 and R ≥ 2 (a file
   the agent wrote, a record fetched again after a small change);
7. ``expansion``: long and new: Nov ≥ 0.2 and R ≥ 2 (a listing, a newly fetched record);
8. ``state_change``: the rest — short outputs that report what changed.

Each category has a keep ratio (:data:`DEFAULT_KEEP_RATIOS`: 100% for state changes, expansions and
errors, 30% retrieval, 5% for empty, echo and boilerplate); whether one sample is kept is decided by
a stable hash of (seed, sample id), so reruns and machines agree.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agentworld.data.process import Sample, StepCounter, stable_units
from agentworld.data.records import PlainMask, PlainSample, PlainStats
from agentworld.data.tokens import (
    TokenKey,
    content_token_keys,
    get_tokenizer,
    regex_tokenize,
)
from agentworld.data.types import MASK_CATEGORIES, LossMask, MaskCategory, TurnStats
from agentworld.domains.failures import error_patterns, is_error, observation_body

DEFAULT_KEEP_RATIOS: dict[str, float] = {
    "state_change": 1.0, "expansion": 1.0, "error": 1.0, "retrieval": 0.3,
    "boilerplate": 0.05, "echo": 0.05, "empty": 0.05,
}


class MaskThresholds(BaseModel):
    """Boundaries of the classification rules (see the module docstring for their order)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    echo_min_jaccard: float = 0.6
    echo_max_ratio: float = 2.0
    empty_max_novelty: float = 0.0
    empty_max_ratio: float = 1.5
    boilerplate_max_novelty: float = 0.1
    boilerplate_min_repeat: float = 0.8
    retrieval_min_overlap: float = 0.6
    retrieval_max_novelty: float = 0.2
    retrieval_min_ratio: float = 2.0
    expansion_min_novelty: float = 0.2
    expansion_min_ratio: float = 2.0


class MaskConfig(BaseModel):
    """Keep ratio per category (missing ones take the defaults), thresholds and tokenizer name."""

    model_config = ConfigDict(extra="forbid")

    keep_ratios: dict[str, float] = Field(default_factory=lambda: dict(DEFAULT_KEEP_RATIOS))
    thresholds: MaskThresholds = Field(default_factory=MaskThresholds)
    tokenizer: str = "regex"

    @field_validator("keep_ratios")
    @classmethod
    def _complete(cls, value: dict[str, float]) -> dict[str, float]:
        unknown = set(value) - set(MASK_CATEGORIES)
        if unknown:
            raise ValueError(f"unknown categories {sorted(unknown)}; known: {', '.join(MASK_CATEGORIES)}")
        bad = {k: v for k, v in value.items() if not 0.0 <= v <= 1.0}
        if bad:
            raise ValueError(f"keep ratios must be within [0, 1]: {bad}")
        return {**DEFAULT_KEEP_RATIOS, **value}


@dataclass(frozen=True)
class Signals:
    """The statistics of one pair, plus ``repeat`` (line-level repetition of earlier observations)."""

    stats: TurnStats
    repeat: float


def _lines(body: str) -> list[str]:
    """The non-blank lines of an observation body, stripped."""
    return list(filter(None, map(str.strip, body.splitlines())))


class PairTokens:
    """Content-token keys of one pair, their type sets and the observation's non-blank lines."""

    __slots__ = ("act", "act_types", "lines", "obs", "obs_types")

    def __init__(self, act: list[TokenKey], obs: list[TokenKey], lines: list[str]) -> None:
        self.act, self.obs, self.lines = act, obs, lines
        self.act_types, self.obs_types = set(act), set(obs)


class HistoryContext:
    """Token types and observation lines of a history, extended turn by turn within a trajectory.

    Samples of one trajectory arrive in order, each history extending the previous one, so the
    context grows incrementally instead of being re-tokenised for every turn. The tokens of the
    last pair measured are kept too: that pair is usually the next history's newest, so each
    text is tokenised once. Tokens are :func:`tokens.content_token_keys` (bytes for the default
    tokenizer): the statistics only compare them. Plain samples' trajectories are known by their
    shared ``pairs`` list (:meth:`advance_pairs`).
    """

    def __init__(self, tokenize: Callable[[str], list[str]]) -> None:
        self.tokenize = tokenize
        self.key: str | list[tuple[str, str]] | None = None
        self.turns = 0
        self.types: set[TokenKey] = set()
        self.lines: set[str] = set()
        self._last: tuple[str, str, PairTokens] | None = None

    def measure(self, action: str, observation: str) -> PairTokens:
        """The tokens and lines of one pair (remembered for the next call)."""
        last = self._last
        if last is not None and last[0] == action and last[1] == observation:
            return last[2]
        body = observation_body(observation)  # once, for both the tokens and the lines
        pair = PairTokens(content_token_keys(action, self.tokenize),
                          content_token_keys(body, self.tokenize), _lines(body))
        self._last = (action, observation, pair)
        return pair

    def advance(self, key: str | None, history: Sequence[tuple[str, str]]) -> None:
        """Make the context that of ``history`` (the trajectory called ``key``; None: unknown)."""
        if key is None or key != self.key or len(history) < self.turns:
            self.key, self.turns, self.types, self.lines = key, 0, set(), set()
        self._add(history, len(history))

    def advance_pairs(self, pairs: list[tuple[str, str]], n: int) -> None:
        """Make the context that of ``pairs[:n]`` (a plain sample's trajectory, known by the list)."""
        if pairs is not self.key or n < self.turns:
            self.key, self.turns, self.types, self.lines = pairs, 0, set(), set()
        self._add(pairs, n)

    def _add(self, pairs: Sequence[tuple[str, str]], n: int) -> None:
        types, lines = self.types, self.lines
        for action, observation in pairs[self.turns:n]:
            pair = self.measure(action, observation)
            types |= pair.act_types
            types |= pair.obs_types
            lines.update(pair.lines)
        self.turns = n


def turn_signals(history: Sequence[tuple[str, str]], action: str, observation: str,
                 tokenize: Callable[[str], list[str]] = regex_tokenize, *,
                 context: HistoryContext | None = None, key: str | None = None) -> Signals:
    """OL, Nov, Jac, R and repeat of one pair (see the module docstring for the definitions)."""
    ctx = context or HistoryContext(tokenize)
    ctx.advance(key, history)
    stats, repeat = _signals(ctx, ctx.measure(action, observation))
    return Signals(stats=stats.to_model(), repeat=repeat)


def _signals(ctx: HistoryContext, pair: PairTokens) -> tuple[PlainStats, float]:
    """The statistics of ``pair`` against the context ``ctx`` holds."""
    obs, obs_types, act_types = pair.obs, pair.obs_types, pair.act_types
    novel = obs_types.difference(ctx.types, act_types)  # observation types absent from the context
    n_obs, n_act = len(obs), len(pair.act)
    n_novel = sum(map(novel.__contains__, obs)) if novel else 0
    shared = len(obs_types & act_types)
    union = len(obs_types) + len(act_types) - shared
    stats = PlainStats((n_obs - n_novel) / n_obs if obs else 1.0,
                       len(novel) / len(obs_types) if obs_types else 0.0,
                       shared / union if union else 0.0,
                       n_obs / max(n_act, 1), n_obs, n_act)
    lines = pair.lines
    repeat = sum(map(ctx.lines.__contains__, lines)) / len(lines) if lines else 0.0
    return stats, repeat


def classify(signals: Signals, observation: str, domain: str,
             th: MaskThresholds | None = None) -> MaskCategory:
    """The category of a pair: the first rule of the module docstring that matches."""
    return _category(signals.stats, signals.repeat, observation, domain, th or MaskThresholds(),
                     error_patterns(domain))


def _category(s: TurnStats | PlainStats, repeat: float, observation: str, domain: str,
              th: MaskThresholds, patterns: tuple[str, ...]) -> MaskCategory:
    if s.obs_tokens == 0:
        return "empty"
    if is_error(observation, domain, patterns):
        return "error"
    if s.jaccard >= th.echo_min_jaccard and s.length_ratio <= th.echo_max_ratio:
        return "echo"
    if s.novelty <= th.empty_max_novelty and s.length_ratio <= th.empty_max_ratio:
        return "empty"
    if s.novelty <= th.boilerplate_max_novelty and repeat >= th.boilerplate_min_repeat:
        return "boilerplate"
    if (s.overlap >= th.retrieval_min_overlap and s.novelty <= th.retrieval_max_novelty
            and s.length_ratio >= th.retrieval_min_ratio):
        return "retrieval"
    if s.novelty >= th.expansion_min_novelty and s.length_ratio >= th.expansion_min_ratio:
        return "expansion"
    return "state_change"


def mask(samples: Iterable[Sample], config: MaskConfig | None = None, seed: int = 0,
         stats: StepCounter | None = None) -> Iterator[Sample]:
    """Attach a :class:`LossMask` to every sample (none is dropped; exports decide what to do).

    The keep decision is ``stable_unit(seed, "mask", sample.id) < keep_ratios[category]`` (a ratio
    of 0 decides without hashing). Details counted: samples per category and ``<category>.kept``.
    A plain sample (:mod:`agentworld.data.records`) gets a plain mask, set in place.
    """
    config = config or MaskConfig()
    tally = stats if stats is not None else StepCounter("mask")
    context = HistoryContext(get_tokenizer(config.tokenizer))
    ratios, thresholds, details = config.keep_ratios, config.thresholds, tally.details
    kept_names = {c: f"{c}.kept" for c in MASK_CATEGORIES}
    unit = stable_units(seed, "mask")
    patterns = cache(error_patterns)  # the registry's domains do not change during a step
    for sample in samples:
        tally.inputs += 1
        if isinstance(sample, PlainSample):
            context.advance_pairs(sample.pairs, sample.turn - 1)
        else:
            context.advance(sample.trajectory_id, sample.history)
        signals, repeat = _signals(context, context.measure(sample.action, sample.observation))
        category = _category(signals, repeat, sample.observation, sample.domain, thresholds,
                             patterns(sample.domain))
        ratio = ratios[category]
        keep = ratio > 0.0 and unit(sample.id) < ratio
        details[category] += 1
        details[kept_names[category]] += keep
        tally.outputs += 1
        if isinstance(sample, PlainSample):  # the stream's own record: set in place
            sample.mask = PlainMask(category, keep, ratio, signals)
            yield sample
        else:
            loss = LossMask(category=category, keep=keep, keep_ratio=ratio, stats=signals.to_model())
            yield sample.model_copy(update={"mask": loss})


def category_shares(counts: dict[str, Any]) -> dict[str, float]:
    """Share of samples per category from a mask step's details (categories in canonical order)."""
    total = sum(int(counts.get(c, 0)) for c in MASK_CATEGORIES)
    return {c: int(counts.get(c, 0)) / total for c in MASK_CATEGORIES} if total else {}
