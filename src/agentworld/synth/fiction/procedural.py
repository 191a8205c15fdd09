"""An offline bible: seeded invented names and numbers, and documents written from the entity table.

Why: a world folder must be reproducible without a model (the README's offline example, tests), and the
documents that list many entities (one overview per kind) are best written from the table itself, so
they cannot drift from it whoever wrote the profiles.
"""

from __future__ import annotations

import random
import re

from agentworld.synth.fiction.bible import (
    Bible,
    BibleDocument,
    Entity,
    Scalar,
    StatedFact,
    label,
    render_value,
)

_ONSETS = ("b", "br", "c", "d", "dr", "f", "g", "k", "kh", "l", "m", "n", "p", "r", "s", "t", "th", "v",
           "vr", "z")
_VOWELS = ("a", "e", "i", "o", "u", "ae", "ai", "ei", "ou")
_CODAS = ("", "", "n", "r", "s", "th", "l", "sk", "m", "nd")
_REGIONS = ("north", "south", "east", "west", "coast", "highlands", "marsh", "valley")
_TRADES = ("salt", "glass", "amber", "iron", "silk", "wine", "timber", "copper")

KINDS: dict[str, tuple[str, ...]] = {
    "settlement": ("population", "founding_year", "region", "main_export"),
    "guild": ("founding_year", "members", "headquarters", "leader"),
    "person": ("birth_year", "occupation", "home"),
}
"""Entity kinds of the offline bible and their attributes."""


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or "x"


def _name(rng: random.Random, used: set[str], words: int = 1) -> str:
    while True:
        pools = (_ONSETS, _VOWELS, _CODAS, _VOWELS, _CODAS)
        parts = ["".join(rng.choice(p) for p in pools[: rng.choice((3, 5))]) for _ in range(words)]
        name = " ".join(p.capitalize() for p in parts)
        if name.lower() not in used and len(name) > 3:
            used.add(name.lower())
            return name


def sentence(entity: Entity, attribute: str) -> str:
    """The canonical sentence of one fact (also what a repair writes)."""
    return f"The {label(attribute)} of {entity.name} is {render_value(entity.attributes[attribute])}."


def profile(entity: Entity, topic: str) -> BibleDocument:
    """One page per entity: a heading, what it is, one sentence per attribute."""
    lines = [f"# {entity.name}", "", f"{entity.name} is a {entity.kind} of {topic}.", ""]
    lines += [sentence(entity, a) for a in entity.attributes]
    facts = [StatedFact(entity=entity.id, attribute=a, value=v) for a, v in entity.attributes.items()]
    return BibleDocument(id=f"{entity.kind}/{entity.id}", title=f"{entity.name} — {topic} wiki",
                         text="\n".join(lines), facts=facts)


def overview(kind: str, entities: list[Entity], topic: str) -> BibleDocument:
    """One page per kind listing every entity of that kind with all its attributes (one line each)."""
    lines = [f"# {kind.capitalize()}s of {topic}", "",
             f"This register lists the {len(entities)} known {kind}s of {topic}.", ""]
    facts: list[StatedFact] = []
    for e in entities:
        parts = [f"{label(a)} {render_value(v)}" for a, v in e.attributes.items()]
        lines.append(f"- {e.name}: {'; '.join(parts)}.")
        facts += [StatedFact(entity=e.id, attribute=a, value=v) for a, v in e.attributes.items()]
    return BibleDocument(id=f"list/{kind}", title=f"List of {kind}s — {topic} wiki", text="\n".join(lines),
                         facts=facts)


def documents_for(entities: list[Entity], topic: str) -> list[BibleDocument]:
    """Overview pages (one per kind), written from the table."""
    kinds = sorted({e.kind for e in entities})
    return [overview(k, [e for e in entities if e.kind == k], topic) for k in kinds]


def procedural_entities(topic: str, seed: int = 0, per_kind: int = 6) -> list[Entity]:
    """Seeded entities of :data:`KINDS`: settlements first, guilds seated in them, people living there."""
    rng = random.Random(f"{topic}:{seed}")
    used: set[str] = set()
    out: list[Entity] = []
    settlements: list[Entity] = []
    for _ in range(per_kind):
        name = _name(rng, used)
        attrs: dict[str, Scalar] = {"population": rng.randrange(800, 90_000),
                                    "founding_year": rng.randrange(300, 1500),
                                    "region": rng.choice(_REGIONS), "main_export": rng.choice(_TRADES)}
        settlements.append(Entity(id=slug(name), kind="settlement", name=name, attributes=attrs))
    people: list[Entity] = []
    for _ in range(per_kind):
        name = _name(rng, used, words=2)
        attrs = {"birth_year": rng.randrange(1400, 1600),
                 "occupation": rng.choice(("scribe", "captain", "smith", "merchant", "healer")),
                 "home": rng.choice(settlements).name}
        people.append(Entity(id=slug(name), kind="person", name=name, attributes=attrs))
    for _ in range(per_kind):
        name = f"{_name(rng, used)} {rng.choice(('Guild', 'Company', 'Brotherhood', 'League'))}"
        used.add(name.lower())
        attrs = {"founding_year": rng.randrange(900, 1550), "members": rng.randrange(12, 4000),
                 "headquarters": rng.choice(settlements).name, "leader": rng.choice(people).name}
        out.append(Entity(id=slug(name), kind="guild", name=name, attributes=attrs))
    return settlements + people + out


def procedural_bible(topic: str, seed: int = 0, per_kind: int = 6) -> Bible:
    """A consistent bible with no model: profiles and overviews written from seeded entities."""
    entities = procedural_entities(topic, seed, per_kind)
    docs = [profile(e, topic) for e in entities] + documents_for(entities, topic)
    return Bible(topic=topic, base_url=f"https://{slug(topic)}.fiction.example/", entities=entities,
                 documents=docs)
