"""Site action types: Oozie's custom action executors (DG_CustomActionExecutor) as Python classes.

A site action type is a subclass of `SiteAction` naming its action element (`action_type`),
the XSD of each namespace it accepts (`schemas`) and whether it takes a `<configuration>`;
it turns its element into a spec when a workflow is submitted (`parse`, refusals are
DefinitionError: a 400 or a one-line CLI error, nothing stored) and runs that spec on a
worker (`execute`, an ActionResult). WORKFLOW_ACTION_TYPES registers classes by namespace,
over BUILTIN_ACTION_TYPES (ssh-action 0.1 and 0.2, distcp-action 1.0: built on this same
extension point); a namespace mapped to None is switched off.

A wrong registration is ImproperlyConfigured naming the setting, reported by Django's system
checks (`check_registrations`) when a process starts.

A site action runs like every built-in action: on a worker, under the node's lease (renewed
by the heartbeat thread), its `prepare` first, its log and output captured into the node's
try, its ERROR taking the error transition (user retry applies), a `transient` ERROR launched
again. When the run's lease is lost (the node was killed, or this worker was cut off from the
database for a whole lease and the node may run elsewhere), `kill(spec, context)` is called
once, from a watcher thread, while `execute` still runs; the run then ends ERROR LEASE_LOST.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string
from lxml import etree

from oozie.definitions.errors import DefinitionError
from oozie.definitions.includes import child, children
from oozie.definitions.xmlsafe import local_name, source_line
from workflows.actions.base import FAILED, ActionContext, ActionResult, error

log = logging.getLogger(__name__)

#: The setting that registers site action types: {namespace: "package.module.Class" or None}.
SETTING = "WORKFLOW_ACTION_TYPES"
#: Site action types every service has, built on this extension point (a site may map one to None).
BUILTIN_ACTION_TYPES: dict[str, str | None] = {
    "uri:oozie:ssh-action:0.1": "workflows.actions.ssh.SshAction",
    "uri:oozie:ssh-action:0.2": "workflows.actions.ssh.SshAction",
    "uri:oozie:distcp-action:1.0": "workflows.actions.distcp.DistcpAction",
}
#: Namespaces the service's own schemas own (workflows.definitions.schemas): never a site's.
RESERVED_PREFIXES = (
    "uri:oozie:workflow:", "uri:oozie:shell-action:", "uri:oozie:email-action:", "uri:oozie:celery-action:",
    "uri:oozie:sla:",
)
#: How often a running site action's lease is looked at (the heartbeat thread confirms it).
LEASE_CHECK_SECONDS = 0.5


class SiteAction:
    """An action type a site adds: its element and XSDs, its spec parser, its executor and its kill.

    One instance serves every run in a worker process (threads included): keep per-run state
    keyed by (context.workflow_id, context.node_name), not on `self`.
    """

    #: The action element's local name (`<ssh>`): also the node's type on its pages and in the APIs.
    action_type: str = ""
    #: Namespace -> its XSD file (absolute, or relative to the class's module), for each namespace accepted.
    schemas: Mapping[str, str | Path] = {}
    #: Whether the element's `<configuration>` (with `<global>`'s under it) is given to `execute` in the context.
    configurable: bool = True

    def parse(self, element: etree._Element, *, node: str, source: str) -> dict[str, Any]:
        """The node's spec from its (XSD-valid) element, at submission: JSON values, texts may hold `${...}`.

        Refuse what the XSD cannot say with `refuse(...)` (a DefinitionError). The parser adds
        "configuration" (when configurable) and "prepare" (a `<prepare>` child) itself.
        """
        raise NotImplementedError

    def execute(self, spec: Mapping[str, Any], context: ActionContext) -> ActionResult:
        """Run the node on this worker (its `${...}` evaluated) until it ends: OK, ERROR or FAILED."""
        raise NotImplementedError

    def kill(self, spec: Mapping[str, Any], context: ActionContext) -> None:
        """Stop a running `execute` of this node (called from another thread when the run's lease is lost).

        The default does nothing: an action that only waits briefly may simply finish.
        """


def refuse(element: etree._Element, node: str, source: str, message: str) -> DefinitionError:
    """The submission error of a `parse`: one line naming the node (raise it)."""
    return DefinitionError(f"action node {node!r}: {message}", source=source, line=source_line(element),
                           element=local_name(element))


def child_text(element: etree._Element, name: str) -> str:
    """The text of the element's first child of that local name, stripped ('' when absent)."""
    found = child(element, name)
    return "" if found is None else (found.text or "").strip()


def child_texts(element: etree._Element, name: str) -> list[str]:
    """The texts of every child of that local name, in document order, as written."""
    return [found.text or "" for found in children(element, name)]


def has_child(element: etree._Element, name: str) -> bool:
    """Whether the element has a child of that local name (a flag such as `<capture-output/>`)."""
    return child(element, name) is not None


def _schema_path(cls: type[SiteAction], namespace: str) -> Path:
    """The XSD file of a namespace: as given, or relative to the directory of the class's module."""
    path = Path(cls.schemas[namespace])
    if not path.is_absolute():
        path = Path(sys.modules[cls.__module__].__file__ or ".").parent / path
    return path.resolve()


def _load(namespace: str, dotted: str) -> type[SiteAction]:
    """The class registered for a namespace, checked; ImproperlyConfigured naming the setting."""
    if namespace.startswith(RESERVED_PREFIXES):
        raise ImproperlyConfigured(f"{SETTING}: namespace {namespace!r} belongs to a built-in action or the workflow schema")
    try:
        cls = import_string(dotted)
    except ImportError as exc:
        raise ImproperlyConfigured(f"{SETTING}[{namespace!r}]: cannot import {dotted!r}: {exc}") from None
    if not (isinstance(cls, type) and issubclass(cls, SiteAction)):
        raise ImproperlyConfigured(f"{SETTING}[{namespace!r}]: {dotted!r} is not a subclass of {SiteAction.__module__}.SiteAction")
    if not cls.action_type:
        raise ImproperlyConfigured(f"{SETTING}[{namespace!r}]: {dotted} names no action_type")
    if namespace not in cls.schemas:
        raise ImproperlyConfigured(f"{SETTING}[{namespace!r}]: {dotted}.schemas has no XSD for this namespace")
    if not _schema_path(cls, namespace).is_file():
        raise ImproperlyConfigured(f"{SETTING}[{namespace!r}]: XSD {_schema_path(cls, namespace)} is not a file")
    return cls


def _build(mapping: Mapping[str, str | None]) -> dict[str, SiteAction]:
    instances: dict[type[SiteAction], SiteAction] = {}
    by_type: dict[str, type[SiteAction]] = {}
    by_file: dict[str, Path] = {}
    result: dict[str, SiteAction] = {}
    for namespace, dotted in mapping.items():
        if dotted is None:
            continue
        cls = _load(namespace, dotted)
        other = by_type.setdefault(cls.action_type, cls)
        if other is not cls:
            raise ImproperlyConfigured(
                f"{SETTING}: action type {cls.action_type!r} is registered by both {other.__qualname__} and {cls.__qualname__}"
            )
        path = _schema_path(cls, namespace)
        if by_file.setdefault(path.name, path) != path:
            raise ImproperlyConfigured(f"{SETTING}: two XSD files are named {path.name!r} ({by_file[path.name]}, {path})")
        instance = instances.get(cls)
        if instance is None:
            instance = instances[cls] = cls()
            # The parser and the schema compiler read absolute paths.
            instance.schemas = {ns: _schema_path(cls, ns) for ns in cls.schemas}
        result[namespace] = instance
    return result


_lock = threading.Lock()
_cache: tuple[str, dict[str, SiteAction]] | None = None


def registered() -> dict[str, SiteAction]:
    """Namespace -> the site action type registered for it (BUILTIN_ACTION_TYPES under WORKFLOW_ACTION_TYPES)."""
    global _cache
    site: Mapping[str, str | None] = getattr(settings, SETTING, None) or {}
    if not isinstance(site, Mapping):
        raise ImproperlyConfigured(f"{SETTING} must map namespaces to class paths (or None), not {type(site).__name__}")
    mapping = {**BUILTIN_ACTION_TYPES, **site}
    key = repr(sorted(mapping.items(), key=lambda item: item[0]))
    with _lock:
        if _cache is None or _cache[0] != key:
            _cache = (key, _build(mapping))
        return _cache[1]


def executor(action_type: str) -> SiteAction | None:
    """The registered site action type of that name, or None."""
    return next((ext for ext in registered().values() if ext.action_type == action_type), None)


def run(action: SiteAction, spec: Mapping[str, Any], context: ActionContext) -> ActionResult:
    """Execute a site action, calling its `kill` once if the run's lease is lost meanwhile (then ERROR LEASE_LOST)."""
    from xcommands import heartbeat  # noqa: PLC0415 - it imports the command models; workflows.actions is imported before the app registry is ready (workflows.el)

    done, killed = threading.Event(), threading.Event()

    def watch() -> None:
        while not done.wait(LEASE_CHECK_SECONDS):
            if heartbeat.lost():
                killed.set()
                try:
                    action.kill(spec, context)
                except Exception:  # a kill that fails must not hide the run's end
                    log.exception("%s action [%s]: kill failed", action.action_type, context.node_name)
                return

    watcher = threading.Thread(target=watch, name=f"site-action-kill-{context.node_name}", daemon=True)
    watcher.start()
    try:
        result = action.execute(spec, context)
    finally:
        done.set()
        watcher.join()
    if killed.is_set() and result.status != FAILED and result.error_code != "LEASE_LOST":
        return error(
            "LEASE_LOST", f"{action.action_type} action [{context.node_name}] killed: this worker lost the node's lease "
            "(the node was killed, or the database was out of reach for a whole lease and the node may run elsewhere)",
            external_status="KILLED", external_id=result.external_id,
        )
    return result


def check_registrations(**kwargs: Any) -> list[CheckMessage]:
    """Django system check: WORKFLOW_ACTION_TYPES loads (`manage.py check`, every process's start), else an Error."""
    try:
        registered()
    except ImproperlyConfigured as exc:
        return [Error(str(exc), id="workflows.E001")]
    return []
