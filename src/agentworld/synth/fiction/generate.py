"""The bible from a generator model: entities first (one JSON request), then one profile per entity.

Why two stages: the entity table is the source of truth and is fixed before any prose is written; each
profile request carries its entity's attributes and must list the facts it states, so
:func:`~agentworld.synth.fiction.bible.check_bible` and the bible ledger can refuse a profile that
drifts. A refused profile is asked for once more (a new cache attempt), then left out with its reason.
Requests go through a :class:`~agentworld.models.cache.ResponseCache`, so a killed run resumes without
re-sending what was answered; profiles are requested concurrently under a semaphore.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from agentworld.errors import AgentWorldError
from agentworld.models.base import ChatBackend, ChatRequest
from agentworld.models.cache import ResponseCache
from agentworld.schema import Message
from agentworld.synth.fiction.bible import Bible, BibleDocument, Entity, StatedFact, check_bible, label
from agentworld.synth.fiction.ledger import document_problems
from agentworld.synth.fiction.procedural import documents_for, slug

SYSTEM = ("You invent self-consistent fictional worlds. Answer with one JSON object and nothing else. "
          "Never use real places, people or organisations.")
ENTITIES_PROMPT = """Invent the world "{topic}" (variation {seed}).
Give {count} entities of 2 to 4 kinds. Every entity of a kind has the same attributes (3 to 5, snake_case
names); values are short strings or numbers. Names are unique.
JSON: {{"entities": [{{"kind": "city", "name": "...",
  "attributes": {{"population": 1200, "ruler": "..."}}}}]}}"""
PROFILE_PROMPT = """Write the encyclopedia page of this {kind} of "{topic}":
{entity}
State every attribute in a sentence of the form "The <attribute words> of <name> is <value>." and add
nothing that contradicts them. Start the text with "# <name>".
JSON: {{"title": "...", "text": "...", "facts": [{{"attribute": "...", "value": ...}}]}}"""


def _json_object(text: str, what: str) -> dict[str, Any]:
    body = re.sub(r"^```(?:json)?\s*|\s*```$", "", text.strip())
    start = body.find("{")
    try:
        obj, _ = json.JSONDecoder().raw_decode(body[start:] if start >= 0 else body)
    except ValueError:
        raise AgentWorldError(f"the generator's answer ({what}) is not JSON: {text[:120]!r}") from None
    if not isinstance(obj, dict):
        raise AgentWorldError(f"the generator's answer ({what}) is not a JSON object")
    return obj


async def _ask(backend: ChatBackend, cache: ResponseCache, prompt: str, attempt: int = 0) -> str:
    messages = (Message(role="system", content=SYSTEM), Message(role="user", content=prompt))
    request = ChatRequest(messages=messages, model=backend.name, temperature=0.0)
    return (await cache.call(backend, request, attempt)).result.content


def entities_from(data: dict[str, Any]) -> list[Entity]:
    """Entities from the generator's JSON: ids are slugs of the names; bad rows are errors naming them."""
    rows = data.get("entities")
    if not isinstance(rows, list) or not rows:
        raise AgentWorldError("the generator's entities: expected a non-empty list under 'entities'")
    out: list[Entity] = []
    for i, row in enumerate(rows):
        if not isinstance(row, dict) or not all(isinstance(row.get(k), str) for k in ("name", "kind")):
            raise AgentWorldError(f"the generator's entities[{i}]: needs 'kind' and 'name' strings")
        attrs = row.get("attributes")
        attrs = attrs if isinstance(attrs, dict) else {}
        clean = {slug(k).replace("-", "_"): v for k, v in attrs.items()
                 if isinstance(v, str | int | float) and not isinstance(v, bool)}
        try:
            out.append(Entity(id=slug(row["name"]), kind=slug(row["kind"]).replace("-", "_"),
                              name=row["name"].strip(), attributes=clean))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise AgentWorldError(f"the generator's entities[{i}]: {where}: {first['msg']}") from None
    return out


def _profile(entity: Entity, data: dict[str, Any]) -> BibleDocument:
    facts = [StatedFact(entity=entity.id, attribute=str(f.get("attribute", "")).replace(" ", "_"),
                        value=f.get("value"))
             for f in data.get("facts", []) if isinstance(f, dict)]
    return BibleDocument(id=f"{entity.kind}/{entity.id}", title=str(data.get("title") or entity.name),
                         text=str(data.get("text") or ""), facts=facts)


async def generate_bible(topic: str, backend: ChatBackend, cache: ResponseCache, *, seed: int = 0,
                         count: int = 18, concurrency: int = 8,
                         advance: Callable[[str], None] | None = None) -> tuple[Bible, list[str]]:
    """The bible of ``topic`` and the reasons profiles were left out (empty: all kept); ``advance`` is
    called with the stage's name (``entities``, ``profiles``) as each request of it completes."""
    tick = advance or (lambda stage: None)
    entities = entities_from(_json_object(await _ask(backend, cache, ENTITIES_PROMPT.format(
        topic=topic, seed=seed, count=count)), "entities"))
    tick("entities")
    base = Bible(topic=topic, base_url=f"https://{slug(topic)}.fiction.example/", entities=entities)
    if problems := check_bible(base):
        raise AgentWorldError("the generator's entities: " + "; ".join(problems[:5]))
    gate = asyncio.Semaphore(max(1, concurrency))

    async def profile(entity: Entity) -> tuple[BibleDocument | None, str | None]:
        prompt = PROFILE_PROMPT.format(kind=entity.kind, topic=topic, entity=json.dumps(
            {"name": entity.name, **{label(a): v for a, v in entity.attributes.items()}}, ensure_ascii=False))
        reason = ""
        for attempt in (0, 1):
            async with gate:
                text = await _ask(backend, cache, prompt, attempt)
            try:
                doc = _profile(entity, _json_object(text, f"profile of {entity.name}"))
            except (AgentWorldError, ValueError) as exc:
                reason = str(exc).splitlines()[0]
                continue
            one = base.model_copy(update={"documents": [doc]})
            problems = check_bible(one) + document_problems(one)
            if not problems:
                return doc, None
            reason = problems[0]
        return None, f"profile of {entity.name} left out: {reason}"

    async def counted(entity: Entity) -> tuple[BibleDocument | None, str | None]:
        done = await profile(entity)
        tick("profiles")
        return done

    results = await asyncio.gather(*(counted(e) for e in entities))
    docs = [d for d, _ in results if d is not None] + documents_for(entities, topic)
    return base.model_copy(update={"documents": docs}), [r for _, r in results if r]
