"""Typer commands generated from pydantic configs, so each option is documented once, in its config class.

A field becomes ``--field-name`` with the field's description as help; ``list`` fields are
repeatable; ``bool`` fields are flags (``--x/--no-x`` when they default to true); ``Literal``
fields are choices; ``json_schema_extra={"envvar": ...}`` names an environment variable default.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

import typer
from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo

C = TypeVar("C", bound=BaseModel)


def _unwrap(annotation: Any) -> tuple[Any, bool]:
    """``X | None`` → ``(X, True)``; anything else → ``(annotation, False)``."""
    if get_origin(annotation) in (Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0], True
    return annotation, False


def _cli_type(annotation: Any) -> Any:
    """The type typer parses into: Literal → Enum of choices, SecretStr → str, list[X] → list[X]."""
    inner, optional = _unwrap(annotation)
    if get_origin(inner) is list:
        return list[_cli_type(get_args(inner)[0])]  # type: ignore[misc]
    if get_origin(inner) is Literal:
        choices = Enum("Choice", {str(v): str(v) for v in get_args(inner)}, type=str)  # type: ignore[misc]
        inner = choices
    elif inner is SecretStr:
        inner = str
    elif inner not in (str, int, float, bool, Path):
        raise TypeError(f"unsupported config field type for the CLI: {annotation!r}")
    return inner | None if optional else inner


def _option(name: str, info: FieldInfo) -> inspect.Parameter:
    annotation = _cli_type(info.annotation)
    flag = "--" + name.replace("_", "-")
    extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
    decls = [f"{flag}/--no-{flag[2:]}"] if info.annotation is bool and info.default is True else [flag]
    if info.is_required():
        default: Any = ...
    elif info.default_factory is not None:
        default = None
    else:
        default = info.default
    envvar = extra.get("envvar")
    option = typer.Option(default, *decls, help=info.description or "",
                          envvar=envvar if isinstance(envvar, str) else None, show_envvar=bool(envvar))
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=annotation)


def config_command(app: typer.Typer, config_cls: type[C], run: Callable[..., None], *, name: str,
                   exclude: tuple[str, ...] = (), extra: dict[str, tuple[Any, Any]] | None = None,
                   help: str | None = None) -> None:
    """Register ``name`` on ``app``: its options are ``config_cls``'s fields, its body ``run(config)``.

    Args:
        exclude: fields not offered on the command line (they keep their defaults).
        extra: options that are not config fields, ``name: (annotation, typer.Option(...))``;
            they are passed on as ``run(config, name=value)``.
    """
    params = [_option(n, f) for n, f in config_cls.model_fields.items() if n not in exclude]
    for key, (annotation, option) in (extra or {}).items():
        params.append(inspect.Parameter(key, inspect.Parameter.KEYWORD_ONLY, default=option,
                                        annotation=annotation))

    def command(**values: Any) -> None:
        fields = {k: (v.value if isinstance(v, Enum) else v) for k, v in values.items()
                  if k in config_cls.model_fields and v is not None}
        config = config_cls.model_validate(fields)
        run(config, **{k: v for k, v in values.items() if k not in config_cls.model_fields})

    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__doc__ = help or (config_cls.__doc__ or "").strip()
    app.command(name=name)(command)


class StageProgress:
    """A rich progress bar with ETA, one line per stage; silent when disabled or not on a terminal."""

    def __init__(self, enabled: bool, total: int, stages: tuple[str, ...]) -> None:
        from rich.console import Console
        from rich.progress import Progress

        console = Console(stderr=True)
        self.bar = Progress(*Progress.get_default_columns(), console=console,
                            disable=not (enabled and console.is_terminal))
        self.tasks = {stage: self.bar.add_task(stage, total=total) for stage in stages}

    def advance(self, stage: str) -> None:
        if stage in self.tasks:
            self.bar.advance(self.tasks[stage])

    def __enter__(self) -> Callable[[str], None]:
        self.bar.start()
        return self.advance

    def __exit__(self, *exc: object) -> None:
        self.bar.stop()
