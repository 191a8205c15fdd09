"""What ``agentworld train export`` reads, checked before it writes a byte: the model folder, the base GGUF.

Why a module of its own: an export used to load, merge and save the model first and look at its inputs
later, so ``--base`` that was no GGUF file was noticed after 517 MB of ``merged/`` had been written
(and left behind), a folder of pickled or truncated weights ended in a traceback, and ``--model NAME``
that was no folder was looked up on the Hugging Face Hub (a 52 s wait, and a request nobody asked for).
Here every input is checked in the order that costs least, each failure is one
:class:`~agentworld.errors.AgentWorldError` naming the flag and the file, and everything is read from
this machine only (``local_files_only``; a LoRA adapter's base resolved the same way).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentworld.errors import AgentWorldError, one_line

ADAPTER_WEIGHTS = ("adapter_model.safetensors", "adapter_model.bin")
"""The files a LoRA adapter folder keeps its weights in (PEFT's names)."""


@dataclass(frozen=True)
class ModelSource:
    """A checked ``--model``: a model folder, a LoRA adapter folder, or a GGUF file."""

    path: Path
    adapter: bool


def model_source(model_dir: str | Path) -> ModelSource:
    """``--model`` once it names a model on this machine.

    Raises:
        AgentWorldError: no such folder (a hub name is not looked up), or a folder that holds no model.
    """
    from agentworld.models.packaged import gguf_file, is_gguf, resolve_model_path

    path = resolve_model_path(model_dir)
    if is_gguf(path):
        return ModelSource(gguf_file(path), adapter=False)
    if not path.is_dir():
        what = "is not a folder" if path.exists() else "does not exist"
        raise AgentWorldError(f"--model {path} {what}: give a trained model folder on this machine (a run's "
                              "final/ or a checkpoint); nothing is downloaded")
    if (path / "adapter_config.json").is_file():
        if not any((path / name).is_file() for name in ADAPTER_WEIGHTS):
            raise AgentWorldError(f"--model {path}: a LoRA adapter folder without its weights "
                                  f"({' or '.join(ADAPTER_WEIGHTS)})")
        return ModelSource(path, adapter=True)
    if not (path / "config.json").is_file():
        raise AgentWorldError(f"--model {path}: holds neither config.json nor adapter_config.json: not a "
                              "model folder")
    return ModelSource(path, adapter=False)


def base_reader(base: str | Path) -> Any:
    """The ``--base`` GGUF file, read whole by the ``gguf`` package, every metadata value decoded (so a
    truncated or crafted one is refused here, not after the merged weights were written); its
    architecture must be llama.

    Raises:
        AgentWorldError: missing, not GGUF, unreadable, or another architecture.
    """
    import gguf

    from agentworld.models.packaged import gguf_file

    path = gguf_file(base)
    try:
        reader = gguf.GGUFReader(str(path))
        values = {field.name: field.contents() for field in reader.fields.values()}  # each one decodes
        arch = values.get(gguf.Keys.General.ARCHITECTURE)
    except Exception as exc:  # numpy and struct errors of a file cut short or made up
        raise AgentWorldError(f"--base {path}: not a readable GGUF file ({type(exc).__name__}: "
                              f"{one_line(str(exc), 200)}); a truncated or damaged file?") from None
    if arch != "llama":
        raise AgentWorldError(f"--base {path}: a GGUF file of architecture {arch!r}; the export writes the "
                              "llama architecture (SmolLM2, Llama): use llama.cpp's convert_hf_to_gguf.py")
    return reader


def _loading(what: str, load: Any) -> Any:
    """``load()``; any failure of the loaders (pickles, truncated safetensors, foreign configs): one line."""
    try:
        return load()
    except AgentWorldError:
        raise
    except Exception as exc:
        raise AgentWorldError(f"{what}: cannot load it: {type(exc).__name__}: {one_line(str(exc))}") from None


def merged_model(source: ModelSource) -> Any:
    """The model of ``source`` in float32, a LoRA adapter merged into its base (read from this machine).

    Raises:
        AgentWorldError: it cannot load (the text names the folder and the loader's reason).
    """
    import torch
    from transformers import AutoModelForCausalLM

    from agentworld.models.packaged import as_plain_weights, hf_source

    def plain(spec: str | Path) -> Any:
        name, options = hf_source(spec)
        return as_plain_weights(AutoModelForCausalLM.from_pretrained(name, dtype=torch.float32, **options))

    if not source.adapter:
        return _loading(f"--model {source.path}", lambda: plain(source.path))
    from peft import PeftConfig, PeftModel

    config = _loading(f"--model {source.path}", lambda: PeftConfig.from_pretrained(str(source.path)))
    base = config.base_model_name_or_path
    if not base:
        raise AgentWorldError(f"--model {source.path}: the adapter names no base model")
    model = _loading(f"the adapter's base model {base}", lambda: plain(base))
    return _loading(f"--model {source.path}", lambda: PeftModel.from_pretrained(
        model, str(source.path), local_files_only=True).merge_and_unload())


def view_text(source: ModelSource) -> str | None:
    """The prompt view the model was trained on (its folder's view file, checked), or None.

    Raises:
        AgentWorldError: a view file that is not a prompt view.
    """
    from agentworld.domains.prompt_view import VIEW_FILE, read_view

    path = source.path / VIEW_FILE
    if not source.path.is_dir() or not path.is_file():
        return None
    text = _loading(f"--model {path}", lambda: path.read_bytes().decode("utf-8").strip())
    _loading(f"--model {path} (not a prompt view)", lambda: read_view(text))
    return text or None


def tokenizer(source: ModelSource) -> Any:
    """The tokenizer saved with the model (an adapter folder's own), from this machine only."""
    from transformers import AutoTokenizer

    from agentworld.models.packaged import hf_source

    name, options = hf_source(source.path)
    return _loading(f"--model {source.path} (its tokenizer)",
                    lambda: AutoTokenizer.from_pretrained(name, **options))
