"""Tiny chat models built locally, for tests, demos and CPU smoke runs (nothing is downloaded).

A byte-level BPE tokenizer trained on a few strings (any text round-trips) with a ChatML chat
template, and a small Qwen2 causal LM built from its config. ``build_tiny(folder)`` saves both so
every recipe can load them by path like any Hugging Face model.

``stop_tags`` makes response tags single tokens and ends generation at the closing one, the way a
serving stack is given the closing tag as a stop string: ``transformers``' ``stop_strings`` needs
the tokenizer passed to ``generate``, which TRL's trainers do not do, whereas an end-of-sequence id
in the model's generation config is honoured by every caller. Without it, a tiny model must learn
to emit the multi-token closing tag *and* the end-of-turn token after it; the tokens after the
tag earn no reward in RL and drift until the model runs on to the length limit.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
"""ChatML, as the Qwen models use it."""

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]

DEFAULT_CORPUS = [
    "You simulate a terminal. ls -la /tmp total 0 drwxrwxrwt root",
    "cat notes.txt hello world; echo done; {\"tool_name\": \"search\", \"arguments\": {\"q\": \"weather\"}}",
    "The file was created. Error: permission denied. 0123456789 abcdefghijklmnopqrstuvwxyz",
    "<think>reasoning</think><predicted_observation>**Environment Observation:**\nroot@host:/app# "
    "</predicted_observation>",
]


def tag_tokens(tags: Iterable[str]) -> list[str]:
    """The opening and closing token of each tag name: ``<tag>``, ``</tag>``."""
    return [t for name in tags for t in (f"<{name}>", f"</{name}>")]


def build_tokenizer(corpus: Iterable[str] = DEFAULT_CORPUS, vocab_size: int = 512,
                    stop_tags: Iterable[str] = ()) -> Any:
    """A byte-level BPE ``PreTrainedTokenizerFast`` with the ChatML template.

    Each name in ``stop_tags`` adds ``<name>`` and ``</name>`` as ordinary (not special) tokens, so
    decoding keeps them in the text.
    """
    import tokenizers
    import transformers

    tok = tokenizers.Tokenizer(tokenizers.models.BPE())
    tok.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = tokenizers.decoders.ByteLevel()
    trainer = tokenizers.trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS,
        initial_alphabet=tokenizers.pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(list(corpus), trainer=trainer)
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token=None, eos_token="<|im_end|>", pad_token="<|endoftext|>",
        chat_template=CHATML_TEMPLATE)
    extra = tag_tokens(stop_tags)
    if extra:
        fast.add_tokens(extra)
    return fast


def build_model(tokenizer: Any, *, hidden_size: int = 32, layers: int = 2, seed: int = 0,
                stop_tags: Iterable[str] = ()) -> Any:
    """A small ``Qwen2ForCausalLM`` sized to the tokenizer (random weights, seeded).

    Generation ends at the end-of-turn token and at the closing token of each of ``stop_tags``.
    """
    import torch
    import transformers

    torch.manual_seed(seed)
    config = transformers.Qwen2Config(
        vocab_size=len(tokenizer), hidden_size=hidden_size, intermediate_size=hidden_size * 2,
        num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
        max_position_embeddings=4096, tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id, bos_token_id=None)
    model = transformers.Qwen2ForCausalLM(config)
    closing = [tokenizer.convert_tokens_to_ids(f"</{name}>") for name in stop_tags]
    if closing:
        model.generation_config.eos_token_id = [tokenizer.eos_token_id, *closing]
    return model


def build_tiny(folder: str | Path, *, corpus: Iterable[str] = DEFAULT_CORPUS, hidden_size: int = 32,
               layers: int = 2, seed: int = 0, vocab_size: int = 512, stop_tags: Iterable[str] = ()) -> Path:
    """Build and save a tiny tokenizer + model into ``folder``; returns the folder (a model path).

    ``stop_tags``: tag names (e.g. ``predicted_observation``) made single tokens, generation
    stopping at their closing token (see the module docstring).
    """
    folder = Path(folder)
    tags = list(stop_tags)
    tokenizer = build_tokenizer([*DEFAULT_CORPUS, *corpus], vocab_size=vocab_size, stop_tags=tags)
    model = build_model(tokenizer, hidden_size=hidden_size, layers=layers, seed=seed, stop_tags=tags)
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(folder)
    model.save_pretrained(folder)
    return folder
