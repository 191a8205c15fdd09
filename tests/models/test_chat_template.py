"""The chat-template probe and llama.cpp's system-role polyfill, on plain Jinja templates (no model)."""

from __future__ import annotations

from typing import Any

import pytest
from jinja2.sandbox import ImmutableSandboxedEnvironment

from agentworld.errors import BackendError
from agentworld.models.base import ModelLoadError
from agentworld.models.chat_template import fold_system, probe, render_or_fail


def renderer(template: str) -> Any:
    def raise_exception(message: str) -> None:
        raise ValueError(message)

    compiled = ImmutableSandboxedEnvironment().from_string(template)
    return lambda messages: compiled.render(messages=messages, raise_exception=raise_exception)


PLAIN = "{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}"
REFUSING = ("{% for m in messages %}{% if m.role == 'system' %}"
            "{{ raise_exception('System role not supported') }}{% endif %}{{ m.content }}{% endfor %}")
DROPPING = "{% for m in messages %}{% if m.role != 'system' %}{{ m.content }}{% endif %}{% endfor %}"


def test_the_probe_tells_a_system_role_from_a_refused_or_dropped_one() -> None:
    assert probe(renderer(PLAIN), "m").system_role is True
    assert probe(renderer(REFUSING), "m").system_role is False
    assert probe(renderer(DROPPING), "m").system_role is False  # renders, but without the system text


@pytest.mark.parametrize(("template", "said"), [
    ("{{ raise_exception('no') }}", "ValueError: no"),
    ("{{ ''.__class__.__mro__ }}", "the Jinja sandbox stopped it"),
    ("{{ messages[0].content + 1 }}", "TypeError"),
])
def test_a_template_that_cannot_render_a_user_message_cannot_load(template: str, said: str) -> None:
    said_first = "m: the model's chat template cannot render a user message"
    with pytest.raises(ModelLoadError, match=said_first) as caught:
        probe(renderer(template), "m")
    assert said in str(caught.value) and "\n" not in str(caught.value)


def test_fold_system_joins_as_llama_cpp_does() -> None:
    def msg(role: str, content: str) -> dict[str, str]:
        return {"role": role, "content": content}

    folded = fold_system([msg("system", "A"), msg("system", "B"), msg("user", "u"), msg("assistant", "a")])
    assert folded == [msg("user", "A\nB\nu"), msg("assistant", "a")]
    assert fold_system([msg("system", "A"), msg("user", "")]) == [msg("user", "A")]
    assert fold_system([msg("user", "u"), msg("system", "A"), msg("assistant", "a")]) == [
        msg("user", "u"), msg("user", "A"), msg("assistant", "a")]
    assert fold_system([msg("user", "u"), msg("system", "A")]) == [msg("user", "u"), msg("user", "A")]


def test_a_failing_render_is_that_request_s_backend_error() -> None:
    with pytest.raises(BackendError, match="chat template failed on this request: ValueError: x"):
        render_or_fail(lambda: renderer("{{ raise_exception('x') }}")([]), "m")
