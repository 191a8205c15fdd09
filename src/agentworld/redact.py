"""Credentials out of everything agentworld writes or prints.

Why: users paste endpoints such as ``http://user:KEY@host/v1?api_key=KEY`` into ``--model-base-url``;
those strings end up in run folders, reports, logs and error messages. Every place that writes
or prints a URL passes it through :func:`redact_url`; free text that may contain URLs (an
exception message from an HTTP client, say) goes through :func:`redact_text`. Only the secret
parts are replaced, so the host, path and harmless parameters stay readable.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

MASK = "***"

_SECRET_PARAM = re.compile(
    r"(key|token|secret|passw(or)?d|pwd|auth|credential|signature|^sig$|session|cookie|bearer)",
    re.IGNORECASE)
"""Query-parameter names whose values are treated as credentials (``api_key``, ``X-Amz-Signature``…)."""

_URL_IN_TEXT = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.\-]{0,15}://[^\s'\"<>]+")
_BEARER = re.compile(r"(?i)\b(bearer|authorization:?)\s+[A-Za-z0-9._~+/\-]{8,}=*")
_KEY_LIKE = re.compile(r"\b(sk|pk|rk|hf|gsk|xai)[-_][A-Za-z0-9_\-]{16,}\b")


def is_secret_param(name: str) -> bool:
    """Whether a query parameter called ``name`` carries a credential.

    >>> is_secret_param("api_key"), is_secret_param("X-Amz-Signature"), is_secret_param("limit")
    (True, True, False)
    """
    return bool(_SECRET_PARAM.search(name))


def redact_url(url: str) -> str:
    """``url`` with user info and credential-like query values replaced by ``***``.

    >>> redact_url("http://user:KEY@host:8000/v1?api_key=KEY&model=x")
    'http://***@host:8000/v1?api_key=%2A%2A%2A&model=x'
    >>> redact_url("http://localhost:8000/v1")
    'http://localhost:8000/v1'
    """
    if "," in url and url.count("://") > 1:  # a pool's comma-separated list (agentworld.endpoints.base_urls)
        return ",".join(redact_url(part) for part in url.split(","))
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return MASK if ("@" in url or "?" in url) else url
    netloc = parts.netloc
    if "@" in netloc:
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        netloc = f"{MASK}@{host}" + (f":{port}" if port is not None else "")
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(is_secret_param(k) for k, _ in pairs):
            query = urlencode([(k, MASK if is_secret_param(k) else v) for k, v in pairs])
    fragment = MASK if parts.fragment and is_secret_param(parts.fragment.split("=", 1)[0]) else parts.fragment
    return urlunsplit((parts.scheme, netloc, parts.path, query, fragment))


def redact_text(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with every URL redacted, bearer tokens and API-key-shaped words masked, and each of
    ``secrets`` (keys known to the caller) replaced wherever it occurs.

    >>> redact_text("POST http://u:p@h/v1 failed; Authorization: Bearer abcdefgh12345678", ["p"])
    'POST http://***@h/v1 failed; Authorization: ***'
    """
    out = _URL_IN_TEXT.sub(lambda m: redact_url(m.group(0)), text)
    for secret in secrets:
        if secret and len(secret) >= 4:
            out = out.replace(secret, MASK)
    out = _BEARER.sub(MASK, out)
    return _KEY_LIKE.sub(MASK, out)
