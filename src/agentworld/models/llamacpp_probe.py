"""Load a GGUF file in a child process first, so that a file llama.cpp aborts on is one error, not a crash.

Why: llama.cpp checks much of a GGUF file with ``GGML_ASSERT``, which calls ``abort()``: a vocabulary
with a repeated token string (``id_to_token.size() == token_to_id.size()``), hyperparameters that do
not fit the tensors, and the like kill the whole process with SIGABRT, below Python, so no ``try``
can turn it into the one red line a user error deserves (the fuzz suite's long profile found such
files among GGUFs with a flipped byte). So before the model is loaded in this process, a child loads
it with the same library, decodes one token, and exits; a child killed by a signal, or one that
does not finish in :data:`PROBE_TIMEOUT_S`, is a :class:`~agentworld.models.base.ModelLoadError`
naming the file, the signal and llama.cpp's own last words (the failed assertion). The child maps
the weights (llama.cpp's default ``mmap``), so the probe reads little more than the load itself
will, and it is gone before the real load starts.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from agentworld.models.base import ModelLoadError

PROBE_TIMEOUT_S = 600.0
"""The longest a probe load may take (a model of tens of GB maps and decodes a token well within it)."""
TAIL_BYTES = 64 * 1024
"""How much of the child's log is read back for the message (llama.cpp prints a line per metadata key)."""

_CHILD = """
import sys
from llama_cpp import Llama
try:
    llm = Llama(model_path=sys.argv[1], n_ctx=256, n_threads=1, n_threads_batch=1, verbose=True)
    llm.eval([llm.token_bos() if llm.token_bos() >= 0 else 0])
except Exception:
    sys.exit(3)  # a Python-level failure: the load in the parent reports it in its own words
"""


def probe_load(path: Path, name: str, *, timeout_s: float = PROBE_TIMEOUT_S) -> None:
    """Load ``path`` with llama.cpp in a child process and decode one token.

    Returns when the child ended on its own (loaded, or failed with a Python exception the load in
    this process will report itself).

    Raises:
        ModelLoadError: the child was killed by a signal (an ``abort`` in llama.cpp) or took longer
            than ``timeout_s``.
    """
    with tempfile.TemporaryFile() as log:
        try:
            done = subprocess.run([sys.executable, "-c", _CHILD, str(path)], stdin=subprocess.DEVNULL,
                                  stdout=log, stderr=log, timeout=timeout_s, check=False,
                                  env={**os.environ, "PYTHONFAULTHANDLER": ""})
        except subprocess.TimeoutExpired:
            raise ModelLoadError(f"{name}: llama.cpp did not finish loading {path} within {timeout_s:.0f} "
                                 "s (a damaged GGUF file, or one far larger than this machine can load)"
                                 ) from None
        if done.returncode >= 0:
            return
        log.seek(max(0, log.seek(0, os.SEEK_END) - TAIL_BYTES))
        said = _last_words(log.read().decode("utf-8", errors="replace"))
    try:
        how = signal.Signals(-done.returncode).name
    except ValueError:
        how = f"signal {-done.returncode}"
    raise ModelLoadError(f"{name}: llama.cpp crashed ({how}) loading {path}"
                         + (f": {said}" if said else "")
                         + ": a damaged or crafted GGUF file, or a model this llama.cpp cannot run")


def _last_words(log: str) -> str:
    """llama.cpp's failed assertion (or last error line) in the child's log, without the build path."""
    for line in reversed(log.splitlines()):
        if "GGML_ASSERT" in line or "error" in line.lower():
            text = line.strip()
            marker = text.find("GGML_ASSERT")
            if marker < 0:
                return text[-300:]
            source = text[:marker].rstrip(": ").rsplit("/", 1)[-1]  # llama-vocab.cpp:2544
            return f"{text[marker:][:300]} ({source})" if source else text[marker:][:300]
    return ""
