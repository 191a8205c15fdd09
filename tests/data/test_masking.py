"""Loss masking: statistics and categories of small hand-made turns, worked out by hand below.

Content tokens come from the regex tokenizer with punctuation dropped. For each case the comment
gives the token lists and the arithmetic that leads to the expected category.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from pydantic import ValidationError

from agentworld.data.masking import MaskConfig, classify, mask, turn_signals
from agentworld.data.process import StepCounter, expand
from agentworld.data.tokens import (
    content_token_keys,
    content_tokens,
    regex_tokenize,
)
from agentworld.data.types import TrainSample
from agentworld.domains.base import DomainPlugin, plugin, register_domain, unregister_domain
from agentworld.domains.error_patterns import COMMON_ERRORS, SEARCH_TOOL_ERRORS, SHELL_ERRORS
from agentworld.domains.failures import error_patterns, is_error
from agentworld.schema import Trajectory, Turn

MARK = "**Environment Observation:**\n"


def _category(history: list[tuple[str, str]], action: str, observation: str, domain: str = "terminal") -> str:
    return classify(turn_signals(history, action, observation), observation, domain)


def test_tokenizer_keeps_paths_numbers_and_words_whole() -> None:
    assert regex_tokenize("root@h:/app# ls -la ../x 0.5") == ["root", "@", "h", ":", "/app", "#", "ls", "-la",
                                                              "../x", "0.5"]
    assert content_tokens(MARK + '{"a": "b c"}', observation=True) == ["a", "b", "c"]


def test_echo() -> None:
    # action [say, hello, world]; observation [hello, world] → Jac = 2/3 ≥ 0.6, R = 2/3 ≤ 2.
    sig = turn_signals([], "say hello world", MARK + "hello world")
    assert sig.stats.jaccard == pytest.approx(2 / 3)
    assert sig.stats.length_ratio == pytest.approx(2 / 3)
    assert (sig.stats.overlap, sig.stats.novelty) == (1.0, 0.0)
    assert _category([], "say hello world", MARK + "hello world") == "echo"


def test_empty() -> None:
    # no observation tokens at all → empty (rule 1)
    assert _category([], "cd /tmp", MARK) == "empty"
    # action [cd, /tmp]; observation [/tmp]: Jac = 1/2 < 0.6, Nov = 0, R = 1/2 ≤ 1.5 → empty (rule 4)
    assert _category([], "cd /tmp", MARK + "/tmp") == "empty"


def test_boilerplate_repeats_an_earlier_screen() -> None:
    # history observation lines {alpha.txt, beta.txt, gamma.txt, delta.txt}; the same listing again:
    # Nov = 0, repeat = 4/4, R = 4/1 = 4 (too long for empty), Jac = 0 → boilerplate.
    listing = "alpha.txt\nbeta.txt\ngamma.txt\ndelta.txt"
    history = [("ls", MARK + listing)]
    sig = turn_signals(history, "ls", MARK + listing)
    assert (sig.stats.novelty, sig.repeat, sig.stats.length_ratio, sig.stats.jaccard) == (0.0, 1.0, 4.0, 0.0)
    assert _category(history, "ls", MARK + listing) == "boilerplate"


def test_retrieval_reads_back_what_the_context_holds() -> None:
    # context {write, notes.txt, alpha, beta, gamma, delta, ok, read}; observation
    # [notes.txt, alpha, beta, gamma, delta]: OL = 5/5, Nov = 0, R = 5/2 = 2.5, repeat = 0 → retrieval.
    history = [("write notes.txt alpha beta gamma delta", MARK + "ok")]
    obs = MARK + "notes.txt: alpha beta gamma delta"
    sig = turn_signals(history, "read notes.txt", obs)
    assert (sig.stats.overlap, sig.stats.novelty, sig.stats.length_ratio, sig.repeat) == (1.0, 0.0, 2.5, 0.0)
    assert sig.stats.jaccard == pytest.approx(1 / 6)
    assert _category(history, "read notes.txt", obs) == "retrieval"


def test_expansion_is_long_and_new() -> None:
    # action [list, users]; observation [alice, bob, carol, dave, erin]: Nov = 1, OL = 0, R = 2.5.
    sig = turn_signals([], "list users", MARK + "alice bob carol dave erin")
    assert (sig.stats.novelty, sig.stats.overlap, sig.stats.length_ratio) == (1.0, 0.0, 2.5)
    assert (sig.stats.obs_tokens, sig.stats.action_tokens) == (5, 2)
    assert _category([], "list users", MARK + "alice bob carol dave erin") == "expansion"


def test_error_by_domain_patterns() -> None:
    tb = MARK + "Traceback (most recent call last):\n  File x\nValueError: bad"
    assert _category([], "run job", tb) == "error"
    assert _category([], "mytool", MARK + "bash: mytool: command not found") == "error"
    assert _category([], "get", MARK + '{"error": "not found"}', domain="mcp") == "error"
    assert _category([], "get", MARK + '{"error": null, "value": 1}', domain="mcp") != "error"


def test_state_change_is_the_rest() -> None:
    # action [set, mode, fast]; observation [mode, is, now, fast]: OL = 2/4, Nov = 2/4, Jac = 2/5, R = 4/3.
    sig = turn_signals([], "set mode fast", MARK + "mode is now fast")
    assert (sig.stats.overlap, sig.stats.novelty, sig.stats.jaccard) == (0.5, 0.5, 0.4)
    assert sig.stats.length_ratio == pytest.approx(4 / 3)
    assert _category([], "set mode fast", MARK + "mode is now fast") == "state_change"


def _samples(n: int = 1) -> list[TrainSample]:
    turns = (Turn(action="say hello world", observation=MARK + "hello world"),
             Turn(action="list users", observation=MARK + "alice bob carol dave erin"),
             Turn(action="set mode fast", observation=MARK + "mode is now fast"))
    trajs = [Trajectory(id=f"t{i}", domain="terminal", system_prompt="S", turns=turns) for i in range(n)]
    return list(expand(trajs))


def test_mask_attaches_category_stats_and_keep_decision() -> None:
    stats = StepCounter("mask")
    out = list(mask(_samples(), MaskConfig(keep_ratios={"echo": 0.0}), seed=0, stats=stats))
    assert [s.mask.category for s in out if s.mask] == ["echo", "expansion", "state_change"]
    assert [s.mask.keep for s in out if s.mask] == [False, True, True]
    assert stats.stats().details == {"echo": 1, "echo.kept": 0, "expansion": 1, "expansion.kept": 1,
                                     "state_change": 1, "state_change.kept": 1}
    # incremental context gives the same statistics as computing each turn from scratch
    for s in out:
        assert s.mask is not None and s.mask.stats == turn_signals(s.history, s.action, s.observation).stats


def test_keep_decision_is_seeded_and_follows_the_ratio() -> None:
    config = MaskConfig(keep_ratios={"echo": 0.5})
    samples = [s for s in _samples(400) if s.turn == 1]
    first = [s.mask.keep for s in mask(samples, config, seed=1) if s.mask]
    again = [s.mask.keep for s in mask(samples, config, seed=1) if s.mask]
    other = [s.mask.keep for s in mask(samples, config, seed=2) if s.mask]
    assert first == again and first != other
    assert 0.4 < sum(first) / len(first) < 0.6


def test_mask_config_validation() -> None:
    assert MaskConfig().keep_ratios["empty"] == 0.05
    assert MaskConfig(keep_ratios={"retrieval": 0.9}).keep_ratios["state_change"] == 1.0
    with pytest.raises(ValidationError, match="unknown categories"):
        MaskConfig(keep_ratios={"noise": 0.1})
    with pytest.raises(ValidationError, match=r"within \[0, 1\]"):
        MaskConfig(keep_ratios={"echo": 1.5})


def test_token_keys_are_the_regex_tokens_encoded() -> None:
    # The bytes fast path (ASCII) must give exactly the regex tokenizer's content tokens: random
    # texts over the characters that decide token boundaries (word characters, the separators
    # ./~-, underscores, punctuation, whitespace incl. \x1c-\x1f, non-ASCII letters and digits).
    import random

    alphabet = "ab_Z09./~-  \t\n\x1c\x1f*:#@\"'`{}é中٣²"
    rnd = random.Random(7)
    texts = ["root@h:/app# ls -la ../x 0.5 --", "a--b -_- __x__ ~/x/ ./ .a. -",
             MARK + "**Action:**\n```json\nx"]
    texts += ["".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 24))) for _ in range(20000)]
    texts += [t.encode("ascii", "ignore").decode() for t in texts]
    for text in texts:
        for observation in (False, True):
            expected = [t.encode() for t in content_tokens(text, observation=observation)]
            assert content_token_keys(text, observation=observation) == expected, text
    assert content_token_keys("a b-", str.split) == content_tokens("a b-", str.split) == ["a", "b-"]


def test_error_memo_follows_changed_patterns() -> None:
    # is_error remembers answers; a pattern added later must still count (patterns are in the key).
    obs = MARK + "disk quota exceeded"
    assert not is_error(obs, "terminal")
    terminal = plugin("terminal")
    assert terminal is not None
    register_domain(replace(terminal, error_patterns=(*terminal.error_patterns, r"quota exceeded")))
    try:
        assert is_error(obs, "terminal")
    finally:
        unregister_domain("terminal")
    assert not is_error(obs, "terminal")


def test_error_patterns_come_from_the_domains_plugin() -> None:
    """Each plugin lists its patterns; one without its own (or an unknown domain) has the common ones."""
    assert error_patterns("cooking") == DomainPlugin(name="x", display="X").error_patterns == COMMON_ERRORS
    assert error_patterns("search") == COMMON_ERRORS + SEARCH_TOOL_ERRORS
    assert error_patterns("terminal") == COMMON_ERRORS + SHELL_ERRORS
    assert is_error(MARK + "bash: foo: command not found", "terminal")
    assert not is_error(MARK + "bash: foo: command not found", "search")
    assert is_error(MARK + "net::ERR_CONNECTION_REFUSED", "web") and not is_error(MARK + "net::ERR_X", "mcp")
    assert is_error(MARK + "ERROR unknown tool", "mcp") and not is_error(MARK + "ERROR unknown tool", "web")
    notes = DomainPlugin(name="notes", display="Notes", error_patterns=(r"^\(no such key: ",),
                         package="agentworld.domains.terminal")
    register_domain(notes)
    try:
        assert is_error(MARK + "(no such key: size)", "notes")
        assert not is_error(MARK + "(no such key: size)", "terminal")
        assert not is_error(MARK + "colour = KeyError: x", "notes")  # it left the common ones out
    finally:
        unregister_domain("notes")
