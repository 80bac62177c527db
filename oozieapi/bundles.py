"""Bundle jobs on the Oozie Web Services API: list, show, submission and verbs, on `bundles.services`.

The job views hand over a `-B` id, `jobtype=bundle`, or a submission naming
`oozie.bundle.application.path` (as Oozie's V1JobServlet/V1JobsServlet route by id suffix and
path property). Refusals carry the codes Oozie's bundle commands use: E0504/E0505 no bundle
application there, E1301 unreadable bundle application, E0738 parameters without a value, E1304
duplicate coordinator name, E1310 any other submission error, E1317 a bad change value, E1313 a
change of a KILLED bundle, E1018 a rerun that cannot be done. Start, suspend, resume or kill in a
status where Oozie's command skips (a RUNNING bundle started or resumed, an ended one suspended or
killed) answer 200 and change nothing, as Oozie does; other illegal ones E1100, E1312, E1323.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import tzinfo
from typing import Any

from django.db.models import QuerySet
from django.http import HttpResponse
from django.utils import timezone

from bundles import services
from bundles.choices import BundleStatus
from bundles.definitions import DuplicateCoordinatorError
from bundles.dryrun import as_text
from bundles.models import BundleAction, BundleJob
from coordinators.choices import IllegalTransition
from coordinators.commands.change import ChangeRefused
from kernel.permissions import readable_jobs
from oozie.definitions import (
    ApplicationNotFoundError,
    DefinitionError,
    MissingParameterError,
)
from oozie.properties import BUNDLE_EXTERNAL_ID
from oozieapi.errors import OozieError, application_error, bad_parameter, document_error, is_no_op
from oozieapi.filters import bool_parameter, filter_jobs
from oozieapi.formats import action_json, bundle_json, json_response

RERUN_ACTIONS = ("rerun", "bundle-rerun", "coord-rerun")  # Oozie routes every rerun of a -B id to the bundle's
BUNDLE_STATUSES = tuple(BundleStatus.values)


# ---- reads -----------------------------------------------------------------------------------


def list_bundles(caller: Any, text: str, *, offset: int, length: int, zone: tzinfo) -> dict[str, Any]:
    """`jobs?jobtype=bundle`: the readable bundles matching Oozie's jobs filter, a page of them (offset from 1)."""
    queryset: QuerySet[BundleJob] = BundleJob.objects.select_related("owner").defer(
        "definition", "applications", "configuration",
    )
    queryset = filter_jobs(readable_jobs(queryset, caller), text, timezone.now(), statuses=BUNDLE_STATUSES)
    total = queryset.count()
    page = queryset[offset - 1:offset - 1 + length] if length else []
    jobs = [bundle_json(bundle, zone=zone, with_conf=False) for bundle in page]
    return {"total": total, "offset": offset, "len": length, "bundlejobs": jobs}


def show(bundle: BundleJob, show: str, zone: tzinfo) -> HttpResponse:
    """show=info (with its coordinators' jobs), definition or status (the log is the job view's)."""
    if show == "info":
        actions = (
            BundleAction.objects.filter(bundle_id=bundle.pk, coord_job__isnull=False)
            .select_related("coord_job__owner").defer("coord_job__definition", "coord_job__includes")
            .order_by("coord_name")
        )
        coordinators = [action.coord_job for action in actions if action.coord_job is not None]
        return json_response(bundle_json(bundle, coordinators, zone=zone))
    if show == "definition":
        return HttpResponse(bundle.definition, content_type="application/xml;charset=UTF-8")
    if show == "status":
        return json_response({"status": bundle.status})
    raise bad_parameter("show", show)


# ---- submission ------------------------------------------------------------------------------


def submission_error(exc: DefinitionError) -> OozieError:
    """A refused bundle submission as Oozie words it: XML errors E0700/E0701, E1304, E1004, else E1310."""
    text = str(exc)
    if (document := document_error(exc)) is not None:
        return document
    if isinstance(exc, DuplicateCoordinatorError):
        return OozieError(400, "E1304", text)
    if isinstance(exc, MissingParameterError):
        return application_error(exc)
    if "unresolved variable" in text and not text.startswith("coordinator '"):
        return OozieError(400, "E1004", text)
    return OozieError(400, "E1310", text)  # a coordinator's refusal names it ("coordinator 'daily': ...")


