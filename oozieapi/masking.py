"""Secret job properties in the Oozie API's answers about one job: masked for callers other than its owner and job admins.

`GET /job/<id>` (info, definition, log, errorlog, allruns, an action's info) and the answers of
`PUT /job/<id>` (rerun, ignore, update, dryrun list actions with their configuration) are masked
as a whole once built (kernel.secrets): JSON entry by entry (every `conf`, `createdConf`,
`runConf`, error message), text (a definition, log lines) line by line. Masking the finished
answer, not each place that writes a configuration, means a field added later is covered too.
"""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpResponse

from bundles.models import BundleJob
from coordinators.models import CoordinatorAction, CoordinatorJob
from kernel.secrets import NO_MASK, Masker, masker, may_see_secrets
from oozieapi.ids import kind_of
from workflows.models import WorkflowJob


def masker_of(caller: Any, job_id: str, owner_id: Any = None) -> Masker:
    """What `caller` is shown of job `job_id` (a coordinator job or action, a bundle, a workflow or its node).

    `owner_id`, when the view read the job already: its owner and job admins cost no query more.
    """
    if owner_id is not None and may_see_secrets(caller, owner_id):
        return NO_MASK
    base = job_id.partition("@")[0]
    sources: list[Any] = []
    row: tuple[Any, Any] | None
    if kind_of(base) == "workflow":
        run = WorkflowJob.objects.filter(pk=base).values_list(
            "owner_id", "configuration", "coord_action__job__configuration", "parent_workflow__configuration").first()
        row = run[:2] if run is not None else None
        sources += [found for found in (run or ())[2:] if found]  # a coordinator's run: the job's properties
    elif kind_of(base) == "bundle":
        row = BundleJob.objects.filter(pk=base).values_list("owner_id", "configuration").first()
        # show=info lists its coordinators' configurations: the bundle's properties and their own.
        sources += CoordinatorJob.objects.filter(bundle_id=base).values_list("configuration", flat=True)
    else:
        row = CoordinatorJob.objects.filter(pk=base).values_list("owner_id", "configuration").first()
        if "@" in job_id:
            sources += CoordinatorAction.objects.filter(pk=job_id).values_list("run_conf", flat=True)
    owner_id, configuration = row if row is not None else (None, {})
    if may_see_secrets(caller, owner_id):
        return NO_MASK
    return masker(configuration, *sources)


def masked(response: HttpResponse, shown: Masker) -> HttpResponse:
    """The answer with its secrets masked: JSON entry by entry, any other body as text."""
    if not shown.active or not response.content:
        return response
    text = response.content.decode(response.charset or "utf-8")
    if response.get("Content-Type", "").startswith("application/json"):
        data = json.loads(text)
        body = json.dumps(shown.including(data).data(data))
    else:
        body = shown.text(text)
    response.content = body.encode(response.charset or "utf-8")
    return response
