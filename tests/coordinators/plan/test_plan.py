"""From definition to action plans: the coord: library by phase, submission checks, dry-run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from coordinators.plan import iter_action_plans, plan_action, resolve_coordinator
from datasets.timeline import format_datetime, parse_datetime
from oozie.definitions import DefinitionError, parse_coordinator

ROOT = Path(__file__).resolve().parents[3]
NOW = parse_datetime("2026-01-01T00:00Z")


def app_xml(
    *,
    frequency: str = "${coord:days(1)}",
    start: str = "2009-01-01T24:00Z",
    end: str = "2009-01-05T24:00Z",
    tz: str = "UTC",
    inputs: str = "",
    outputs: str = "",
    config: str = "",
    controls: str = "",
    app_path: str = "task:examples.pipeline.aggregate",
) -> str:
    return f"""<coordinator-app name="app-coord" frequency="{frequency}" start="{start}" end="{end}" timezone="{tz}"
        xmlns="uri:oozie:coordinator:0.4">
      {controls}
      <datasets>
        <dataset name="logs" frequency="${{coord:hours(1)}}" initial-instance="2009-01-01T01:00Z" timezone="UTC">
          <uri-template>hdfs://bar:8020/app/logs/${{YEAR}}/${{MONTH}}/${{DAY}}/${{HOUR}}</uri-template>
        </dataset>
        <dataset name="stats" frequency="${{coord:days(1)}}" initial-instance="2009-01-01T24:00Z" timezone="UTC">
          <uri-template>hdfs://bar:8020/app/stats/${{YEAR}}/${{MONTH}}/${{DAY}}</uri-template>
        </dataset>
      </datasets>
      {f"<input-events>{inputs}</input-events>" if inputs else ""}
      <output-events>{outputs or '<data-out name="output" dataset="stats"><instance>${coord:current(0)}</instance></data-out>'}</output-events>
      <action><workflow><app-path>{app_path}</app-path><configuration>
        <property><name>wfOutput</name><value>${{coord:dataOut('output')}}</value></property>{config}
      </configuration></workflow></action>
    </coordinator-app>"""


LAST_DAY = """<data-in name="inputLogs" dataset="logs">
  <start-instance>${coord:current( -(coord:hoursInDay(0) - 1) )}</start-instance>
  <end-instance>${coord:current(-1)}</end-instance></data-in>"""


def plans(xml: str, properties: dict[str, str] | None = None, count: int = 10) -> list:  # type: ignore[type-arg]
    resolved = resolve_coordinator(parse_coordinator(xml, "c.xml"), properties or {}, user="ann")
    return list(iter_action_plans(resolved, now=NOW, max_actions=count))


def test_data_in_resolves_the_last_day_of_hourly_instances() -> None:
    """6.7.1: the 2009-01-02T00:00Z run reads 2009/01/01/01 .. 2009/01/01/23 as one comma-separated value."""
    config = "<property><name>wfInput</name><value>${coord:dataIn('inputLogs')}</value></property>"
    first = plans(app_xml(inputs=LAST_DAY, config=config))[0]
    assert format_datetime(first.nominal_time) == "2009-01-02T00:00Z"
    expected = [f"hdfs://bar:8020/app/logs/2009/01/01/{h:02d}" for h in range(1, 24)]
    assert first.data_in["inputLogs"] == expected
    assert first.configuration["wfInput"] == ",".join(expected)


def test_data_out_and_nominal_time() -> None:
    """6.7.2/6.7.3: dataOut gives the output instance URI; nominalTime the action's nominal time."""
    config = "<property><name>nt</name><value>${coord:nominalTime()}</value></property>"
    second = plans(app_xml(config=config))[1]
    assert second.configuration["wfOutput"] == "hdfs://bar:8020/app/stats/2009/01/03"
    assert second.configuration["nt"] == "2009-01-03T00:00Z"


def test_actual_time_is_the_creation_time() -> None:
    """6.7.4: actualTime is when the action is created (`now`), not its nominal time."""
    config = "<property><name>at</name><value>${coord:actualTime()}</value></property>"
    assert plans(app_xml(config=config))[0].configuration["at"] == "2026-01-01T00:00Z"


