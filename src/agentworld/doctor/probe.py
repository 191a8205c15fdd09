"""Raw requests to one OpenAI-compatible endpoint, answered as status + JSON (never an exception).

Why not :class:`~agentworld.models.openai_compat.OpenAIBackend`: the doctor must see what the
backend hides on purpose — which message field held the reasoning, the exact HTTP status of a
refusal, ``/v1/models`` and llama.cpp's ``/props`` — and must not retry. It uses the backend's
transport (aiohttp) and its handling of credentials in URLs, and scrubs the key from every text.
Its reads are capped like the backend's (:mod:`agentworld.http_limits`): an answer over the cap stops
the doctor with one line naming the URL, since no finding about such a server can be trusted.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any

import orjson

from agentworld.models.aio_transport import AioTransport, TransportFailure
from agentworld.models.openai_compat import split_credentials
from agentworld.redact import is_secret_param, redact_text, redact_url


@dataclass(frozen=True)
class Answer:
    """One HTTP exchange: ``status`` 0 when there was no answer (``error`` says why)."""

    status: int
    body: Any
    elapsed_s: float
    error: str = ""

    @property
    def message(self) -> str:
        """The server's own words: an OpenAI-style ``error.message``, else the error or a short body."""
        error = self.body.get("error") if isinstance(self.body, dict) else None
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
        if isinstance(error, str):
            return error
        if self.error:
            return self.error
        if isinstance(self.body, dict) and isinstance(self.body.get("message"), str):
            return str(self.body["message"])
        return f"HTTP {self.status}"


class Probe:
    """GET/POST relative to one base URL with the endpoint's key; the key never leaves in a text."""

    def __init__(self, base_url: str, api_key: str | None, timeout_s: float,
                 max_response_bytes: int | None = None) -> None:
        clean, query, auth = split_credentials(base_url)
        self.url = redact_url(base_url)
        key = api_key or "EMPTY"
        self.has_key = bool(api_key)
        self._secrets = [key, auth[1] if auth else None,
                         *(v for k, v in query.items() if is_secret_param(k))]
        headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json",
                   "Accept": "application/json"}
        options: dict[str, Any] = {"headers": headers, "params": query, "auth": auth, "timeout_s": timeout_s,
                                   "connections": 4, "max_response_bytes": max_response_bytes}
        self._api = AioTransport(clean.rstrip("/") + "/", **options)
        root = clean.rstrip("/").removesuffix("/v1")
        self._root = AioTransport(root + "/", **options)

    def scrub(self, text: str) -> str:
        return redact_text(text, [s for s in self._secrets if s and s != "EMPTY"])

    async def get(self, path: str, *, root: bool = False) -> Answer:
        return await self._call("GET", path, None, root)

    async def post(self, path: str, body: dict[str, Any]) -> Answer:
        return await self._call("POST", path, orjson.dumps(body), False)

    async def _call(self, method: str, path: str, content: bytes | None, root: bool) -> Answer:
        started = time.perf_counter()
        try:
            response = await (self._root if root else self._api).request(method, path, content=content)
        except TransportFailure as exc:
            said = re.search(r"\[([^\[\]]+)\]$", str(exc))  # aiohttp: "Cannot connect to host … [why]"
            return Answer(0, None, time.perf_counter() - started, self.scrub(said[1] if said else str(exc)))
        elapsed = time.perf_counter() - started
        try:
            body = orjson.loads(response.content)
        except orjson.JSONDecodeError:
            body = self.scrub(response.text[:300])
        return Answer(response.status_code, body, elapsed)

    async def aclose(self) -> None:
        await self._api.aclose()
        await self._root.aclose()
