"""Coordinator jobs and actions as stored: definition, resolved configuration, owner, ACL, statuses."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC
from typing import Any

from django.conf import settings
from django.db import models, transaction
from django.db.models import Q
from django.utils import timezone

from coordinators.choices import (
    ACTION_ACTIVE,
    ACTION_PENDING,
    ACTION_TERMINAL,
    ACTION_TRANSITIONS,
    JOB_MATERIALIZING,
    JOB_TRANSITIONS,
    ActionStatus,
    JobStatus,
    check_transition,
)
from coordinators.signals import coordinator_status_changed
from kernel import sqlbatch
from kernel.history import current_actor

JOB_ID_SUFFIX = "C"


class IdSequence(models.Model):
    """A named counter for Oozie-style job ids; one row per name, incremented under its row lock."""

    name = models.CharField(max_length=32, primary_key=True)
    value = models.BigIntegerField(default=0)
    epoch = models.CharField(max_length=15, help_text="yyMMddHHmmssSSS of the sequence's creation")

    def __str__(self) -> str:
        return f"{self.name}={self.value}"


def next_job_id(suffix: str = JOB_ID_SUFFIX) -> str:
    """`0000012-261122093000123-C`: a 7-digit sequence, the sequence's epoch stamp, the job kind."""
    with transaction.atomic():
        stamp = timezone.now().strftime("%y%m%d%H%M%S%f")[:15]
        IdSequence.objects.get_or_create(name="jobs", defaults={"epoch": stamp})
        row = IdSequence.objects.select_for_update().get(name="jobs")
        row.value += 1
        row.save(update_fields=["value"])
    return f"{row.value:07d}-{row.epoch}-{suffix}"


class CoordinatorJobQuerySet(models.QuerySet["CoordinatorJob"]):
    """Named filters over coordinator jobs."""

    def due_for_materialization(self, horizon: Any) -> CoordinatorJobQuerySet:
        """Running jobs whose next action falls before the horizon and before their end."""
        return self.filter(
            status__in=JOB_MATERIALIZING, next_materialize_at__lt=horizon, done_materializing=False
        )


