"""Bundle jobs and their actions (one per coordinator) as stored.

A bundle job keeps what was accepted at submission: its XML, its job properties after
`<parameters>` defaults, and a snapshot of every coordinator application it read then, so a
bundle started later (kick-off time) submits exactly what was validated. A bundle action
mirrors its coordinator job's status; the mirror is written in the transaction that changes
the coordinator's status (`bundles.status`), so the two never disagree after a commit.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q

from bundles.choices import BUNDLE_TERMINAL, BUNDLE_TRANSITIONS, BundleStatus
from coordinators.choices import JobStatus
from kernel.history import RecordsStatus
from kernel.statemachine import check_transition

JOB_ID_SUFFIX = "B"
BUNDLE_KIND = "bundle"  # its kind in the status history (kernel.history)


class BundleJob(RecordsStatus):
    """A submitted bundle: its definition, properties, owner, ACL, kick-off, pause and end times, status.

    Invariant: bundle actions exist once it started (RUNNING and after), one per enabled
    coordinator. Every saved status change is recorded (kernel.history).
    """

    status_kind = BUNDLE_KIND

    id = models.CharField(max_length=40, primary_key=True)
    app_name = models.CharField(max_length=255, db_index=True)
    app_path = models.CharField(max_length=1024, blank=True)
    definition = models.TextField(help_text="the bundle XML as submitted")
    applications = models.JSONField(
        default=dict, blank=True,
        help_text="each coordinator's application as read at submission: {name: {definition, app_dir, includes}}",
    )
    configuration = models.JSONField(default=dict, help_text="job properties after <parameters> defaults")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="bundle_jobs")
    acl = models.CharField(max_length=1024, blank=True, help_text="oozie.job.acl: users and groups who may act")
    external_id = models.CharField(
        max_length=255, blank=True, help_text="the submitter's id: the same owner submitting it again gets this bundle"
    )
    status = models.CharField(max_length=20, choices=BundleStatus.choices, default=BundleStatus.PREP, db_index=True)
    pending = models.BooleanField(default=False, help_text="a verb on this bundle is being carried out")
    kick_off_time = models.DateTimeField(null=True, blank=True, help_text="when it starts by itself (None: at once)")
    pause_time = models.DateTimeField(null=True, blank=True)
    end_time = models.DateTimeField(null=True, blank=True, help_text="set by -change endtime; given to its coordinators")
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_modified = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["owner", "external_id"], condition=~Q(external_id=""), name="bundle_owner_external_id_uniq"
            ),
        ]
        indexes = [
            # Kick-off service: PREP bundles whose kick-off time came.
            models.Index(
                fields=["kick_off_time"], condition=Q(status=BundleStatus.PREP, pending=False), name="bundle_kickoff_idx"
            ),
            models.Index(fields=["pause_time"], condition=Q(pause_time__isnull=False), name="bundle_pause_idx"),
            models.Index(fields=["created_at", "id"], name="bundle_created_idx"),
            models.Index(fields=["status", "created_at", "id"], name="bundle_status_created_idx"),
            models.Index(fields=["owner", "-created_at"], name="bundle_owner_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.id} {self.app_name} [{self.status}]"

    def save(self, *args: Any, **kwargs: Any) -> None:
        """Partial saves still move the modification time."""
        fields = kwargs.get("update_fields")
        if fields is not None:
            kwargs["update_fields"] = sorted(set(fields) | {"last_modified"})
        super().save(*args, **kwargs)

    def transition_to(self, target: str) -> None:
        """Change status if the table allows it; raise IllegalTransition otherwise (caller saves)."""
        check_transition(BUNDLE_TRANSITIONS, self.status, target, f"bundle job {self.id}")
        self.status = target

    @property
    def is_terminal(self) -> bool:
        """SUCCEEDED, DONEWITHERROR, KILLED or FAILED."""
        return self.status in BUNDLE_TERMINAL


class BundleAction(models.Model):
    """One coordinator of a started bundle: its name, its coordinator job once submitted, its mirrored status.

    `pending` counts the verbs the bundle sent the coordinator that it has not carried out
    yet; `dirty` marks a mirror change the bundle's status has not been derived from yet.
    """

    id = models.CharField(max_length=300, primary_key=True, help_text="<bundle id>_<coordinator name>")
    bundle = models.ForeignKey(BundleJob, on_delete=models.CASCADE, related_name="actions")
    coord_name = models.CharField(max_length=255)
    coord_job = models.OneToOneField(
        "coordinators.CoordinatorJob", null=True, blank=True, on_delete=models.SET_NULL, related_name="bundle_action",
    )
    planned_coord_id = models.CharField(
        max_length=40, blank=True, help_text="the id its coordinator job is (or will be) submitted under"
    )
    status = models.CharField(max_length=20, choices=JobStatus.choices, default=JobStatus.PREP)
    critical = models.BooleanField(default=False)
    pending = models.IntegerField(default=0)
    dirty = models.BooleanField(default=False, help_text="changed since the bundle's status was last derived")
    error_message = models.TextField(blank=True, help_text="why its coordinator could not be submitted")
    last_modified = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["bundle", "coord_name"], name="bundle_action_name_uniq")]
        indexes = [models.Index(fields=["bundle"], condition=Q(dirty=True), name="bundle_action_dirty_idx")]

    def __str__(self) -> str:
        return f"{self.id} [{self.status}]"

    def save(self, *args: Any, **kwargs: Any) -> None:
        """Partial saves still move the modification time."""
        fields = kwargs.get("update_fields")
        if fields is not None:
            kwargs["update_fields"] = sorted(set(fields) | {"last_modified"})
        super().save(*args, **kwargs)
