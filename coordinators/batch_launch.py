"""The `batch:` launcher: a coordinator action opens a batch and ends when the batch does.

An action whose `<app-path>` is `batch:<profile>` is launched like any other: a workflow job
(`0000012-...-W`, the action's `external_id`) with one node, here a `batch` node that no
worker runs and that holds no lease: it waits for the batch (docs/adr/0011-batches.md,
"Coordinators drive batches").

1. Launch (under the coordinator job's key, in the command that submits the action): the
   workflow job and its RUNNING node, and a `CoordBatchSubmitXCommand` on the action run's
   own key, so reading the batch manifest never holds the coordinator's key.
2. Submit: the batch is opened with the action's resolved configuration, as the action's
   owner, with external id `<action id>#<run>`: a repeated submission of the same run
   returns the batch the first one opened. The node records it (`worker` = `batch:<id>`)
   and the action goes RUNNING. A refused submission (unknown profile, payload outside
   BATCH_PAYLOAD_ROOTS, corrupt manifest, bad property) ends the node FAILED with the reason.
3. End: the batch command that moves the batch to completed, failed or deleted sends
   `batch_finished` in its transaction; the node ends OK, ERROR or KILLED there, and the
   workflow runtime's `ended` hook queues the action-status command in that same
   transaction (ADR 0008): SUCCEEDED, FAILED (with the batch's summary) or KILLED.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils import timezone

from batches import services as batch_services
from batches import signals as batch_signals
from batches.choices import BATCH_OUTCOMES, BatchStatus
from batches.models import Batch
from batches.services import SubmissionRefused
from coordinators.models import CoordinatorAction, CoordinatorJob
from kernel.secrets import mask_text
from workflows import parents
from workflows.choices import NodeStatus, WorkflowStatus
from workflows.ids import next_workflow_ids
from workflows.launch import UnknownApplication
from workflows.models import WorkflowJob, WorkflowNode
from workflows.outcomes import MAX_ERROR_CHARS, Outcome
from workflows.runner import end_node
from xcommands.base import XCommand
from xcommands.errors import PreconditionFailed
from xcommands.queue import enqueue

log = logging.getLogger(__name__)

BATCH_SCHEME = "batch:"
BATCH_NODE = "batch"  # the node's name and type
PAYLOAD_PROPERTY = "payload_url"
DEFAULT_TYPE = "manifest-of-manifests"  # a scheduled batch names many objects
#: Action configuration properties -> `submit_batch` arguments (besides `payload_url`).
BATCH_PROPERTIES: dict[str, str] = {
    "batch.type": "type",
    "batch.submitter": "submitter",
    "batch.priority": "priority",
    "batch.mode": "submission_mode",
    "batch.what": "erc_what",
    "batch.who": "erc_who",
    "batch.when": "erc_when",
    "batch.where": "erc_where",
}
REFUSED = "E0BATCH"  # the batch was not opened
BATCH_FAILED = "E0BATCHFAILED"  # the batch ended failed


class BatchRefused(ValueError):
    """The action's configuration cannot open a batch (a bad property); the action fails with this reason."""


def is_batch_app(app_path: str) -> bool:
    """Whether the application is `batch:<profile>`."""
    return app_path.startswith(BATCH_SCHEME)


def profile_of(app_path: str) -> str:
    """The profile a `batch:<profile>` application opens its batches with (UnknownApplication without one)."""
    profile = app_path[len(BATCH_SCHEME):].strip() if is_batch_app(app_path) else ""
    if not profile:
        raise UnknownApplication(f"application {app_path!r} is not batch:<profile>")
    return profile


def external_id_of(action_id: str, run: int) -> str:
    """The batch's external id for an action's run: `<action id>#<run>` (one batch per run)."""
    return f"{action_id}#{run}"


def parse_external_id(text: str) -> tuple[str, int] | None:
    """(action id, run) of a batch opened by an action, or None for any other external id."""
    action_id, sep, run = text.rpartition("#")
    if not sep or "@" not in action_id or not run.isdigit():
        return None
    return action_id, int(run)


def worker_of(batch_id: int) -> str:
    """What a batch node records as the one running it: `batch:<id>`."""
    return f"{BATCH_SCHEME}{batch_id}"


