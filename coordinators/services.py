"""Domain actions on coordinator jobs (what views, the CLI and the admin call)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from django.conf import settings
from django.db import transaction

from coordinators.definitions import DefinitionError, fsspec_loader, parse_coordinator
from coordinators.definitions.includes import Loader
from coordinators.models import CoordinatorJob, next_job_id
from coordinators.permissions import check_modify
from coordinators.plan import ResolvedCoordinator, resolve_coordinator
from datasets.timeline import format_datetime
from xcommands.base import XCommand

SUPPORTED_LAUNCHERS = ("task:",)


def include_loader() -> Loader:
    """How submissions may read <include>d dataset files: only COORD_INCLUDE_PROTOCOLS (no http by default)."""
    return fsspec_loader(allowed_protocols=settings.COORD_INCLUDE_PROTOCOLS)


def load_resolved(job: CoordinatorJob) -> ResolvedCoordinator:
    """The job's definition resolved again from what was stored at submission (deterministic)."""
    app = parse_coordinator(job.definition, f"{job.id}.xml", app_dir=job.app_path or None, loader=include_loader())
    return resolve_coordinator(
        app, job.configuration, user=job.owner.get_username(),
        processing_timezone=settings.OOZIE_PROCESSING_TIMEZONE,
    )


def submit_coordinator(
    definition: str | bytes,
    properties: Mapping[str, str],
    *,
    owner: Any,
    app_dir: str | None = None,
    start: bool = True,
) -> CoordinatorJob:
    """Validate, resolve and store a coordinator job (PREP); queue its start unless told not to.

    The owner is the authenticated caller, never `user.name` from the properties. A
    definition that does not resolve, or whose action would need an unsupported launcher,
    is refused with a DefinitionError and nothing is stored.
    """
    from coordinators.commands import CoordStartXCommand
    from xcommands.queue import enqueue

    text = definition.decode("utf-8") if isinstance(definition, bytes) else definition
    app = parse_coordinator(text, "coordinator.xml", app_dir=app_dir, loader=include_loader())
    resolved = resolve_coordinator(
        app, properties, user=owner.get_username(), processing_timezone=settings.OOZIE_PROCESSING_TIMEZONE
    )
    if not resolved.app_path.startswith(SUPPORTED_LAUNCHERS):
        raise DefinitionError(
            f"app-path {resolved.app_path!r} needs a launcher this service does not have "
            f"(supported: {', '.join(SUPPORTED_LAUNCHERS)}<celery task name>)",
            source=app.source, element="app-path",
        )
    with transaction.atomic():
        job = CoordinatorJob.objects.create(
            id=next_job_id(),
            app_name=resolved.name,
            app_path=app_dir or "",
            definition=text,
            configuration=dict(properties),
            owner=owner,
            acl=properties.get("oozie.job.acl", ""),
            frequency=str(resolved.frequency.amount if resolved.frequency.cron is None else resolved.frequency.cron),
            time_unit=resolved.frequency.unit.value,
            timezone=str(resolved.tz),
            start_time=resolved.start,
            end_time=resolved.end,
            timeout=resolved.timeout,
            concurrency=resolved.concurrency,
            execution=resolved.execution,
            throttle=resolved.throttle,
        )
        if start:
            job.pending = True
            job.save(update_fields=["pending"])
            enqueue(CoordStartXCommand(job_id=job.id))
    return job


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
        enqueue(commands[verb](job_id=job_id))
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
        enqueue(CoordStartXCommand(job_id=job_id))
    return job
