"""How much of one HTTP answer a client of agentworld reads: a cap, counted as the bytes arrive.

Why: the clients read what a server sends, and a server is not to be trusted more than a file. An
endless ``/props`` answer grew ``doctor`` to 5.7 GB in 33 s and an endless chat answer grew ``eval
run`` to 5.4 GB in 18 s, because the body was read whole (``response.read()``) before anything looked
at its size. So every client read goes through a :class:`BodyLimit`: chunks are counted as they come
(a ``Content-Length`` is only used to refuse early, never trusted to bound the read: chunked and
server-sent-event answers have none, and a lying one is no bound), and the read stops at the cap
with a :class:`ResponseTooLargeError` naming the endpoint and the cap.

The cap is :data:`DEFAULT_MAX_RESPONSE_BYTES` (32 MiB: a 32,768-token answer is well under 1 MB of
JSON, reasoning included) unless ``$AGENTWORLD_MAX_RESPONSE_BYTES`` or a command's
``--max-response-bytes`` says otherwise.
"""

from __future__ import annotations

from agentworld.errors import AgentWorldError
from agentworld.inputs.limits import env_bytes

__all__ = ["DEFAULT_MAX_RESPONSE_BYTES", "MAX_RESPONSE_BYTES_ENV", "BodyLimit", "ResponseTooLargeError",
           "max_response_bytes"]

DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024
"""The most bytes read of one HTTP answer unless :data:`MAX_RESPONSE_BYTES_ENV` or a flag says otherwise."""
MAX_RESPONSE_BYTES_ENV = "AGENTWORLD_MAX_RESPONSE_BYTES"
"""Environment variable that sets the cap (bytes) of every HTTP answer agentworld's clients read."""
MAX_RESPONSE_HELP = ("Most bytes read of one HTTP answer (a larger one stops the command, naming the "
                     f"endpoint); default: ${MAX_RESPONSE_BYTES_ENV}, else {DEFAULT_MAX_RESPONSE_BYTES:,} "
                     "(32 MiB).")
"""The help text of every ``--max-response-bytes`` flag (one wording for every command)."""


class ResponseTooLargeError(AgentWorldError):
    """A server sent more than the cap: a broken or hostile server, never one request's bad luck.

    Not a :class:`~agentworld.errors.BackendError`, so no retry loop and no per-sample record takes
    it: the command stops with one line.
    """

    def __init__(self, url: str, limit: int, *, declared: int | None = None) -> None:
        said = f" (it declared {declared:,} bytes)" if declared is not None else ""
        super().__init__(f"{url}: the answer is larger than {limit:,} bytes{said}; the read was stopped. "
                         "A server that sends this much is broken or not the one meant; if its answers "
                         "are meant to be this large, raise --max-response-bytes or "
                         f"${MAX_RESPONSE_BYTES_ENV}")
        self.url = url
        self.limit = limit


def max_response_bytes(value: int | None = None) -> int:
    """The cap: ``value`` when given, else ``$AGENTWORLD_MAX_RESPONSE_BYTES``, else the default.

    Raises:
        AgentWorldError: the value, or the environment variable, is not a positive number of bytes.
    """
    if value is not None:
        if value < 1:
            raise AgentWorldError(f"--max-response-bytes {value}: expected a positive number of bytes")
        return value
    return env_bytes(MAX_RESPONSE_BYTES_ENV, DEFAULT_MAX_RESPONSE_BYTES)


class BodyLimit:
    """Counts the bytes of one answer as they arrive and stops the read past ``limit``.

    >>> body = BodyLimit("http://host/v1/models", 4)
    >>> body.add(b"abc"); body.add(b"d"); body.bytes()
    b'abcd'

    One more byte raises :class:`ResponseTooLargeError`.
    """

    def __init__(self, url: str, limit: int) -> None:
        self.url = url
        self.limit = limit
        self.size = 0
        self._chunks: list[bytes] = []

    def declared(self, content_length: str | int | None) -> None:
        """Refuse at once an answer whose ``Content-Length`` is already over the cap (a smaller one is
        not believed: the chunks are counted all the same)."""
        try:
            length = int(content_length) if content_length is not None else None
        except ValueError:
            return
        if length is not None and length > self.limit:
            raise ResponseTooLargeError(self.url, self.limit, declared=length)

    def count(self, size: int) -> None:
        """Count ``size`` more bytes (for a reader that keeps them itself, such as a relay)."""
        self.size += size
        if self.size > self.limit:
            raise ResponseTooLargeError(self.url, self.limit)

    def add(self, chunk: bytes) -> None:
        """Count and keep ``chunk``."""
        self.count(len(chunk))
        self._chunks.append(chunk)

    def bytes(self) -> bytes:
        """Everything kept so far, in order."""
        return b"".join(self._chunks)
