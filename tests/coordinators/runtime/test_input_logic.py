"""Input logic at runtime against real files (spec 6.10): READY as soon as the logic holds, waits, reasons, dataIn."""

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

STARTED = (ActionStatus.READY, ActionStatus.SUBMITTED, ActionStatus.RUNNING, ActionStatus.SUCCEEDED)


@pytest.fixture(autouse=True)
def _engine(in_process_engine: None) -> None:
    """Every test here runs commands in process."""


def hour(offset: int) -> str:
    return format_datetime((timezone.now() + timedelta(hours=offset)).replace(minute=0, second=0, microsecond=0))


def job(data: Path, logic: str, *, timeout: int = -1) -> CoordinatorJob:
    """An hourly job of one action (the current hour) reading data-ins A and B (the last two hours of a and b)."""
    datasets = "".join(
        f"""<dataset name="{n}" frequency="${{coord:hours(1)}}" initial-instance="2020-01-01T00:00Z" timezone="UTC">
            <uri-template>file://{data}/{n}/${{YEAR}}${{MONTH}}${{DAY}}${{HOUR}}</uri-template></dataset>"""
        for n in "ab"
    )
    inputs = "".join(
        f"""<data-in name="{n.upper()}" dataset="{n}"><start-instance>${{coord:current(-1)}}</start-instance>
            <end-instance>${{coord:current(0)}}</end-instance></data-in>"""
        for n in "ab"
    )
    xml = f"""<coordinator-app name="logic" frequency="${{coord:hours(1)}}" start="{hour(0)}" end="{hour(1)}" timezone="UTC"
        xmlns="uri:oozie:coordinator:0.5">
      <controls><timeout>{timeout}</timeout></controls>
      <datasets>{datasets}</datasets>
      <input-events>{inputs}</input-events>
      <input-logic>{logic}</input-logic>
      <action><workflow><app-path>task:examples.noop</app-path>
        <configuration><property><name>input</name><value>${{coord:dataIn('either')}}</value></property></configuration>
      </workflow></action>
    </coordinator-app>"""
    created = submit_coordinator(xml, {}, owner=User.objects.get_or_create(username="logic")[0])
    run_pending_commands()
    return created


def instance(data: Path, dataset: str, offset_hours: int, *, create: bool = True) -> str:
    """The URI of `dataset`'s instance `offset_hours` from the current hour; created with _SUCCESS unless told not to."""
    moment = (timezone.now() + timedelta(hours=offset_hours)).strftime("%Y%m%d%H")
    if create:
        (data / dataset / moment).mkdir(parents=True, exist_ok=True)
        (data / dataset / moment / "_SUCCESS").write_text("")
    return f"file://{data}/{dataset}/{moment}"


def check(the_job: CoordinatorJob) -> CoordinatorAction:
    """One input-check tick, then the action as stored."""
    CoordinatorAction.objects.filter(job=the_job, status=ActionStatus.WAITING).update(next_check_at=timezone.now())
    services.input_checks(timezone.now())
    run_pending_commands()
    return the_job.actions.get(number=1)


OR = '<or name="either"><data-in dataset="A"/><data-in dataset="B"/></or>'


def test_or_runs_on_the_second_source_and_data_in_is_what_satisfied_it(tmp_path: Path) -> None:
    """Only B is there: the action goes READY (and on) at once, coord:dataIn('either') is B's URIs, nothing missing."""
    b = [instance(tmp_path, "b", -1), instance(tmp_path, "b", 0)]
    action = check(job(tmp_path, OR))
    assert action.status in STARTED
    assert action.run_conf["input"] == ",".join(b)
    assert action.missing_dependencies == []


