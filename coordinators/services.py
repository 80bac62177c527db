"""Domain actions on coordinator jobs (what views, the CLI and the admin call)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from coordinators.choices import IllegalTransition, JobStatus
from coordinators.commands import (
    CoordKillXCommand,
    CoordResumeXCommand,
    CoordStartXCommand,
    CoordSuspendXCommand,
)
from coordinators.commands.actions import wake_waiting_actions
from coordinators.commands.actions_kill import CoordActionsKillXCommand, select_killable
from coordinators.commands.change import CoordChangeXCommand, check_change, parse_change_value
from coordinators.commands.control import check_verb
from coordinators.commands.ignore import (
    CoordActionsIgnoreXCommand,
    CoordIgnoreXCommand,
    check_job_ignorable,
    select_ignorable,
)
from coordinators.commands.rerun import CoordRerunXCommand, check_rerun_job, select_actions
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
from coordinators.dryrun import mapped
from coordinators.models import CoordinatorAction, CoordinatorJob, next_job_id
from coordinators.plan import iter_action_plans, resolve_coordinator
from coordinators.preparation import (
    PreparedCoordinator,
    load_resolved,
    prepare_coordinator,
)
from coordinators.sla.evaluate import validate_sla
from datasets.availability import announce, normalize_uri
from datasets.timeline import format_datetime
from kernel.application_sources import (
    read_application,
    submission_loader,
)
from kernel.permissions import JobPermissionDenied, check_modify, is_admin
from oozie.definitions import DefinitionError, parse_coordinator
from oozie.properties import COORD_APP_PATH
from xcommands.base import XCommand
from xcommands.queue import enqueue


def store_coordinator(
    prepared: PreparedCoordinator,
    *,
    owner: Any,
    start: bool = True,
    job_id: str | None = None,
    **extra: Any,
) -> CoordinatorJob:
    """Store a prepared coordinator (PREP) in the caller's transaction; queue its start unless told not to."""
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


def describe(job: CoordinatorJob) -> str:
    """One line about a job, for logs and the CLI."""
    return f"{job.id} {job.app_name} {job.status} {format_datetime(job.start_time)}..{format_datetime(job.end_time)}"


def control(job_id: str, verb: str, *, actor: Any) -> CoordinatorJob:
    """Queue kill, suspend or resume for a caller allowed to; refused at once when the status does not allow it."""
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
    app_path = properties.get(COORD_APP_PATH, "").strip()
    if not app_path:
        raise DefinitionError(f"{COORD_APP_PATH} is not set", source="configuration")
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
    if definition is None:
        app_path = properties.get(COORD_APP_PATH, "").strip()
        if not app_path:
            raise DefinitionError(f"{COORD_APP_PATH} is not set", source="configuration")
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
    plans = iter_action_plans(resolved, now=now, max_actions=max_actions)
    return {"actions": mapped([plan.as_json() for plan in plans])}  # where the run reads and writes (STORAGE_URI_MAP)


def announce_dataset(uri: str, *, actor: Any) -> dict[str, Any]:
    """Record a dataset instance as available and wake, at once, the waiting actions that need it.

    Only admins and users with the `datasets.add_availableinstance` permission may announce:
    an announcement can start other people's jobs. Returns the URI, whether it was new and
    how many actions were woken.
    """
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
    with transaction.atomic():
        job = CoordinatorJob.objects.select_for_update().get(pk=job_id)
        check_modify(actor, job)
        actions = select_ignorable(job, ignore_type, scope)
        enqueue(CoordActionsIgnoreXCommand(job_id=job_id, ignore_type=ignore_type, scope=scope), owner_id=actor.pk)
    return actions


def kill_actions(job_id: str, *, actor: Any, kill_type: str, scope: str) -> list[CoordinatorAction]:
    """Queue the kill of the live actions named by numbers (`1,3-4`) or dates (`A::B, C`); the job goes on.

    Returns the actions that will be killed (checked now, and again when the command runs:
    what has ended by then is left alone). Raises KillRefused (bad type or scope),
    NothingToKill (the job has ended, or no action of the scope is live), JobPermissionDenied
    or DoesNotExist; nothing is queued then.
    """
    with transaction.atomic():
        job = CoordinatorJob.objects.select_for_update().get(pk=job_id)
        check_modify(actor, job)
        actions = select_killable(job, kill_type, scope)
        enqueue(CoordActionsKillXCommand(job_id=job_id, kill_type=kill_type, scope=scope), owner_id=actor.pk)
    return actions


def ignore_job(job_id: str, *, actor: Any) -> CoordinatorJob:
    """Queue IGNORED for a FAILED or KILLED job with nothing in flight (IgnoreRefused otherwise): its bundle stops counting it."""
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
