"""SLA records as stored: one registration per action with an SLA, and the events it produced.

Imported by `coordinators.models`, so they belong to the coordinators app.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from coordinators.sla.rules import EventType, SLAStatus

EVENT_CHOICES = [(e.value, e.value) for e in EventType]
STATUS_CHOICES = [(s.value, s.value.replace("_", " ").capitalize()) for s in SLAStatus]


class NotifyStatus(models.TextChoices):
    """Delivery of an event to its channels (e-mail, webhook)."""

    NONE = "NONE", "nothing to send"
    PENDING = "PENDING", "pending"
    SENT = "SENT", "sent"
    FAILED = "FAILED", "failed (gave up)"


class SLARegistration(models.Model):
    """What an action's SLA expects, what actually happened, and the SLA status (Oozie's SLA summary).

    Invariant: each criterion (start, duration, end) is decided at most once per run, and a
    record is scanned only while open, through its next due time (`next_check_at`).
    """

    action = models.OneToOneField(
        "coordinators.CoordinatorAction", on_delete=models.CASCADE, primary_key=True, related_name="sla_registration"
    )
    job = models.ForeignKey("coordinators.CoordinatorJob", on_delete=models.CASCADE, related_name="sla_registrations")
    version = models.CharField(max_length=8, help_text="uri:oozie:sla version, 0.1 or 0.2")
    app_name = models.CharField(max_length=255)
    user = models.CharField(max_length=150)
    nominal_time = models.DateTimeField()
    expected_start = models.DateTimeField(null=True, blank=True)
    expected_end = models.DateTimeField(null=True, blank=True)
    expected_duration = models.DurationField(null=True, blank=True)
    alert_events = models.JSONField(null=True, blank=True, help_text="events e-mailed; null: SLA_ALERT_EVENTS")
    alert_contact = models.CharField(max_length=1024, blank=True)
    notification_msg = models.TextField(blank=True)
    upstream_apps = models.CharField(max_length=1024, blank=True)
    info = models.JSONField(default=dict, help_text="the evaluated sla:info, every field")
    sla_status = models.CharField(max_length=16, choices=STATUS_CHOICES, default=SLAStatus.NOT_STARTED.value)
    start_event = models.CharField(max_length=16, choices=EVENT_CHOICES, blank=True)
    duration_event = models.CharField(max_length=16, choices=EVENT_CHOICES, blank=True)
    end_event = models.CharField(max_length=16, choices=EVENT_CHOICES, blank=True)
    job_status = models.CharField(max_length=16, blank=True, help_text="the action's status at the last check")
    actual_start = models.DateTimeField(null=True, blank=True)
    actual_end = models.DateTimeField(null=True, blank=True)
    actual_duration = models.DurationField(null=True, blank=True)
    run = models.IntegerField(default=0, help_text="the action's run (rerun count) this record tracks")
    closed = models.BooleanField(default=False, help_text="every criterion decided; no longer scanned")
    next_check_at = models.DateTimeField(null=True, blank=True, help_text="next expected time to check")
    created_at = models.DateTimeField(auto_now_add=True)
    last_modified = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "SLA record"
        indexes = [
            # The checker scans only open records: due ones by time, the rest for start/end news.
            models.Index(fields=["next_check_at"], condition=Q(closed=False), name="coord_sla_due_idx"),
            models.Index(fields=["job", "nominal_time"], name="coord_sla_job_idx"),
            models.Index(fields=["sla_status", "nominal_time"], name="coord_sla_status_idx"),
        ]

    def __str__(self) -> str:
        return f"SLA {self.action_id} [{self.sla_status}]"

    @property
    def event_status(self) -> str:
        """Decided events, comma separated, as Oozie's eventStatus shows them."""
        return ",".join(e for e in (self.start_event, self.duration_event, self.end_event) if e)


class SLAEvent(models.Model):
    """One decided SLA event of one run of an action, and its delivery to e-mail and the webhook.

    Invariant: (registration, event type, run) is unique, so two checkers never record it twice.
    """

    registration = models.ForeignKey(SLARegistration, on_delete=models.CASCADE, related_name="events")
    job = models.ForeignKey("coordinators.CoordinatorJob", on_delete=models.CASCADE, related_name="sla_events")
    event_type = models.CharField(max_length=16, choices=EVENT_CHOICES)
    run = models.IntegerField(default=0)
    occurred_at = models.DateTimeField(help_text="the deadline missed, or the actual start/end")
    recorded_at = models.DateTimeField(auto_now_add=True)
    payload = models.JSONField(default=dict, help_text="the message sent (Oozie's SLA JSON fields)")
    notify_status = models.CharField(max_length=8, choices=NotifyStatus.choices, default=NotifyStatus.NONE)
    channels = models.JSONField(default=list, help_text="channels still to deliver to")
    attempts = models.IntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "SLA event"
        constraints = [
            models.UniqueConstraint(fields=["registration", "event_type", "run"], name="coord_sla_event_once"),
        ]
        indexes = [
            models.Index(
                fields=["next_attempt_at"], condition=Q(notify_status="PENDING"), name="coord_sla_notify_idx"
            ),
            models.Index(fields=["event_type", "-recorded_at"], name="coord_sla_event_type_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.event_type} {self.registration_id}"
