"""Safe YAML whose work is bounded before anything walks it, and that builds JSON's types only.

Why a module of its own: ``yaml.safe_load`` builds an alias as the very object it names, so nine
lines of anchors (``b: &b [*a, *a, …]`` ten times over) make a tiny file whose tree has a billion
nodes for every walk after the load: a depth check, a schema validation, a JSON dump. Here the
document is composed into YAML's node graph first and measured there (:func:`check_graph`) before
a single Python value is built.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import Any

from agentworld.errors import DataError
from agentworld.inputs.limits import MAX_DEPTH, MAX_EXPANSION

__all__ = ["check_graph", "parse_yaml"]


def parse_yaml(text: str, *, path: str | Path | None = None) -> Any:
    """Safe YAML (JSON's types only) whose work is bounded before anything walks it.

    The document is composed into YAML's node graph first, where an alias is the very node it names;
    :func:`check_graph` visits each node once (by identity) and refuses nesting deeper than
    :data:`MAX_DEPTH`, a recursive alias, and a graph whose aliases expand to more than
    :data:`MAX_EXPANSION` nodes and characters beyond the text itself (the "billion laughs": nine
    lines of anchors that every later walk would visit a billion times). Only then are Python values
    built from it, of JSON's types (:func:`_json_loader`).
    """
    import yaml

    where = str(path) if path is not None else None
    loader = None
    try:
        loader = _json_loader()(text)
        node = loader.get_single_node()
        if node is None:
            return None
        check_graph(node, len(text), where)
        return loader.construct_document(node)
    except RecursionError:
        raise DataError(f"nested deeper than {MAX_DEPTH} levels", path=where) from None
    except yaml.YAMLError as exc:
        message, at = _yaml_problem(exc, text)
        raise DataError(f"malformed YAML: {message}", path=where, line=at) from None
    finally:
        if loader is not None:
            loader.dispose()


def check_graph(root: Any, text_chars: int, where: str | None) -> None:
    """Refuse a YAML node graph that is too deep, recursive, or expands past :data:`MAX_EXPANSION`.

    One post-order walk without recursion; each node's height and expanded size (itself, plus the
    characters of a scalar, plus its children's expanded sizes: an alias counts as the copy it stands
    for, a merge key as the entries it copies) is computed once and remembered by identity, so the
    work is linear in the distinct nodes however far the aliases would expand.
    """
    import yaml

    limit = MAX_EXPANSION + text_chars
    done: dict[int, tuple[int, int]] = {}
    path: set[int] = set()  # the nodes whose children are being measured: the ancestors of the next
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, measured = stack.pop()
        key = id(node)
        if isinstance(node, yaml.ScalarNode):
            done[key] = (0, 1 + len(node.value))
            continue
        mapping = isinstance(node, yaml.MappingNode)
        children = [x for pair in node.value for x in pair] if mapping else node.value
        if not measured:
            if key in done:
                continue
            if key in path:
                raise DataError("an alias names a node that holds it (a recursive structure; refused)",
                                path=where, line=node.start_mark.line + 1)
            path.add(key)
            stack.append((node, True))
            stack.extend((child, False) for child in children if id(child) not in done)
            continue
        path.discard(key)
        height = 1 + max((done[id(c)][0] for c in children), default=0)
        size = 1 + sum(done[id(c)][1] for c in children)
        if height > MAX_DEPTH:
            raise DataError(f"nested deeper than {MAX_DEPTH} levels", path=where,
                            line=node.start_mark.line + 1)
        if size > limit:
            raise DataError(f"its aliases expand to more than {limit:,} nodes and characters (the limit: "
                            f"{MAX_EXPANSION:,} beyond the {text_chars:,} characters of the file; write the "
                            "repeated parts out instead)", path=where, line=node.start_mark.line + 1)
        done[key] = (height, size)


@functools.cache
def _json_loader() -> type[Any]:
    """A safe YAML loader that builds JSON's types only.

    A timestamp stays the string it was written as; ``!!binary``, ``!!set``, ``!!omap`` and
    ``!!pairs`` (bytes, sets and tuples no JSON consumer takes), ``.nan``/``.inf`` and integers
    outside 64 bits (which JSON writers refuse, or Python cannot even parse past 4,300 digits) are
    a located error instead of a value that fails later, far from the file.
    """
    import yaml
    from yaml.constructor import ConstructorError, SafeConstructor

    class JsonLoader(yaml.SafeLoader):
        pass

    def refuse(loader: Any, node: Any) -> Any:
        raise ConstructorError(None, None, f"{node.tag} is not supported (only JSON's types are)",
                               node.start_mark)

    def integer(loader: Any, node: Any) -> int:
        try:
            value = int(SafeConstructor.construct_yaml_int(loader, node))
        except ValueError:
            value = None
        if value is None or not -(2**63) <= value < 2**64:
            raise ConstructorError(None, None, "an integer outside 64 bits", node.start_mark)
        return value

    def real(loader: Any, node: Any) -> float:
        value = float(SafeConstructor.construct_yaml_float(loader, node))
        if not math.isfinite(value):
            raise ConstructorError(None, None, f"{loader.construct_scalar(node)!r} is not a finite number",
                                   node.start_mark)
        return value

    def as_written(loader: Any, node: Any) -> str:
        return str(loader.construct_scalar(node))

    for tag in ("binary", "set", "omap", "pairs"):
        JsonLoader.add_constructor(f"tag:yaml.org,2002:{tag}", refuse)
    JsonLoader.add_constructor("tag:yaml.org,2002:timestamp", as_written)
    JsonLoader.add_constructor("tag:yaml.org,2002:int", integer)
    JsonLoader.add_constructor("tag:yaml.org,2002:float", real)
    return JsonLoader


def _yaml_problem(exc: Any, text: str) -> tuple[str, int | None]:
    """One line saying what is wrong with a YAML text, and the line it is on (PyYAML's own messages
    span several lines: the problem, its context and a caret under the text)."""
    mark = getattr(exc, "problem_mark", None)
    if mark is not None:
        said = [getattr(exc, "context", None), getattr(exc, "problem", None)]
        return " ".join("; ".join(x for x in said if x).split()) or " ".join(str(exc).split()), mark.line + 1
    position = getattr(exc, "position", None)
    if isinstance(position, int):  # a ReaderError: a character YAML does not allow (NUL, controls)
        reason = getattr(exc, "reason", None) or "unreadable"
        return f"{reason} (character {position})", text.count("\n", 0, position) + 1
    return " ".join(str(exc).split()), None
