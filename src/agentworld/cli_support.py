"""Typer commands generated from pydantic configs, so each option is documented once, in its config class.

A field becomes ``--field-name`` with the field's description as help; ``list`` fields are
repeatable (so is a ``str`` field marked ``{"repeatable": True}``, whose validator joins the values);
``bool`` fields are flags (``--x/--no-x`` when they default to true); ``Literal``
fields are choices; ``json_schema_extra={"envvar": ...}`` names an environment variable default
(or several, tried in order), ``{"flags": ["--data"]}`` replaces the flag derived from the name
(``inp`` → ``--data``; ``["--processes", "-j"]`` adds a short form), ``{"old_flags": ["--in"]}`` keeps
an earlier spelling working, hidden from help, with a note on stderr (:func:`cli_flags`);
``{"cli_type": "paths"}`` offers a list of records with a ``path`` (``data: [{path: ...}]``) as
repeatable paths.

The house style every command follows (tested over the whole command tree in ``tests/test_cli.py``):
options come from a typed config; every option has help text; units are in names (``--timeout-s``);
one vocabulary: ``--data`` reads rows, ``--run`` a run folder, ``--out`` is what a command writes,
``--seed`` an integer seed, ``--seed-files`` seed files, ``--resume`` continues; required options
come first in ``--help``;
endpoints are ``--model-base-url/--model/--model-api-key``, ``--judge-…`` and ``--agent-…``
(:mod:`agentworld.endpoints`); help is plain text (no markup, so ``agentworld[train]`` survives);
a user error is one red line on stderr and exit code 2 (raise :class:`~agentworld.errors.AgentWorldError`,
the root command prints it). Command modules import only configs at module level and the heavy
parts inside the command body, so ``--help`` stays fast.
"""

from __future__ import annotations

import dataclasses
import inspect
import types
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

import typer
from pydantic import BaseModel, SecretStr, ValidationError
from pydantic.fields import FieldInfo

from agentworld.errors import AgentWorldError, DataError

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


def new_app(help: str, **options: Any) -> typer.Typer:
    """A command group in the house style: plain-text help, help when run bare, no completion noise."""
    settings: dict[str, Any] = {"no_args_is_help": True, "rich_markup_mode": None, "add_completion": False,
                                "pretty_exceptions_enable": False}
    return typer.Typer(help=help, **{**settings, **options})


def cli_flags(*flags: str, old: tuple[str, ...] = ()) -> dict[str, Any]:
    """``json_schema_extra`` naming a field's flags: ``Field(..., json_schema_extra=cli_flags("--data"))``.

    Args:
        flags: the flags shown in help (none: the one derived from the field name).
        old: earlier spellings, still parsed for one release but hidden from help; each prints a
            note on stderr. For a ``bool`` field ``--no-x`` sets it false, any other spelling true.
    """
    return {**({"flags": list(flags)} if flags else {}), **({"old_flags": list(old)} if old else {})}


OLD = "old__"
"""Prefix of the hidden parameters that carry an old spelling of an option."""


def _flag(info: FieldInfo, name: str) -> str:
    """The long flag of a field as the user types it (``inp`` with ``flags: ["--data"]`` → ``--data``)."""
    extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
    flags = extra.get("flags")
    return str(flags[0]) if isinstance(flags, list) and flags else "--" + name.replace("_", "-")


