"""Chained coordinators: a succeeded action announces its outputs, so the consumer starts without waiting for a backoff."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from coordinators.choices import ActionStatus
from coordinators.commands.actions import CoordActionStatusXCommand, check_backoff
from coordinators.models import CoordinatorAction, CoordinatorJob, StatusChange
from coordinators.services import submit_coordinator
from datasets.models import AvailableInstance
from datasets.timeline import format_datetime
from statusservice import coordinators as services
from tests.support.engine import run_pending_commands
from xcommands.queue import enqueue

pytestmark = pytest.mark.django_db(transaction=True)

STARTED = (ActionStatus.READY, ActionStatus.SUBMITTED, ActionStatus.RUNNING)


@pytest.fixture(autouse=True)
def _engine(in_process_engine: None) -> None:
    """Every test here runs commands in process."""


def hour(offset: int) -> str:
    return format_datetime((timezone.now() + timedelta(hours=offset)).replace(minute=0, second=0, microsecond=0))


def dataset(data: Path) -> str:
    return f"""<datasets><dataset name="mid" frequency="${{coord:hours(1)}}" initial-instance="2020-01-01T00:00Z" timezone="UTC">
        <uri-template>file://{data}/mid/${{YEAR}}${{MONTH}}${{DAY}}${{HOUR}}</uri-template></dataset></datasets>"""


def coordinator(name: str, data: Path, events: str) -> CoordinatorJob:
    """An hourly job of one action (the current hour) with the given input or output events."""
    xml = f"""<coordinator-app name="{name}" frequency="${{coord:hours(1)}}" start="{hour(0)}" end="{hour(1)}" timezone="UTC"
        xmlns="uri:oozie:coordinator:0.5">
      {dataset(data)}
      {events}
      <action><workflow><app-path>task:examples.noop</app-path></workflow></action>
    </coordinator-app>"""
    return submit_coordinator(xml, {}, owner=User.objects.get_or_create(username="chain")[0])


def pipeline(data: Path) -> tuple[CoordinatorAction, CoordinatorAction]:
    """A producer writing mid's current hour and a consumer reading it; the producer launched, the consumer waiting."""
    producer = coordinator("producer", data, """<output-events><data-out name="out" dataset="mid">
        <instance>${coord:current(0)}</instance></data-out></output-events>""")
    consumer = coordinator("consumer", data, """<input-events><data-in name="in" dataset="mid">
        <instance>${coord:current(0)}</instance></data-in></input-events>""")
    run_pending_commands()
    CoordinatorAction.objects.filter(status=ActionStatus.WAITING).update(next_check_at=timezone.now())
    services.input_checks(timezone.now())  # the first check, as the tick does
    run_pending_commands()
    made = producer.actions.get(number=1)
    waiting = consumer.actions.get(number=1)
    assert made.status == ActionStatus.SUBMITTED
    assert waiting.status == ActionStatus.WAITING and waiting.check_count >= 1
    return made, waiting


def write_output(action: CoordinatorAction) -> str:
    """What the producer's run does: its data-out directory with the done-flag."""
    uri = action.data_out["out"][0]
    folder = Path(uri.removeprefix("file://"))
    folder.mkdir(parents=True)
    (folder / "part-0").write_text("rows\n")
    (folder / "_SUCCESS").write_text("")
    return str(uri)


def report(action: CoordinatorAction, status: str) -> None:
    enqueue(CoordActionStatusXCommand(job_id=action.job_id, number=action.number, status=status,
                                      workflow_id=action.external_id))
    run_pending_commands()


def test_a_succeeded_producer_starts_its_consumer_at_once(tmp_path: Path) -> None:
    """The consumer's next check was a backoff away; the producer's success starts it in the same round of commands."""
    made, waiting = pipeline(tmp_path)
    assert waiting.next_check_at is not None and waiting.next_check_at > timezone.now()
    uri = write_output(made)
    report(made, ActionStatus.SUCCEEDED)
    waiting.refresh_from_db()
    assert waiting.status in STARTED
    assert waiting.missing_dependencies == [] and waiting.ready_at is not None
    instance = AvailableInstance.objects.get(uri=uri, done_flag="*")
    assert instance.source == "output"
    woke = StatusChange.objects.get(object_id=waiting.id, to_status=ActionStatus.READY)
    assert woke.by == "coordinators.CoordActionInputCheckXCommand"


def test_the_announcement_counts_without_the_done_flag(tmp_path: Path) -> None:
    """ADR 0018: the producer's success is its word that the output is complete, as a dataset event is."""
    made, waiting = pipeline(tmp_path)
    report(made, ActionStatus.SUCCEEDED)  # nothing written on storage
    waiting.refresh_from_db()
    assert waiting.status in STARTED


def test_a_failed_producer_announces_nothing(tmp_path: Path) -> None:
    """A failed run's outputs are not available: the consumer keeps waiting on its backoff."""
    made, waiting = pipeline(tmp_path)
    report(made, ActionStatus.FAILED)
    after = CoordinatorAction.objects.get(pk=waiting.pk)
    assert after.status == ActionStatus.WAITING
    assert after.next_check_at == waiting.next_check_at and after.check_count == waiting.check_count
    assert not AvailableInstance.objects.filter(uri=made.data_out["out"][0]).exists()


@pytest.mark.parametrize(("checks", "seconds"), [(0, 60), (1, 60), (10, 60)], ids=["first", "second", "tenth"])
def test_input_checks_back_off_to_at_most_a_minute_by_default(checks: int, seconds: int) -> None:
    """Oozie re-checks every 60 s: the default cap (COORD_INPUT_CHECK_MAX_SECONDS) is 60 s."""
    assert check_backoff(checks) == timedelta(seconds=seconds)


def test_the_backoff_cap_is_a_setting(settings: object) -> None:
    """A larger cap lets the delay double up to it."""
    settings.COORD_INPUT_CHECK_SECONDS = 10  # type: ignore[attr-defined]
    settings.COORD_INPUT_CHECK_MAX_SECONDS = 300  # type: ignore[attr-defined]
    assert [check_backoff(n).total_seconds() for n in range(7)] == [10, 20, 40, 80, 160, 300, 300]
