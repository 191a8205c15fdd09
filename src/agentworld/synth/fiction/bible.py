"""The world bible: entities with attributes, and documents whose stated facts agree with them.

Why a separate record of facts per document: a generator writes prose, and prose can drift from the
entity table; each document names the facts it states, so :func:`check_bible` can refuse a document
whose facts disagree with the table or do not appear in its text — before any agent sees it.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agentworld.errors import DataError

Scalar = str | int | float
MAX_ENTITIES = 500
MAX_DOCUMENTS = 2000
_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
_DOC_ID = re.compile(r"^[a-z0-9][a-z0-9_/-]{0,127}$")
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


def _check_id(value: str) -> str:
    if not _ID.match(value):
        raise ValueError(f"{value!r} is not an id (lower-case letters, digits, '_' or '-', at most 64)")
    return value


class Entity(_Frozen):
    """One thing in the world: its kind (``city``, ``guild``), a unique id and name, scalar attributes."""

    id: str
    kind: str
    name: str = Field(min_length=1, max_length=200)
    attributes: dict[str, Scalar] = Field(default_factory=dict)

    _ids = field_validator("id", "kind")(_check_id)


class StatedFact(_Frozen):
    """A fact a document states: ``entity``'s ``attribute`` is ``value``."""

    entity: str
    attribute: str
    value: Scalar


class BibleDocument(_Frozen):
    """A page of the world: its text and the facts it states (checked against the entity table)."""

    id: str
    title: str = Field(min_length=1, max_length=300)
    text: str = Field(min_length=1, max_length=100_000)
    facts: list[StatedFact] = Field(default_factory=list)

    @field_validator("id")
    @classmethod
    def _doc_id(cls, value: str) -> str:
        if not _DOC_ID.match(value):
            raise ValueError(f"{value!r} is not a document id (lower-case letters, digits, '_', '-' or '/')")
        return value


class Bible(_Frozen):
    """The world: ``topic``, entities and documents; a document's URL is ``base_url`` + its id."""

    version: int = 1
    topic: str = Field(min_length=1, max_length=500)
    base_url: str = "https://fiction.example/"
    entities: list[Entity] = Field(max_length=MAX_ENTITIES)
    documents: list[BibleDocument] = Field(default_factory=list, max_length=MAX_DOCUMENTS)

    def url(self, doc: BibleDocument) -> str:
        return self.base_url + doc.id

    def entity(self, entity_id: str) -> Entity | None:
        return next((e for e in self.entities if e.id == entity_id), None)

    def kinds(self) -> list[str]:
        return sorted({e.kind for e in self.entities})


def label(attribute: str) -> str:
    """How an attribute reads in prose: ``founding_year`` → ``founding year``."""
    return attribute.replace("_", " ").strip().lower()


def render_value(value: Scalar) -> str:
    """The canonical text of a value (``1432``, ``3.5``, ``Velmar``)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def normalise(text: str) -> str:
    """Lower case, single spaces, thousands separators dropped: what value matching compares."""
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text.lower())
    return " ".join(text.split())


def states(text: str, value: Scalar) -> bool:
    """Whether ``text`` states ``value``: numbers as whole number tokens, strings as whole words."""
    norm, want = normalise(text), normalise(render_value(value))
    if isinstance(value, int | float) and not isinstance(value, bool):
        return want in {normalise(m) for m in _NUMBER.findall(norm)}
    return re.search(rf"(?<!\w){re.escape(want)}(?!\w)", norm) is not None


def check_bible(bible: Bible) -> list[str]:
    """Every problem of ``bible``: duplicate ids or names, facts about unknown entities or attributes,
    facts that disagree with the entity table, facts a document's text does not state. Empty: consistent."""
    problems: list[str] = []
    seen: dict[str, str] = {}
    for entity in bible.entities:
        if entity.id in seen:
            problems.append(f"entity {entity.id}: duplicate id")
        seen[entity.id] = entity.kind
    names = [e.name.lower() for e in bible.entities]
    problems += [f"entity name {n!r}: used twice" for n in sorted({n for n in names if names.count(n) > 1})]
    doc_ids = [d.id for d in bible.documents]
    problems += [f"document {d}: duplicate id" for d in sorted({d for d in doc_ids if doc_ids.count(d) > 1})]
    for doc in bible.documents:
        for fact in doc.facts:
            where = f"document {doc.id}: fact {fact.entity}.{fact.attribute}"
            found = bible.entity(fact.entity)
            table = None if found is None else found.attributes.get(fact.attribute)
            if found is None:
                problems.append(f"{where}: no entity {fact.entity!r}")
            elif table is None:
                problems.append(f"{where}: {found.kind} has no attribute {fact.attribute!r}")
            elif normalise(render_value(table)) != normalise(render_value(fact.value)):
                problems.append(f"{where}: states {render_value(fact.value)!r}, the entity table says "
                                f"{render_value(table)!r}")
            elif not states(doc.text, fact.value):
                problems.append(f"{where}: the text does not state {render_value(fact.value)!r}")
    return problems


def parse_bible(data: Any, source: str = "bible") -> Bible:
    """A :class:`Bible` from JSON data; errors name the field."""
    from pydantic import ValidationError

    try:
        return Bible.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise DataError(f"{field}: {first['msg']}", path=source) from None