def _option(name: str, info: FieldInfo, optional: bool = False) -> list[inspect.Parameter]:
    """The option of a config field, then one hidden option per old spelling of it.

    ``optional``: every option defaults to None, so that a value not given stays unset (a config
    file fills it in); a ``bool`` without flags of its own is then ``--x/--no-x``.
    """
    if not info.description:
        raise TypeError(f"config field {name!r} has no description: every CLI option needs help text")
    extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
    annotation = list[Path] if extra.get("cli_type") == "paths" else _cli_type(info.annotation)
    if extra.get("repeatable") and annotation == str | None:
        annotation = list[str] | None  # the field's validator joins the values
    flags = extra.get("flags")
    flag = "--" + name.replace("_", "-")
    is_bool = _unwrap(info.annotation)[0] is bool
    if isinstance(flags, list):
        decls = [str(f) for f in flags]
    elif is_bool and (info.default is True or (optional and info.default is None)):
        decls = [f"{flag}/--no-{flag[2:]}"]
    else:
        decls = [flag]
    if optional:
        default: Any = None
        annotation = _or_none(annotation)
    elif info.is_required():
        default = ...
    elif info.default_factory is not None:
        default = None
    else:
        default = info.default
    raw = extra.get("envvar")
    envvar = raw if isinstance(raw, str) else [str(v) for v in raw] if isinstance(raw, list) else None
    option = typer.Option(default, *decls, help=info.description, envvar=envvar, show_envvar=bool(envvar))
    params = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=annotation)]
    old = extra.get("old_flags")
    for i, spelling in enumerate(old if isinstance(old, list) else []):
        params.append(_old_option(name, str(spelling), decls[0].split("/")[0], annotation, is_bool, i))
    return params


def _or_none(annotation: Any) -> Any:
    """``X | None`` for ``X``; a union stays as it is."""
    return annotation if get_origin(annotation) is types.UnionType else annotation | None


def _old_option(name: str, spelling: str, new: str, annotation: Any, is_bool: bool,
                index: int) -> inspect.Parameter:
    """A hidden option that parses an old ``spelling`` of option ``name`` (shown as ``new``).

    It is eager, so it runs before the others, and hands its value on as the default of ``name``: the
    new spelling wins when both are given, and a required option given in its old spelling is given.
    """

    def forward(ctx: typer.Context, value: Any) -> Any:
        if value is None or value is False or value == () or value == []:
            return value
        typer.echo(f"note: {spelling} is the old spelling of {new} (it goes away in the next release)",
                   err=True)
        given = (not spelling.startswith("--no-")) if is_bool else value
        ctx.default_map = {**(ctx.default_map or {}), name: given}
        return value

    kind: Any = bool if is_bool else _or_none(annotation)
    default = False if is_bool else None
    option = typer.Option(default, spelling, hidden=True, is_eager=True, callback=forward,
                          help=f"Old spelling of {new}.")
    return inspect.Parameter(f"{OLD}{index}_{name}", inspect.Parameter.KEYWORD_ONLY, default=option,
                             annotation=kind)


def config_command(app: typer.Typer, config_cls: type[C], run: Callable[..., None], *, name: str | None,
                   exclude: tuple[str, ...] = (), extra: dict[str, tuple[Any, Any]] | None = None,
                   help: str | None = None, hidden: bool = False, from_file: bool = False) -> None:
    """Register ``name`` on ``app``: its options are ``config_cls``'s fields, its body ``run(config)``.

    Required options come first (in ``--help`` too), then the others in field order.

    Args:
        name: the command name; ``None`` makes it the group's own body (``agentworld demo``), run
            when no sub-command is given.
        exclude: fields not offered on the command line (they keep their defaults).
        extra: options that are not config fields, ``name: (annotation, typer.Option(...))``;
            they are passed on as ``run(config, name=value)``.
        from_file: add ``--config FILE`` (YAML/JSON) as TRL's ``TrlParser`` does: the options given
            override the file's values, and none is required on the command line.
    """
    config_file = typer.Option(None, "--config", "-c", help=CONFIG_HELP)
    params = [inspect.Parameter(CONFIG_FILE, inspect.Parameter.KEYWORD_ONLY, annotation=Path | None,
                                default=config_file)] if from_file else []
    params += [p for n, f in config_cls.model_fields.items() if n not in exclude
               for p in _option(n, f, optional=from_file)]
    for key, (annotation, option) in (extra or {}).items():
        params.append(inspect.Parameter(key, inspect.Parameter.KEYWORD_ONLY, default=option,
                                        annotation=annotation))
    params.sort(key=lambda p: not _required(p))
    if name is None:
        params.insert(0, inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                           annotation=typer.Context))

    def command(ctx: typer.Context | None = None, **values: Any) -> None:
        if ctx is not None and ctx.invoked_subcommand is not None:
            return
        values = {k: v for k, v in values.items() if not k.startswith(OLD)}
        fields = {k: (v.value if isinstance(v, Enum) else v) for k, v in values.items()
                  if k in config_cls.model_fields and v is not None}
        from agentworld.outputs import release_all

        source = values.pop(CONFIG_FILE) if from_file else None
        try:  # the outputs are let go of however the body ends (also when a sub-app is invoked alone)
            if from_file:
                config = _merged(config_cls, source, fields)
            else:
                config = validate_options(config_cls, fields)
                claim_outputs(config)
            run(config, **{k: v for k, v in values.items() if k not in config_cls.model_fields})
        except DataError as exc:
            raise _in_config_file(exc, source, config_cls) from None
        finally:
            release_all()

    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in params}
    setattr(command, CONFIG_ATTRIBUTE, config_cls)  # typer's wrapper copies it: see config_of
    command.__doc__ = help or (config_cls.__doc__ or "").strip()
    if name is None:
        app.callback(invoke_without_command=True)(command)
    else:
        app.command(name=name, hidden=hidden)(command)


