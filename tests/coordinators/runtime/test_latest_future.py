"""coord:latest and coord:future resolved at action start against real files (phase 3, spec 6.6.6-6.6.7)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from coordinators.choices import ActionStatus
from coordinators.models import CoordinatorAction, CoordinatorJob
from coordinators.services import submit_coordinator
from datasets.timeline import format_datetime
from statusservice import coordinators as services
from tests.support.engine import run_pending_commands

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _engine(in_process_engine: None) -> None:
    """Every test here runs commands in process."""


def hour(offset: int) -> str:
    return format_datetime((timezone.now() + timedelta(hours=offset)).replace(minute=0, second=0, microsecond=0))


def job(data: Path, instance: str) -> CoordinatorJob:
    """An hourly job of one action (the current hour) whose input is `instance` of an hourly dataset under data."""
    xml = f"""<coordinator-app name="lf" frequency="${{coord:hours(1)}}" start="{hour(0)}" end="{hour(1)}" timezone="UTC"
        xmlns="uri:oozie:coordinator:0.4">
      <datasets><dataset name="d" frequency="${{coord:hours(1)}}" initial-instance="2020-01-01T00:00Z" timezone="UTC">
        <uri-template>file://{data}/${{YEAR}}${{MONTH}}${{DAY}}${{HOUR}}</uri-template></dataset></datasets>
      <input-events><data-in name="in" dataset="d"><instance>{instance}</instance></data-in></input-events>
      <action><workflow><app-path>task:examples.noop</app-path>
        <configuration><property><name>input</name><value>${{coord:dataIn('in')}}</value></property></configuration>
      </workflow></action>
    </coordinator-app>"""
    created = submit_coordinator(xml, {}, owner=User.objects.get_or_create(username="lf")[0])
    run_pending_commands()
    return created


def instance(data: Path, offset_hours: int) -> str:
    """Create the instance `offset_hours` from the current hour (with its _SUCCESS flag); its URI."""
    moment = (timezone.now() + timedelta(hours=offset_hours)).strftime("%Y%m%d%H")
    (data / moment).mkdir(parents=True, exist_ok=True)
    (data / moment / "_SUCCESS").write_text("")
    return f"file://{data}/{moment}"


def check(the_job: CoordinatorJob) -> CoordinatorAction:
    """One input-check tick, then the action as stored."""
    CoordinatorAction.objects.filter(job=the_job).update(next_check_at=timezone.now())
    services.input_checks(timezone.now())
    run_pending_commands()
    return the_job.actions.get(number=1)


def test_latest_zero_is_the_newest_available_instance_skipping_gaps(tmp_path: Path) -> None:
    """coord:latest(0): the newest available instance at or before the action's creation; latest(-1) the one before."""
    data = tmp_path / "data"
    older, newer = instance(data, -5), instance(data, -2)
    action = check(job(data, "${coord:latest(0)}"))
    assert action.status in (ActionStatus.READY, ActionStatus.SUBMITTED)
    assert action.data_in == {"in": [newer]}
    assert action.run_conf["input"] == newer
    second = check(job(data, "${coord:latest(-1)}"))
    assert second.data_in == {"in": [older]}


def test_latest_waits_until_something_is_available(tmp_path: Path) -> None:
    """With no instance available the action keeps waiting with its expression; one appearing resolves it."""
    data = tmp_path / "data"
    the_job = job(data, "${coord:latest(0)}")
    action = check(the_job)
    assert action.status == ActionStatus.WAITING
    assert action.data_in == {"in": ["${coord:latest(0)}"]}
    uri = instance(data, -1)
    action = check(the_job)
    assert action.status in (ActionStatus.READY, ActionStatus.SUBMITTED)
    assert action.data_in == {"in": [uri]}


def test_future_finds_the_first_available_instance_within_its_limit(tmp_path: Path) -> None:
    """coord:future(0, 3): the first available instance from the nominal one on, at most 3 ahead; farther does not count."""
    data = tmp_path / "data"
    the_job = job(data, "${coord:future(0, 3)}")
    instance(data, 5)  # beyond the limit
    assert check(the_job).status == ActionStatus.WAITING
    uri = instance(data, 2)
    action = check(the_job)
    assert action.data_in == {"in": [uri]}
    assert action.run_conf["input"] == uri