def test_date_functions_in_configuration() -> None:
    """6.8 / reference 6.9: dateOffset, dateTzOffset, formatTime, epochTime, user and conf."""
    config = (
        "<property><name>next</name><value>${coord:dateOffset(coord:nominalTime(), 1, 'DAY')}</value></property>"
        "<property><name>prev</name><value>${coord:dateOffset(coord:nominalTime(), -1, 'DAY')}</value></property>"
        "<property><name>la</name><value>${coord:dateTzOffset('2012-06-13T00:00Z', 'America/Los_Angeles')}</value></property>"
        "<property><name>year</name><value>${coord:formatTime(coord:nominalTime(), 'yyyy')}</value></property>"
        "<property><name>epoch</name><value>${coord:epochTime('2009-01-01T00:00Z', 'false')}</value></property>"
        "<property><name>who</name><value>${coord:user()}</value></property>"
        "<property><name>market</name><value>${coord:conf('market')}</value></property>"
    )
    first = plans(app_xml(start="2009-01-01T23:00Z", config=config), {"market": "us"})[0]
    assert first.configuration == {
        "wfOutput": "",  # stats' current(0) precedes its initial instance (2009-01-02T00:00Z): dropped
        "next": "2009-01-02T23:00Z",
        "prev": "2008-12-31T23:00Z",
        "la": "2012-06-12T17:00Z",
        "year": "2009",
        "epoch": "1230768000",
        "who": "ann",
        "market": "us",
    }


def test_end_is_exclusive_and_controls_resolve() -> None:
    """6.3: start to end, end exclusive; controls come from EL and job properties."""
    controls = "<controls><timeout>${10 * MINUTES}</timeout><concurrency>${level}</concurrency><execution>LAST_ONLY</execution></controls>"
    resolved = resolve_coordinator(
        parse_coordinator(app_xml(start="2009-01-02T08:00Z", end="2009-01-04T08:00Z", tz="America/Los_Angeles", controls=controls), "c.xml"),
        {"level": "3"}, user="ann",
    )
    assert (resolved.timeout, resolved.concurrency, resolved.execution, resolved.throttle) == (10, 3, "LAST_ONLY", 12)
    times = [format_datetime(p.nominal_time) for p in iter_action_plans(resolved, now=NOW, max_actions=100)]
    assert times == ["2009-01-02T08:00Z", "2009-01-03T08:00Z"]


def test_storage_functions_stay_unresolved_in_plans() -> None:
    """latest/future need storage: the plan shows their expressions, other inputs resolve."""
    inputs = LAST_DAY + '<data-in name="fresh" dataset="logs"><instance>${coord:latest(0)}</instance></data-in>'
    config = "<property><name>f</name><value>${coord:dataIn('fresh')}</value></property>"
    first = plans(app_xml(inputs=inputs, config=config))[0]
    assert first.data_in["fresh"] == ["${coord:latest(0)}"]
    assert first.configuration["f"] == "${coord:dataIn('fresh')}"
    assert len(first.data_in["inputLogs"]) == 23
    assert first.deferred == ("fresh",)


@pytest.mark.parametrize(
    ("kwargs", "properties", "message"),
    [
        pytest.param({"start": "${start}"}, {}, "start", id="unresolved-start"),
        pytest.param({"app_path": "${wf_app}"}, {}, r"unresolved variable\(s\): wf_app", id="unresolved-app-path"),
        pytest.param({"config": "<property><name>x</name><value>${who_knows}</value></property>"}, {}, "who_knows", id="unresolved-config"),
        pytest.param({"end": "2009-01-01T00:00Z"}, {}, "is not after start", id="end-before-start"),
        pytest.param({"frequency": "0"}, {}, "positive", id="zero-frequency"),
        pytest.param({"frequency": "${coord:days(-1)}"}, {}, "positive", id="negative-days"),
        pytest.param({"tz": "Mars/Base"}, {}, "unknown time zone", id="unknown-zone"),
        pytest.param({"controls": "<controls><execution>RANDOM</execution></controls>"}, {}, "execution", id="bad-execution"),
        pytest.param({"frequency": "${coord:current(0)}"}, {}, "cannot be used at submission", id="wrong-phase"),
        pytest.param({"inputs": '<data-in name="i" dataset="logs"><instance>yesterday</instance></data-in>'}, {}, "not a datetime", id="literal-instance-not-a-datetime"),
    ],
)
def test_bad_submissions_name_the_problem(kwargs: dict[str, str], properties: dict[str, str], message: str) -> None:
    """Every rejection is a DefinitionError naming the element and the reason."""
    with pytest.raises(DefinitionError, match=message):
        plans(app_xml(**kwargs), properties)


