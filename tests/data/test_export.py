"""Exports on hand-made samples: each format's shape, how masks become loss flags and labels,
LLaMA-Factory's ``dataset_info.json``, atomic writes, and the AgentWorldBench round trip."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentworld.data.export import FORMATS, export, read_samples
from agentworld.data.types import LossMask, TrainSample
from agentworld.errors import DataError
from agentworld.schema import BenchSample, join_samples, split_trajectory

SYSTEM = "You simulate a terminal."
PAIRS = [("ls", "a.txt b.txt"), ("cat a.txt", "hello"), ("cat a.txt", "hello"), ("rm b.txt", "")]


def _samples(traj: str = "tr", masked: tuple[int, ...] = (3,)) -> list[TrainSample]:
    out = []
    for i, (action, observation) in enumerate(PAIRS, start=1):
        mask = (LossMask(category="echo", keep=False, keep_ratio=0.05) if i in masked
                else LossMask(category="state_change", keep=True, keep_ratio=1.0))
        out.append(TrainSample(id=f"{traj}-t{i}", trajectory_id=traj, turn=i, domain="terminal",
                               task="terminal", system=SYSTEM, history=PAIRS[: i - 1], action=action,
                               observation=observation, total_turns=len(PAIRS), mask=mask))
    return out


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_trl_rows_drop_masked_samples(tmp_path: Path) -> None:
    report = export(_samples(), "trl", tmp_path / "t.jsonl")
    rows = _rows(tmp_path / "t.jsonl")
    assert (report.samples, report.rows, report.masked_dropped) == (4, 3, 1)
    assert rows[1] == {
        "prompt": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "ls"},
                   {"role": "assistant", "content": "a.txt b.txt"}, {"role": "user", "content": "cat a.txt"}],
        "completion": [{"role": "assistant", "content": "hello"}],
    }
    assert [len(r["prompt"]) for r in rows] == [2, 4, 8]  # turn 3 (masked) is gone


def test_trl_keep_masked_flags_rows(tmp_path: Path) -> None:
    report = export(_samples(), "trl", tmp_path / "t.jsonl", keep_masked=True)
    assert [r["loss"] for r in _rows(tmp_path / "t.jsonl")] == [True, True, False, True]
    assert report.masked_kept == 1 and report.masked_dropped == 0


def test_unmasked_samples_train_and_empty_system_is_left_out(tmp_path: Path) -> None:
    sample = _samples()[0].model_copy(update={"mask": None, "system": ""})
    export([sample], "trl", tmp_path / "t.jsonl")
    assert _rows(tmp_path / "t.jsonl")[0]["prompt"] == [{"role": "user", "content": "ls"}]


def test_trl_tokenized_labels_mask_prompt_and_masked_targets(tiny_chat_tokenizer: Any,
                                                             tmp_path: Path) -> None:
    export(_samples(), "trl", tmp_path / "t.jsonl", tokenizer=tiny_chat_tokenizer, keep_masked=True,
           assistant_masks=True)
    rows = _rows(tmp_path / "t.jsonl")
    assert len(rows) == 4
    for row, sample in zip(rows, _samples(), strict=True):
        ids, labels = row["input_ids"], row["labels"]
        assert len(ids) == len(labels) == len(row["assistant_masks"])
        assert row["assistant_masks"] == [int(label != -100) for label in labels]
        trained = [t for t, label in zip(ids, labels, strict=True) if label != -100]
        if sample.turn == 3:
            assert trained == []
            continue
        start = labels.index(next(label for label in labels if label != -100))
        assert all(label == -100 for label in labels[:start]) and labels[start:] == ids[start:]
        # the trained span is the observation and the end of turn, and nothing of the prompt
        assert tiny_chat_tokenizer.decode(trained) == sample.observation + "<|im_end|>\n"
        prompt = tiny_chat_tokenizer.decode(ids[:start])
        assert prompt.endswith("<|im_start|>assistant\n") and sample.action in prompt


def test_trl_tokenizer_loaded_from_a_local_folder(tiny_chat_tokenizer: Any, tmp_path: Path) -> None:
    export(_samples()[:1], "trl", tmp_path / "t.jsonl", tokenizer=tiny_chat_tokenizer.name_or_path)
    assert set(_rows(tmp_path / "t.jsonl")[0]) == {"input_ids", "labels"}


def test_llama_factory_sharegpt_and_dataset_info(tmp_path: Path) -> None:
    out = tmp_path / "lf" / "world.jsonl"
    report = export(_samples(), "llama-factory", out)
    rows = _rows(out)
    assert report.rows == 3 and str(tmp_path / "lf" / "dataset_info.json") in report.files
    assert rows[1] == {"conversations": [{"from": "human", "value": "ls"},
                                         {"from": "gpt", "value": "a.txt b.txt"},
                                         {"from": "human", "value": "cat a.txt"},
                                         {"from": "gpt", "value": "hello"}],
                       "system": SYSTEM}
    info = json.loads((tmp_path / "lf" / "dataset_info.json").read_text())
    entry = {"formatting": "sharegpt", "columns": {"messages": "conversations", "system": "system"},
             "tags": {"role_tag": "from", "content_tag": "value", "user_tag": "human",
                      "assistant_tag": "gpt"}}
    assert info == {"world": {"file_name": "world.jsonl", **entry},
                    "world_eval": {"file_name": "world_eval.jsonl", **entry}}
    assert (tmp_path / "lf" / "world_eval.jsonl").read_text() == ""  # nothing split off: an empty eval side


def test_llama_factory_openai_style_merges_dataset_info(tmp_path: Path) -> None:
    (tmp_path / "dataset_info.json").write_text(json.dumps({"other": {"file_name": "o.json"}}))
    export(_samples(), "llama-factory", tmp_path / "w.jsonl", style="openai", dataset_name="wm")
    row = _rows(tmp_path / "w.jsonl")[0]
    assert row == {"messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "ls"},
                                {"role": "assistant", "content": "a.txt b.txt"}]}
    info = json.loads((tmp_path / "dataset_info.json").read_text())
    assert set(info) == {"other", "wm", "wm_eval"} and info["wm_eval"]["file_name"] == "w_eval.jsonl"
    assert info["wm"]["columns"] == {"messages": "messages"}
    assert info["wm"]["tags"]["role_tag"] == "role" and info["wm"]["tags"]["assistant_tag"] == "assistant"


def test_llama_factory_refuses_keep_masked_and_bad_style(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="per-sample loss"):
        export(_samples(), "llama-factory", tmp_path / "w.jsonl", keep_masked=True)
    with pytest.raises(ValueError, match="style"):
        export(_samples(), "llama-factory", tmp_path / "w.jsonl", style="alpaca")


def test_ms_swift_loss_flags(tmp_path: Path) -> None:
    export(_samples(), "ms-swift", tmp_path / "s.jsonl", keep_masked=True)
    rows = _rows(tmp_path / "s.jsonl")
    flags = [[m["loss"] for m in r["messages"] if m["role"] == "assistant"] for r in rows]
    assert flags == [[True], [False, True], [False, False, False], [False, False, False, True]]
    assert all("loss" not in m for r in rows for m in r["messages"] if m["role"] != "assistant")
    assert rows[0]["messages"][0] == {"role": "system", "content": SYSTEM}
    export(_samples(), "ms-swift", tmp_path / "s.jsonl")
    assert len(_rows(tmp_path / "s.jsonl")) == 3


def test_hf_datasets_save_to_disk(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    out = tmp_path / "ds"
    out.mkdir()
    (out / "stale.txt").write_text("replaced whole")
    report = export(iter(_samples()), "hf-datasets", out, keep_masked=True)
    ds = datasets.load_from_disk(str(out))["train"]
    assert report.rows == len(ds) == 4 and not (out / "stale.txt").exists()
    assert ds[0]["completion"] == [{"role": "assistant", "content": "a.txt b.txt"}]
    assert ds["loss"] == [True, True, False, True]
    test = datasets.load_from_disk(str(out))["test"]  # nothing split off: empty, with the same columns
    assert len(test) == 0 and test.features == ds.features
    assert [p.name for p in tmp_path.iterdir()] == ["ds"]  # no scratch left behind


def _bench_rows() -> list[dict[str, Any]]:
    prompts, responses = [a for a, _ in PAIRS], [o for _, o in PAIRS]
    return [{"task": "terminal", "id": f"tr-t{i}", "prompt": prompts, "response": responses,
             "system_str": SYSTEM, "turn_idx": i, "total_turns": len(PAIRS)} for i in range(1, 5)]


def test_agentworld_bench_round_trip(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in _bench_rows()))
    trajs = join_samples(BenchSample.model_validate(r) for r in _bench_rows())
    assert len(trajs) == 1
    traj_file = tmp_path / "trajs.jsonl"
    traj_file.write_text(trajs[0].model_dump_json() + "\n")
    report = export(read_samples(traj_file), "agentworld-bench", tmp_path / "out.jsonl")
    assert report.rows == 4 and report.masked_dropped == 0
    assert _rows(tmp_path / "out.jsonl") == _bench_rows()
    # bench rows straight in (read through the pipeline's ingest when present): the same rows out
    export(read_samples(src), "agentworld-bench", tmp_path / "out2.jsonl")
    assert _rows(tmp_path / "out2.jsonl") == _bench_rows()


def test_bench_rows_restore_remembered_rows_and_group_by_trajectory(tmp_path: Path) -> None:
    raw = [{**r, "id": 100 + r["turn_idx"], "difficulty": "easy"} for r in _bench_rows()]
    traj = join_samples(BenchSample.model_validate({**r, "id": str(r["id"])}).with_fields(id=r["id"])
                        for r in raw)[0]
    assert [r.to_row() for r in split_trajectory(traj)] == raw
    samples = [s.model_copy(update={"meta": {"row": traj.turns[s.turn - 1].meta["row"]}}) for s in _samples()]
    other = _samples("zz")[:2]
    export([*samples, *other], "agentworld-bench", tmp_path / "b.jsonl")
    rows = _rows(tmp_path / "b.jsonl")
    assert rows[:4] == raw
    assert [r["id"] for r in rows[4:]] == ["zz-t1", "zz-t2"]
    assert rows[4]["prompt"] == ["ls", "cat a.txt"] and rows[5]["total_turns"] == 4


def test_read_samples_from_sample_jsonl_and_errors(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text("".join(s.model_dump_json() + "\n" for s in _samples()))
    assert list(read_samples(path)) == _samples()
    path.write_text(_samples()[0].model_dump_json() + "\n{\"id\": \"x\"}\n")
    with pytest.raises(DataError, match=":2") as err:
        list(read_samples(path))
    assert err.value.line == 2


def test_failed_export_leaves_old_file(tmp_path: Path) -> None:
    out = tmp_path / "t.jsonl"
    out.write_text("old\n")

    def broken() -> Any:
        yield _samples()[0]
        raise RuntimeError("boom")

    (tmp_path / "t_eval.jsonl").write_text("old eval\n")
    with pytest.raises(RuntimeError, match="boom"):
        export(broken(), "trl", out)
    assert out.read_text() == "old\n" and (tmp_path / "t_eval.jsonl").read_text() == "old eval\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.jsonl", "t_eval.jsonl"]


def test_unknown_format_and_options(tmp_path: Path) -> None:
    assert set(FORMATS) == {"trl", "llama-factory", "ms-swift", "hf-datasets", "agentworld-bench", "samples"}
    with pytest.raises(ValueError, match="unknown export format"):
        export([], "alpaca", tmp_path / "x")
    with pytest.raises(ValueError, match="unknown export option"):
        export([], "trl", tmp_path / "x", colour="red")
    with pytest.raises(ValueError, match="tokenizer"):
        export([], "ms-swift", tmp_path / "x", tokenizer=object())


def test_cli_export(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from agentworld.cli import app

    src = tmp_path / "s.jsonl"
    src.write_text("".join(s.model_dump_json() + "\n" for s in _samples()))
    runner = CliRunner()
    result = runner.invoke(app, ["data", "export", "--data", str(src), "--format", "ms-swift",
                                     "--out", str(tmp_path / "o.jsonl"), "--keep-masked"])
    assert result.exit_code == 0, result.output
    assert "4 samples (0 eval) → 4 train + 0 eval rows" in result.output
    assert len(_rows(tmp_path / "o.jsonl")) == 4
    result = runner.invoke(app, ["data", "export", "--data", str(src), "--format", "llama-factory", "--style",
                                     "openai", "--out", str(tmp_path / "lf" / "w.jsonl")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "lf" / "dataset_info.json").exists()
    result = runner.invoke(app, ["data", "export", "--data", str(src), "--format", "alpaca",
                                     "--out", str(tmp_path / "x")])
    assert result.exit_code == 2 and "'alpaca'" in result.output and "ms-swift" in result.output


def test_hf_datasets_surfaces_data_errors(tmp_path: Path) -> None:
    pytest.importorskip("datasets")
    path = tmp_path / "s.jsonl"
    path.write_text(_samples()[0].model_dump_json() + "\n{\"trajectory_id\": \"x\"}\n")
    with pytest.raises(DataError, match=":2") as err:
        export(read_samples(path), "hf-datasets", tmp_path / "ds")
    assert err.value.line == 2 and [p.name for p in tmp_path.iterdir()] == ["s.jsonl"]


def test_tokenizer_must_be_local(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    with pytest.raises(ValueError, match="no tokenizer folder"):
        export(_samples(), "trl", tmp_path / "t.jsonl", tokenizer=str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="never download"):
        export(_samples(), "trl", tmp_path / "t.jsonl", tokenizer="agentworld-test/not-a-cached-model")


def _split(samples: list[TrainSample], side: str) -> list[TrainSample]:
    return [s.model_copy(update={"split": side}) for s in samples]


@pytest.mark.parametrize("fmt", ["trl", "ms-swift", "llama-factory", "agentworld-bench", "samples"])
def test_each_side_gets_its_own_file(tmp_path: Path, fmt: str) -> None:
    samples = [*_split(_samples("a"), "train"), *_split(_samples("b"), "eval"),
               *_split(_samples("c"), "train")]
    out = tmp_path / "train.jsonl"
    report = export(samples, fmt, out)
    held = tmp_path / "eval.jsonl"
    assert report.eval_out == str(held) and {str(out), str(held)} <= set(report.files)
    per_side = 4 if fmt in ("agentworld-bench", "samples") else 3  # training formats drop the masked turn
    assert (report.rows, report.eval_rows) == (2 * per_side, per_side)
    assert (report.samples, report.eval_samples) == (12, 4)
    assert (len(_rows(out)), len(_rows(held))) == (2 * per_side, per_side)
    if fmt in ("agentworld-bench", "samples"):
        ids = {side: {r["id"].rsplit("-t", 1)[0] for r in _rows(path)}
               for side, path in (("t", out), ("e", held))}
        assert ids == {"t": {"a", "c"}, "e": {"b"}}


def test_eval_side_elsewhere_is_named_relative_in_dataset_info(tmp_path: Path) -> None:
    samples = [*_split(_samples("a"), "train"), *_split(_samples("b"), "eval")]
    export(samples, "llama-factory", tmp_path / "lf" / "wm.jsonl", eval_out=tmp_path / "held" / "wm.jsonl",
           dataset_name="world")
    info = json.loads((tmp_path / "lf" / "dataset_info.json").read_text())
    assert info["world"]["file_name"] == "wm.jsonl" and info["world_eval"]["file_name"] == "../held/wm.jsonl"
    assert len(_rows(tmp_path / "lf" / info["world_eval"]["file_name"])) == 3


def test_a_trajectory_on_both_sides_is_refused_and_nothing_changes(tmp_path: Path) -> None:
    out, held = tmp_path / "train.jsonl", tmp_path / "eval.jsonl"
    out.write_text("old\n")
    held.write_text("old eval\n")
    samples = _samples("a")
    leaked = [*_split(samples[:2], "train"), *_split(samples[2:], "eval")]
    with pytest.raises(DataError, match="'a' has samples on both sides") as err:
        export(leaked, "trl", out)
    assert err.value.sample_id == "a-t3" and err.value.field == "split"
    assert (out.read_text(), held.read_text()) == ("old\n", "old eval\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["eval.jsonl", "train.jsonl"]


def test_unsplit_samples_replace_a_stale_eval_file_with_an_empty_one(tmp_path: Path) -> None:
    (tmp_path / "eval.jsonl").write_text('{"stale": true}\n')
    report = export(_samples(), "ms-swift", tmp_path / "train.jsonl")
    assert (report.rows, report.eval_rows) == (3, 0) and (tmp_path / "eval.jsonl").read_text() == ""


def test_eval_paths(tmp_path: Path) -> None:
    from agentworld.data.sides import eval_path_for

    names = ("train.jsonl", "sft_train.jsonl", "a-train.json", "world.jsonl", "trainer.jsonl")
    assert [eval_path_for(Path(p)).name for p in names] == \
        ["eval.jsonl", "sft_eval.jsonl", "a-eval.json", "world_eval.jsonl", "trainer_eval.jsonl"]
    with pytest.raises(ValueError, match="its own file"):
        export(_samples(), "trl", tmp_path / "t.jsonl", eval_out=tmp_path / "t.jsonl")
    with pytest.raises(ValueError, match="'test' split"):
        export(_samples(), "hf-datasets", tmp_path / "ds", eval_out=tmp_path / "e.jsonl")


def test_hf_datasets_dict_has_both_sides(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    samples = [*_split(_samples("a"), "eval"), *_split(_samples("b"), "train")]
    report = export(samples, "hf-datasets", tmp_path / "ds")
    loaded = datasets.load_from_disk(str(tmp_path / "ds"))
    assert set(loaded) == {"train", "test"} and (len(loaded["train"]), len(loaded["test"])) == (3, 3)
    assert (report.rows, report.eval_rows, report.eval_out) == (3, 3, None)
    with pytest.raises(ValueError, match="no rows"):
        export(_samples()[2:3], "hf-datasets", tmp_path / "ds2")  # only a masked sample


def test_cli_export_takes_both_sides_of_the_pipeline(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from agentworld.cli import app

    train, held = tmp_path / "train.jsonl", tmp_path / "eval.jsonl"
    train.write_text("".join(s.model_dump_json() + "\n" for s in _split(_samples("a"), "train")))
    held.write_text("".join(s.model_dump_json() + "\n" for s in _split(_samples("b"), "eval")))
    result = CliRunner().invoke(app, ["data", "export", "--data", str(train), "--data", str(held),
                                      "--format", "trl", "--out", str(tmp_path / "sft" / "train.jsonl")])
    assert result.exit_code == 0, result.output
    assert "8 samples (4 eval) → 3 train + 3 eval rows" in result.output
    assert len(_rows(tmp_path / "sft" / "eval.jsonl")) == 3
