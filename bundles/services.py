"""Domain actions on bundle jobs (what views, the CLI and the admin call).

Submission is synchronous and complete or nothing: the bundle XML, every variable, and every
enabled coordinator's application (read now, validated with the bundle's properties under its
own configuration) must pass, or nothing is stored. What was read is stored with the bundle,
so a bundle that starts later submits exactly what was accepted. A relative coordinator
`<app-path>` is relative to the bundle application's directory (as `<include>`s are to their
coordinator's). Verbs are checked here (permission, status) and queued as commands on the
bundle's key, which check again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

import fsspec
from django.db import IntegrityError, transaction
from django.utils import timezone

from bundles.choices import BundleStatus
from bundles.commands import (
    BundleChangeXCommand,
    BundleKillXCommand,
    BundleRerunXCommand,
    BundleResumeXCommand,
    BundleStartXCommand,
    BundleSuspendXCommand,
)
from bundles.commands.change import check_bundle_change
from bundles.commands.control import check_verb
from bundles.commands.rerun import plan_rerun
from bundles.definitions import parse_bundle, resolve_bundle, run_configuration
from bundles.models import JOB_ID_SUFFIX, BundleJob
from coordinators.choices import IllegalTransition
from coordinators.dryrun import mapped
from coordinators.models import CoordinatorAction, next_job_id
from coordinators.plan import iter_action_plans
from coordinators.preparation import check_storable, prepare_coordinator
from kernel.application_sources import check_readable, read_application
from kernel.permissions import check_modify
from kernel.storage import map_uri
from oozie.definitions import DefinitionError
from oozie.properties import BUNDLE_APP_PATH, BUNDLE_EXTERNAL_ID
from workflows.notifications import check_notification_properties
from xcommands.base import XCommand
from xcommands.queue import enqueue

MAX_EXTERNAL_ID = 255


def _coordinator_error(name: str, exc: DefinitionError) -> DefinitionError:
    """A coordinator's refusal, one line, naming the coordinator."""
    reason = " ".join(str(exc.reason).split())
    return DefinitionError(f"coordinator {name!r}: {reason}", source=exc.source, line=exc.line, element=exc.element)


def is_relative(app_path: str) -> bool:
    """A coordinator `<app-path>` with neither a protocol nor a leading slash."""
    return "://" not in app_path and not app_path.startswith("/")


def bundle_directory(app_path: str, *, trusted: bool = False) -> str:
    """The directory a bundle application path names (itself, or the bundle file's parent); '' when unknown.

    Only looked at when a coordinator's `<app-path>` is relative; the path must be readable
    for this caller (DefinitionError otherwise), as the bundle itself was.
    """
    app_path = app_path.strip()
    if not app_path:
        return ""
    opened = check_readable(app_path, BUNDLE_APP_PATH, trusted=trusted)  # mapped (STORAGE_URI_MAP)
    try:
        fs, path = fsspec.core.url_to_fs(opened)
        directory = path.rstrip("/") if fs.isdir(path) else path.rsplit("/", 1)[0]
    except (OSError, ValueError, ImportError):
        return ""
    if "://" in app_path and "://" not in directory:  # a plain path stays one (plain paths are never mapped)
        directory = f"{opened.split('://', 1)[0]}://{directory}"
    return directory


def prepare_bundle(
    definition: str | bytes, properties: Mapping[str, str], *, owner: Any, trusted: bool = False, app_path: str = "",
) -> tuple[Any, dict[str, dict[str, Any]], dict[str, Any]]:
    """Validate a bundle and each enabled coordinator; (resolved bundle, snapshots, per-coordinator prepared).

    `app_path` is where the bundle was read from (default: `oozie.bundle.application.path`):
    relative coordinator app paths are taken from its directory, and the resolved bundle
    returned names them in full.
    """
    text = definition.decode("utf-8") if isinstance(definition, bytes) else definition
    resolved = resolve_bundle(parse_bundle(text, "bundle.xml"), properties)
    check_notification_properties(resolved.properties)  # each coordinator's checked too, below
    if any(is_relative(coordinator.app_path) for coordinator in resolved.coordinators):
        directory = bundle_directory(app_path or properties.get(BUNDLE_APP_PATH, ""), trusted=trusted)
        if directory:
            resolved = dataclasses.replace(resolved, coordinators=tuple(
                dataclasses.replace(c, app_path=f"{directory}/{c.app_path}") if is_relative(c.app_path) else c
                for c in resolved.coordinators
            ))
    snapshots: dict[str, dict[str, Any]] = {}
    prepared: dict[str, Any] = {}
    for coordinator in resolved.enabled:
        try:
            app_text, app_dir = read_application(coordinator.app_path, trusted=trusted)
            configuration = run_configuration(resolved, coordinator, user=owner.get_username())
            prepared[coordinator.name] = prepare_coordinator(
                app_text, configuration, owner=owner, app_dir=app_dir, trusted=trusted
            )
        except DefinitionError as exc:
            raise _coordinator_error(coordinator.name, exc) from None
        snapshots[coordinator.name] = {
            "definition": app_text, "app_dir": app_dir, "app_path": coordinator.app_path,
            "includes": prepared[coordinator.name].fields["includes"],
        }
    return resolved, snapshots, prepared


