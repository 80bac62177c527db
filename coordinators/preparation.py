"""From a coordinator definition to a job's fields, and back: load, resolve, check, prepare.

The library the commands and the services share (commands never import services): a stored
job's definition resolved again (`load_resolved`), a submission checked and turned into the
fields of a job (`prepare_coordinator`), values no column holds refused (`check_storable`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import fsspec
from django.conf import settings
from django.db.models import IntegerField
from django.utils import timezone

from coordinators.models import CoordinatorJob
from coordinators.plan import ResolvedCoordinator, resolve_coordinator
from coordinators.sla.evaluate import validate_sla
from kernel import storage, user_tasks
from kernel.application_sources import (
    snapshot_loader,
    submission_loader,
)
from oozie.definitions import DefinitionError, fsspec_loader, parse_coordinator
from oozie.definitions.includes import Loader
from oozie.properties import COORD_APP_PATH
from workflows.actions.celery import check_definition_tasks
from workflows.definitions.loader import load_application
from workflows.definitions.parser import parse_workflow
from workflows.engine import relative_to
from workflows.notifications import check_notification_properties

# Each launcher, and what follows its scheme (coordinators.launchers).
TASK_SCHEME = "task:"  # the one-task shortcut: its task must be one users may run (kernel.user_tasks)
SUPPORTED_LAUNCHERS = {TASK_SCHEME: "<celery task name>", "batch:": "<batch profile>"}
MAX_INTEGER = 2**31 - 1  # IntegerField columns are 32-bit on PostgreSQL
# Job fields taken from the job properties, and what a refusal calls them.
FROM_PROPERTIES = {"configuration": "property", "acl": "oozie.job.acl", "app_path": COORD_APP_PATH}
# Job fields taken from the coordinator XML, and the element or attribute they come from.
XML_ELEMENTS = {
    "app_name": "name", "frequency": "frequency", "timezone": "timezone", "timeout": "timeout",
    "concurrency": "concurrency", "throttle": "throttle", "execution": "execution",
}
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")  # PostgreSQL refuses NUL in text; surrogates are not UTF-8


def include_loader() -> Loader:
    """Includes of stored jobs without a snapshot: only COORD_INCLUDE_PROTOCOLS (no http by default)."""
    return fsspec_loader(allowed_protocols=settings.COORD_INCLUDE_PROTOCOLS)


def load_resolved(job: CoordinatorJob) -> ResolvedCoordinator:
    """The job's definition resolved again from what was stored at submission, includes too (deterministic)."""
    loader = snapshot_loader(job.includes or {}, include_loader)
    app = parse_coordinator(job.definition, f"{job.id}.xml", app_dir=job.app_path or None, loader=loader)
    return resolve_coordinator(
        app, job.configuration, user=job.owner.get_username(),
        processing_timezone=settings.OOZIE_PROCESSING_TIMEZONE,
        max_instances=settings.COORD_MAX_INSTANCES_PER_INPUT,
    )


@dataclass(frozen=True)
class PreparedCoordinator:
    """A coordinator submission that passed every check: its resolved definition and the job's fields."""

    resolved: ResolvedCoordinator
    fields: dict[str, Any]


def workflow_app_path(app_path: str, app_dir: str | None) -> str:
    """A workflow application's path: a relative one is relative to the coordinator's own directory."""

    path = app_path.strip()
    if "${" in path or not app_dir:
        return path  # resolved per action, checked at launch
    return relative_to(path, app_dir)


def check_workflow_application(app_path: str, *, trusted: bool, source: str) -> None:
    """An action's app-path that names a workflow application: it must be readable (under the roots) and valid.

    Its variables are not resolved here: each action's configuration resolves them when it
    starts. An app-path still holding `${...}` (resolved per action) is checked at launch.
    """

    if "${" in app_path:
        return

    mapped = storage.map_uri(app_path)  # a migrated application's URI: the storage it maps to
    protocol = mapped.split("://", 1)[0].lower() if "://" in mapped else "file"
    try:
        if protocol != "file":
            fsspec.core.url_to_fs(storage.map_uri(app_path))  # the storage's implementation is importable (hdfs needs pyarrow)
    except (ImportError, ValueError) as exc:
        raise DefinitionError(
            f"app-path {app_path!r}: {protocol}:// storage is not available on this server ({exc}); "
            "an app-path names a workflow application directory, task:<celery task name> or batch:<batch profile>",
            source=source, element="app-path",
        ) from None
    try:
        xml, _ = load_application(app_path, trusted=trusted)
        source = app_path.rstrip("/") + "/workflow.xml"
        check_definition_tasks(parse_workflow(xml, source=source), source)
    except DefinitionError as exc:
        raise DefinitionError(f"app-path: {exc}", source=source, element="app-path") from None