def test_hostile_instance_ranges_are_capped() -> None:
    """current(-1000000000) is refused by the instance cap, fast."""
    inputs = '<data-in name="i" dataset="logs"><start-instance>${coord:current(-1000000000)}</start-instance><end-instance>${coord:current(0)}</end-instance></data-in>'
    resolved = resolve_coordinator(parse_coordinator(app_xml(start="2030-01-01T00:00Z", end="2030-02-01T00:00Z", inputs=inputs), "c.xml"), {}, user="ann")
    with pytest.raises(DefinitionError, match="at most 10000"):
        plan_action(resolved, 1, now=NOW)


def test_dryrun_command_contract(tmp_path: Path) -> None:
    """`manage.py coord dryrun --config` prints the documented JSON; bad input is one line, exit 1."""
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "coordinator.xml").write_text(app_xml(inputs=LAST_DAY, start="${start}"))
    (tmp_path / "job.properties").write_text("oozie.coord.application.path=app\nstart=2009-01-01T24:00Z\n")
    result = subprocess.run(  # noqa: S603
        [sys.executable, "manage.py", "coord", "dryrun", "--config", str(tmp_path / "job.properties"), "--max-actions", "3"],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )
    assert result.returncode == 0, result.stderr
    actions = json.loads(result.stdout)["actions"]
    assert [a["number"] for a in actions] == [1, 2, 3]
    assert set(actions[0]) == {"number", "nominal_time", "data_in", "data_out", "app_path", "configuration"}
    assert actions[0]["nominal_time"] == "2009-01-02T00:00Z"
    assert actions[0]["data_out"] == {"output": ["hdfs://bar:8020/app/stats/2009/01/02"]}
    (tmp_path / "bad.properties").write_text(f"oozie.coord.application.path=file://{tmp_path / 'app'}\n")
    bad = subprocess.run(  # noqa: S603
        [sys.executable, "manage.py", "coord", "dryrun", "--config", str(tmp_path / "bad.properties")],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )
    assert bad.returncode == 1
    assert "Traceback" not in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1
    assert "start" in bad.stderr


def test_end_of_months_start_instance_reads_the_month_so_far() -> None:
    """Reference 6.6.9: start-instance ${coord:endOfMonths(-1)} .. ${coord:current(0)} = this month's days so far."""
    xml = app_xml(start="2009-08-06T00:00Z", end="2009-08-08T00:00Z").replace(
        '<dataset name="stats"',
        '<dataset name="a" frequency="${coord:days(1)}" initial-instance="2009-06-06T00:00Z" timezone="UTC">'
        "<uri-template>hdfs://bar:8020/app/logs/${YEAR}/${MONTH}/${DAY}</uri-template></dataset><dataset name=\"stats\"",
    ).replace(
        "<output-events>",
        '<input-events><data-in name="input" dataset="a"><start-instance>${coord:endOfMonths(-1)}</start-instance>'
        "<end-instance>${coord:current(0)}</end-instance></data-in></input-events><output-events>",
    )
    first, second = plans(xml)
    assert first.data_in["input"] == [f"hdfs://bar:8020/app/logs/2009/08/{d:02d}" for d in range(1, 7)]
    assert second.data_in["input"] == [f"hdfs://bar:8020/app/logs/2009/08/{d:02d}" for d in range(1, 8)]


def test_absolute_start_instance() -> None:
    """Reference 6.6.8: start-instance ${coord:absolute(ts)} .. ${coord:current(0)} grows with every run."""
    inputs = (
        '<data-in name="i" dataset="logs"><start-instance>${coord:absolute("2009-01-01T20:00Z")}</start-instance>'
        "<end-instance>${coord:current(0)}</end-instance></data-in>"
    )
    first, second = plans(app_xml(inputs=inputs))[:2]
    assert first.data_in["i"][0] == "hdfs://bar:8020/app/logs/2009/01/01/20"
    assert len(first.data_in["i"]) == 5  # 20:00 .. 24:00
    assert len(second.data_in["i"]) == 5 + 24


