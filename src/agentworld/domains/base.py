"""The one protocol every domain package implements (issue 10: a domain is one package).

A domain lives in ``agentworld/domains/<name>/``; its ``__init__`` defines ``PLUGIN``, a
:class:`DomainPlugin`. Code outside ``domains/`` asks the plugin instead of branching on the
domain's name. The plugin must stay cheap to import (the CLI's start-up time counts): heavy parts —
a real environment, a recorder, its routing rules — are named by a *reference*
(``"package.module:attribute"``) and imported only when used (:func:`resolve`).

A prompt-only domain (android, os) is a few lines: a name, a display name, and the defaults.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from agentworld.domains.error_patterns import COMMON_ERRORS
from agentworld.errors import AgentWorldError

if TYPE_CHECKING:
    from pydantic import BaseModel

Route = Literal["real", "model"]

GENERIC_EFFECT = "The environment returns the resulting state, consistent with the history."


@dataclass(frozen=True)
class RouteDecision:
    """A routing decision, its reason, and whether a *model* step may change the world.

    After a model-predicted step with ``side_effects`` the real environment no longer matches the
    episode, so every later step stays with the model.
    """

    route: Route
    reason: str
    side_effects: bool = True
    follow: bool = False
    """The action belongs to the previous step (a bare key, a wait): it goes where that step went."""


@runtime_checkable
class RealEnvironment(Protocol):
    """A real environment one episode drives (recorders and sim-to-real routing use it).

    Actions and observations are text exactly as an AgentWorldBench row holds them for the domain
    (the row's ``action`` and its observation without the ``[Environment Response]`` marker), so what
    the recorder writes and what the router returns are the same thing.
    """

    def initial_observation(self) -> str: ...
    def step(self, action: str) -> str: ...
    def close(self) -> None: ...


@dataclass(frozen=True)
class RecorderCommand:
    """``agentworld record <domain>``: its options (a typed config the CLI is generated from) and run.

    The module defining it is imported when ``agentworld record`` runs, so it imports only the options'
    light dependencies at module level and the recorder itself inside ``run``.

    Attributes:
        options: pydantic config; each field becomes an option
            (:func:`agentworld.cli_support.config_command`).
        run: called with the validated options (and the ``arguments``' values as keywords).
        help: the command's help (default: the options' docstring).
        arguments: command-line parameters that are not options, ``name: (annotation, typer.Argument(...))``
            (``agentworld record mcp -- SERVER COMMAND``).
    """

    options: type[BaseModel]
    run: Callable[..., None]
    help: str = ""
    arguments: dict[str, tuple[Any, Any]] | None = None


@dataclass(frozen=True)
class DomainPlugin:
    """What is specific to one domain. Every field but ``name`` and ``display`` has a default.

    Attributes:
        name: registry key, the last part of a sample's ``task``.
        display: name for tables and reports.
        action_word: what the derived SFT reasoning trace calls an action (``command`` for shells).
        effect: the derived trace's sentence on what an action's observation shows.
        rules: reference to the domain's :class:`agentworld.domains.rules.DomainRules` (None: generic).
        retrieval_keys: reference to its :class:`~agentworld.domains.retrieval_keys.RetrievalKeys`
            (None: tool-call keys).
        environment: reference to a factory ``(seed: int, **options) -> RealEnvironment`` (None: no
            real environment; the domain is simulated only).
        routing: reference to ``decide(action: str) -> RouteDecision`` (None with an environment: every
            step may run for real and none is safe to imagine; without one: always the model).
        recorder: reference to a :class:`RecorderCommand` (``agentworld record <name>``).
        corpus: package-data file of recorded rows shipped with the domain (``corpus.jsonl``), if any.
        heldout_scenarios: package-data file of scenarios kept out of the corpus, in the form the
            domain's recorder reads (``scenarios/heldout.jsonl``): what ``agentworld demo`` records fresh.
        real_note: one line on why there is no real environment, for docs and ``--route real`` errors.
        actions: reference to a :class:`agentworld.domains.hooks.DomainActions` — how the simulator
            parses, renders and shows actions, the initial observation, extra system-prompt sections,
            the shell's typed lines and the rollout agent's action format (None: free-text actions).
        ledger: reference to a factory ``(spec: WorldSpec | None) -> Ledger``
            (:mod:`agentworld.domains.ledger`; None: a ledger that knows nothing).
        faults: reference to ``render_fault(fault: InjectedFault, parsed: ParsedAction,
            screens: Sequence[str]) -> str``, an injected error fault shown without a model;
            ``screens`` are the episode's observations so far, oldest first (None: a generic error
            text, :func:`agentworld.domains.hooks.generic_fault`).
        error_patterns: regular expressions (``re.M``) that mark an observation as a failure; the data
            pipeline's retry detection and loss masking read them (:func:`failures.is_error`).
            Default: the ones any domain can show (:mod:`agentworld.domains.error_patterns`'s
            ``COMMON_ERRORS``); a domain adds its own to them (shells: ``COMMON_ERRORS + SHELL_ERRORS``)
            or leaves out one its observations match when nothing failed.
        probes: reference to ``generate(seed: int, variants: int) -> list[Probe]``
            (:mod:`agentworld.domains.probes`): the domain's rule-checked probes for ``agentworld eval
            probes`` (None: the domain has none).
        prediction_tasks: reference to ``() -> Iterable[dict]``: tasks (``id``, ``setup``, ``steps``)
            whose steps ``agentworld eval agent-predictions`` runs for real (None: none built in).
        plan_tasks: reference to a :class:`agentworld.domains.plan_tasks.PlanSuite`: tasks whose
            obvious action fails for real, which the planner benchmark runs (None: none).
        gui: observations are screens of a graphical UI (accessibility trees): a screen unchanged after
            an action usually means the UI had not caught up, so the data pipeline drops such turns
            (:func:`agentworld.data.process.drop_no_change`); elsewhere an unchanged screen is information.
        package: the package holding ``prompts/system_prompt.txt``, ``prompts/judge_system_prompt.txt``
            and the data files (default: the package whose ``PLUGIN`` it is; ``agentworld.domains.<name>``
            for one given to :func:`register_domain` without it).
    """

    name: str
    display: str
    action_word: str = "action"
    effect: str = GENERIC_EFFECT
    rules: str | None = None
    retrieval_keys: str | None = None
    environment: str | None = None
    routing: str | None = None
    recorder: str | None = None
    corpus: str | None = None
    heldout_scenarios: str | None = None
    real_note: str = ""
    actions: str | None = None
    ledger: str | None = None
    faults: str | None = None
    error_patterns: tuple[str, ...] = COMMON_ERRORS
    probes: str | None = None
    prediction_tasks: str | None = None
    plan_tasks: str | None = None
    gui: bool = False
    pip_extra: str | None = None
    """The agentworld extra its real environment needs (``pip install 'agentworld[<extra>]'``): a run
    that finds one of its modules missing names it instead of failing with ``ModuleNotFoundError``."""
    extra: dict[str, str] | None = None
    """Further references a domain exposes beyond the fields above."""
    package: str = ""
    """The package that defines ``PLUGIN`` (set by :func:`plugins`): ``prompts/``, ``corpus`` and
    ``heldout_scenarios`` are files inside it."""

    def data_file(self, relative: str | None) -> Path | None:
        """A package-data file of this domain (``corpus``, ``heldout_scenarios``), when it exists."""
        if not relative or not self.package:
            return None
        from importlib import resources

        path = Path(str(resources.files(self.package).joinpath(relative)))
        return path if path.is_file() else None


def resolve(reference: str) -> Any:
    """Import ``"package.module:attribute"`` and return the attribute (the lazy half of a plugin)."""
    module, _, attribute = reference.partition(":")
    value: Any = importlib.import_module(module)
    for part in attribute.split(".") if attribute else ():
        value = getattr(value, part)
    return value


_EXTRA: dict[str, DomainPlugin] = {}
_FOUND: dict[str, dict[str, DomainPlugin]] = {}
"""Discovered plugins per value of ``AGENTWORLD_DOMAIN_PACKAGES`` (discovery imports and lists packages)."""


def register_domain(plugin: DomainPlugin) -> DomainPlugin:
    """Add a domain defined outside ``agentworld/domains/`` (a test's example domain, a user's package).

    Packages named in the environment variable ``AGENTWORLD_DOMAIN_PACKAGES`` (comma-separated) are
    imported by :func:`plugins`, so a CLI subprocess sees them too; their ``PLUGIN`` is registered.
    A registered plugin replaces a discovered one of the same name. Without ``package``, the plugin's
    package is the module whose ``PLUGIN`` it is.
    """
    if not plugin.package:
        import sys

        home = next((name for name, module in list(sys.modules.items())
                     if getattr(module, "PLUGIN", None) is plugin), f"agentworld.domains.{plugin.name}")
        plugin = replace(plugin, package=home)
    _EXTRA[plugin.name] = plugin
    return plugin


def unregister_domain(name: str) -> None:
    """Drop a domain added with :func:`register_domain` (tests clean up after themselves)."""
    _EXTRA.pop(name, None)


def _discover(extra_packages: str) -> dict[str, DomainPlugin]:
    import pkgutil

    import agentworld.domains as package

    found: dict[str, DomainPlugin] = {}
    names = [f"agentworld.domains.{m.name}" for m in pkgutil.iter_modules(package.__path__) if m.ispkg]
    names += [n.strip() for n in extra_packages.split(",") if n.strip()]
    for name in names:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name is None or not name.startswith(exc.name):
                raise
            raise AgentWorldError(f"AGENTWORLD_DOMAIN_PACKAGES names {name!r}, which is not importable "
                                  f"(no module {exc.name!r})") from None
        plugin = getattr(module, "PLUGIN", None)
        if isinstance(plugin, DomainPlugin):
            found[plugin.name] = plugin if plugin.package else replace(plugin, package=name)
    return found


def plugins() -> dict[str, DomainPlugin]:
    """Every domain: packages under ``agentworld/domains/`` that define ``PLUGIN``, then registered ones."""
    extra_packages = os.environ.get("AGENTWORLD_DOMAIN_PACKAGES", "")
    if extra_packages not in _FOUND:
        _FOUND[extra_packages] = _discover(extra_packages)
    return {**_FOUND[extra_packages], **_EXTRA}


def plugin(name: str) -> DomainPlugin | None:
    """The plugin of domain ``name`` (None when no package defines one)."""
    return plugins().get(name)


def plugin_of(domain: str | DomainPlugin) -> DomainPlugin:
    """The plugin of ``domain``: the one lookup every accessor (rules, actions, ledger …) goes through.

    A plugin is returned as it is, so a caller that holds one never has it looked up again by name. A
    name no package defines gets a bare plugin, every field its default (generic rules, free-text
    actions, the common error patterns, no real environment), so no caller checks for None; use
    :func:`plugin` to ask whether a domain is registered.

    >>> plugin_of("no-such-domain").rules is None and plugin_of("no-such-domain").display
    'no-such-domain'
    """
    if isinstance(domain, DomainPlugin):
        return domain
    return plugins().get(domain) or DomainPlugin(name=domain, display=domain)
