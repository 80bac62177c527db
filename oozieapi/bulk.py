"""Oozie's bulk write API: `PUT /oozie/v{1,2}/jobs?action=kill|suspend|resume&jobtype=...&filter=...&offset=&len=`.

As in Oozie (BaseJobsServlet.doPut, BulkCoordXCommand), the filter is required, the jobs are
the page `offset`/`len` (defaults 1 and 50) of those the filter selects, and the answer is
that page as `GET /jobs` shows it (`coordinatorjobs` or `bundlejobs`, `total`, `offset`,
`len`, and `ids`). Here the verbs run as one operation (operations.bulk): the answer waits
up to OOZIE_BULK_WAIT_SECONDS for it to finish, so clients see the jobs' new statuses as
Oozie's synchronous command shows them, and carries its id (`operation`) for
`/api/v1/operations/{id}/`, where the jobs the caller may not act on are listed as failed and
those whose status makes the verb a no-op as skipped (Oozie skips them too; not a failure). An incompatible operation running on the same owner scope is
E0607 with HTTP 409.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import tzinfo
from typing import Any

from django.conf import settings
from django.db.models import QuerySet
from django.http import HttpResponse
from django.utils import timezone

from bundles.choices import BundleStatus
from bundles.models import BundleJob
from coordinators.choices import JobStatus
from coordinators.models import CoordinatorJob
from kernel.permissions import readable_jobs
from oozieapi.errors import OozieError, bad_parameter
from oozieapi.filters import MAX_LEN, filter_jobs, int_parameter
from oozieapi.formats import bundle_json, job_json, json_response
from operations.bulk import VERBS, start_bulk
from operations.choices import OperationStatus
from operations.models import Operation
from operations.services import OperationConflict

POLL_SECONDS = 0.1
DEFAULT_LEN = 50
MAX_OFFSET = 2**31 - 1


def _wait_seconds() -> float:
    return float(settings.OOZIE_BULK_WAIT_SECONDS)


def _kind(jobtype: str) -> tuple[str, QuerySet[Any], str, Callable[..., dict[str, Any]], tuple[str, ...]] | None:
    """(kind, base queryset, list key, JSON of one job, its statuses) for a jobtype; None for workflows."""
    if jobtype in ("wf", "workflow"):
        return None
    if jobtype in ("coord", "coordinator"):
        jobs = CoordinatorJob.objects.select_related("owner").defer("definition")
        return "coordinator", jobs, "coordinatorjobs", job_json, tuple(JobStatus.values)
    if jobtype == "bundle":
        bundles = BundleJob.objects.select_related("owner").defer("definition", "applications", "configuration")
        return "bundle", bundles, "bundlejobs", bundle_json, tuple(BundleStatus.values)
    raise bad_parameter("jobtype", jobtype)


def owner_scope(text: str) -> str | None:
    """The one user a filter names (`user=ann`), else None: every owner."""
    users = {value.strip() for name, _, value in (p.strip().partition("=") for p in text.split(";")) if name.strip().lower() == "user"}
    return users.pop() if len(users) == 1 else None


def _wait(operation: Operation) -> Operation:
    """The operation once finished, or as it is when OOZIE_BULK_WAIT_SECONDS have passed."""
    deadline = time.monotonic() + _wait_seconds()
    while operation.status == OperationStatus.RUNNING and time.monotonic() < deadline:
        time.sleep(POLL_SECONDS)
        operation.refresh_from_db(fields=["status", "finished_at", "result"])
    return operation


def bulk_modify(caller: Any, params: Any, *, zone: tzinfo) -> HttpResponse:
    """Carry the verb out on the selected page of jobs; answer that page as it is afterwards."""
    action = params.get("action") or ""
    if not action:
        raise OozieError(400, "E0305", "action")
    if action not in VERBS:
        raise OozieError(400, "E0301", action)
    text = params.get("filter")
    if text is None:
        raise OozieError(400, "E0305", "filter")
    offset = int_parameter(params, "offset", 1, minimum=1, maximum=MAX_OFFSET)
    length = int_parameter(params, "len", DEFAULT_LEN, minimum=0, maximum=MAX_LEN) or DEFAULT_LEN
    jobtype = (params.get("jobtype") or "wf").lower()
    kind = _kind(jobtype)
    if kind is None:  # this service runs no workflow jobs of its own to select
        return json_response({"workflows": [], "total": 0, "offset": offset, "len": length, "ids": []})
    name, base, key, as_json, statuses = kind
    queryset = filter_jobs(readable_jobs(base, caller), text, timezone.now(), statuses=statuses)
    total = queryset.count()
    selected = list(queryset.values_list("pk", flat=True)[offset - 1:offset - 1 + length])
    body: dict[str, Any] = {"total": total, "offset": offset, "len": length, key: [], "ids": selected}
    if not selected:
        return json_response(body)
    try:
        operation = start_bulk(name, action, selected, user=caller, owner=owner_scope(text), filter_text=text)
    except OperationConflict as exc:
        raise OozieError(409, "E0607", f"bulk {action}", str(exc)) from exc
    operation = _wait(operation)
    jobs = {job.pk: job for job in base.filter(pk__in=selected)}
    body[key] = [as_json(jobs[pk], zone=zone, with_conf=False) for pk in selected if pk in jobs]
    body["operation"] = operation.pk
    body["operationStatus"] = operation.status
    return json_response(body)