def submission(configuration: Mapping[str, Any]) -> dict[str, Any]:
    """The `submit_batch` arguments an action's configuration asks for; BatchRefused names what is wrong."""
    unknown = sorted(k for k in configuration if k.startswith("batch.") and k not in BATCH_PROPERTIES)
    if unknown:
        raise BatchRefused(f"unknown property {unknown[0]!r} (known: {PAYLOAD_PROPERTY}, {', '.join(BATCH_PROPERTIES)})")
    payload = str(configuration.get(PAYLOAD_PROPERTY, "")).strip()
    if not payload:
        raise BatchRefused(f"no {PAYLOAD_PROPERTY} property: name the batch's payload, e.g. ${{coord:dataIn('in')}}/batch.checkm")
    urls = [part for part in payload.split(",") if part.strip()]
    if len(urls) > 1 and all("://" in part for part in urls):
        raise BatchRefused(f"{PAYLOAD_PROPERTY} names {len(urls)} URLs (a data-in of several instances?); a batch takes one")
    kwargs: dict[str, Any] = {"payload_url": payload, "type": DEFAULT_TYPE}
    for name, argument in BATCH_PROPERTIES.items():
        value = str(configuration.get(name, "")).strip()
        if value:
            kwargs[argument] = value
    if "priority" in kwargs:
        try:
            kwargs["priority"] = int(kwargs["priority"])
        except ValueError:
            raise BatchRefused(f"batch.priority {kwargs['priority']!r} is not a number: use 0 (first) to 99 (last)") from None
    return kwargs


# ---- launch (under the coordinator job's key) --------------------------------------------------


def launch_batches(job: CoordinatorJob, actions: Iterable[CoordinatorAction], now: datetime) -> list[WorkflowJob]:
    """A workflow job with one waiting `batch` node per action, and its submission queued (caller's transaction)."""
    actions = list(actions)
    if not actions:
        return []
    runs, nodes = [], []
    for workflow_id, action in zip(next_workflow_ids(len(actions)), actions, strict=True):
        app_path = str(action.run_conf.get("app_path", ""))
        run = WorkflowJob(
            id=workflow_id, app_name=app_path, app_path=app_path, owner_id=job.owner_id, coord_action_id=action.id,
            run=action.run_count, configuration={k: v for k, v in action.run_conf.items() if k != "app_path"},
            nominal_time=action.nominal_time, status=WorkflowStatus.RUNNING, created_at=now, started_at=now,
        )
        # RUNNING without a lease or a message: recovery relaunches only expired leases and
        # resends only PREP nodes, so nothing but the batch's end moves this node.
        nodes.append(WorkflowNode(
            id=f"{workflow_id}@{BATCH_NODE}", workflow=run, name=BATCH_NODE, type=BATCH_NODE, task_name=app_path,
            queue="", status=NodeStatus.RUNNING, attempt=1, max_attempts=1, task_id="", task_ids=[],
            started_at=now, dispatches=0,
        ))
        runs.append(run)
    WorkflowJob.objects.bulk_create(runs)
    WorkflowNode.objects.bulk_create(nodes)
    for run in runs:
        enqueue(CoordBatchSubmitXCommand(workflow_id=run.id, action_id=str(run.coord_action_id), run_number=run.run))
    return runs


# ---- submission (on the action run's key) -----------------------------------------------------


def _waiting_node(workflow_id: str, *, worker: str) -> WorkflowNode | None:
    """The workflow's batch node, locked, if it still waits (RUNNING) with this worker."""
    return (
        WorkflowNode.objects.select_for_update(of=("self",)).select_related("workflow")
        .filter(workflow_id=workflow_id, type=BATCH_NODE, status=NodeStatus.RUNNING, worker=worker).first()
    )


def _finish(node: WorkflowNode, outcome: Outcome, now: datetime) -> None:
    """End a batch node (its history says how), its workflow, and tell the action (the node is locked)."""
    node.history = [*node.history, {
        "attempt": node.attempt,
        "worker": node.worker,
        "started": node.started_at.isoformat(timespec="milliseconds") if node.started_at else None,
        "ended": now.isoformat(timespec="milliseconds"),
        "outcome": outcome.status,
        **({"error": outcome.error_message[:500]} if outcome.error_message else {}),
    }]
    end_node(node, outcome, now)


