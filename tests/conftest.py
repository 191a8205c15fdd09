"""Shared fixtures, and the hooks that skip a test needing an extra the install lacks (``extras_needed``).

Models cannot be downloaded here, so a tiny chat tokenizer is built in place.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from extras_needed import (  # noqa: F401  (hooks: pytest takes them from this module)
    pytest_collection_modifyitems,
    pytest_configure,
    pytest_make_collect_report,
    pytest_runtest_makereport,
    pytest_sessionfinish,
    pytest_terminal_summary,
)

CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
"""ChatML, as the Qwen models use it."""

TINY_CORPUS = [
    "You simulate a terminal. ls -la /tmp total 0 drwxrwxrwt root",
    "cat notes.txt hello world; echo done; {\"tool_name\": \"search\", \"arguments\": {\"q\": \"weather\"}}",
    "The file was created. Error: permission denied. 0123456789 abcdefghijklmnopqrstuvwxyz",
]


@pytest.fixture(scope="session")
def tiny_chat_tokenizer(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A byte-level BPE tokenizer (a few hundred tokens) with a ChatML template, saved to a folder.

    Byte-level, so any text round-trips; ``name_or_path`` is the saved folder, which is what
    ``--tokenizer DIR`` takes. Skips when ``tokenizers``/``transformers`` are not installed.
    """
    tokenizers = pytest.importorskip("tokenizers")
    transformers = pytest.importorskip("transformers")
    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tok = tokenizers.Tokenizer(tokenizers.models.BPE())
    tok.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = tokenizers.decoders.ByteLevel()
    trainer = tokenizers.trainers.BpeTrainer(
        vocab_size=400, special_tokens=special,
        initial_alphabet=tokenizers.pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(TINY_CORPUS, trainer=trainer)
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token=None, eos_token="<|im_end|>", pad_token="<|endoftext|>",
        chat_template=CHATML_TEMPLATE)
    folder: Path = tmp_path_factory.mktemp("tiny-tokenizer")
    fast.save_pretrained(folder)
    return transformers.AutoTokenizer.from_pretrained(str(folder), local_files_only=True)


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """``agentworld demo`` run once, offline: its ``--out`` folder, the report's path and what it printed.

    It records the held-out scenarios of every real domain (into ``out/data/<domain>_test.jsonl``),
    simulates and scores them. ``test_demo`` checks the run; ``test_heldout_overlap`` measures the same
    fresh recordings against the shipped corpora instead of starting every real environment again.
    """
    from rich.console import Console

    from agentworld.demo import DemoConfig, run_demo

    out = tmp_path_factory.mktemp("demo") / "demo"
    console = Console(record=True, width=140)
    report = run_demo(DemoConfig(out=str(out)), console=console)
    return out, report, console.export_text()
