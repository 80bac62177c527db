"""Small builders for SLA tests: a coordinator with an SLA block, submitted, started and materialized."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.contrib.auth.models import User
from django.utils import timezone

from coordinators.models import CoordinatorJob
from coordinators.services import submit_coordinator
from datasets.timeline import format_datetime
from tests.support.engine import run_pending_commands

SLA_02 = """<sla:nominal-time>${coord:nominalTime()}</sla:nominal-time>
      <sla:should-start>${2 * MINUTES}</sla:should-start>
      <sla:should-end>${10 * MINUTES}</sla:should-end>
      <sla:max-duration>${5 * MINUTES}</sla:max-duration>
      <sla:alert-events>start_miss,end_miss,duration_miss</sla:alert-events>
      <sla:alert-contact>ops@example.com, oncall@example.com</sla:alert-contact>
      <sla:notification-msg>hourly load ${coord:nominalTime()}</sla:notification-msg>"""

SLA_01 = """<sla:app-name>legacy-load</sla:app-name>
      <sla:nominal-time>${coord:nominalTime()}</sla:nominal-time>
      <sla:should-start>${2 * MINUTES}</sla:should-start>
      <sla:should-end>${10 * MINUTES}</sla:should-end>
      <sla:alert-contact>ops@example.com</sla:alert-contact>
      <sla:dev-contact>dev@example.com</sla:dev-contact>
      <sla:qa-contact>qa@example.com</sla:qa-contact>
      <sla:se-contact>se@example.com</sla:se-contact>"""


def minute_floor(moment: datetime) -> datetime:
    return moment.replace(second=0, microsecond=0)


def sla_xml(start: datetime, end: datetime, sla: str = SLA_02, version: str = "0.2", name: str = "sla-job") -> str:
    schema = "0.4" if version == "0.2" else "0.2"
    return f"""<coordinator-app name="{name}" frequency="${{coord:minutes(5)}}" start="{format_datetime(start)}"
        end="{format_datetime(end)}" timezone="UTC" xmlns="uri:oozie:coordinator:{schema}" xmlns:sla="uri:oozie:sla:{version}">
      <controls><throttle>50</throttle></controls>
      <action><workflow><app-path>task:examples.noop</app-path></workflow>
        {f"<sla:info>{sla}</sla:info>" if sla else ""}</action>
    </coordinator-app>"""


def materialized_job(
    *, actions: int = 1, ago: timedelta = timedelta(minutes=1), sla: str = SLA_02, version: str = "0.2",
    owner: User | None = None, name: str = "sla-job",
) -> CoordinatorJob:
    """A started job whose first action's nominal time is `ago` before now, with `actions` actions."""
    owner = owner or User.objects.get_or_create(username="ann")[0]
    start = minute_floor(timezone.now() - ago)
    end = start + timedelta(minutes=5 * actions)
    job = submit_coordinator(sla_xml(start, end, sla, version, name), {}, owner=owner)
    run_pending_commands()
    job.refresh_from_db()
    return job
