"""The CLI and config reference pages of the docs site, rendered from the command tree and its typed configs.

Why generated: every option is documented once, in its config class (:mod:`agentworld.cli_support`),
and the CLI is built from it; a hand-written reference would drift from both. The docs site's hook
(``docs/hooks/reference.py``) calls :func:`render_cli` and :func:`render_configs` on every
``mkdocs build``, so the pages describe the code they were built from. Both return Markdown.

>>> "## agentworld eval" in render_cli()
True
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from typing import Any, Literal, Union, get_args, get_origin

import typer
from pydantic import BaseModel

from agentworld.cli import COMMANDS, app
from agentworld.cli_click import Command, Context
from agentworld.cli_support import config_of


@dataclass(frozen=True)
class CommandDoc:
    """One command of the tree: its words after ``agentworld``, the click command and its context."""

    path: tuple[str, ...]
    command: Command
    ctx: Context

    @property
    def name(self) -> str:
        return " ".join(("agentworld", *self.path))


def walk_commands() -> Iterator[CommandDoc]:
    """Every command and group of ``agentworld``, root first, depth first, in ``--help`` order."""
    root = typer.main.get_command(app)
    yield from _walk(root, (), Context(root, info_name="agentworld"))


def _walk(command: Command, path: tuple[str, ...], ctx: Context) -> Iterator[CommandDoc]:
    yield CommandDoc(path, command, ctx)
    list_commands = getattr(command, "list_commands", None)
    if list_commands is None:
        return
    for name in list_commands(ctx):
        sub = command.get_command(ctx, name)  # type: ignore[attr-defined]
        if sub is not None:
            yield from _walk(sub, (*path, name), Context(sub, info_name=name, parent=ctx))


def _cell(text: object, code: bool = False) -> str:
    """A Markdown table cell: one line, pipes escaped, and angle brackets unless it is a code span."""
    flat = " ".join(str(text).split()).replace("|", "\\|")
    if not code:
        flat = flat.replace("<", "&lt;").replace(">", "&gt;")
    return flat or "—"


def _para(text: str) -> str:
    lines = inspect.cleandoc(text).splitlines()
    return "\n".join(line.replace("<", "&lt;").replace(">", "&gt;") for line in lines)


def _param_type(param: Any, ctx: Context) -> str:
    """The type as ``--help`` shows it (typer's ``display_type``: ``int``, ``official|brief``) or ``flag``."""
    if getattr(param, "is_flag", False):
        return "flag"
    shown = param.display_type(ctx) if hasattr(param, "display_type") else param.type.name
    return str(shown).strip("<>") or "text"


def _param_default(param: Any) -> str:
    default = param.default
    if param.required or default is None or callable(default) or default == ():
        return "—"
    if isinstance(default, Enum):
        default = default.value
    if isinstance(default, (list, tuple)):
        return ", ".join(f"`{v}`" for v in default)
    return f"`{default}`"


def _option_rows(command: Command, ctx: Context) -> list[str]:
    """The options table of a command, required options first, then in declaration order."""
    params = [p for p in command.params if p.name != "help"]
    params.sort(key=lambda p: not p.required)
    rows = ["| option | type | default | required | help |", "|---|---|---|---|---|"]
    for p in params:
        flags = [*p.opts, *p.secondary_opts]
        names = " / ".join(f"`{f}`" for f in flags) if getattr(p, "param_type_name", "") == "option" \
            else f"`{(p.name or '').upper()}` (argument)"
        help_text = getattr(p, "help", None) or ""
        envvar = getattr(p, "envvar", None)
        if envvar:
            names_env = envvar if isinstance(envvar, (list, tuple)) else [envvar]
            help_text += " (env: " + ", ".join(names_env) + ")"
        rows.append(f"| {names} | {_cell(_param_type(p, ctx))} | {_cell(_param_default(p), code=True)} | "
                    f"{'yes' if p.required else ''} | {_cell(help_text)} |")
    return rows


def render_cli() -> str:
    """The CLI reference: every command of the tree, its help, usage and options."""
    out = ["# CLI reference", "",
           "Generated from the command tree of `agentworld.cli` when the site is built. Options come from",
           "the typed configs (see the [config reference](config.md)); `agentworld COMMAND --help`",
           "prints the same help.", ""]
    for doc in walk_commands():
        command = doc.command
        level = "#" * min(2 + max(len(doc.path) - 1, 0), 4) if doc.path else "##"
        out += [f"{level} {doc.name}", ""]
        alias = COMMANDS.get(doc.path[0]) if len(doc.path) == 1 else None
        if alias is not None and alias.hidden:
            out += [f"{_para(alias.help)} Hidden from `--help`; it takes the options below.", ""]
        pieces = command.collect_usage_pieces(doc.ctx)
        out += ["```text", f"{doc.name} {' '.join(pieces)}".rstrip(), "```", ""]
        if command.help:
            out += [_para(command.help), ""]
        config = config_of(command.callback)
        if config is not None:
            out += [f"Options from [`{config.__name__}`](config.md#{config_anchor(config)}).", ""]
        subs = getattr(command, "list_commands", None)
        if subs is not None:
            names = [n for n in subs(doc.ctx) if not (len(doc.path) == 0 and COMMANDS.get(n, None)
                                                      and COMMANDS[n].hidden)]
            out += ["Sub-commands: " + ", ".join(f"`{n}`" for n in names) + ".", ""]
        if [p for p in command.params if p.name != "help"]:
            out += [*_option_rows(command, doc.ctx), ""]
    return "\n".join(out).rstrip() + "\n"


def config_classes() -> dict[type[BaseModel], list[str]]:
    """Every config class the CLI is generated from, with the commands using it, and the config classes
    nested in their fields."""
    found: dict[type[BaseModel], list[str]] = {}
    for doc in walk_commands():
        config = config_of(doc.command.callback)
        if config is not None:
            found.setdefault(config, []).append(doc.name)
    pending = list(found)
    while pending:
        for info in pending.pop().model_fields.values():
            for nested in _models_in(info.annotation):
                if nested not in found:
                    found[nested] = []
                    pending.append(nested)
    return dict(sorted(found.items(), key=lambda item: item[0].__name__))


def config_anchor(config: type[BaseModel]) -> str:
    """The config reference's anchor of a class, unique where two modules reuse a class name."""
    return f"{config.__module__}.{config.__qualname__}".replace(".", "-").replace("_", "-").lower()


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in get_args(annotation) for m in _models_in(arg)]


