"""A model's own chat template, checked once when the model loads, for the in-process backends.

Why: a chat template is code that ships inside a model file (a GGUF file's ``tokenizer.chat_template``,
a tokenizer folder's template), run in a Jinja sandbox. Some refuse a system message
(``raise_exception('System role not supported')``: Gemma's, older Mistral's), some cannot render at
all (a sandbox violation, a syntax or type error). Rendered first inside a request, either ended in a
traceback. So a backend probes its template once at load (:func:`probe`), with a user message alone
and with a system message before it, as llama.cpp's server does (``minja::chat_template``):

* a template that cannot render a user message is a model that cannot load (one line, exit 2,
  before any sample is sent);
* a template that refuses the system role, or renders it without its text, has the system prompt
  folded into the first user turn (:func:`fold_system`, llama.cpp's polyfill: the system text, a
  newline, the user text), so every request still reaches the model with its instructions;
* a template that fails for one request's messages (roles that do not alternate, say) fails that
  request alone, as a :class:`~agentworld.errors.BackendError` naming the template.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentworld.errors import BackendError, one_line
from agentworld.models.base import ModelLoadError

Render = Callable[[list[dict[str, str]]], str]
"""Renders a message list to the prompt text (raises whatever the template raises)."""

_SYSTEM_NEEDLE = "<System Needle>"
_USER_NEEDLE = "<User Needle>"


@dataclass(frozen=True)
class TemplateSupport:
    """What a template's probe found: whether it renders a system message as one."""

    system_role: bool


def problem(exc: BaseException) -> str:
    """The template's failure in a few words (the sandbox's, the template's own message, or the error)."""
    kind, said = type(exc).__name__, one_line(str(exc), 300)
    if kind == "SecurityError":
        return f"the Jinja sandbox stopped it ({said})"
    return f"{kind}: {said}" if said else kind


def probe(render: Render, name: str) -> TemplateSupport:
    """Render a user message, then a system and a user message, with ``render``.

    Raises:
        ModelLoadError: the template cannot render a single user message (its problem named).
    """
    try:
        render([{"role": "user", "content": _USER_NEEDLE}])
    except Exception as exc:  # a template is foreign code: any failure means the same
        raise ModelLoadError(f"{name}: the model's chat template cannot render a user message: "
                             f"{problem(exc)}") from None
    try:
        shown = render([{"role": "system", "content": _SYSTEM_NEEDLE},
                        {"role": "user", "content": _USER_NEEDLE}])
    except Exception:
        return TemplateSupport(system_role=False)
    return TemplateSupport(system_role=_SYSTEM_NEEDLE in shown)


def fold_system(messages: list[dict[str, str]]) -> list[dict[str, str]]:
    """``messages`` without system messages: each one's text goes before the next user message's,
    joined by a newline, or becomes a user message of its own when no user message follows it
    directly (llama.cpp's polyfill for templates without a system role).

    >>> fold_system([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "ls"}])
    [{'role': 'user', 'content': 'Be brief.\\nls'}]
    """
    out: list[dict[str, str]] = []
    pending: list[str] = []
    for message in messages:
        if message["role"] == "system":
            pending.append(message["content"])
            continue
        if pending and message["role"] == "user":
            text = "\n".join(pending)
            message = {**message, "content": f"{text}\n{message['content']}" if message["content"] else text}
        elif pending:
            out.append({"role": "user", "content": "\n".join(pending)})
        pending = []
        out.append(message)
    if pending:
        out.append({"role": "user", "content": "\n".join(pending)})
    return out


def render_or_fail(render: Callable[[], Any], name: str) -> Any:
    """``render()``, a template failure turned into this request's :class:`BackendError`."""
    try:
        return render()
    except Exception as exc:
        raise BackendError(f"{name}: the model's chat template failed on this request: {problem(exc)}",
                           retryable=False) from None
