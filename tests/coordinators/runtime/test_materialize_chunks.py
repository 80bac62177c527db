"""Materialization's write path (ADR 0024): rows streamed as planned, all or none, throttle exact."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.test import override_settings
from django.utils import timezone

from coordinators.bulk import ActionWriter
from coordinators.choices import ActionStatus
from coordinators.commands import CoordMaterializeXCommand
from coordinators.models import CoordinatorAction, CoordinatorJob
from coordinators.services import submit_coordinator
from datasets.timeline import format_datetime
from tests.support.engine import run_pending_commands
from xcommands.queue import enqueue


def xml(start: str, end: str, throttle: int) -> str:
    return f"""<coordinator-app name="chunks" frequency="${{coord:minutes(1)}}" start="{start}" end="{end}" timezone="UTC"
        xmlns="uri:oozie:coordinator:0.4">
      <controls><throttle>{throttle}</throttle></controls>
      <datasets><dataset name="d" frequency="${{coord:minutes(1)}}" initial-instance="2000-01-01T00:00Z" timezone="UTC">
        <uri-template>file:///data/${{YEAR}}${{MONTH}}${{DAY}}${{HOUR}}${{MINUTE}}</uri-template></dataset></datasets>
      <input-events><data-in name="in" dataset="d">
        <start-instance>${{coord:current(-1)}}</start-instance><end-instance>${{coord:current(0)}}</end-instance>
      </data-in></input-events>
      <action><workflow><app-path>task:examples.noop</app-path></workflow></action>
    </coordinator-app>"""


def minutes_ago(n: int) -> str:
    return format_datetime((timezone.now() - timedelta(minutes=n)).replace(second=0, microsecond=0))


def new_job(throttle: int = 100) -> CoordinatorJob:
    owner = User.objects.create_user(f"owner{CoordinatorJob.objects.count()}")
    return submit_coordinator(xml(minutes_ago(30), minutes_ago(10), throttle), {}, owner=owner)


def action(job: CoordinatorJob, number: int) -> CoordinatorAction:
    nominal = timezone.now().replace(second=0, microsecond=0) - timedelta(minutes=number)
    return CoordinatorAction(
        id=CoordinatorAction.action_id(job.id, number), job=job, number=number, nominal_time=nominal,
        created_time=nominal, data_in={"in": [f"file:///data/{number}"]}, data_out={},
        run_conf={"app_path": "task:examples.noop"}, missing_dependencies=[(f"file:///data/{number}", "_SUCCESS")],
        next_check_at=nominal,
    )


@pytest.mark.django_db
def test_the_writer_stores_every_field_as_given() -> None:
    """Rows written by ActionWriter read back with the values the actions had; (uri, flag) pairs as JSON arrays."""
    job = new_job()
    made = [action(job, number) for number in (1, 2, 3)]
    with ActionWriter() as writer:
        for item in made:
            writer.add(item)
    stored = list(CoordinatorAction.objects.filter(job=job).order_by("number"))
    assert [a.number for a in stored] == [1, 2, 3]
    for given, row in zip(made, stored, strict=True):
        assert row.data_in == given.data_in and row.run_conf == given.run_conf
        assert row.missing_dependencies == [[f"file:///data/{row.number}", "_SUCCESS"]]
        assert row.nominal_time == given.nominal_time and row.status == ActionStatus.WAITING
        assert row.last_modified is not None and row.check_count == 0 and row.error_message == ""


def as_values(item: CoordinatorAction) -> dict[str, object]:
    """The field values a materialize command gives the writer for a new action."""
    return {
        "id": item.id, "job_id": item.job_id, "number": item.number, "nominal_time": item.nominal_time,
        "created_time": item.created_time, "data_in": item.data_in, "data_out": item.data_out, "run_conf": item.run_conf,
        "missing_dependencies": item.missing_dependencies, "next_check_at": item.next_check_at,
        "timeout_at": item.timeout_at, "sla": {"nominal-time": "x"} if item.number == 2 else None,
    }


@pytest.mark.django_db
def test_rows_given_as_values_equal_rows_given_as_actions() -> None:
    """`add_values` (no model object on PostgreSQL) stores exactly what `add` stores, every column, defaults included."""
    by_object, by_values = new_job(), new_job()
    with ActionWriter() as writer:
        for number in (1, 2, 3, 4):
            item = action(by_object, number)
            item.sla = as_values(item)["sla"]
            writer.add(item)
    with ActionWriter() as writer:
        for number in (1, 2, 3, 4):
            writer.add_values(as_values(action(by_values, number)))
    skip = {"id", "job", "last_modified"}
    names = [f.attname for f in CoordinatorAction._meta.concrete_fields if f.name not in skip]
    first = list(CoordinatorAction.objects.filter(job=by_object).order_by("number").values(*names))
    second = list(CoordinatorAction.objects.filter(job=by_values).order_by("number").values(*names))
    assert len(first) == 4 and first == second
    assert second[1]["sla"] == {"nominal-time": "x"} and second[0]["sla"] is None
    assert not CoordinatorAction.objects.filter(job=by_values, last_modified__isnull=True).exists()


@pytest.mark.django_db
def test_a_failure_inside_the_block_writes_nothing() -> None:
    """An error after some actions were added (the COPY already open) leaves no row of them."""
    job = new_job()
    with pytest.raises(RuntimeError, match="mid-chunk"), transaction.atomic(), ActionWriter() as writer:
        writer.add(action(job, 1))
        writer.add(action(job, 2))
        raise RuntimeError("mid-chunk")
    assert not CoordinatorAction.objects.filter(job=job).exists()


@pytest.mark.django_db
def test_a_duplicate_number_fails_the_whole_chunk() -> None:
    """(job, number) stays unique: a chunk repeating a number is refused as a whole."""
    job = new_job()
    with pytest.raises(IntegrityError), transaction.atomic(), ActionWriter() as writer:
        writer.add(action(job, 1))
        duplicate = action(job, 1)
        duplicate.id = f"{job.id}@1-again"
        writer.add(duplicate)
    assert not CoordinatorAction.objects.filter(job=job).exists()


@pytest.mark.django_db
def test_a_writer_given_nothing_writes_nothing() -> None:
    """No action, no statement and no error."""
    with ActionWriter():
        pass
    assert not CoordinatorAction.objects.exists()


@pytest.mark.django_db(transaction=True)
@override_settings(COORD_MATERIALIZATION_CHUNK=3)
def test_chunks_stop_exactly_at_the_throttle(in_process_engine: None) -> None:
    """Throttle 8 in chunks of 3: 3 + 3 + 2 WAITING actions, then nothing until some leave WAITING.

    The first chunks know from the numbers alone that the throttle leaves room; the third
    must count, and stops at the throttle as before.
    """
    job = new_job(throttle=8)
    run_pending_commands()
    job.refresh_from_db()
    assert [a.number for a in job.actions.order_by("number")] == list(range(1, 9))
    assert job.last_action_number == 8 and job.pending is False
    CoordinatorAction.objects.filter(job=job, number__lte=4).update(status=ActionStatus.READY)
    enqueue(CoordMaterializeXCommand(job_id=job.id))
    run_pending_commands()
    job.refresh_from_db()
    assert job.actions.filter(status=ActionStatus.WAITING).count() == 8
    assert [a.number for a in job.actions.order_by("number")] == list(range(1, 13))
    assert all(len(a.data_in["in"]) == 2 for a in job.actions.all())
