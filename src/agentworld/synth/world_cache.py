"""World specs parsed once per file version: what ``serve http --worlds-root`` hands each new session.

Why: every ``POST /v1/sessions {"world": ...}`` used to re-read and re-validate the whole world
folder, ``tasks.jsonl`` included (2.7 s per request and 3.5 GB with 12 concurrent requests on a
100,000-task world), though a session needs only ``world.json``: its tools and initial entities.
So a spec is parsed from ``world.json`` alone (the folder's files checked as
:func:`~agentworld.synth.world.load_world` checks them) and kept, keyed by the folder's real path
and ``world.json``'s device, inode, size and modification time: an edited or replaced file is
parsed again, an unchanged one never. The cache holds at most ``maxsize`` specs, least recently
used dropped first, so a client naming many worlds cannot grow it without bound.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from pathlib import Path

from agentworld.errors import DataError
from agentworld.sim.types import WorldSpec
from agentworld.synth.world import load_world

__all__ = ["DEFAULT_MAX_WORLDS", "WorldSpecCache"]

DEFAULT_MAX_WORLDS = 64
"""How many parsed world specs a server keeps."""

_Key = tuple[str, int, int, int, int]


class WorldSpecCache:
    """Parsed :class:`WorldSpec` s by world folder, reparsed only when ``world.json`` changes (LRU-bounded).

    Thread-safe: the server loads specs in worker threads. Two threads missing on the same new world
    may both parse it (the result is the same); neither blocks the other.
    """

    def __init__(self, maxsize: int = DEFAULT_MAX_WORLDS) -> None:
        if maxsize < 1:
            raise ValueError("maxsize must be at least 1")
        self.maxsize = maxsize
        self.parses = 0
        """How many times a world folder was actually read and parsed (a miss)."""
        self._specs: OrderedDict[str, tuple[_Key, WorldSpec]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._specs)

    def spec(self, directory: str | Path) -> WorldSpec:
        """The spec serving world folder ``directory`` (parsed now only if new or changed since).

        Raises:
            DataError: not a world folder, or a ``world.json`` that :func:`load_world` refuses.
        """
        folder = Path(directory).resolve()
        if not folder.is_dir():
            raise DataError("not a world folder (no such directory)", path=str(directory))
        key = self._key(folder, directory)
        with self._lock:
            hit = self._specs.get(str(folder))
            if hit is not None and hit[0] == key:
                self._specs.move_to_end(str(folder))
                return hit[1]
        spec = load_world(folder, tasks=False, controls=False).to_spec()
        with self._lock:
            self.parses += 1
            self._specs[str(folder)] = (key, spec)
            self._specs.move_to_end(str(folder))
            while len(self._specs) > self.maxsize:
                self._specs.popitem(last=False)
        return spec

    @staticmethod
    def _key(folder: Path, directory: str | Path) -> _Key:
        where = str(Path(directory) / "world.json")
        try:
            info = os.stat(folder / "world.json")
        except FileNotFoundError:
            raise DataError("missing (a world folder holds world.json and tasks.jsonl)", path=where) from None
        except OSError as exc:
            raise DataError(f"cannot read: {exc.strerror or exc}", path=where) from None
        return str(folder), info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns
