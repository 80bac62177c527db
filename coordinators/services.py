"""Domain actions on coordinator jobs (what views, the CLI and the admin call)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import IntegerField
from django.utils import timezone

from coordinators.definitions import DefinitionError, fsspec_loader, parse_coordinator
from coordinators.definitions.includes import Loader
from coordinators.models import CoordinatorAction, CoordinatorJob, next_job_id
from coordinators.plan import ResolvedCoordinator, resolve_coordinator
from coordinators.sla.evaluate import validate_sla
from coordinators.sources import (
    APP_PATH_PROPERTY,
    read_application,
    snapshot_loader,
    submission_loader,
)
from datasets.timeline import format_datetime
from kernel import user_tasks
from kernel.permissions import check_modify
from workflows.actions.celery import check_definition_tasks
from workflows.notifications import check_notification_properties
from xcommands.base import XCommand

# Each launcher, and what follows its scheme (coordinators.launchers).
TASK_SCHEME = "task:"  # the one-task shortcut: its task must be one users may run (kernel.user_tasks)
SUPPORTED_LAUNCHERS = {TASK_SCHEME: "<celery task name>", "batch:": "<batch profile>"}
MAX_INTEGER = 2**31 - 1  # IntegerField columns are 32-bit on PostgreSQL
# Job fields taken from the job properties, and what a refusal calls them.
FROM_PROPERTIES = {"configuration": "property", "acl": "oozie.job.acl", "app_path": APP_PATH_PROPERTY}
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
    from workflows.engine import relative_to

    path = app_path.strip()
    if "${" in path or not app_dir:
        return path  # resolved per action, checked at launch
    return relative_to(path, app_dir)


def check_workflow_application(app_path: str, *, trusted: bool, source: str) -> None:
    """An action's app-path that names a workflow application: it must be readable (under the roots) and valid.

    Its variables are not resolved here: each action's configuration resolves them when it
    starts. An app-path still holding `${...}` (resolved per action) is checked at launch.
    """
    from workflows.definitions.loader import load_application
    from workflows.definitions.parser import parse_workflow

    if "${" in app_path:
        return
    import fsspec

    protocol = app_path.split("://", 1)[0].lower() if "://" in app_path else "file"
    try:
        if protocol != "file":
            fsspec.core.url_to_fs(app_path)  # the storage's implementation is importable (hdfs needs pyarrow)
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


def store_coordinator(
    prepared: PreparedCoordinator,
    *,
    owner: Any,
    start: bool = True,
    job_id: str | None = None,
    **extra: Any,
) -> CoordinatorJob:
    """Store a prepared coordinator (PREP) in the caller's transaction; queue its start unless told not to."""
    from coordinators.commands import CoordStartXCommand
    from xcommands.queue import enqueue

    with transaction.atomic():
        job = CoordinatorJob.objects.create(id=job_id or next_job_id(), owner=owner, **prepared.fields, **extra)
        if start:
            job.pending = True
            job.save(update_fields=["pending"])
            enqueue(CoordStartXCommand(job_id=job.id), owner_id=owner.pk)  # owner: who asked (status history)
    return job


def submit_coordinator(
    definition: str | bytes,
    properties: Mapping[str, str],
    *,
    owner: Any,
    app_dir: str | None = None,
    start: bool = True,
    trusted: bool = False,
) -> CoordinatorJob:
    """Validate, resolve and store a coordinator job (PREP); queue its start unless told not to.

    The owner is the authenticated caller, never `user.name` from the properties. A
    definition that does not resolve, or whose action would need an unsupported launcher,
    is refused with a DefinitionError and nothing is stored.
    """
    prepared = prepare_coordinator(definition, properties, owner=owner, app_dir=app_dir, trusted=trusted)
    return store_coordinator(prepared, owner=owner, start=start)


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


def describe(job: CoordinatorJob) -> str:
    """One line about a job, for logs and the CLI."""
    return f"{job.id} {job.app_name} {job.status} {format_datetime(job.start_time)}..{format_datetime(job.end_time)}"


def control(job_id: str, verb: str, *, actor: Any) -> CoordinatorJob:
    """Queue kill, suspend or resume for a caller allowed to; refused at once when the status does not allow it."""
    from coordinators.commands import CoordKillXCommand, CoordResumeXCommand, CoordSuspendXCommand
    from coordinators.commands.control import check_verb
    from xcommands.queue import enqueue

    commands: dict[str, Callable[..., XCommand]] = {
        "kill": CoordKillXCommand, "suspend": CoordSuspendXCommand, "resume": CoordResumeXCommand,
    }
    if verb not in commands:
        raise ValueError(f"unknown verb {verb!r}; use {', '.join(commands)}")
    with transaction.atomic():
        job = CoordinatorJob.objects.select_for_update().get(pk=job_id)
        check_modify(actor, job)
        check_verb(job, verb)
        enqueue(commands[verb](job_id=job_id), owner_id=actor.pk)
    return job