def test_or_waits_for_either_source_and_says_so(tmp_path: Path) -> None:
    """Neither complete: WAITING, its missing list is what either branch lacks; completing A starts it with A."""
    the_job = job(tmp_path, OR)
    a_old = instance(tmp_path, "a", -1)
    b_new = instance(tmp_path, "b", 0)
    action = check(the_job)
    assert action.status == ActionStatus.WAITING
    assert sorted(uri for uri, _ in action.missing_dependencies) == sorted(
        [instance(tmp_path, "a", 0, create=False), instance(tmp_path, "b", -1, create=False)]
    )
    assert action.run_conf["input"] == "${coord:dataIn('either')}"
    a_new = instance(tmp_path, "a", 0)
    action = check(the_job)
    assert action.status in STARTED
    assert action.run_conf["input"] == f"{a_old},{a_new}"
    assert b_new not in action.run_conf["input"]


def test_and_waits_for_the_missing_instance_only(tmp_path: Path) -> None:
    """<and>: A complete, B half there: the action waits for B's missing instance; when it comes, A's and B's URIs."""
    the_job = job(tmp_path, '<and name="either"><data-in dataset="A"/><data-in dataset="B"/></and>')
    a = [instance(tmp_path, "a", -1), instance(tmp_path, "a", 0)]
    b_old = instance(tmp_path, "b", -1)
    action = check(the_job)
    assert action.status == ActionStatus.WAITING
    assert action.missing_dependencies == [[instance(tmp_path, "b", 0, create=False), "_SUCCESS"]]
    b_new = instance(tmp_path, "b", 0)
    action = check(the_job)
    assert action.status in STARTED
    assert action.run_conf["input"] == ",".join([*a, b_old, b_new])


def test_wait_gives_the_first_source_precedence_then_falls_back(tmp_path: Path) -> None:
    """A wait 60: B complete does not start the action while A's hour runs; the check returns when it ends; then B."""
    the_job = job(tmp_path, '<or name="either"><data-in dataset="A" wait="60"/><data-in dataset="B"/></or>')
    b = [instance(tmp_path, "b", -1), instance(tmp_path, "b", 0)]
    action = check(the_job)
    assert action.status == ActionStatus.WAITING
    assert {uri for uri, _ in action.missing_dependencies} == {
        instance(tmp_path, "a", -1, create=False), instance(tmp_path, "a", 0, create=False)
    }
    waits_from = max(action.nominal_time, action.created_time)
    assert action.next_check_at is not None and action.next_check_at <= waits_from + timedelta(minutes=60)
    # An hour later (moved back in time: the wait counts from the later of nominal and creation time).
    earlier = timezone.now() - timedelta(minutes=61)
    CoordinatorAction.objects.filter(pk=action.pk).update(created_time=earlier)
    the_job.actions.filter(pk=action.pk).update(nominal_time=min(action.nominal_time, earlier))
    action = check(the_job)
    assert action.status in STARTED
    assert action.run_conf["input"] == ",".join(b)


def test_min_starts_with_part_of_a_range(tmp_path: Path) -> None:
    """min 1: one of A's two instances is enough; coord:dataIn gives that one."""
    present = instance(tmp_path, "a", -1)
    action = check(job(tmp_path, '<data-in name="either" dataset="A" min="1"/>'))
    assert action.status in STARTED
    assert action.run_conf["input"] == present


def test_combine_fills_a_gap_from_the_second_source(tmp_path: Path) -> None:
    """combine: A's older instance and B's newer one make the whole range, in order."""
    a_old, b_new = instance(tmp_path, "a", -1), instance(tmp_path, "b", 0)
    action = check(job(tmp_path, '<combine name="either"><data-in dataset="A"/><data-in dataset="B"/></combine>'))
    assert action.status in STARTED
    assert action.run_conf["input"] == f"{a_old},{b_new}"


def test_timeout_names_the_logic(tmp_path: Path) -> None:
    """Timed out while the logic is not satisfied: the message says which logic and what it lacked."""
    the_job = job(tmp_path, OR, timeout=0)
    action = check(the_job)
    assert action.status == ActionStatus.TIMEDOUT
    assert "input logic either=(A or B)" in action.error_message
    assert "A (2 missing), B (2 missing)" in action.error_message
