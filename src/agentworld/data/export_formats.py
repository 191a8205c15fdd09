"""Row builders for the training exports: one :class:`TrainSample` in, one JSON row out.

Kept apart from :mod:`agentworld.data.export` (which streams, writes and reports) so each format's
shape can be read — and tested — on its own. Every builder is a pure function of the sample.

The world model is trained to answer the *agent's* action with the *environment's* observation,
so the chat roles are flipped relative to an agent transcript: the action is the ``user`` turn and
the observation the ``assistant`` turn. A sample's history becomes earlier user/assistant pairs;
its observation is the one target. History observations are context only (they are trained by the
samples of their own turns), and a sample whose :class:`LossMask` says ``keep=False`` trains
nothing at all.
"""

from __future__ import annotations

from typing import Any, Literal

from agentworld.data.types import TrainSample

IGNORE_INDEX = -100
"""Label value the Hugging Face losses skip (``CrossEntropyLoss(ignore_index=-100)``)."""

LlamaFactoryStyle = Literal["sharegpt", "openai"]


def trained(sample: TrainSample) -> bool:
    """Whether the sample's observation carries loss: unmasked samples train by default."""
    return sample.mask is None or sample.mask.keep


def prompt_messages(sample: TrainSample) -> list[dict[str, str]]:
    """The conversation up to the target: system, history pairs, then the current action."""
    messages: list[dict[str, str]] = []
    if sample.system:
        messages.append({"role": "system", "content": sample.system})
    for action, observation in sample.history:
        messages.append({"role": "user", "content": action})
        messages.append({"role": "assistant", "content": observation})
    messages.append({"role": "user", "content": sample.action})
    return messages


def trl_row(sample: TrainSample, *, keep_masked: bool = False) -> dict[str, Any]:
    """TRL conversational prompt/completion row: SFTTrainer trains only the completion.

    With ``keep_masked`` the row carries ``"loss": bool`` so a custom collator (or a reader that
    filters) can tell masked rows apart; TRL itself drops unknown columns, so use the tokenized
    export when masked rows must stay in the data *and* train nothing.
    """
    row: dict[str, Any] = {
        "prompt": prompt_messages(sample),
        "completion": [{"role": "assistant", "content": sample.observation}],
    }
    if keep_masked:
        row["loss"] = trained(sample)
    return row


def tokenized_row(sample: TrainSample, tokenizer: Any, *, assistant_masks: bool = False) -> dict[str, Any]:
    """Pre-tokenized ``input_ids``/``labels`` with the prompt (and a masked target) set to -100.

    Mirrors TRL's own prompt/completion tokenization: the completion starts where the tokenized
    prompt (with the generation prompt) and the tokenized whole conversation diverge, so templates
    that render the prompt differently alone still get a correct boundary. ``assistant_masks``
    (1 where the label is trained) lets tools that rebuild labels from masks agree with ours.
    """
    prompt = prompt_messages(sample)
    completion = [{"role": "assistant", "content": sample.observation}]
    prompt_ids = _chat_ids(tokenizer, prompt, add_generation_prompt=True)
    full_ids = _chat_ids(tokenizer, prompt + completion, add_generation_prompt=False)
    start = 0
    for a, b in zip(prompt_ids, full_ids, strict=False):
        if a != b:
            break
        start += 1
    keep = trained(sample)
    labels = [tok if keep and i >= start else IGNORE_INDEX for i, tok in enumerate(full_ids)]
    row: dict[str, Any] = {"input_ids": full_ids, "labels": labels}
    if assistant_masks:
        row["assistant_masks"] = [0 if label == IGNORE_INDEX else 1 for label in labels]
    return row


def _chat_ids(tokenizer: Any, messages: list[dict[str, str]], *, add_generation_prompt: bool) -> list[int]:
    out = tokenizer.apply_chat_template(messages, tokenize=True, return_dict=True,
                                        add_generation_prompt=add_generation_prompt)
    ids = out["input_ids"]
    if ids and isinstance(ids[0], list):  # some tokenizers keep a batch dimension
        ids = ids[0]
    return [int(i) for i in ids]


def llama_factory_row(sample: TrainSample, style: LlamaFactoryStyle = "sharegpt") -> dict[str, Any]:
    """LLaMA-Factory sharegpt row (``conversations`` + ``system``) or openai-style ``messages``.

    LLaMA-Factory has no per-message loss flag; the history's responses are excluded from the loss
    with ``mask_history: true`` in the training YAML (it trains the last turn only).
    """
    if style == "openai":
        return {"messages": [*prompt_messages(sample), {"role": "assistant", "content": sample.observation}]}
    conversations: list[dict[str, str]] = []
    for action, observation in [*sample.history, (sample.action, sample.observation)]:
        conversations.append({"from": "human", "value": action})
        conversations.append({"from": "gpt", "value": observation})
    return {"conversations": conversations, "system": sample.system}


def llama_factory_dataset_info(file_name: str, style: LlamaFactoryStyle = "sharegpt") -> dict[str, Any]:
    """One ``dataset_info.json`` entry describing a file written by :func:`llama_factory_row`."""
    if style == "openai":
        return {"file_name": file_name, "formatting": "sharegpt", "columns": {"messages": "messages"},
                "tags": {"role_tag": "role", "content_tag": "content", "user_tag": "user",
                         "assistant_tag": "assistant", "system_tag": "system"}}
    return {"file_name": file_name, "formatting": "sharegpt",
            "columns": {"messages": "conversations", "system": "system"},
            "tags": {"role_tag": "from", "content_tag": "value", "user_tag": "human", "assistant_tag": "gpt"}}


def ms_swift_row(sample: TrainSample) -> dict[str, Any]:
    """ms-swift ``messages`` row with ``"loss"`` on every assistant message.

    History observations are ``false`` (context only); the target is ``true`` unless masked. The
    per-message flag overrides ``--loss_scale``, so the export's masking holds whatever the run says.
    """
    messages: list[dict[str, Any]] = []
    if sample.system:
        messages.append({"role": "system", "content": sample.system})
    for action, observation in sample.history:
        messages.append({"role": "user", "content": action})
        messages.append({"role": "assistant", "content": observation, "loss": False})
    messages.append({"role": "user", "content": sample.action})
    messages.append({"role": "assistant", "content": sample.observation, "loss": trained(sample)})
    return {"messages": messages}
