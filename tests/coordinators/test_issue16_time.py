"""Issue 16 through the coordinator: cron in the processing zone, empty jobs refused, reversed and
out-of-phase ranges refused (at submission when known, else the action FAILS), Java zone ids.

Oozie's words are kept: CoordSubmitXCommand ("materializes no actions between start and end time",
E1003), CoordCommandUtils / CoordELFunctions ("start-instance should be equal or earlier than the
end-instance", "initial-instance is not in phase with start-instance", E1010).
"""

from __future__ import annotations

import io
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import override_settings
from django.utils import timezone

from coordinators.choices import ActionStatus, JobStatus
from coordinators.models import CoordinatorAction, CoordinatorJob
from coordinators.plan import iter_action_plans, plan_action, resolve_coordinator
from coordinators.services import rerun_job, submit_coordinator
from datasets.timeline import format_datetime, parse_datetime, resolve_timezone, to_local
from oozie.definitions import DefinitionError, parse_coordinator
from tests.coordinators.api.factories import api, user
from tests.oozieapi.client import Oozie, error_of
from tests.support.engine import run_pending_commands
from xcommands.models import Command

NOW = parse_datetime("2026-01-01T00:00Z")
EMPTY = "materializes no actions between start and end time"
REVERSED = "start-instance should be equal or earlier than the end-instance"
OUT_OF_PHASE = "initial-instance is not in phase with start-instance"
BEFORE_INITIAL = "initial-instance should be equal or earlier than the start-instance"


def app_xml(
    *,
    frequency: str = "${coord:days(1)}",
    start: str = "2009-01-01T24:00Z",
    end: str = "2009-01-05T24:00Z",
    tz: str = "UTC",
    inputs: str = "",
    datasets: str = "",
    config: str = "",
) -> str:
    """A coordinator over an hourly dataset `logs` (from 01:00Z) and whatever `datasets` adds."""
    return f"""<coordinator-app name="issue16" frequency="{frequency}" start="{start}" end="{end}" timezone="{tz}"
        xmlns="uri:oozie:coordinator:0.4">
      <datasets>
        <dataset name="logs" frequency="${{coord:hours(1)}}" initial-instance="2009-01-01T01:00Z" timezone="UTC">
          <uri-template>file:///logs/${{YEAR}}/${{MONTH}}/${{DAY}}/${{HOUR}}</uri-template></dataset>
        {datasets}
      </datasets>
      {f"<input-events>{inputs}</input-events>" if inputs else ""}
      <action><workflow><app-path>task:examples.noop</app-path><configuration>
        <property><name>nominal</name><value>${{coord:nominalTime()}}</value></property>{config}
      </configuration></workflow></action>
    </coordinator-app>"""


def ranged(start: str, end: str, dataset: str = "logs") -> str:
    return (
        f'<data-in name="i" dataset="{dataset}"><start-instance>{start}</start-instance>'
        f"<end-instance>{end}</end-instance></data-in>"
    )


def resolve(xml: str, properties: dict[str, str] | None = None, processing: str = "UTC") -> Any:
    return resolve_coordinator(parse_coordinator(xml, "c.xml"), properties or {}, user="ann", processing_timezone=processing)


def refusal(xml: str, properties: dict[str, str] | None = None) -> str:
    """The one-line message a refused submission gives."""
    with pytest.raises(DefinitionError) as caught:
        resolve(xml, properties)
    message = str(caught.value)
    assert "\n" not in message
    return message


# ---- 1. cron in the processing time zone --------------------------------------------------


def test_tokyo_job_fires_at_utc_hours() -> None:
    """4.4.4 notes: with timezone="Asia/Tokyo", `0 1 * * 2-6` fires at 01:00 UTC = 10:00 Tokyo, weekdays."""
    resolved = resolve(app_xml(frequency="0 1 * * 2-6", start="2024-01-08T00:00Z", end="2024-01-15T00:00Z", tz="Asia/Tokyo"))
    tokyo = resolve_timezone("Asia/Tokyo")
    plans = list(iter_action_plans(resolved, now=NOW, max_actions=10))
    assert [format_datetime(p.nominal_time) for p in plans][:2] == ["2024-01-08T01:00Z", "2024-01-09T01:00Z"]
    assert [to_local(p.nominal_time, tokyo).strftime("%a %H:%M") for p in plans] == [
        "Mon 10:00", "Tue 10:00", "Wed 10:00", "Thu 10:00", "Fri 10:00",
    ]