def submit(properties: Mapping[str, str], caller: Any, action: str) -> HttpResponse:
    """201 {"id"} (action=start starts it now, or at a later kick-off time); action=dryrun: 200 {"id": <XML and plan>, ...}.

    Without action=start the bundle stays PREP until `start` or its kick-off time. A submission
    carrying an `oozie.bundle.external.id` already used by the caller answers that bundle's id.
    """
    external_id = properties.get(BUNDLE_EXTERNAL_ID, "").strip()
    if external_id and action != "dryrun":  # a retry: the bundle stored the first time, even if its files changed since
        stored = BundleJob.objects.filter(owner_id=caller.pk, external_id=external_id).values_list("pk", flat=True).first()
        if stored is not None:
            return json_response({"id": stored}, status=201)
    try:
        definition, app_path = services.read_bundle(properties)
    except ApplicationNotFoundError as exc:
        raise application_error(exc) from None
    except DefinitionError as exc:
        raise OozieError(400, "E1301", str(exc)) from None
    try:
        if action == "dryrun":
            result = services.dryrun_bundle(definition, properties, owner=caller, now=timezone.now())
            # Oozie answers the bundle XML (its CLI looks for `<bundle-app` to print it as a bundle); the plan follows.
            return json_response({"id": f"{definition.rstrip()}\n{as_text(result)}", **result})
        bundle = services.submit_bundle(definition, properties, owner=caller, app_path=app_path, start=action == "start")
    except DefinitionError as exc:
        raise submission_error(exc) from None
    return json_response({"id": bundle.id}, status=201)


# ---- verbs -----------------------------------------------------------------------------------


def _status_of(bundle_id: str) -> str:
    return BundleJob.objects.filter(pk=bundle_id).values_list("status", flat=True).first() or "-"


def verb_error(exc: ValueError, verb: str, bundle_id: str, value: str = "") -> OozieError:
    """An illegal transition or a refused change or rerun, with Oozie's bundle codes."""
    if verb == "change" and not isinstance(exc, IllegalTransition):
        return OozieError(400, "E1317", value, str(exc))
    if verb == "rerun" and not isinstance(exc, IllegalTransition):
        return OozieError(400, "E1018", str(exc))
    if verb == "kill":
        return OozieError(400, "E1323", bundle_id)
    if verb == "suspend":
        return OozieError(400, "E1312", bundle_id, _status_of(bundle_id))
    if verb == "change":
        return OozieError(400, "E1313", bundle_id, _status_of(bundle_id))
    return OozieError(400, "E1100", str(exc))  # start, resume, rerun of a bundle in the wrong status


def put(job_id: str, caller: Any, params: Mapping[str, str]) -> HttpResponse:
    """PUT job/<-B id>?action=start|suspend|resume|kill|change|rerun: 200 (rerun: the actions queued, by coordinator)."""
    action = params.get("action") or ""
    verb = "rerun" if action in RERUN_ACTIONS else action
    value = ""
    try:
        if verb == "start":
            services.start_bundle(job_id, actor=caller)
        elif verb in ("suspend", "resume", "kill"):
            services.control_bundle(job_id, verb, actor=caller)
        elif verb == "change":
            value = params.get("value") or ""
            if not value:
                raise OozieError(400, "E0305", "value")
            services.change_bundle(job_id, value, actor=caller)
        elif verb == "rerun":
            return _rerun(job_id, caller, params)
        else:
            raise bad_parameter("action", action)
    except (IllegalTransition, ChangeRefused) as exc:
        if isinstance(exc, IllegalTransition) and is_no_op("bundle", verb, _status_of(job_id)):
            return HttpResponse(status=200)  # Oozie's command skips, its servlet answers 200 (ADR 0013)
        raise verb_error(exc, verb, job_id, value) from None
    return HttpResponse(status=200)


def _rerun(job_id: str, caller: Any, params: Mapping[str, str]) -> HttpResponse:
    """`coord-scope` (names, comma-separated) and/or `date-scope` (`A::B, C`); refresh, nocleanup."""
    coordinators = (params.get("coord-scope") or "").strip()
    dates = (params.get("date-scope") or "").strip()
    refresh, nocleanup = bool_parameter(params, "refresh"), bool_parameter(params, "nocleanup")
    if not coordinators and not dates:
        raise OozieError(400, "E1018", "a bundle rerun needs coord-scope (coordinator names) or date-scope (dates)")
    try:
        planned = services.rerun_bundle(
            job_id, actor=caller, coordinators=coordinators or None, dates=dates or None,
            refresh=refresh, nocleanup=nocleanup,
        )
    except ValueError as exc:  # IllegalTransition or RerunRefused
        raise verb_error(exc, "rerun", job_id) from None
    return json_response({"actions": {name: [action_json(action) for action in actions] for name, actions in planned.items()}})