class CoordinatorJob(models.Model):
    """A submitted coordinator: its definition, resolved properties, owner, ACL, controls and progress.

    Invariant: actions are only created while status is RUNNING or RUNNINGWITHERROR, and
    numbers run 1, 2, 3 ... without gaps (unique per job).
    """

    id = models.CharField(max_length=40, primary_key=True)
    app_name = models.CharField(max_length=255, db_index=True)
    app_path = models.CharField(max_length=1024, blank=True)
    definition = models.TextField(help_text="the coordinator XML as submitted")
    includes = models.JSONField(default=dict, blank=True, help_text="the <include>d dataset files as read at submission")
    configuration = models.JSONField(default=dict, help_text="job properties after <parameters> defaults")
    # No index of its own: coord_job_owner_idx leads with it, as coord_job_status_created_idx with the status (ADR 0043).
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="coordinator_jobs", db_index=False
    )
    acl = models.CharField(max_length=1024, blank=True, help_text="oozie.job.acl: users and groups who may act")
    status = models.CharField(max_length=20, choices=JobStatus.choices, default=JobStatus.PREP)
    pending = models.BooleanField(default=False, help_text="a command on this job is in flight")
    frequency = models.CharField(max_length=64)
    time_unit = models.CharField(max_length=16)
    timezone = models.CharField(max_length=64)
    start_time = models.DateTimeField()
    end_time = models.DateTimeField()
    pause_time = models.DateTimeField(null=True, blank=True)
    timeout = models.IntegerField(default=-1, help_text="minutes; -1 none, 0 immediately")
    concurrency = models.IntegerField(default=1)
    execution = models.CharField(max_length=16, default="FIFO")
    throttle = models.IntegerField(default=12)
    last_action_number = models.IntegerField(default=0)
    next_materialize_at = models.DateTimeField(null=True, blank=True, help_text="nominal time of the next action")
    done_materializing = models.BooleanField(default=False)
    bundle_id = models.CharField(max_length=40, blank=True, db_index=True, help_text="the bundle that submitted it")
    created_at = models.DateTimeField(auto_now_add=True)
    last_modified = models.DateTimeField(auto_now=True)

    objects = CoordinatorJobQuerySet.as_manager()
    _saved_status: str | None = None  # the status as loaded (see save())

    class Meta:
        indexes = [
            # "What is due now": a range scan over running jobs by their next nominal time.
            models.Index(
                fields=["next_materialize_at"],
                condition=Q(status__in=sorted(JOB_MATERIALIZING), done_materializing=False),
                name="coord_job_due_idx",
            ),
            models.Index(fields=["pending"], condition=Q(pending=True), name="coord_job_pending_idx"),
            models.Index(fields=["owner", "-created_at"], name="coord_job_owner_idx"),
            # API lists (native and Oozie) page through jobs newest first, all or of one status.
            models.Index(fields=["created_at", "id"], name="coord_job_created_idx"),
            models.Index(fields=["status", "created_at", "id"], name="coord_job_status_created_idx"),
            # Pause service: jobs with a pause time; status service: running jobs done materializing.
            models.Index(fields=["pause_time"], condition=Q(pause_time__isnull=False), name="coord_job_pause_idx"),
            models.Index(
                fields=["last_modified"],
                condition=Q(status__in=sorted(JOB_MATERIALIZING), done_materializing=True),
                name="coord_job_finishing_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.id} {self.app_name} [{self.status}]"

    def save(self, *args: Any, **kwargs: Any) -> None:
        """Partial saves still move the modification time; a status change is announced in the same transaction."""
        fields = kwargs.get("update_fields")
        if fields is not None:
            kwargs["update_fields"] = sorted(set(fields) | {"last_modified"})
        previous = getattr(self, "_saved_status", None)
        # No savepoint inside the caller's transaction (two round trips per save): an error here
        # fails the caller's transaction anyway, as nothing catches it halfway.
        with transaction.atomic(savepoint=False):
            super().save(*args, **kwargs)
            if fields is None or "status" in fields:
                record_changes(StatusChange.Kind.JOB, self.id, self.id, self.__dict__.pop("_changes", []))
                if self.status != previous:
                    coordinator_status_changed.send(sender=CoordinatorJob, job=self, previous=previous)
        self._saved_status = self.status

    def transition_to(self, target: str, *, reason: str = "") -> None:
        """Change status if the table allows it; raise IllegalTransition otherwise (caller saves, which records it)."""
        check_transition(JOB_TRANSITIONS, self.status, target, f"coordinator job {self.id}")
        self.__dict__.setdefault("_changes", []).append((self.status, target, timezone.now(), reason))
        self.status = target

    def refresh_from_db(self, *args: Any, **kwargs: Any) -> None:
        """Reload, and take the reloaded status as the one to compare the next save() with."""
        super().refresh_from_db(*args, **kwargs)
        self._saved_status = self.__dict__.get("status")

    @classmethod
    def from_db(cls, *args: Any, **kwargs: Any) -> CoordinatorJob:
        """Remember the status as loaded, so save() can tell a status change."""
        job = super().from_db(*args, **kwargs)
        job._saved_status = job.__dict__.get("status")
        return job


class CoordinatorAction(models.Model):
    """One materialized run of a job: nominal time, resolved inputs/outputs and configuration.

    Invariant: (job, number) is unique, so a retried or duplicated materialization never
    creates an action twice.
    """

    id = models.CharField(max_length=60, primary_key=True)
    # No index of its own: (job, number) and (job, status, nominal_time) lead with it (ADR 0043).
    job = models.ForeignKey(CoordinatorJob, on_delete=models.CASCADE, related_name="actions", db_index=False)
    number = models.IntegerField()
    nominal_time = models.DateTimeField()
    created_time = models.DateTimeField(default=timezone.now)
    status = models.CharField(max_length=16, choices=ActionStatus.choices, default=ActionStatus.WAITING)
    pending = models.BooleanField(default=False)
    missing_dependencies = models.JSONField(default=list, help_text="URIs not yet available")
    data_in = models.JSONField(default=dict)
    data_out = models.JSONField(default=dict)
    run_conf = models.JSONField(default=dict, help_text="resolved action configuration")
    external_id = models.CharField(max_length=255, blank=True, help_text="the launched run's id (read with the action's id)")
    next_check_at = models.DateTimeField(null=True, blank=True, help_text="next input check (backoff)")
    check_count = models.IntegerField(default=0)
    timeout_at = models.DateTimeField(null=True, blank=True)
    sla = models.JSONField(null=True, blank=True)
    error_message = models.TextField(blank=True)
    ready_at = models.DateTimeField(null=True, blank=True, help_text="when its inputs were last all there (READY)")
    submitted_at = models.DateTimeField(null=True, blank=True, help_text="when its task was last sent")
    started_at = models.DateTimeField(null=True, blank=True, help_text="when it last went RUNNING")
    ended_at = models.DateTimeField(null=True, blank=True, help_text="when it last finished")
    run_count = models.IntegerField(default=0, help_text="reruns so far")
    last_modified = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job", "number"], name="coord_action_job_number_uniq")]
        indexes = [
            # Input re-checks and timeouts scan only waiting actions by due time.
            models.Index(
                fields=["next_check_at"],
                condition=Q(status__in=sorted(ACTION_PENDING)),
                name="coord_action_check_idx",
            ),
            models.Index(
                fields=["timeout_at"],
                condition=Q(status=ActionStatus.WAITING),
                name="coord_action_timeout_idx",
            ),
            models.Index(fields=["job", "status", "nominal_time"], name="coord_action_job_status_idx"),
            # Purge: ended actions by end time (statusservice.purge, old actions of long-running jobs).
            models.Index(
                fields=["ended_at", "id"], condition=Q(status__in=sorted(ACTION_TERMINAL)), name="coord_action_ended_idx"
            ),
            # Recovery: launched actions not heard of for a while.
            models.Index(
                fields=["last_modified"],
                condition=Q(status__in=sorted(ACTION_ACTIVE)),
                name="coord_action_launched_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.id} [{self.status}]"

    def save(self, *args: Any, **kwargs: Any) -> None:
        """Saving the status saves its time stamps and the modification time too."""
        fields = kwargs.get("update_fields")
        if fields is not None:
            extra = {"last_modified"} | ({"submitted_at", "started_at", "ended_at", "ready_at"} if "status" in fields else set())
            kwargs["update_fields"] = sorted(set(fields) | extra)
        changes = self.__dict__.pop("_changes", []) if fields is None or "status" in fields else []
        with transaction.atomic(savepoint=False):  # no savepoint inside the caller's transaction (see the job's save)
            super().save(*args, **kwargs)
            if changes:
                # Why an action failed or timed out is its error message when the caller gave no reason.
                changes = [(a, b, at, why or (self.error_message if b in ACTION_TERMINAL else "")) for a, b, at, why in changes]
                record_changes(StatusChange.Kind.ACTION, self.id, self.job_id, changes)

    def waiting(self) -> dict[str, Any] | None:
        """What a WAITING action waits for: how many inputs, the first, when it is next checked and times out; else None.

        With `<input-logic>` the missing list is what the logic still waits for; an unresolved
        coord:latest/future counts as one input, shown as its expression.
        """
        if self.status != ActionStatus.WAITING:
            return None
        deps = [list(dep) if isinstance(dep, list | tuple) else [dep] for dep in self.missing_dependencies or []]
        first = deps[0] if deps else None
        return {
            "missing": len(deps),
            "first_missing": str(first[0]) if first else None,
            "done_flag": (str(first[1] or "") if len(first) > 1 else "") if first else None,
            "next_check_at": self.next_check_at,
            "timeout_at": self.timeout_at,
            "checks": self.check_count,
        }

    def waiting_text(self) -> str:
        """The waiting summary in one line: `2 missing, first file:///d/00 (_SUCCESS); next check 10:01, times out 13:00`."""
        info = self.waiting()
        if info is None:
            return ""
        parts = []
        if info["missing"]:
            flag = f" ({info['done_flag']})" if info["done_flag"] else ""
            parts.append(f"{info['missing']} missing, first {info['first_missing']}{flag}")
        else:
            parts.append("inputs not checked yet" if not info["checks"] else "no input missing")
        stamp = "%Y-%m-%d %H:%M:%S UTC"
        if info["next_check_at"] is not None:
            parts.append(f"next check {info['next_check_at'].astimezone(UTC).strftime(stamp)}")
        if info["timeout_at"] is not None:
            parts.append(f"times out {info['timeout_at'].astimezone(UTC).strftime(stamp)}")
        return "; ".join(parts)

    @staticmethod
    def action_id(job_id: str, number: int) -> str:
        """`<job id>@<number>`, as Oozie names actions."""
        return f"{job_id}@{number}"

    def transition_to(self, target: str, *, reason: str = "") -> None:
        """Change status if the table allows it, stamping start and end; raise IllegalTransition otherwise.

        The caller saves; saving "status" also saves the stamps and records the change (see save()).
        """
        check_transition(ACTION_TRANSITIONS, self.status, target, f"coordinator action {self.id}")
        now = timezone.now()
        self.__dict__.setdefault("_changes", []).append((self.status, target, now, reason))
        if target == ActionStatus.READY:
            self.ready_at = now
        elif target == ActionStatus.SUBMITTED:
            self.submitted_at, self.started_at, self.ended_at = now, None, None
        elif target == ActionStatus.RUNNING:
            self.started_at, self.ended_at = now, None
        elif target in ACTION_TERMINAL:
            self.ended_at = now
        elif target == ActionStatus.WAITING:  # rerun
            self.ready_at = self.submitted_at = self.started_at = self.ended_at = None
        self.status = target


class StatusChange(models.Model):
    """One status change of a coordinator job or action: from, to, when, by which command or user, why.

    Written in the transaction that saves the new status (see `record_changes`), so the history
    never shows a change that did not happen. A job's history holds its own changes only.
    """

    class Kind(models.TextChoices):
        JOB = "job"
        ACTION = "action"

    kind = models.CharField(max_length=8, choices=Kind.choices)
    object_id = models.CharField(max_length=60, help_text="the job id, or the action id (`<job id>@<number>`)")
    job_id = models.CharField(max_length=40, help_text="the job (of the action)")
    from_status = models.CharField(max_length=20, blank=True)
    to_status = models.CharField(max_length=20)
    at = models.DateTimeField()
    by = models.CharField(max_length=200, blank=True, help_text="the command, service or user that changed it")
    reason = models.TextField(blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["object_id", "at"], name="coord_status_change_idx"),
            models.Index(fields=["job_id"], name="coord_status_change_job_idx"),  # purge of whole jobs
        ]
        ordering = ["at", "id"]

    def __str__(self) -> str:
        return f"{self.object_id}: {self.from_status} -> {self.to_status}"


def record_changes(kind: str, object_id: str, job_id: str, changes: list[tuple[str, str, Any, str]]) -> None:
    """Store (from, to, at, reason) changes of one job or action, by whoever acts now (see coordinators.history)."""
    if not changes:
        return

    by = current_actor()
    StatusChange.objects.bulk_create([
        StatusChange(kind=kind, object_id=object_id, job_id=job_id, from_status=old, to_status=new, at=at,
                     by=by[:200], reason=(reason or "")[:4000])
        for old, new, at, reason in changes
    ])


def save_actions(actions: Iterable[CoordinatorAction], fields: Iterable[str]) -> None:
    """`save(update_fields=fields)` of many actions at once: one UPDATE for them all, one INSERT of their status changes.

    The same rows as saving each in turn (the stamps and modification time with the status,
    each change with its reason), in the caller's transaction, for the many actions one command
    moves together (a job's READY actions submitted: bounded by throttle).
    """
    actions = list(actions)
    if not actions:
        return
    wanted = set(fields) | {"last_modified"}
    if "status" in wanted:
        wanted |= {"submitted_at", "started_at", "ended_at", "ready_at"}
    now = timezone.now()
    by = current_actor()[:200]
    changes: list[StatusChange] = []
    for action in actions:
        action.last_modified = now
        for old, new, at, why in action.__dict__.pop("_changes", []) if "status" in wanted else ():
            reason = why or (action.error_message if new in ACTION_TERMINAL else "")
            changes.append(StatusChange(kind=StatusChange.Kind.ACTION, object_id=action.id, job_id=action.job_id,
                                        from_status=old, to_status=new, at=at, by=by, reason=(reason or "")[:4000]))
    with transaction.atomic(savepoint=False):
        sqlbatch.update_many(CoordinatorAction, actions, sorted(wanted))
        StatusChange.objects.bulk_create(changes, batch_size=500)


# SLA records live in their own module; importing them here makes them models of this app.
from coordinators.sla.models import SLAEvent, SLARegistration  # noqa: E402, F401