CONFIG_ATTRIBUTE = "__agentworld_config__"
"""Attribute of a command's callback naming the config class its options come from."""


def config_of(callback: Callable[..., Any] | None) -> type[BaseModel] | None:
    """The config class a click command's ``callback`` was generated from by :func:`config_command`,
    or ``None`` for a hand-written command (typer's wrapper keeps the attribute: ``update_wrapper``)."""
    found = getattr(callback, CONFIG_ATTRIBUTE, None)
    return found if isinstance(found, type) and issubclass(found, BaseModel) else None


CONFIG_FILE = "config_file"
CONFIG_HELP = ("YAML/JSON config file with the fields below (and those only a file can hold); the options "
               "given here override its values. Relative paths in it are relative to it.")


def _required(param: inspect.Parameter) -> bool:
    """Whether click will require ``param`` (an option or argument whose default is ``...``)."""
    return getattr(param.default, "default", None) is ...


def _merged(config_cls: type[C], path: Path | None, given: dict[str, Any]) -> C:
    """``config_cls`` from the file at ``path`` with the ``given`` command-line values winning.

    Outputs given on the command line are claimed before the file is read, those from the file after
    (and folders given on the command line again, now that the file may have said ``resume``);
    relative paths of the file are taken from its folder when the config has ``relative_to(base)``,
    those given on the command line from the working directory.
    """
    claim_outputs(config_cls, given)
    if path is None:
        config = validate_options(config_cls, given)
    else:
        from agentworld.configfile import load_config_file

        raw = load_config_file(config_cls, path, **given)
        rebase = getattr(raw, "relative_to", None)
        config = rebase(path.parent).model_copy(update={k: getattr(raw, k) for k in given}) if rebase else raw
    claim_outputs(config, skip=set(given), source=path)
    folders = {n for n, f in config_cls.model_fields.items()
               if isinstance(f.json_schema_extra, dict) and f.json_schema_extra.get("output") == "folder"}
    claim_outputs(config, skip=set(config_cls.model_fields) - (set(given) & folders))  # now knowing resume
    return config


def _in_config_file(exc: DataError, source: Path | None, config_cls: type[BaseModel]) -> DataError:
    """``exc`` naming the config file when it is about a field that file gave: the field's value itself
    (no path of its own), or a file the value names as a whole (``cfg.yaml, field 'data': x: no such
    file``); an error located inside another file (its line) is left as it is."""
    given = (exc.field or "").split(".")[0] in config_cls.model_fields
    if source is None or not given or exc.line is not None or exc.path == str(source):
        return exc
    message = f"{exc.path}: {exc.message}" if exc.path is not None else exc.message
    return dataclasses.replace(exc, message=message, path=str(source))


def command_label() -> str:
    """The running command's path without the program name (``eval run``), for messages and locks."""
    from agentworld.cli_click import get_current_context

    ctx = get_current_context(silent=True)
    path = ctx.command_path if ctx is not None else ""
    return path.split(" ", 1)[1] if " " in path else path


