"""``agentworld train export``: a trained model folder (LoRA merged) to safetensors and to a GGUF file that
llama.cpp (``llamacpp:PATH``, ``python -m llama_cpp.server``, ``llama-server``) serves.

Why our own writer rather than llama.cpp's ``convert_hf_to_gguf.py``: the installed llama-cpp-python
ships no converter (only its sdist does, with a ``gguf-py`` of its own version), and a model trained
here started from a GGUF file anyway. The export therefore takes that *base* GGUF as the template:
every metadata key (tokenizer vocabulary, merges, chat template, special tokens, rope and norm
settings) is copied byte for byte, and each tensor of the base is replaced by the trained one of the
same name and shape, so what llama.cpp reads is exactly what the base was but for the weights. The
tensor names are llama.cpp's for the ``llama`` architecture (SmolLM2, Llama, most small instruct
models); transformers un-permutes the query and key rows when it reads such a file, so the export
permutes them back (as the converter does). ``tests/train/test_real_lm.py`` checks the round trip: the
exported file, run by llama.cpp, continues a prompt with the tokens transformers predicts.

Quantization (``--quant``): ``f32``, ``f16`` or ``q8_0`` written by the ``gguf`` package (norms stay
f32), or any llama.cpp type (``q4_k_m``, ``q5_k_m``, ``q4_0`` …) made from the f16 file by
llama.cpp's own ``llama_model_quantize``.

Every input is checked before anything is written (:mod:`agentworld.train.export_inputs`: the model
folder read from this machine only, the base GGUF read whole, the quantization, the model's
architecture and each tensor's name and shape against the base), the outputs are written under
temporary names and moved into place at the end, and an export that fails removes what it wrote.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from pathlib import Path
from typing import Any

from agentworld.domains.prompt_view import GGUF_KEY, VIEW_FILE
from agentworld.errors import AgentWorldError

PYTHON_QUANTS = ("f32", "f16", "q8_0")
_LAYER = re.compile(r"^model\.layers\.(\d+)\.(.+)$")
_LAYER_NAMES = {
    "input_layernorm.weight": "attn_norm.weight", "self_attn.q_proj.weight": "attn_q.weight",
    "self_attn.k_proj.weight": "attn_k.weight", "self_attn.v_proj.weight": "attn_v.weight",
    "self_attn.o_proj.weight": "attn_output.weight", "post_attention_layernorm.weight": "ffn_norm.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight", "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
}
_TOP_NAMES = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
              "lm_head.weight": "output.weight"}


def gguf_name(hf_name: str) -> str | None:
    """llama.cpp's tensor name for a transformers Llama parameter (None: not a stored tensor)."""
    if hf_name in _TOP_NAMES:
        return _TOP_NAMES[hf_name]
    match = _LAYER.match(hf_name)
    if match and match.group(2) in _LAYER_NAMES:
        return f"blk.{match.group(1)}.{_LAYER_NAMES[match.group(2)]}"
    return None


