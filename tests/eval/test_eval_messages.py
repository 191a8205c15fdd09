"""Request construction: the world-model message list and the judge messages match the official harness."""

from __future__ import annotations

from pathlib import Path

from agentworld.domains.registry import DOMAINS
from agentworld.eval import EvalConfig, run_eval
from agentworld.eval.infer import model_request
from agentworld.eval.judge import pair_messages, prediction_position, rubric_messages
from agentworld.schema import parse_row
from eval_helpers import bench_rows, scripted_judge, scripted_model, write_bench

ROW = {"task": "agentworld/terminal", "id": "x-2", "prompt": ["act one", "act two", "act three"],
       "response": ["**Environment Observation:**\nobs one", "**Environment Observation:**\nobs two  \n",
                    "o3"],
       "system_str": "SYS", "turn_idx": 2}


def test_world_model_messages_are_sample_messages(tmp_path: Path) -> None:
    write_bench(tmp_path / "data", bench_rows(2))
    model = scripted_model()
    run_eval(EvalConfig(data=[tmp_path / "data"], out=tmp_path / "run", model="m", no_judge=True,
                        max_tokens=123, temperature=0.1, progress=False, rules=False), model=model)
    sample = parse_row(bench_rows(2)[1])
    sent = {c.messages[-1].content: c for c in model.calls}
    request = sent[sample.action]
    assert list(request.messages) == sample.messages()
    assert [m.role for m in request.messages] == ["system", "user", "assistant", "user"]
    assert (request.model, request.max_tokens, request.temperature) == ("m", 123, 0.1)
    assert request == model_request(sample, "m", 123, 0.1)


def test_rubric_messages_exact() -> None:
    sample = parse_row(ROW)
    domain = DOMAINS["terminal"]
    system, user = rubric_messages(sample, "**Environment Observation:**\npredicted", domain)
    assert system.role == "system" and system.content == domain.judge_system_prompt
    expected_head = ("# Context (Historical Interactions):\n\n"
                     "act one\n**Environment Observation:**\nobs one\n\n"
                     "\n\n# Current Turn:\n\nact two\n\n"
                     "**World Model Output (Simulated):**\n```\npredicted\n```\n\n"
                     "**Ground Truth (Real Output):**\n```\nobs two\n```\n\nCompare the simulated")
    assert user.role == "user" and user.content.startswith(expected_head)
    assert user.content == user.content.strip()


def test_first_turn_has_no_context_block() -> None:
    sample = parse_row({**ROW, "turn_idx": 1})
    _, user = rubric_messages(sample, "p", DOMAINS["terminal"])
    assert user.content.startswith("# Current Turn:\n\nact one\n\n**World Model Output (Simulated):**")


def test_turing_and_reference_messages_place_texts_by_seeded_position() -> None:
    sample = parse_row(ROW)
    positions = {prediction_position(f"id{i}", 0) for i in range(20)}
    assert positions == {"A", "B"}
    assert prediction_position("x-2", 0) == prediction_position("x-2", 0)
    (msg,) = pair_messages(sample, "PRED", "**Environment Observation:**\nobs two", DOMAINS["terminal"],
                           "turing", "A")
    assert "**Response A:**\n```\nPRED\n```" in msg.content
    assert "**Response B:**\n```\nobs two\n```" in msg.content
    assert "Ground Truth" not in msg.content
    (ref,) = pair_messages(sample, "PRED", "REF", DOMAINS["terminal"], "reference", "B")
    assert "**Response A:**\n```\nREF\n```" in ref.content
    assert "**Response B:**\n```\nPRED\n```" in ref.content
    assert "**Ground Truth (Real Output):**\n```\nobs two\n```" in ref.content


def test_judge_gets_the_parsed_prediction(tmp_path: Path) -> None:
    write_bench(tmp_path / "data", bench_rows(1, turns=1))
    judge = scripted_judge()
    run_eval(EvalConfig(data=[tmp_path / "data"], out=tmp_path / "run", model="m", judge_model="j",
                        progress=False, rules=False), model=scripted_model(), judge=judge)
    (call,) = judge.calls
    assert "**World Model Output (Simulated):**\n```\nt0-0\nroot@box:/app#\n```" in call.messages[1].content
    assert call.model == "j" and call.temperature == 0.6