def test_cron_reads_a_gmt_offset_processing_zone() -> None:
    """With OOZIE_PROCESSING_TIMEZONE=GMT+05:30, `0 10 * * *` fires at 10:00+0530 (04:30 UTC)."""
    resolved = resolve(app_xml(frequency="0 10 * * *", start="2024-01-01T00:00Z", end="2024-01-03T00:00Z"), processing="GMT+05:30")
    assert [format_datetime(p.nominal_time) for p in iter_action_plans(resolved, now=NOW, max_actions=5)] == [
        "2024-01-01T04:30Z", "2024-01-02T04:30Z",
    ]


# ---- 2. jobs that can never materialize an action -----------------------------------------


@pytest.mark.parametrize(
    ("frequency", "start", "end", "tz"),
    [
        pytest.param("0 10 * * *", "2013-10-18T21:00Z", "2013-10-18T22:00Z", "UTC", id="reference-4-4-4-example"),
        pytest.param("0 1 * * *", "2024-01-01T15:30Z", "2024-01-01T16:30Z", "Asia/Tokyo",
                     id="cron-fires-at-01-00-tokyo-but-not-utc-in-the-window"),
        pytest.param("${coord:endOfDays(1)}", "2009-01-01T08:00Z", "2009-01-01T20:00Z", "UTC", id="end-of-days-next-midnight"),
        pytest.param("${coord:endOfMonths(1)}", "2009-01-05T00:00Z", "2009-01-31T00:00Z", "UTC", id="end-of-months"),
        pytest.param("0 0 29 2 *", "2021-03-01T00:00Z", "2023-12-31T00:00Z", "UTC", id="leap-day-between-leap-years"),
    ],
)
def test_a_job_without_any_action_is_refused(frequency: str, start: str, end: str, tz: str) -> None:
    """Oozie's CoordSubmitXCommand: no nominal time in [start, end) is a one-line refusal naming the frequency."""
    message = refusal(app_xml(frequency=frequency, start=start, end=end, tz=tz))
    assert EMPTY in message and "<frequency>" in message
    assert f"({start} to {end}, end exclusive)" in message


def test_a_job_with_one_action_is_accepted() -> None:
    """The reference's example with an end after 10:00 has exactly one action."""
    resolved = resolve(app_xml(frequency="0 10 * * *", start="2013-10-18T09:00Z", end="2013-10-18T10:01Z"))
    assert [format_datetime(p.nominal_time) for p in iter_action_plans(resolved, now=NOW, max_actions=5)] == ["2013-10-18T10:00Z"]


# ---- 3. reversed and out-of-phase ranges ----------------------------------------------------

DAILY_AT_8 = """<dataset name="daily8" frequency="${coord:days(1)}" initial-instance="2009-01-01T08:00Z" timezone="UTC">
          <uri-template>file:///daily8/${YEAR}/${MONTH}/${DAY}</uri-template></dataset>"""
DAILY = """<dataset name="daily" frequency="${coord:days(1)}" initial-instance="2008-06-01T00:00Z" timezone="UTC">
          <uri-template>file:///daily/${YEAR}/${MONTH}/${DAY}</uri-template></dataset>"""


