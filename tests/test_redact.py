"""Credentials never survive redaction; the rest of a URL stays readable."""

from __future__ import annotations

import pytest

from agentworld.redact import redact_text, redact_url


@pytest.mark.parametrize(("url", "expected"), [
    ("http://user:KEY123@host:8000/v1?api_key=KEY123&model=x", "http://***@host:8000/v1?api_key=%2A%2A%2A&model=x"),
    ("https://h/v1?token=abc&X-Amz-Signature=def&limit=3", "https://h/v1?token=%2A%2A%2A&X-Amz-Signature=%2A%2A%2A&limit=3"),
    ("http://[::1]:8000/v1", "http://[::1]:8000/v1"),
    ("http://KEY123@[::1]:8000/v1", "http://***@[::1]:8000/v1"),
    ("http://localhost:8000/v1", "http://localhost:8000/v1"),
])
def test_redact_url(url: str, expected: str) -> None:
    assert redact_url(url) == expected
    assert "KEY123" not in redact_url(url)


def test_redact_text_masks_urls_bearer_tokens_and_known_secrets() -> None:
    text = ("Connection error for http://u:hunter22@api.example/v1?key=hunter22 "
            "(Authorization: Bearer sk-abcdefghijklmnopqrstuvwx) with key s3cr3t-value")
    out = redact_text(text, ["s3cr3t-value", None])
    for secret in ("hunter22", "sk-abcdefghijklmnopqrstuvwx", "s3cr3t-value"):
        assert secret not in out
    assert "api.example/v1" in out