def claim_outputs(config: BaseModel | type[BaseModel], values: dict[str, Any] | None = None, *,
                  skip: set[str] | frozenset[str] = frozenset(), source: Path | None = None) -> None:
    """Apply the one output guard (:mod:`agentworld.outputs`) to every field of ``config`` marked
    ``{"output": "folder"}`` or ``{"output": "file"}`` (and a file's ``"siblings"``), before the
    command body runs.

    A config recognises the explicit format mark of its run folders with an optional
    ``owns_output(field, path)`` method, says that a file output is a folder in its current settings
    with ``folder_output(field)`` and names the files it writes beside one with ``derived_outputs(field)``
    (claimed like ``"siblings"``); a boolean ``overwrite`` field lets file outputs be
    replaced on purpose, and a ``resume`` field that is off refuses an earlier output of ours, unless
    ``appends_output(field)`` says this run appends to it (nothing is replaced).

    Args:
        config: the config, or its class with the ``values`` known so far.
        skip: fields already claimed.
        source: the config file the values came from (named in the messages instead of the flag).

    Raises:
        AgentWorldError: an output is not ours, or another process writes into it.
    """
    from agentworld.outputs import claim_file, claim_folder

    cls = config if isinstance(config, type) else type(config)
    known = values if values is not None else {n: getattr(config, n) for n in cls.model_fields}
    owns, as_folder, appends = (_hook(config, name) for name in ("owns_output", "folder_output",
                                                                 "appends_output"))
    flags = {name: (_flag(cls.model_fields[name], name) if name in cls.model_fields else None)
             for name in ("overwrite", "resume")}
    overwrite = bool(known.get("overwrite", False))
    resume_known = not isinstance(config, type) or "resume" in known  # a config file may still set it
    resume_flag = (flags["resume"] if flags["resume"] and resume_known and not known.get("resume", False)
                   and not overwrite else None)
    for name, info in cls.model_fields.items():
        extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
        kind = extra.get("output")
        value = known.get(name)
        if kind is None or value is None or name in skip:
            continue
        flag = _flag(info, name) if source is None else f"{name} (in {source})"
        if kind == "folder":
            ours = (lambda path, field=name: bool(owns(field, path))) if owns is not None else None
            claim_folder(Path(value), kind=cls.__name__, command=command_label(), flag=flag, ours=ours,
                         resume_flag=resume_flag)
            continue
        folder_ok = bool(as_folder(name)) if as_folder is not None else False
        keep = None if appends is not None and appends(name) else resume_flag
        for path in _file_and_beside(config, name, Path(value), extra.get("siblings")):
            claim_file(path, flag=flag, command=command_label(), overwrite=overwrite,
                       overwrite_flag=flags["overwrite"], resume_flag=keep, folder_ok=folder_ok)


def _hook(config: BaseModel | type[BaseModel], name: str) -> Callable[..., Any] | None:
    """A config's optional guard method ``name``; None on a class (its values are not all known yet)."""
    return None if isinstance(config, type) else getattr(config, name, None)


def _file_and_beside(config: BaseModel | type[BaseModel], name: str, path: Path, siblings: Any) -> list[Path]:
    """A file output and what the command writes beside it: its ``siblings`` (suffixes) and the
    config's ``derived_outputs(field)``."""
    derived = _hook(config, "derived_outputs")
    beside = [path.with_suffix(str(s)) for s in siblings] if isinstance(siblings, list) else []
    return [path, *beside, *(derived(name) if derived is not None else [])]


def output(kind: Literal["folder", "file"], **extra: Any) -> dict[str, Any]:
    """``json_schema_extra`` marking a field as an output the shared guard checks:
    ``Field(..., json_schema_extra=output("folder"))``."""
    return {"output": kind, **extra}


def validate_options(config_cls: type[C], values: dict[str, Any]) -> C:
    """``config_cls(**values)``, with a validation failure reported as the options that were wrong.

    Raises:
        AgentWorldError: ``--concurrency: Input should be greater than or equal to 1`` and the like.
    """
    try:
        return config_cls.model_validate(values)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            where = ".".join(str(p) for p in error["loc"])
            flag = _flag(config_cls.model_fields[where], where) if where in config_cls.model_fields else where
            problems.append(f"{flag}: {error['msg']}" if flag else error["msg"])
        raise AgentWorldError("; ".join(problems)) from None
