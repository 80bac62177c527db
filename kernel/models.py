"""What the security boundaries remember across processes and hosts (kernel.auth_guard)."""

from __future__ import annotations

from django.db import models


class AuthFailure(models.Model):
    """One failed credential check: where, from which client address, naming which username, when.

    kernel.auth_guard counts these rows per address and per username within a window; rows
    older than the window mean nothing and are purged.
    """

    scope = models.CharField(max_length=32, help_text="where the check failed: admin, api, oozie, metrics")
    client_ip = models.CharField(max_length=64, help_text="the client address (an IPv6 /64 network)")
    username = models.CharField(max_length=150, blank=True, help_text="the username named, '' for a token")
    at = models.DateTimeField()

    class Meta:
        indexes = [
            # The lock checks: the failures of one address, or one username, newest first.
            models.Index(fields=["client_ip", "at"], name="kernel_authfailure_ip_at"),
            models.Index(fields=["username", "at"], name="kernel_authfailure_user_at"),
            # The purge of rows older than the window.
            models.Index(fields=["at"], name="kernel_authfailure_at"),
        ]

    def __str__(self) -> str:
        return f"{self.scope} failure from {self.client_ip} ({self.username or 'no username'}) at {self.at:%Y-%m-%d %H:%M:%S}"


class TaskTry(models.Model):
    """One try of a node, an action's run, a batch job's stage or a command: how it ended, its traceback and log.

    Written once, when the try ends (kernel.tries), in the transaction that records its outcome,
    and never updated: a rerun, a retry or a relaunch after a lost worker adds a row, so every
    earlier try stays readable. In the database, not on a worker's disk: any host's web process
    shows any host's tries. Rows older than TRY_LOG_RETENTION_DAYS are purged hourly.
    """

    class Kind(models.TextChoices):
        NODE = "node"
        STAGE = "stage"
        COMMAND = "command"

    kind = models.CharField(max_length=8, choices=Kind.choices)
    object_id = models.CharField(max_length=200, help_text="the node, batch job or command id")
    job_id = models.CharField(max_length=200, blank=True, help_text="its workflow, batch or command key")
    action_id = models.CharField(max_length=60, blank=True, help_text="the coordinator action the workflow runs for")
    root_id = models.CharField(max_length=200, blank=True, help_text="the job whose log tells it: the coordinator, else job_id")
    name = models.CharField(max_length=200, blank=True, help_text="the node's name, the stage, the command's name")
    run = models.IntegerField(default=0, help_text="the workflow's run (a rerun adds one)")
    attempt = models.IntegerField(default=1, help_text="the launch within the run")
    worker = models.CharField(max_length=200, blank=True, help_text="the Celery node name and pid that ran it")
    status = models.CharField(max_length=20, help_text="how it ended: OK, ERROR, FAILED, RETRY, LOST, ...")
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField()
    error_code = models.CharField(max_length=64, blank=True)
    error_message = models.TextField(blank=True)
    traceback = models.TextField(blank=True, help_text="the error's full traceback (tail kept)")
    log = models.TextField(blank=True, help_text="what the try logged and printed (tail kept, secrets masked)")
    log_dropped = models.IntegerField(default=0, help_text="characters of log (or traceback) dropped from the head")

    class Meta:
        indexes = [
            models.Index(fields=["object_id", "id"], name="kernel_tasktry_object"),
            models.Index(fields=["job_id", "id"], name="kernel_tasktry_job"),
            models.Index(fields=["action_id", "id"], name="kernel_tasktry_action"),
            models.Index(fields=["root_id", "id"], name="kernel_tasktry_root"),
            models.Index(fields=["ended_at"], name="kernel_tasktry_ended"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.object_id} run {self.run} try {self.attempt}: {self.status}"


class StatusRecord(models.Model):
    """One status change of a workflow job or node, bundle, batch, batch job or operation: from, to, when, by, why.

    Written in the transaction that saves the new status (kernel.history), one row per change,
    so a History page never shows a change that did not happen. Coordinator jobs and actions
    keep their own table (coordinators.StatusChange), older than this one.
    """

    kind = models.CharField(max_length=16, help_text="what changed: workflow, node, bundle, batch, batch-job, operation")
    object_id = models.CharField(max_length=140, help_text="its primary key, as text")
    parent_id = models.CharField(max_length=140, blank=True, help_text="the object it belongs to (a node's workflow)")
    from_status = models.CharField(max_length=24, blank=True)
    to_status = models.CharField(max_length=24)
    at = models.DateTimeField()
    by = models.CharField(max_length=200, blank=True, help_text="the command, service or user that changed it")
    reason = models.TextField(blank=True)

    class Meta:
        indexes = [
            # An object's History page, and its children's changes (a workflow's nodes, an operation's jobs).
            models.Index(fields=["kind", "object_id", "at"], name="kernel_status_record_idx"),
            models.Index(fields=["kind", "parent_id", "at"], name="kernel_status_parent_idx"),
        ]
        ordering = ["at", "id"]

    def __str__(self) -> str:
        return f"{self.kind} {self.object_id}: {self.from_status} -> {self.to_status}"