def prepare_coordinator(
    definition: str | bytes,
    properties: Mapping[str, str],
    *,
    owner: Any,
    app_dir: str | None = None,
    trusted: bool = False,
    includes: Mapping[str, str] | None = None,
) -> PreparedCoordinator:
    """Validate and resolve a coordinator submission without storing anything (DefinitionError if refused).

    `includes`: the `<include>`d files as read earlier (a bundle's snapshot); otherwise they
    are read now, under COORD_APPLICATION_ROOTS unless `trusted`.
    """
    text = definition.decode("utf-8") if isinstance(definition, bytes) else definition
    check_notification_properties(properties)  # stored with the job; `${...}` passes them to actions
    if includes is None:
        loader, included = submission_loader(trusted=trusted)
    else:
        loader, included = snapshot_loader(includes, include_loader), dict(includes)
    app = parse_coordinator(text, "coordinator.xml", app_dir=app_dir, loader=loader)
    resolved = resolve_coordinator(
        app, properties, user=owner.get_username(), processing_timezone=settings.OOZIE_PROCESSING_TIMEZONE,
        max_instances=settings.COORD_MAX_INSTANCES_PER_INPUT,
    )
    validate_sla(resolved, now=timezone.now())
    check_notification_properties(dict(resolved.configuration), source=app.source)  # the action's <configuration>
    scheme = next((s for s in SUPPORTED_LAUNCHERS if resolved.app_path.startswith(s)), None)
    if scheme is not None and not resolved.app_path[len(scheme):].strip():
        raise DefinitionError(
            f"app-path {resolved.app_path!r} names no {SUPPORTED_LAUNCHERS[scheme]} "
            f"(supported: {', '.join(s + what for s, what in SUPPORTED_LAUNCHERS.items())}, "
            "or a workflow application directory)",
            source=app.source, element="app-path",
        )
    if scheme == TASK_SCHEME and "${" not in resolved.app_path:
        reason = user_tasks.refusal(resolved.app_path[len(scheme):])
        if reason:
            raise DefinitionError(f"app-path {resolved.app_path!r}: {reason}", source=app.source, element="app-path")
    if scheme is None:
        check_workflow_application(workflow_app_path(resolved.app_path, app_dir), trusted=trusted, source=app.source)
    fields: dict[str, Any] = {
        "app_name": resolved.name,
        "app_path": app_dir or "",
        "definition": text,
        "includes": included,
        "configuration": dict(properties),
        "acl": properties.get("oozie.job.acl", ""),
        "frequency": str(resolved.frequency.amount if resolved.frequency.cron is None else resolved.frequency.cron),
        "time_unit": resolved.frequency.unit.value,
        "timezone": str(resolved.tz),
        "start_time": resolved.start,
        "end_time": resolved.end,
        "timeout": resolved.timeout,
        "concurrency": resolved.concurrency,
        "execution": resolved.execution,
        "throttle": resolved.throttle,
    }
    check_storable(fields, source=app.source)
    return PreparedCoordinator(resolved=resolved, fields=fields)


def check_storable(fields: Mapping[str, Any], *, source: str) -> None:
    """DefinitionError for a job value no database column holds: too long, beyond 32 bits, NUL or a lone surrogate.

    SQLite would store most of them and PostgreSQL refuse them with a DataError (a 500); the
    refusal names the element or property instead, on every database alike.
    """
    for name, value in fields.items():
        field = CoordinatorJob._meta.get_field(name)
        where = "configuration" if name in FROM_PROPERTIES else source
        element = XML_ELEMENTS.get(name)
        label = FROM_PROPERTIES.get(name) or element or name
        if isinstance(field, IntegerField) and not -MAX_INTEGER <= value <= MAX_INTEGER:
            raise DefinitionError(f"{label} {value} is out of range (at most {MAX_INTEGER})", source=where, element=element)
        pairs: list[tuple[Any, Any]] = list(value.items()) if isinstance(value, dict) else [(None, value)]
        for key, text in pairs:
            if any(isinstance(part, str) and _UNSTORABLE.search(part) for part in (key, text)):
                named = f"{label} {str(key)[:60]!r}" if key is not None else label
                raise DefinitionError(
                    f"{named} contains a NUL character or a lone surrogate", source=where, element=element
                )
        max_length = getattr(field, "max_length", None)
        if isinstance(value, str) and max_length is not None and len(value) > max_length:
            raise DefinitionError(
                f"{label} is {len(value)} characters long; at most {max_length}", source=where, element=element
            )