@dataclass
class CoordBatchSubmitXCommand(XCommand):
    """Open the batch of an action's run (idempotent by its external id); the node records it, or FAILED if refused.

    Keyed by the action's run, not the coordinator job: reading the batch manifest holds no
    key the job's other actions need. The batch row is locked before the node, the order the
    batch's own commands take them in when they report its end.
    """

    workflow_id: str
    action_id: str
    run_number: int

    def job_key(self) -> str:
        """`coord-batch:<action id>#<run>`: submissions of one run, one at a time."""
        return f"coord-batch:{external_id_of(self.action_id, self.run_number)}"

    def load_state(self) -> None:
        """The workflow job and its node (not locked: the node is locked after the batch)."""
        self.node = WorkflowNode.objects.select_related("workflow").filter(
            workflow_id=self.workflow_id, type=BATCH_NODE
        ).first()

    def verify_precondition(self) -> None:
        """Only a node still waiting for its batch to be opened (a killed job's node is left alone)."""
        if self.node is None:
            raise PreconditionFailed(f"workflow {self.workflow_id} has no batch node")
        if self.node.status != NodeStatus.RUNNING or self.node.worker:
            raise PreconditionFailed(
                f"node {self.node.id} is {self.node.status}" + (f", run by {self.node.worker}" if self.node.worker else "")
            )

    def execute(self) -> dict[str, Any]:
        """Submit the batch; record it on the node and mark the action RUNNING; end now if it already ended."""
        if self.node is None:  # checked by verify_precondition; narrows the type
            raise PreconditionFailed(f"workflow {self.workflow_id} has no batch node")
        workflow, now = self.node.workflow, timezone.now()
        action = CoordinatorAction.objects.select_related("job__owner").get(pk=self.action_id)
        job = action.job
        try:
            batch, created = batch_services.submit_batch(
                owner=job.owner, profile=profile_of(workflow.app_path), acl=job.acl,
                external_id=external_id_of(self.action_id, self.run_number), **submission(workflow.configuration),
            )
        except (SubmissionRefused, BatchRefused, UnknownApplication) as exc:
            node = _waiting_node(self.workflow_id, worker="")
            if node is not None:
                _finish(node, Outcome(NodeStatus.FAILED, REFUSED, f"batch not opened: {exc}"[:MAX_ERROR_CHARS]), now)
            log.info("action %s run %s: batch refused: %s", self.action_id, self.run_number,
                     mask_text(str(exc), workflow.configuration))
            return {"refused": str(exc)}
        batch = Batch.objects.select_for_update().get(pk=batch.pk)  # its end cannot slip in between
        node = _waiting_node(self.workflow_id, worker="")
        if node is None:  # killed while the manifest was read: the batch runs on by itself
            return {"batch": batch.pk, "created": created, "node": "moved"}
        node.worker = worker_of(batch.pk)
        node.save(update_fields=["worker"])
        parents.started(workflow, node)
        if batch.status in BATCH_OUTCOMES:  # a repeated submission found the run's batch already ended
            _finish(node, outcome_of(batch), now)
        return {"batch": batch.pk, "created": created, "status": batch.status}

    def rollback(self, error: str) -> None:
        """The submission failed for good (not a refusal): the action fails rather than wait for nothing."""
        node = _waiting_node(self.workflow_id, worker="")
        if node is not None:
            reason = error.strip().splitlines()[-1] if error.strip() else "unknown error"
            _finish(node, Outcome(NodeStatus.FAILED, REFUSED, f"batch not opened: {reason}"[:MAX_ERROR_CHARS]), timezone.now())


# ---- the batch's end (in the batch command's transaction) --------------------------------------


def outcome_of(batch: Any) -> Outcome:
    """How a finished batch ends its node: completed OK, failed ERROR (its summary), deleted KILLED."""
    if batch.status == BatchStatus.COMPLETED:
        return Outcome(NodeStatus.OK)
    if batch.status == BatchStatus.DELETED:
        return Outcome(NodeStatus.KILLED, "", f"batch {batch.id_text} was deleted")
    return Outcome(NodeStatus.ERROR, BATCH_FAILED, summary(batch)[:MAX_ERROR_CHARS])


def summary(batch: Any) -> str:
    """`batch bid0000017 failed: 8 of 10 object(s) completed, 2 failed; job 123 (obj003): <error>`, from its last report."""
    report = batch.reports.order_by("-number").first()
    text = f"batch {batch.id_text} {batch.status}"
    if report is None:
        return text + (f": {batch.error}" if batch.error else "")
    counts = report.body.get("counts", {})
    text += f": {counts.get('completed', 0)} of {counts.get('jobs', 0)} object(s) completed, {counts.get('failed', 0)} failed"
    failed = report.body.get("failed") or report.body.get("unresolved") or []
    if failed:
        first = failed[0]
        ids = ", ".join(filter(None, [first.get("primary_id", ""), *first.get("local_ids", [])]))
        text += f"; job {first.get('job')}" + (f" ({ids})" if ids else "") + (f": {first['error']}" if first.get("error") else "")
        if len(failed) > 1:
            text += f" (and {len(failed) - 1} more)"
    return text


def batch_finished(sender: Any, batch: Any, **kwargs: Any) -> None:
    """A batch reached an outcome: end the node of the action run that opened it, if it still waits (same transaction)."""
    parsed = parse_external_id(batch.external_id or "")
    if parsed is None:
        return
    action_id, run = parsed
    nodes = (
        WorkflowNode.objects.select_for_update(of=("self",)).select_related("workflow")
        .filter(type=BATCH_NODE, status=NodeStatus.RUNNING, worker=worker_of(batch.pk),
                workflow__coord_action_id=action_id, workflow__run=run)
    )
    now = timezone.now()
    for node in nodes:
        _finish(node, outcome_of(batch), now)
        log.info("action %s run %s: batch %s %s", action_id, run, batch.pk, batch.status)


def register() -> None:
    """Hear the ends of batches (called when the app is ready)."""
    batch_signals.batch_finished.connect(batch_finished, dispatch_uid="coordinators.batch_launch")