@pytest.mark.parametrize(
    ("inputs", "properties", "words"),
    [
        pytest.param(ranged("${coord:current(0)}", "${coord:current(-1)}"), {}, [REVERSED], id="current"),
        pytest.param(ranged("${coord:current(a)}", "${coord:current(b)}"), {"a": "-1", "b": "-3"}, [REVERSED],
                     id="current-from-properties"),
        pytest.param(ranged("${coord:offset(0, 'HOUR')}", "${coord:offset(-2, 'HOUR')}"), {}, [REVERSED], id="offset"),
        pytest.param(ranged("${coord:offset(1, DAY)}", "${coord:offset(-1, DAY)}"), {}, [REVERSED], id="offset-bare-unit"),
        pytest.param(ranged("${coord:absolute('2009-01-03T05:00Z')}", "${coord:absolute('2009-01-02T05:00Z')}"), {},
                     [REVERSED], id="absolute-absolute"),
        pytest.param(ranged("${coord:endOfDays(0)}", "${coord:endOfDays(-1)}"), {}, [REVERSED], id="end-of-days"),
        pytest.param(ranged("${coord:endOfMonths(-1)}", "${coord:endOfMonths(-2)}", "daily"), {}, [REVERSED],
                     id="end-of-months"),
        pytest.param(ranged("${coord:endOfWeeks(0)}", "${coord:endOfWeeks(-1)}", "daily"), {}, [REVERSED], id="end-of-weeks"),
        pytest.param(ranged("${coord:latest(0)}", "${coord:latest(-2)}"), {}, [REVERSED], id="latest"),
        pytest.param(ranged("${coord:absolute('2009-01-02T05:30Z')}", "${coord:current(0)}"), {},
                     [OUT_OF_PHASE, "2009-01-02T05:30Z", "2009-01-01T01:00Z"], id="absolute-out-of-phase"),
        pytest.param(ranged("${coord:absolute('2008-12-31T05:00Z')}", "${coord:current(0)}"), {},
                     [BEFORE_INITIAL, "2008-12-31T05:00Z"], id="absolute-before-initial"),
        pytest.param(ranged("${coord:absolute(from)}", "${coord:current(0)}"), {"from": "2009-01-01T01:30Z"},
                     [OUT_OF_PHASE], id="absolute-from-a-property"),
    ],
)
def test_known_at_submission_is_refused_at_submission(inputs: str, properties: dict[str, str], words: list[str]) -> None:
    """A range that is wrong whatever the nominal time is refused at submission, in one line naming the event."""
    message = refusal(app_xml(inputs=inputs, datasets=DAILY), properties)
    assert "<event i>" in message
    for word in words:
        assert word in message


@pytest.mark.parametrize(
    ("inputs", "words"),
    [
        pytest.param(ranged("${coord:current(0)}", "${coord:offset(-1, 'HOUR')}"), [REVERSED, "2009-01-01T23:00Z"],
                     id="mixed-current-offset"),
        pytest.param(ranged("${coord:offset(-30, 'MINUTE')}", "${coord:offset(-10, 'MINUTE')}"), [REVERSED],
                     id="offset-window-without-an-instance"),
        pytest.param(ranged("${coord:offset(-1, 'DAY')}", "${coord:offset(-25, 'HOUR')}"), [REVERSED], id="offset-mixed-units"),
        pytest.param(ranged("${coord:absolute('2009-01-03T05:00Z')}", "${coord:current(0)}"), [REVERSED, "2009-01-03T05:00Z"],
                     id="absolute-after-the-nominal-time"),
        pytest.param(ranged("${coord:current(coord:hoursInDay(0) - 23)}", "${coord:current(0)}"), [REVERSED],
                     id="computed-current"),
        pytest.param(ranged("${coord:endOfDays(-1)}", "${coord:current(0)}", "daily8"), [OUT_OF_PHASE, "2009-01-02T00:00Z"],
                     id="end-of-days-out-of-phase"),
        pytest.param(ranged("${coord:endOfMonths(-1)}", "${coord:current(0)}", "daily8"), [BEFORE_INITIAL, "2009-01-01T00:00Z"],
                     id="end-of-months-before-initial"),
        pytest.param(ranged("${coord:endOfWeeks(-1)}", "${coord:current(0)}", "daily8"), [BEFORE_INITIAL],
                     id="end-of-weeks-before-initial"),
    ],
)
def test_known_at_creation_fails_the_action(inputs: str, words: list[str]) -> None:
    """What depends on the nominal time is accepted at submission and refused for the action, never planned empty."""
    resolved = resolve(app_xml(inputs=inputs, datasets=DAILY_AT_8))  # first action at 2009-01-02T00:00Z
    with pytest.raises(DefinitionError) as caught:
        plan_action(resolved, 1, now=NOW)
    message = str(caught.value)
    assert "action 1 (2009-01-02T00:00Z)" in message and "\n" not in message
    for word in words:
        assert word in message


@pytest.mark.parametrize(
    ("inputs", "expected"),
    [
        pytest.param(ranged("${coord:absolute('2009-01-01T22:00Z')}", "${coord:current(0)}"),
                     ["file:///logs/2009/01/01/22", "file:///logs/2009/01/01/23", "file:///logs/2009/01/02/00"], id="absolute-in-phase"),
        pytest.param(ranged("${coord:current(-2)}", "${coord:current(-2)}"), ["file:///logs/2009/01/01/22"], id="one-instance"),
        pytest.param(ranged("${coord:offset(-2, 'HOUR')}", "${coord:current(-1)}"),
                     ["file:///logs/2009/01/01/22", "file:///logs/2009/01/01/23"], id="mixed-in-order"),
        pytest.param(ranged("${coord:endOfDays(-1)}", "${coord:current(0)}", "daily"), ["file:///daily/2009/01/02"],
                     id="end-of-days-in-phase"),
        pytest.param(ranged("${coord:current(-30)}", "${coord:current(-25)}"), [], id="all-before-initial-dropped-6-6-10"),
    ],
)
def test_ranges_in_order_resolve(inputs: str, expected: list[str]) -> None:
    """Ranges in order keep working; instances before the initial one are still dropped (6.6.10)."""
    plan = plan_action(resolve(app_xml(inputs=inputs, datasets=DAILY)), 1, now=NOW)
    assert plan.data_in["i"] == expected