def permute(weights: Any, heads: int) -> Any:
    """The query/key rows in llama.cpp's rotary order (the inverse of transformers' GGUF un-permute)."""
    rows = weights.shape[0]
    grouped = weights.reshape(heads, 2, rows // heads // 2, *weights.shape[1:])
    return grouped.swapaxes(1, 2).reshape(weights.shape)


def _tensors(model: Any) -> dict[str, Any]:
    """llama.cpp name → float32 numpy array of every stored tensor, query/key permuted."""
    config = model.config
    if getattr(config, "model_type", "") != "llama":
        raise AgentWorldError(f"GGUF export supports the llama architecture (SmolLM2, Llama); this model is "
                              f"{getattr(config, 'model_type', 'unknown')!r}: use llama.cpp's "
                              "convert_hf_to_gguf.py")
    heads, kv_heads = config.num_attention_heads, config.num_key_value_heads or config.num_attention_heads
    out: dict[str, Any] = {}
    for name, tensor in model.state_dict().items():
        target = gguf_name(name)
        if target is None:
            continue
        array = tensor.detach().float().cpu().numpy()
        if target.endswith("attn_q.weight"):
            array = permute(array, heads)
        elif target.endswith("attn_k.weight"):
            array = permute(array, kv_heads)
        out[target] = array
    return out


def check_layout(reader: Any, tensors: dict[str, Any], base: str | Path) -> None:
    """Every tensor of the base GGUF (``reader``) has a trained counterpart of the same shape.

    Raises:
        AgentWorldError: a base tensor the model lacks, or a shape that differs.
    """
    for info in reader.tensors:
        if info.name not in tensors:
            raise AgentWorldError(f"{base}: tensor {info.name} has no counterpart in the trained model")
        expected = tuple(int(n) for n in reversed(info.shape.tolist()))
        if tensors[info.name].shape != expected:
            raise AgentWorldError(f"tensor {info.name}: trained shape {tensors[info.name].shape}, base "
                                  f"{expected}")


def write_gguf(model: Any, base: str | Path, out: str | Path, quant: str = "q8_0",
               view: str | None = None, *, reader: Any = None) -> Path:
    """Write ``model``'s weights into a GGUF file laid out as ``base`` (see the module docstring);
    ``reader``: the base already read (:func:`~agentworld.train.export_inputs.base_reader`).

    The file is written under a temporary name and renamed when whole; a failed write leaves nothing.

    Raises:
        AgentWorldError: an unknown quantization, an unreadable base, a base tensor the model lacks, or
            a shape that differs.
    """
    import gguf

    from agentworld.train.export_inputs import base_reader

    quant = quant.lower()
    if quant not in PYTHON_QUANTS:
        return _quantize_native(model, base, Path(out), quant, view, reader)
    reader = reader if reader is not None else base_reader(base)
    tensors = _tensors(model)
    check_layout(reader, tensors, base)
    out = Path(out)
    tmp = out.with_name(f".{out.name}.tmp")
    try:
        _write(gguf.GGUFWriter(str(tmp), arch="llama"), reader, tensors, quant, view)
        os.replace(tmp, out)  # the file appears whole or not at all
    finally:
        tmp.unlink(missing_ok=True)
    return out


def _write(writer: Any, reader: Any, tensors: dict[str, Any], quant: str, view: str | None) -> None:
    """The base's metadata (and the view), then each tensor of the base replaced by the trained one."""
    import gguf
    import numpy as np

    qtype = {"f32": gguf.GGMLQuantizationType.F32, "f16": gguf.GGMLQuantizationType.F16,
             "q8_0": gguf.GGMLQuantizationType.Q8_0}[quant]
    file_type = {"f32": gguf.LlamaFileType.ALL_F32, "f16": gguf.LlamaFileType.MOSTLY_F16,
                 "q8_0": gguf.LlamaFileType.MOSTLY_Q8_0}[quant]
    for field in reader.fields.values():
        if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF.") \
                or field.name == gguf.Keys.General.FILE_TYPE:
            continue
        kind = field.types[0]
        sub = field.types[-1] if kind == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(field.name, field.contents(), kind, sub_type=sub)
    writer.add_file_type(int(file_type))
    if view:  # the prompt view the model was trained on (agentworld.domains.prompt_view)
        writer.add_string(GGUF_KEY, view)
    for info in reader.tensors:
        array = tensors[info.name]
        if array.ndim == 1 or qtype == gguf.GGMLQuantizationType.F32:
            writer.add_tensor(info.name, array.astype(np.float32))
        elif qtype == gguf.GGMLQuantizationType.F16:
            writer.add_tensor(info.name, array.astype(np.float16))
        else:
            writer.add_tensor(info.name, gguf.quants.quantize(array, qtype), raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def check_quant(quant: str) -> int | None:
    """None for a quantization written here (:data:`PYTHON_QUANTS`), else llama.cpp's file type for it.

    Raises:
        AgentWorldError: a name neither knows (the message lists the known ones).
    """
    if quant.lower() in PYTHON_QUANTS:
        return None
    import llama_cpp

    ftype = getattr(llama_cpp, f"LLAMA_FTYPE_MOSTLY_{quant.upper()}", None)
    if ftype is None:
        known = sorted(n.removeprefix("LLAMA_FTYPE_MOSTLY_").lower() for n in dir(llama_cpp)
                       if n.startswith("LLAMA_FTYPE_MOSTLY_"))
        raise AgentWorldError(f"unknown quantization {quant!r}; known: {', '.join([*PYTHON_QUANTS, *known])}")
    return int(ftype)


def _quantize_native(model: Any, base: str | Path, out: Path, quant: str, view: str | None,
                     reader: Any) -> Path:
    """An f16 export, then llama.cpp's ``llama_model_quantize`` to ``quant`` (e.g. ``q4_k_m``)."""
    import llama_cpp

    ftype = check_quant(quant)
    f16 = out.with_name(f".{out.name}.f16.gguf")
    tmp = out.with_name(f".{out.name}.tmp")
    try:
        write_gguf(model, base, f16, "f16", view, reader=reader)
        params = llama_cpp.llama_model_quantize_default_params()
        params.ftype = ftype
        status = llama_cpp.llama_model_quantize(str(f16).encode(), str(tmp).encode(), params)
        if status != 0:
            raise AgentWorldError(f"llama_model_quantize to {quant} failed (status {status})")
        os.replace(tmp, out)  # the file appears whole or not at all
    finally:
        f16.unlink(missing_ok=True)
        tmp.unlink(missing_ok=True)
    return out


def export(model_dir: str | Path, base: str | Path, out_dir: str | Path,
           quant: str = "q8_0") -> tuple[Path, Path]:
    """Merged safetensors in ``out_dir/merged`` and ``out_dir/model-<quant>.gguf``; returns both paths.

    Raises:
        AgentWorldError: an input that is not usable (before anything is written), or a failure while
            writing (after which nothing this export wrote is left).
    """
    from agentworld.train import export_inputs

    check_quant(quant)
    source = export_inputs.model_source(model_dir)
    view = export_inputs.view_text(source)
    reader = export_inputs.base_reader(base)
    model = export_inputs.merged_model(source)
    tokenizer = export_inputs.tokenizer(source)
    out_dir = Path(out_dir)
    merged, staged = out_dir / "merged", out_dir / f".merged.tmp-{os.getpid()}"
    made = not out_dir.exists()
    out_dir.mkdir(parents=True, exist_ok=True)
    gguf: Path | None = None
    try:
        # the architecture and every tensor's name and shape are checked before the GGUF file is begun
        gguf = write_gguf(model, base, out_dir / f"model-{quant.lower()}.gguf", quant, view, reader=reader)
        model.save_pretrained(str(staged), safe_serialization=True)
        tokenizer.save_pretrained(str(staged))
        if view:
            (staged / VIEW_FILE).write_text(view + "\n", encoding="utf-8")
        _replace_folder(staged, merged)
    except BaseException:
        if gguf is not None:
            gguf.unlink(missing_ok=True)
        if made:
            shutil.rmtree(staged, ignore_errors=True)
            with contextlib.suppress(OSError):
                out_dir.rmdir()  # only when empty: what else is there is not ours to remove
        raise
    finally:
        shutil.rmtree(staged, ignore_errors=True)
    return merged, gguf


def _replace_folder(new: Path, target: Path) -> None:
    """Put ``new`` at ``target``; an earlier export's ``target`` (the output guard let the folder be) goes."""
    if target.is_symlink() or target.is_file():
        target.unlink()
    elif target.exists():
        old = target.with_name(f".{target.name}.old-{os.getpid()}")
        target.rename(old)
        shutil.rmtree(old, ignore_errors=True)
    new.rename(target)