def submit_bundle(
    definition: str | bytes,
    properties: Mapping[str, str],
    *,
    owner: Any,
    app_path: str = "",
    start: bool = True,
    trusted: bool = False,
    external_id: str = "",
) -> BundleJob:
    """Validate and store a bundle (PREP); queue its start now unless its kick-off time is later or `start` is false.

    With an external id (`oozie.bundle.external.id`), the same owner submitting it again gets
    the bundle stored the first time back, not a second bundle.
    """
    external_id = (external_id or properties.get(BUNDLE_EXTERNAL_ID, "")).strip()
    if len(external_id) > MAX_EXTERNAL_ID:
        raise DefinitionError(f"the external id is longer than {MAX_EXTERNAL_ID} characters", source="configuration")
    if external_id:
        existing = BundleJob.objects.filter(owner=owner, external_id=external_id).first()
        if existing is not None:
            return existing
    text = definition.decode("utf-8") if isinstance(definition, bytes) else definition
    resolved, snapshots, _ = prepare_bundle(text, properties, owner=owner, trusted=trusted, app_path=app_path)
    fields: dict[str, Any] = {
        "app_name": resolved.name,
        "app_path": app_path,
        "definition": text,
        "applications": snapshots,
        "configuration": dict(resolved.properties),
        "acl": properties.get("oozie.job.acl", ""),
        "external_id": external_id,
        "kick_off_time": resolved.kick_off_time,
    }
    check_bundle_storable(fields)
    now = timezone.now()
    starts_now = start and (resolved.kick_off_time is None or resolved.kick_off_time <= now)
    try:
        with transaction.atomic():
            bundle = BundleJob.objects.create(id=next_job_id(JOB_ID_SUFFIX), owner=owner, pending=starts_now, **fields)
            if starts_now:
                enqueue(BundleStartXCommand(bundle_id=bundle.id))
    except IntegrityError:
        if external_id:  # the same external id submitted twice at once: the first one stored wins
            existing = BundleJob.objects.filter(owner=owner, external_id=external_id).first()
            if existing is not None:
                return existing
        raise
    return bundle


def check_bundle_storable(fields: Mapping[str, Any]) -> None:
    """DefinitionError for a bundle value no column holds (too long, NUL, lone surrogate)."""
    for name in ("app_name", "app_path", "acl", "external_id"):
        limit = getattr(BundleJob._meta.get_field(name), "max_length", None) or 0
        value = fields[name]
        if len(value) > limit:
            raise DefinitionError(f"{name} is {len(value)} characters long; at most {limit}", source="bundle.xml")
    check_storable({"configuration": fields["configuration"]}, source="configuration")


def read_bundle(properties: Mapping[str, str], *, trusted: bool = False) -> tuple[str, str]:
    """The bundle XML named by oozie.bundle.application.path (a directory means its bundle.xml), and that path."""
    app_path = properties.get(BUNDLE_APP_PATH, "").strip()
    if not app_path:
        raise DefinitionError(f"{BUNDLE_APP_PATH} is not set", source="configuration")
    text, _ = read_application(
        app_path, trusted=trusted, filename="bundle.xml", what="bundle application", prop=BUNDLE_APP_PATH
    )
    return text, app_path


def submit_bundle_from_properties(
    properties: Mapping[str, str], *, owner: Any, start: bool = True, trusted: bool = False
) -> BundleJob:
    """Submit the bundle named by oozie.bundle.application.path with these properties."""
    text, app_path = read_bundle(properties, trusted=trusted)
    return submit_bundle(text, properties, owner=owner, app_path=app_path, start=start, trusted=trusted)