# ---- 5. Java's time zone ids in a coordinator ------------------------------------------------


def test_three_letter_zones_in_datasets_and_date_tz_offset() -> None:
    """A dataset in PST, a job in EST, coord:tzOffset() and coord:dateTzOffset(..., 'EST') work as in Oozie
    (Java's TimeZone: PST is Los Angeles with DST, EST a fixed -05:00)."""
    pst = """<dataset name="pst" frequency="${coord:hours(1)}" initial-instance="2009-01-01T08:00Z" timezone="PST">
          <uri-template>file:///pst/${YEAR}/${MONTH}/${DAY}/${HOUR}</uri-template></dataset>"""
    xml = app_xml(
        start="2009-07-01T08:00Z", end="2009-07-02T08:00Z", tz="EST", datasets=pst,
        inputs='<data-in name="i" dataset="pst"><instance>${coord:current(coord:tzOffset() / 60)}</instance></data-in>',
        config="<property><name>est</name><value>${coord:dateTzOffset(coord:nominalTime(), 'EST')}</value></property>",
    )
    (plan,) = list(iter_action_plans(resolve(xml), now=NOW, max_actions=3))
    # tzOffset: PDT (-7) minus EST (-5) is -120 minutes, so current(-2).
    assert plan.data_in["i"] == ["file:///pst/2009/07/01/06"]
    assert plan.configuration["est"] == "2009-07-01T03:00Z"


def test_unknown_zone_is_refused_naming_the_forms() -> None:
    """PDT is not a Java id: refused, saying what works."""
    message = refusal(app_xml(tz="PDT"))
    assert "'PDT'" in message and "America/Los_Angeles" in message and "PST" in message


# ---- every interface refuses an empty job; the runtime fails an impossible action --------------

EMPTY_XML = app_xml(frequency="0 10 * * *", start="2013-10-18T21:00Z", end="2013-10-18T22:00Z")


def rows() -> tuple[int, int, int]:
    return CoordinatorJob.objects.count(), CoordinatorAction.objects.count(), Command.objects.count()


@pytest.mark.django_db(transaction=True)
def test_every_interface_refuses_an_empty_job(in_process_engine: None, tmp_path: Path) -> None:
    """Native API (submit, dry-run), Oozie API (submit E1003, dry-run), CLI (-submit, -run, -dryrun, coord dryrun),
    and the service: one line naming the problem, nothing written."""
    ann = user("ann")
    (tmp_path / "coordinator.xml").write_text(EMPTY_XML)
    (tmp_path / "job.properties").write_text(f"oozie.coord.application.path={tmp_path}\n")
    before = rows()

    with pytest.raises(DefinitionError, match=EMPTY):
        submit_coordinator(EMPTY_XML, {}, owner=ann)
    for url in ("/api/v1/coordinator-jobs/", "/api/v1/coordinator-jobs/dryrun/"):
        response = api(ann).post(url, {"definition": EMPTY_XML, "properties": {}}, format="json")
        assert response.status_code == 400 and EMPTY in response.json()["detail"], response.content
    for action in ("start", None, "dryrun"):
        status, code, message = error_of(Oozie(ann).submit({"oozie.coord.application.path": str(tmp_path)}, action=action))
        assert (status, code) == (400, "E1003") and EMPTY in message and "\n" not in message
    for verb in ("-submit", "-run", "-dryrun"):
        with pytest.raises(CommandError, match=EMPTY) as caught:
            call_command("job", verb, "-config", str(tmp_path / "job.properties"), "-user", "ann", stdout=io.StringIO())
        assert "\n" not in str(caught.value)
    with pytest.raises(CommandError, match=EMPTY):
        call_command("coord", "dryrun", "--config", str(tmp_path / "job.properties"), stdout=io.StringIO())
    assert rows() == before


