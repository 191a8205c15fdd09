"""The repositories SWE scenarios work on: real source distributions, shipped unchanged.

Why vendored: recording must run offline and give the same files every time, so the sdists
(``pip download --no-binary :all: --no-deps <name>==<version>`` from PyPI, unpacked with their
tests) sit in ``repos/`` byte for byte, checked against their SHA-256 before use. All are small and
pure Python under permissive licences (MIT, BSD; the licence file travels inside each archive), and
their test suites run in seconds with the OS's ``python3-pytest``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from agentworld.errors import AgentWorldError


@dataclass(frozen=True)
class Repository:
    """One vendored sdist: what it is, where it came from, and its checksum."""

    name: str
    version: str
    sha256: str
    licence: str
    summary: str

    @property
    def archive(self) -> str:
        return f"{self.name}-{self.version}.tar.gz"


REPOSITORIES: dict[str, Repository] = {r.name: r for r in (
    Repository("inflection", "0.5.1",
               "1a29730d366e996aaacffb2f1f1cb9593dc38e2ddd30c91250c6dde09ea9b417", "MIT",
               "a port of Ruby on Rails' inflector (camelize, underscore, pluralize …)"),
    Repository("six", "1.16.0",
               "1e61c37477a1626458e36f7b1d82aa5c9b094fa4802892072e49de9c60c4c926", "MIT",
               "Python 2 and 3 compatibility utilities"),
    Repository("toolz", "0.12.0",
               "88c570861c440ee3f2f6037c4654613228ff40c93a6c25e0eba70d17282c6194", "BSD-3-Clause",
               "functional utilities for iterables, functions and dictionaries (a package with its tests)"),
)}


def repository(name: str) -> Repository:
    """The repository called ``name``; an unknown name is a user error naming the known ones."""
    try:
        return REPOSITORIES[name]
    except KeyError:
        raise AgentWorldError(f"unknown SWE repository {name!r}; known: {', '.join(REPOSITORIES)}") from None


def archive_path(name: str) -> Path:
    """The verified archive of repository ``name`` (its SHA-256 must be the recorded one)."""
    repo = repository(name)
    path = Path(str(resources.files("agentworld.domains.swe") / "repos" / repo.archive))
    if not path.is_file():
        raise AgentWorldError(f"the archive of SWE repository {name!r} is missing: {path}")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != repo.sha256:
        raise AgentWorldError(f"{path} does not have the recorded SHA-256 ({digest} != {repo.sha256})")
    return path