def start_job(job_id: str, *, actor: Any) -> CoordinatorJob:
    """Queue the start of a job submitted without starting it (PREP), for a caller allowed to."""
    from coordinators.choices import IllegalTransition, JobStatus
    from coordinators.commands import CoordStartXCommand
    from xcommands.queue import enqueue

    with transaction.atomic():
        job = CoordinatorJob.objects.select_for_update().get(pk=job_id)
        check_modify(actor, job)
        if job.status != JobStatus.PREP or job.pending:
            raise IllegalTransition(f"cannot start coordinator job {job.id}: it is {job.status}")
        job.pending = True
        job.save(update_fields=["pending"])
        enqueue(CoordStartXCommand(job_id=job_id), owner_id=actor.pk)
    return job


def change_job(job_id: str, value: str, *, actor: Any) -> CoordinatorJob:
    """Queue a change of endtime, concurrency, pausetime or status; invalid values are refused at once.

    `value` is Oozie's `endtime=2011-12-01T05:00Z;concurrency=100;pausetime=` form. Raises
    ChangeRefused (bad value), IllegalTransition, JobPermissionDenied or DoesNotExist.
    """
    from coordinators.commands.change import CoordChangeXCommand, check_change, parse_change_value
    from xcommands.queue import enqueue

    options = parse_change_value(value)
    with transaction.atomic():
        job = CoordinatorJob.objects.select_for_update().get(pk=job_id)
        check_modify(actor, job)
        check_change(job, options, timezone.now())
        enqueue(CoordChangeXCommand(job_id=job_id, value=value), owner_id=actor.pk)
    return job


def rerun_job(
    job_id: str,
    *,
    actor: Any,
    rerun_type: str,
    scope: str,
    refresh: bool = False,
    nocleanup: bool = False,
    failed: bool = False,
) -> list[CoordinatorAction]:
    """Queue a rerun of finished actions named by number ranges (`1,3-4`) or dates (`a::b, c`).

    Returns the actions that will rerun (checked now, and again when the command runs).
    Raises RerunRefused, IllegalTransition, JobPermissionDenied or DoesNotExist.
    """
    from coordinators.commands.rerun import CoordRerunXCommand, check_rerun_job, select_actions
    from xcommands.queue import enqueue

    with transaction.atomic():
        job = CoordinatorJob.objects.select_for_update().get(pk=job_id)
        check_modify(actor, job)
        check_rerun_job(job)
        actions = select_actions(job, rerun_type, scope, failed=failed)
        enqueue(
            CoordRerunXCommand(
                job_id=job_id, rerun_type=rerun_type, scope=scope, refresh=refresh, nocleanup=nocleanup, failed=failed
            ),
            owner_id=actor.pk,
        )
    return actions


def submit_from_properties(properties: Mapping[str, str], *, owner: Any, start: bool = True) -> CoordinatorJob:
    """Submit the application named by oozie.coord.application.path with these properties."""
    app_path = properties.get(APP_PATH_PROPERTY, "").strip()
    if not app_path:
        raise DefinitionError(f"{APP_PATH_PROPERTY} is not set", source="configuration")
    text, app_dir = read_application(app_path)
    return submit_coordinator(text, properties, owner=owner, app_dir=app_dir, start=start)


def dryrun_submission(
    definition: str | bytes | None,
    properties: Mapping[str, str],
    *,
    owner: Any,
    app_dir: str | None = None,
    now: datetime,
    max_actions: int = 1000,
) -> dict[str, Any]:
    """What a submission would create, in the dry-run JSON shape; nothing is stored or checked on storage.

    With no definition, it is read from oozie.coord.application.path.
    """
    from coordinators.plan import iter_action_plans

    if definition is None:
        app_path = properties.get(APP_PATH_PROPERTY, "").strip()
        if not app_path:
            raise DefinitionError(f"{APP_PATH_PROPERTY} is not set", source="configuration")
        definition, app_dir = read_application(app_path)
    text = definition.decode("utf-8") if isinstance(definition, bytes) else definition
    app = parse_coordinator(text, "coordinator.xml", app_dir=app_dir, loader=submission_loader()[0])
    resolved = resolve_coordinator(
        app, properties, user=owner.get_username(), processing_timezone=settings.OOZIE_PROCESSING_TIMEZONE,
        max_instances=settings.COORD_MAX_INSTANCES_PER_INPUT,
    )
    validate_sla(resolved, now=now)
    if max_actions < 1:
        raise ValueError("max_actions must be at least 1")
    return {"actions": [plan.as_json() for plan in iter_action_plans(resolved, now=now, max_actions=max_actions)]}