def dryrun_bundle(
    definition: str | bytes | None,
    properties: Mapping[str, str],
    *,
    owner: Any,
    now: datetime,
    max_actions: int = 10,
    trusted: bool = False,
    app_path: str = "",
) -> dict[str, Any]:
    """What a bundle would start, nothing stored: each coordinator's resolved configuration and first actions.

    With no definition, it is read from oozie.bundle.application.path; `app_path` says where a
    definition given was read from (relative coordinator app paths are taken from there).
    """
    if max_actions < 1:
        raise ValueError("max_actions must be at least 1")
    if definition is None:
        definition, app_path = read_bundle(properties, trusted=trusted)
    resolved, _, prepared = prepare_bundle(definition, properties, owner=owner, trusted=trusted, app_path=app_path)
    coordinators = []
    for coordinator in resolved.coordinators:
        entry: dict[str, Any] = {
            "name": coordinator.name, "app_path": map_uri(coordinator.app_path), "critical": coordinator.critical,
            "enabled": coordinator.enabled,
            "configuration": run_configuration(resolved, coordinator, user=owner.get_username()),
            "actions": [],
        }
        if coordinator.enabled:
            plans = iter_action_plans(prepared[coordinator.name].resolved, now=now, max_actions=max_actions)
            entry["actions"] = mapped([plan.as_json() for plan in plans])  # where the runs read and write (STORAGE_URI_MAP)
        coordinators.append(entry)
    return {
        "name": resolved.name,
        "kick_off_time": resolved.kick_off_time.isoformat() if resolved.kick_off_time else None,
        "coordinators": coordinators,
    }


def _locked(bundle_id: str, actor: Any) -> BundleJob:
    bundle = BundleJob.objects.select_for_update().get(pk=bundle_id)
    check_modify(actor, bundle)
    return bundle


def start_bundle(bundle_id: str, *, actor: Any) -> BundleJob:
    """Queue the start of a PREP bundle now, whatever its kick-off time (a user START)."""
    with transaction.atomic():
        bundle = _locked(bundle_id, actor)
        if bundle.status != BundleStatus.PREP or bundle.pending:
            raise IllegalTransition(f"cannot start bundle job {bundle.id}: it is {bundle.status}")
        bundle.pending = True
        bundle.save(update_fields=["pending"])
        enqueue(BundleStartXCommand(bundle_id=bundle_id), owner_id=actor.pk)  # owner: who asked (status history)
    return bundle


def control_bundle(bundle_id: str, verb: str, *, actor: Any) -> BundleJob:
    """Queue kill, suspend or resume; refused at once when the bundle's status does not allow it."""
    commands: dict[str, Callable[..., XCommand]] = {
        "kill": BundleKillXCommand, "suspend": BundleSuspendXCommand, "resume": BundleResumeXCommand,
    }
    if verb not in commands:
        raise ValueError(f"unknown verb {verb!r}; use {', '.join(commands)}")
    with transaction.atomic():
        bundle = _locked(bundle_id, actor)
        check_verb(bundle.status, verb, bundle.id)
        enqueue(commands[verb](bundle_id=bundle_id), owner_id=actor.pk)
    return bundle


def change_bundle(bundle_id: str, value: str, *, actor: Any) -> BundleJob:
    """Queue a change of endtime and/or pausetime (`endtime=...;pausetime=`); bad values refused at once."""
    with transaction.atomic():
        bundle = _locked(bundle_id, actor)
        check_bundle_change(bundle, value, timezone.now())
        enqueue(BundleChangeXCommand(bundle_id=bundle_id, value=value), owner_id=actor.pk)
    return bundle


def rerun_bundle(
    bundle_id: str,
    *,
    actor: Any,
    coordinators: str | None = None,
    dates: str | None = None,
    refresh: bool = False,
    nocleanup: bool = False,
) -> dict[str, list[CoordinatorAction]]:
    """Queue a rerun of named coordinators (all when absent) in date ranges; the actions that will rerun, by coordinator."""
    with transaction.atomic():
        bundle = _locked(bundle_id, actor)
        plan = plan_rerun(bundle, coordinators, dates)
        enqueue(BundleRerunXCommand(
            bundle_id=bundle_id, coordinators=coordinators or "", dates=dates or "", refresh=refresh, nocleanup=nocleanup,
        ), owner_id=actor.pk)
    return {name: actions for name, (_, actions) in plan.items()}