def type_name(annotation: Any) -> str:
    """A field's type as a reader writes it: ``str | None``, ``list[Path]``, ``'a' | 'b'``."""
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        return " | ".join(type_name(a) for a in get_args(annotation))
    if origin is Literal:
        return " | ".join(repr(a) for a in get_args(annotation))
    if origin is not None:
        args = ", ".join(type_name(a) for a in get_args(annotation))
        return f"{getattr(origin, '__name__', str(origin))}[{args}]"
    if annotation is type(None):
        return "None"
    return getattr(annotation, "__name__", str(annotation).replace("typing.", ""))


def _field_default(info: Any) -> str:
    if info.is_required():
        return "—"
    if info.default_factory is not None:
        return f"`{type_name(info.default_factory)}()`"
    return f"`{info.default!r}`" if not isinstance(info.default, str) else f"`\"{info.default}\"`"


def render_configs() -> str:
    """The config reference: each config class, its docstring, its fields and the commands it serves."""
    out = ["# Config reference", "",
           "Generated from the typed configs when the site is built: each command's options are the fields",
           "of its config (a field `max_tokens` is the option `--max-tokens`; see the",
           "[CLI reference](cli.md)).", ""]
    for config, commands in config_classes().items():
        out += [f"## {config.__name__} {{ #{config_anchor(config)} }}", "",
                f"`{config.__module__}.{config.__qualname__}`", ""]
        if config.__doc__ and config.__doc__.strip():
            out += [_para(config.__doc__), ""]
        if commands:
            out += ["Used by " + ", ".join(f"`{c}`" for c in commands) + ".", ""]
        out += ["| field | type | default | required | description |", "|---|---|---|---|---|"]
        for name, info in config.model_fields.items():
            default = _cell(_field_default(info), code=True)
            out.append(f"| `{name}` | {_cell(type_name(info.annotation))} | {default} | "
                       f"{'yes' if info.is_required() else ''} | {_cell(info.description or '')} |")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


__all__ = ["CommandDoc", "config_anchor", "config_classes", "render_cli", "render_configs", "type_name",
           "walk_commands"]