def test_spec_6_3_example_1_literal_instances_and_utc_uris() -> None:
    """6.3 example 1: literal datetime instances; URIs in UTC (2009-01-02T08:00Z = Jan 1 24:00 PST).

    The spec gives start == end for its single action; with end exclusive (issue 4) we
    need end > start, so the test ends a day later and checks the first action.
    """
    xml = """<coordinator-app name="hello-coord" frequency="${coord:days(1)}" start="2009-01-02T08:00Z" end="2009-01-03T08:00Z"
        timezone="America/Los_Angeles" xmlns="uri:oozie:coordinator:0.1">
      <datasets>
        <dataset name="logs" frequency="${coord:days(1)}" initial-instance="2009-01-02T08:00Z" timezone="America/Los_Angeles">
          <uri-template>hdfs://bar:8020/app/logs/${YEAR}${MONTH}/${DAY}/data</uri-template></dataset>
        <dataset name="siteAccessStats" frequency="${coord:days(1)}" initial-instance="2009-01-02T08:00Z" timezone="America/Los_Angeles">
          <uri-template>hdfs://bar:8020/app/stats/${YEAR}/${MONTH}/${DAY}/data</uri-template></dataset>
      </datasets>
      <input-events><data-in name="input" dataset="logs"><instance>2009-01-02T08:00Z</instance></data-in></input-events>
      <output-events><data-out name="output" dataset="siteAccessStats"><instance>2009-01-02T08:00Z</instance></data-out></output-events>
      <action><workflow><app-path>hdfs://bar:8020/usr/joe/logsprocessor-wf</app-path><configuration>
        <property><name>wfInput</name><value>${coord:dataIn('input')}</value></property>
        <property><name>wfOutput</name><value>${coord:dataOut('output')}</value></property>
      </configuration></workflow></action>
    </coordinator-app>"""
    (only,) = plans(xml)
    assert only.configuration == {
        "wfInput": "hdfs://bar:8020/app/logs/200901/02/data",
        "wfOutput": "hdfs://bar:8020/app/stats/2009/01/02/data",
    }
    with pytest.raises(DefinitionError, match="end is exclusive"):
        plans(xml.replace('end="2009-01-03T08:00Z"', 'end="2009-01-02T08:00Z"'))
    with pytest.raises(DefinitionError, match="not an instance of dataset 'logs'"):
        plans(xml.replace("<instance>2009-01-02T08:00Z</instance></data-in>", "<instance>2009-01-02T09:00Z</instance></data-in>"))


def test_cron_frequency_coordinator() -> None:
    """Reference 4.4.4 and 7: a cron frequency reads the processing zone's clock (09:00 UTC on weekdays), and
    firings a day or more apart keep the job zone's local time across its DST change (issue 16)."""
    resolved = resolve_coordinator(
        parse_coordinator(app_xml(frequency="0 9 * * 2-6", start="2009-03-06T00:00Z", end="2009-03-13T00:00Z", tz="America/New_York"), "c.xml"),
        {}, user="ann",
    )
    times = [format_datetime(p.nominal_time) for p in iter_action_plans(resolved, now=NOW, max_actions=10)]
    # Friday 6th 09:00 UTC (04:00 EST), then Monday 9th onwards 04:00 EDT (the switch was Sunday 8th).
    assert times == ["2009-03-06T09:00Z", "2009-03-09T08:00Z", "2009-03-10T08:00Z", "2009-03-11T08:00Z", "2009-03-12T08:00Z"]


@pytest.mark.parametrize(
    ("timeout", "minutes"),
    [
        pytest.param("${coord:hours(2)}", 120, id="hours-function"),
        pytest.param("${coord:days(1)}", 1380, id="days-function-at-a-23-hour-start-day"),
        pytest.param("${5 * HOUR}", 300, id="unit-constant"),
        pytest.param("${10 * MINUTES}", 10, id="sla-constant"),
    ],
)
def test_timeout_accepts_time_periods(timeout: str, minutes: int) -> None:
    """4.4: periods such as a timeout use the frequency notation; coord:days(1) counts the start day's minutes."""
    xml = app_xml(start="2009-03-08T08:00Z", end="2009-03-10T08:00Z", tz="America/Los_Angeles", controls=f"<controls><timeout>{timeout}</timeout></controls>")
    assert resolve_coordinator(parse_coordinator(xml, "c.xml"), {}, user="ann").timeout == minutes
