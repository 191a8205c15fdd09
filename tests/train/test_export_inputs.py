"""``train export`` checks every input before it writes a byte, reads from this machine only, and cleans up.

Before: ``--model NAME`` that was no folder was looked up on the Hugging Face Hub (52 s offline),
``--base`` that was no GGUF file was noticed after ``merged/`` was written (and left behind), and a
folder of pickled or truncated weights ended in a traceback. The models here are tiny (a one-layer
llama laid out as :func:`gguf_helpers.tiny_gguf`), the CLI is the real one in a bounded child, and
``HF_ENDPOINT`` points at a loopback server that records any request the Hub client would make.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("gguf")
pytest.importorskip("llama_cpp")

from fuzz_harness import Outcome, assert_clean, run_cli, snapshot
from gguf_helpers import tiny_gguf, tiny_llama_folder
from hostile_http import hostile_server

TIME_S = 120.0
ONLINE = {"HF_HUB_OFFLINE": "", "TRANSFORMERS_OFFLINE": ""}
"""The Hub client left free to connect (it must not even try)."""


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny llama model folder (safetensors, tokenizer) and, beside it, the base GGUF it fits."""
    root = tmp_path_factory.mktemp("export")
    tiny_gguf(root / "base.gguf")
    return tiny_llama_folder(root / "model")


def export(tmp_path: Path, model: str | Path, base: str | Path, *extra: str) -> tuple[Outcome, list[str]]:
    """``train export`` with the Hub pointed at a loopback recorder; the outcome and the Hub requests."""
    with hostile_server({}) as (hub, server):
        outcome = run_cli(["train", "export", "--model", str(model), "--base", str(base),
                           "--out", str(tmp_path / "out"), "--quant", "f16", *extra], cwd=tmp_path,
                          timeout_s=TIME_S, env={"HF_ENDPOINT": hub, **ONLINE})
    return outcome, server.hits


def refused(outcome: Outcome, tmp_path: Path, *needles: str) -> None:
    """Exit 2 with one line holding ``needles``, and no output folder left."""
    assert_clean(outcome)
    assert outcome.code == 2, outcome.describe()
    line = outcome.stderr.strip().splitlines()[-1]
    assert all(n in line for n in needles), outcome.describe()
    assert not (tmp_path / "out").exists(), sorted(p.name for p in (tmp_path / "out").iterdir())


def test_a_model_name_that_is_no_folder_never_reaches_the_hub(tmp_path: Path, trained: Path) -> None:
    outcome, hits = export(tmp_path, "HuggingFaceTB/SmolLM2-135M-Instruct", trained.parent / "base.gguf")
    refused(outcome, tmp_path, "--model HuggingFaceTB/SmolLM2-135M-Instruct does not exist",
            "nothing is downloaded")
    assert hits == []


def test_a_base_that_is_no_gguf_is_refused_before_anything_is_written(tmp_path: Path, trained: Path) -> None:
    text = tmp_path / "notes.gguf"
    text.write_text("not a model\n")
    outcome, hits = export(tmp_path, trained, text)
    refused(outcome, tmp_path, "is not a GGUF file")
    truncated = tmp_path / "cut.gguf"
    truncated.write_bytes((trained.parent / "base.gguf").read_bytes()[:5000])
    outcome, hits = export(tmp_path, trained, truncated)
    refused(outcome, tmp_path, "--base", "not a readable GGUF file")
    assert hits == []


def test_a_base_of_other_shapes_is_refused_before_anything_is_written(tmp_path: Path, trained: Path) -> None:
    import gguf
    import numpy as np

    other = tmp_path / "other.gguf"
    writer = gguf.GGUFWriter(str(other), arch="llama")
    writer.add_tensor("token_embd.weight", np.zeros((8, 4), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    outcome, _ = export(tmp_path, trained, other)
    refused(outcome, tmp_path, "tensor token_embd.weight: trained shape")


def _copy(folder: Path, into: Path) -> Path:
    into.mkdir()
    for path in folder.iterdir():
        (into / path.name).write_bytes(path.read_bytes())
    return into


class _Payload:
    def __reduce__(self) -> tuple[object, tuple[str]]:
        import os

        return os.system, ("touch PWNED",)


def test_pickled_weights_are_refused_in_one_line_and_never_run(tmp_path: Path, trained: Path) -> None:
    folder = _copy(trained, tmp_path / "pickled")
    (folder / "model.safetensors").unlink()
    (folder / "pytorch_model.bin").write_bytes(pickle.dumps({"model.embed_tokens.weight": _Payload()}))
    outcome, hits = export(tmp_path, folder, trained.parent / "base.gguf")
    refused(outcome, tmp_path, f"--model {folder}: cannot load it")
    assert hits == [] and not (tmp_path / "PWNED").exists()


def test_truncated_safetensors_are_refused_in_one_line(tmp_path: Path, trained: Path) -> None:
    folder = _copy(trained, tmp_path / "cut")
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    outcome, hits = export(tmp_path, folder, trained.parent / "base.gguf")
    refused(outcome, tmp_path, f"--model {folder}: cannot load it")
    assert hits == []


def test_a_folder_without_a_model_is_refused(tmp_path: Path, trained: Path) -> None:
    (tmp_path / "empty").mkdir()
    outcome, _ = export(tmp_path, tmp_path / "empty", trained.parent / "base.gguf")
    refused(outcome, tmp_path, "holds neither config.json nor adapter_config.json")


def test_an_export_writes_both_and_replaces_its_own_earlier_one(tmp_path: Path, trained: Path) -> None:
    before = snapshot(trained.parent)
    for _ in range(2):
        outcome, hits = export(tmp_path, trained, trained.parent / "base.gguf")
        assert outcome.code == 0, outcome.describe()
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == [".agentworld.lock", "merged", "model-f16.gguf"]
    assert (out / "merged" / "model.safetensors").is_file() and hits == []
    assert snapshot(trained.parent) == before  # the inputs are untouched
    from llama_cpp import Llama

    llm = Llama(model_path=str(out / "model-f16.gguf"), n_ctx=256, verbose=False)
    try:
        assert llm.tokenize(b"hi", add_bos=False)
    finally:
        llm.close()


def test_a_broken_view_file_is_refused_in_one_line(tmp_path: Path, trained: Path) -> None:
    """Found by the fuzz suite: a view file that was not UTF-8 escaped as a UnicodeDecodeError."""
    folder = _copy(trained, tmp_path / "viewed")
    (folder / "agentworld_view.json").write_bytes(b"\x80\x81 not a view")
    outcome, _ = export(tmp_path, folder, trained.parent / "base.gguf")
    refused(outcome, tmp_path, "agentworld_view.json", "UnicodeDecodeError")
    (folder / "agentworld_view.json").write_text('{"system": 5}')
    outcome, _ = export(tmp_path, folder, trained.parent / "base.gguf")
    refused(outcome, tmp_path, "agentworld_view.json (not a prompt view)")