def announce_dataset(uri: str, *, actor: Any) -> dict[str, Any]:
    """Record a dataset instance as available and wake, at once, the waiting actions that need it.

    Only admins and users with the `datasets.add_availableinstance` permission may announce:
    an announcement can start other people's jobs. Returns the URI, whether it was new and
    how many actions were woken.
    """
    from coordinators.commands.actions import wake_waiting_actions
    from datasets.availability import announce, normalize_uri
    from kernel.permissions import JobPermissionDenied, is_admin

    if not (is_admin(actor) or actor.has_perm("datasets.add_availableinstance")):
        raise JobPermissionDenied(f"user {actor.get_username()!r} may not announce dataset instances")
    uri = normalize_uri(uri)
    if not uri or len(uri) > 4096 or any(ch in uri for ch in "\r\n\0"):
        raise ValueError("uri must be 1 to 4096 characters on one line")
    now = timezone.now()
    with transaction.atomic():
        new = announce(uri, now, user_id=actor.pk)
        woken = wake_waiting_actions([uri], now)  # the same path as a succeeded action's outputs
    return {"uri": uri, "new": new, "actions_woken": woken}


def ignore_actions(job_id: str, *, actor: Any, ignore_type: str, scope: str) -> list[CoordinatorAction]:
    """Queue IGNORED for the FAILED, KILLED or TIMEDOUT actions named by numbers (`1,3-4`) or dates (`A::B, C`).

    Returns the actions that will be ignored (checked now, and again when the command runs).
    Raises IgnoreRefused (bad scope, nothing eligible, or an action in another state: then
    nothing is ignored), JobPermissionDenied or DoesNotExist.
    """
    from coordinators.commands.ignore import CoordActionsIgnoreXCommand, select_ignorable
    from xcommands.queue import enqueue

    with transaction.atomic():
        job = CoordinatorJob.objects.select_for_update().get(pk=job_id)
        check_modify(actor, job)
        actions = select_ignorable(job, ignore_type, scope)
        enqueue(CoordActionsIgnoreXCommand(job_id=job_id, ignore_type=ignore_type, scope=scope), owner_id=actor.pk)
    return actions


def ignore_job(job_id: str, *, actor: Any) -> CoordinatorJob:
    """Queue IGNORED for a FAILED or KILLED job with nothing in flight (IgnoreRefused otherwise): its bundle stops counting it."""
    from coordinators.commands.ignore import CoordIgnoreXCommand, check_job_ignorable
    from xcommands.queue import enqueue

    with transaction.atomic():
        job = CoordinatorJob.objects.select_for_update().get(pk=job_id)
        check_modify(actor, job)
        check_job_ignorable(job)
        enqueue(CoordIgnoreXCommand(job_id=job_id), owner_id=actor.pk)
    return job


@dataclass(frozen=True)
class UpdatePlan:
    """An update as checked: Oozie's diff text, the job values it writes, and whether it was queued."""

    diff: str
    values: dict[str, Any]
    queued: bool


def update_job(
    job_id: str,
    *,
    actor: Any,
    configuration: Mapping[str, str] | None = None,
    dryrun: bool = False,
    trusted: bool = False,
) -> UpdatePlan:
    """Read the job's definition again (from its app path, or the one `configuration` names), validate it, and queue it.

    `configuration`: new job properties replacing the old ones (None or empty: keep them).
    With `dryrun` nothing is queued; the diff is the same. Raises UpdateRefused (finished job,
    a change of name, frequency, start, end or time zone), DefinitionError (the definition or
    configuration does not validate), JobPermissionDenied or DoesNotExist; nothing changes then.
    """
    from coordinators.commands.update import (
        CoordUpdateXCommand,
        application_source,
        check_unchanged,
        check_updatable,
        check_waiting_inputs,
        fingerprint,
        update_configuration,
        update_diff,
    )
    from xcommands.queue import enqueue

    with transaction.atomic():
        job = CoordinatorJob.objects.select_for_update().select_related("owner").get(pk=job_id)
        check_modify(actor, job)
        check_updatable(job)
        new_conf = update_configuration(job, configuration)
        text, app_dir = read_application(application_source(job, new_conf), trusted=trusted)
        prepared = prepare_coordinator(text, new_conf, owner=job.owner, app_dir=app_dir, trusted=trusted)
        old = load_resolved(job)
        check_unchanged(job, old, prepared.resolved)
        check_waiting_inputs(job, old, prepared.resolved)
        changed = bool(configuration)
        names = ["definition", "includes", "app_path", "timeout", "concurrency", "execution", "throttle"]
        names += ["configuration", "acl"] if changed else []
        values = {name: prepared.fields[name] for name in names}
        diff = update_diff(job.definition, text, job.configuration if changed else None, new_conf if changed else None)
        if not dryrun:
            enqueue(CoordUpdateXCommand(job_id=job_id, expected=fingerprint(job), values=values), owner_id=actor.pk)
    return UpdatePlan(diff=diff, values=values, queued=not dryrun)