def minutes_ago(n: int) -> str:
    return format_datetime((timezone.now() - timedelta(minutes=n)).replace(second=0, microsecond=0))


@pytest.mark.django_db(transaction=True)
def test_an_action_whose_range_is_reversed_fails_with_the_reason(in_process_engine: None) -> None:
    """coord:absolute(T)..coord:current(0): the actions before T FAIL (E1010's words) with no input and never
    run; the later ones wait for their inputs; the job becomes RUNNINGWITHERROR."""
    ann = User.objects.create_user("ann")
    absolute = minutes_ago(3)
    xml = f"""<coordinator-app name="reversed" frequency="${{coord:minutes(1)}}" start="{minutes_ago(6)}" end="{minutes_ago(0)}"
        timezone="UTC" xmlns="uri:oozie:coordinator:0.4">
      <datasets><dataset name="d" frequency="${{coord:minutes(1)}}" initial-instance="2000-01-01T00:00Z" timezone="UTC">
        <uri-template>file:///never/${{YEAR}}${{MONTH}}${{DAY}}${{HOUR}}${{MINUTE}}</uri-template></dataset></datasets>
      <input-events>{ranged(f"${{coord:absolute('{absolute}')}}", "${coord:current(0)}", "d")}</input-events>
      <action><workflow><app-path>task:examples.noop</app-path></workflow></action>
    </coordinator-app>"""
    job = submit_coordinator(xml, {}, owner=ann)
    run_pending_commands()
    actions = list(job.actions.order_by("number"))
    assert len(actions) == 6
    early, late = actions[:3], actions[3:]
    for action in early:
        assert action.status == ActionStatus.FAILED and action.nominal_time < parse_datetime(absolute)
        assert REVERSED in action.error_message and absolute in action.error_message
        assert action.data_in == {} and action.missing_dependencies == [] and action.external_id == ""
    for action in late:
        assert action.status == ActionStatus.WAITING and len(action.data_in["i"]) >= 1
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNINGWITHERROR
    # A rerun plans it again: still reversed, so it stays FAILED and never runs without its input.
    rerun_job(job.id, actor=ann, rerun_type="action", scope="1")
    run_pending_commands()
    first = job.actions.get(number=1)
    assert first.status == ActionStatus.FAILED and REVERSED in first.error_message and first.run_conf == {}


@pytest.mark.django_db(transaction=True)
@override_settings(COORD_MATERIALIZATION_CHUNK=1)
def test_end_of_days_actions_continue_day_by_day_across_materializations(in_process_engine: None) -> None:
    """An endOfDays job materialized one action per command: consecutive midnights (a later nominal time
    taken as a start used to move again, skipping a day each command)."""
    ann = User.objects.create_user("ann")
    today = timezone.now().replace(hour=0, minute=0, second=0, microsecond=0)
    xml = f"""<coordinator-app name="eod" frequency="${{coord:endOfDays(1)}}" start="{format_datetime(today - timedelta(days=5, hours=-3))}"
        end="{format_datetime(today + timedelta(hours=1))}" timezone="UTC" xmlns="uri:oozie:coordinator:0.4">
      <action><workflow><app-path>task:examples.noop</app-path></workflow></action>
    </coordinator-app>"""
    job = submit_coordinator(xml, {}, owner=ann)
    run_pending_commands()
    nominal = [a.nominal_time for a in job.actions.order_by("number")]
    assert nominal == [today - timedelta(days=n) for n in (4, 3, 2, 1, 0)]


@pytest.mark.django_db(transaction=True)
def test_dry_run_json_of_a_cron_job_in_tokyo(in_process_engine: None, tmp_path: Path) -> None:
    """`manage.py job -dryrun` of the Tokyo example lists nominal times at 01:00 UTC."""
    User.objects.create_user("ann")
    (tmp_path / "coordinator.xml").write_text(
        app_xml(frequency="0 1 * * 2-6", start="2024-01-08T00:00Z", end="2024-01-10T00:00Z", tz="Asia/Tokyo")
    )
    (tmp_path / "job.properties").write_text(f"oozie.coord.application.path={tmp_path}\n")
    out = io.StringIO()
    call_command("coord", "dryrun", "--config", str(tmp_path / "job.properties"), stdout=out)
    assert [a["nominal_time"] for a in json.loads(out.getvalue())["actions"]] == ["2024-01-08T01:00Z", "2024-01-09T01:00Z"]
