"""Workflow jobs and their nodes as stored: one workflow job per launch of a coordinator action.

A `task:` application is a workflow with one node that runs one Celery task. The node is
what a worker runs: it holds a lease while it runs (renewed by the worker's heartbeat
thread), and its `attempt` number is the fencing token: a relaunch after a lost worker
bumps it, so a zombie's late report matches nothing.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q

from kernel.history import RecordsStatus
from kernel.statemachine import check_transition
from workflows.choices import NODE_TRANSITIONS, WORKFLOW_TRANSITIONS, NodeStatus, WorkflowStatus

WORKFLOW_KIND, NODE_KIND = "workflow", "node"  # their kinds in the status history (kernel.history)

WORKFLOW_ID_SUFFIX = "W"
TASK_NODE = "task"  # the one node of a task: application


class IdCounter(models.Model):
    """The counter behind workflow ids on databases without sequences (SQLite), and the ids' epoch stamp."""

    name = models.CharField(max_length=32, primary_key=True)
    value = models.BigIntegerField(default=0)
    epoch = models.CharField(max_length=15, help_text="yyMMddHHmmssSSS of the counter's creation")

    def __str__(self) -> str:
        return f"{self.name}={self.value}"


class WorkflowJob(RecordsStatus):
    """One run of a workflow application: `0000012-261123104647123-W`, its parent, status and times.

    Invariant: a coordinator action's runs are numbered by `run` (0 first, then one per
    rerun), and the action's `external_id` names the latest. Every saved status change is
    recorded (kernel.history).
    """

    status_kind = WORKFLOW_KIND

    id = models.CharField(max_length=40, primary_key=True)
    app_name = models.CharField(max_length=255)
    app_path = models.CharField(max_length=1024)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    coord_action = models.ForeignKey(
        "coordinators.CoordinatorAction",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="workflow_runs",
        help_text="the coordinator action that launched it (its parent)",
        db_index=False,  # wf_parent_run_idx leads with it (ADR 0043)
    )
    run = models.IntegerField(default=0, help_text="the parent action's run: 0, then one more per rerun")
    configuration = models.JSONField(default=dict, help_text="what the application was started with")
    nominal_time = models.DateTimeField(null=True, blank=True)
    status = models.CharField(max_length=12, choices=WorkflowStatus.choices, default=WorkflowStatus.PREP)
    created_at = models.DateTimeField()
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    last_modified = models.DateTimeField(auto_now=True)
    error_code = models.CharField(max_length=64, blank=True)
    error_message = models.TextField(blank=True)
    # Workflow applications (workflow.xml); empty for a one-task (`task:`) run.
    definition = models.JSONField(default=dict, blank=True, help_text="the parsed workflow.xml (nodes and transitions)")
    app_xml = models.TextField(blank=True, help_text="the workflow.xml as submitted")
    group = models.CharField(max_length=255, blank=True)
    parent_workflow = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.CASCADE, related_name="sub_workflows",
        help_text="the workflow whose sub-workflow node launched it",
    )
    parent_node = models.CharField(max_length=140, blank=True, help_text="that sub-workflow node's id")

    class Meta:
        indexes = [
            models.Index(fields=["coord_action", "run"], name="wf_parent_run_idx"),
            models.Index(fields=["status", "created_at"], name="wf_status_created_idx"),
            # Purge: standalone workflows (no coordinator action, no parent) by end time. It leads with the
            # parent (NULL in every entry) so that SQLite, which counts `parent_workflow_id IS NULL` as an
            # equality, prefers it to the parent's foreign-key index: that one holds every coordinator run.
            models.Index(
                fields=["parent_workflow", "ended_at", "id"],
                condition=Q(coord_action__isnull=True, parent_workflow__isnull=True),
                name="wf_standalone_ended_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.id} [{self.status}]"

    def transition_to(self, target: str) -> None:
        """Change status if the table allows it; raise IllegalTransition otherwise (caller saves)."""
        check_transition(WORKFLOW_TRANSITIONS, self.status, target, f"workflow job {self.id}")
        self.status = target

    def status_parent(self) -> str:
        """The coordinator action that launched it, or the workflow whose sub-workflow node did."""
        return self.coord_action_id or self.parent_workflow_id or ""

    def status_reason(self) -> str:
        """An ended run's error is why it ended so."""
        return " ".join(part for part in (self.error_code, self.error_message) if part)

    def secret_sources(self) -> list[dict[str, Any]]:
        """Where its secret property values come from (kernel.secrets): its configuration, its parents' (one query).

        A coordinator's run carries its action's configuration only; the job's properties (a
        `db.password` its `${...}` resolved) are the parent coordinator job's.
        """
        parents = WorkflowJob.objects.filter(pk=self.pk).values_list(
            "coord_action__job__configuration", "parent_workflow__configuration").first() or ()
        return [dict(self.configuration or {}), *(dict(found) for found in parents if found)]


class WorkflowNode(RecordsStatus):
    """One node of a workflow job (Oozie's workflow action, `<wf id>@<name>`): what a worker runs.

    Invariants: only RUNNING nodes hold a lease (`worker`, `lease_expires_at`); every write
    after a claim is conditional on `attempt`, so only the holder of the current attempt
    can record an outcome. Every saved status change is recorded (kernel.history).
    """

    status_kind = NODE_KIND

    id = models.CharField(max_length=140, primary_key=True)
    workflow = models.ForeignKey(WorkflowJob, on_delete=models.CASCADE, related_name="nodes")
    name = models.CharField(max_length=100)
    type = models.CharField(max_length=32, default="celery-task")
    task_name = models.CharField(max_length=255, help_text="the Celery task it runs")
    queue = models.CharField(max_length=255, help_text="the queue its message is sent to")
    status = models.CharField(max_length=12, choices=NodeStatus.choices, default=NodeStatus.PREP)
    attempt = models.IntegerField(default=1, help_text="launches so far; the fencing token of the current one")
    max_attempts = models.IntegerField(default=3, help_text="launches allowed when its worker is lost")
    task_id = models.CharField(max_length=64, help_text="the Celery task id of the current attempt")
    task_ids = models.JSONField(default=list, help_text="the Celery task id of every attempt")
    worker = models.CharField(max_length=200, blank=True, help_text="who runs (or last ran) it: node name and pid")
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    dispatched_at = models.DateTimeField(null=True, blank=True, help_text="when the current attempt was last sent")
    dispatches = models.IntegerField(default=0, help_text="sends of the current attempt (a lost message is sent again)")
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    error_code = models.CharField(max_length=64, blank=True)
    error_message = models.TextField(blank=True)
    history = models.JSONField(default=list, help_text="one entry per attempt: worker, times, outcome")
    # Nodes of workflow applications.
    spec = models.JSONField(default=dict, blank=True, help_text="the action as launched (its EL evaluated)")
    transition = models.TextField(blank=True, help_text="the node it led to (a fork: every path, comma-separated)")
    data = models.JSONField(default=dict, blank=True, help_text="captured output (wf:actionData)")
    external_id = models.CharField(max_length=255, blank=True)
    external_status = models.CharField(max_length=64, blank=True)
    arrivals = models.IntegerField(default=0, help_text="a join: the fork paths that reached it")
    user_retries = models.IntegerField(default=0, help_text="user retries done (retry-max, spec 18)")
    retry_at = models.DateTimeField(null=True, blank=True, help_text="USER_RETRY: when it runs again")

    class Meta:
        indexes = [
            # Recovery: running nodes whose lease ran out, queued ones nobody claimed.
            models.Index(
                fields=["lease_expires_at"], condition=Q(status=NodeStatus.RUNNING), name="wf_node_lease_idx"
            ),
            models.Index(
                fields=["dispatched_at"], condition=Q(status=NodeStatus.PREP), name="wf_node_dispatch_idx"
            ),
            models.Index(fields=["retry_at"], condition=Q(status=NodeStatus.USER_RETRY), name="wf_node_retry_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.id} [{self.status}] attempt {self.attempt}"

    def transition_to(self, target: str) -> None:
        """Change status if the table allows it; raise IllegalTransition otherwise (caller saves)."""
        check_transition(NODE_TRANSITIONS, self.status, target, f"workflow node {self.id}")
        self.status = target

    def status_parent(self) -> str:
        """Its workflow job."""
        return self.workflow_id

    def status_reason(self) -> str:
        """A node's error is why it ended so."""
        return " ".join(part for part in (self.error_code, self.error_message) if part)

    def display_kwargs(self) -> dict[str, Any]:
        """What Flower shows next to `workflows.run`: the node, the attempt, the parent, the task."""
        return {
            "node": self.id,
            "attempt": self.attempt,
            "parent": self.workflow.coord_action_id or "",
            "task": self.task_name,
        }
