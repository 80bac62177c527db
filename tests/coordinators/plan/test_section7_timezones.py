"""Seed section 7.1 and 7.2 use case 1 across DST; use cases 2 and 3 are in test_seed_examples.py."""

from __future__ import annotations

import pytest

from coordinators.plan import iter_action_plans, resolve_coordinator
from datasets.timeline import format_datetime, parse_datetime
from oozie.definitions import parse_coordinator

NOW = parse_datetime("2026-01-01T00:00Z")

INDIA = """<coordinator-app name="app-coord" frequency="${coord:days(1)}"
    start="2008-12-31T19:30Z" end="2009-12-30T19:30Z" timezone="UTC" xmlns="uri:oozie:coordinator:0.1">
  <datasets>
    <dataset name="hourlyLogs" frequency="${coord:hours(1)}" initial-instance="2008-12-31T19:30Z" timezone="UTC">
      <uri-template>hdfs://bar:8020/app/logs/${YEAR}/${MONTH}/${DAY}/${HOUR}</uri-template>
    </dataset>
  </datasets>
  <input-events>
    <data-in name="inputLogs" dataset="hourlyLogs">
      <start-instance>${coord:current(-23)}</start-instance><end-instance>${coord:current(0)}</end-instance>
    </data-in>
  </input-events>
  <action><workflow><app-path>task:examples.noop</app-path></workflow></action>
</coordinator-app>"""

EAST = """<coordinator-app name="eastcoast-processing" frequency="${coord:days(1)}"
    start="2009-01-02T05:00Z" end="2010-01-02T05:00Z" timezone="America/New_York" xmlns="uri:oozie:coordinator:0.1">
  <datasets>
    <dataset name="eastlogs" frequency="${coord:hours(1)}" initial-instance="2009-01-01T06:00Z" timezone="America/New_York">
      <uri-template>hdfs://bar:8020/app/logs/eastcoast/${YEAR}/${MONTH}/${DAY}/${HOUR}</uri-template>
    </dataset>
  </datasets>
  <input-events>
    <data-in name="EC" dataset="eastlogs">
      <start-instance>${coord:current( -(coord:hoursInDay(0) - 1) )}</start-instance>
      <end-instance>${coord:current(0)}</end-instance>
    </data-in>
  </input-events>
  <action><workflow><app-path>task:examples.noop</app-path>
    <configuration><property><name>wfInput</name><value>${coord:dataIn('EC')}</value></property></configuration>
  </workflow></action>
</coordinator-app>"""


def all_plans(xml: str) -> list:  # type: ignore[type-arg]
    resolved = resolve_coordinator(parse_coordinator(xml, "c.xml"), {}, user="ann")
    return list(iter_action_plans(resolved, now=NOW, max_actions=400))


@pytest.mark.parametrize(
    ("number", "nominal", "count", "first", "last"),
    [
        pytest.param(1, "2008-12-31T19:30Z", 1, "2008/12/31/19", "2008/12/31/19", id="first-action-only-the-initial-instance"),
        pytest.param(2, "2009-01-01T19:30Z", 24, "2008/12/31/20", "2009/01/01/19", id="second-action-24-hours"),
    ],
)
def test_no_dst_zone_offsets_are_plain_utc_times(number: int, nominal: str, count: int, first: str, last: str) -> None:
    """7.1: a daily job at India midnight (+05:30) is written in UTC; it reads the previous 24 hourly instances."""
    plan = all_plans(INDIA)[number - 1]
    assert format_datetime(plan.nominal_time) == nominal
    uris = plan.data_in["inputLogs"]
    assert len(uris) == count
    assert (uris[0], uris[-1]) == (f"hdfs://bar:8020/app/logs/{first}", f"hdfs://bar:8020/app/logs/{last}")


@pytest.mark.parametrize(
    ("nominal", "count", "first_uri"),
    # URI constants are UTC (spec 5.1), so the paths show UTC hours of New York instances.
    [
        pytest.param("2009-01-05T05:00Z", 24, "hdfs://bar:8020/app/logs/eastcoast/2009/01/04/06", id="winter-day"),
        pytest.param("2009-03-08T05:00Z", 23, "hdfs://bar:8020/app/logs/eastcoast/2009/03/07/07", id="spring-forward-day"),
        # 24 instances back from 00:00 EDT reach 00:00 EST of the 23-hour day before. The spec's
        # XML uses hoursInDay(0) (its prose says hoursInDay(-1)); we follow the XML.
        pytest.param("2009-03-09T04:00Z", 24, "hdfs://bar:8020/app/logs/eastcoast/2009/03/08/05", id="first-summer-day"),
        pytest.param("2009-11-01T04:00Z", 25, "hdfs://bar:8020/app/logs/eastcoast/2009/10/31/04", id="fall-back-day"),
        pytest.param("2009-11-02T05:00Z", 24, "hdfs://bar:8020/app/logs/eastcoast/2009/11/01/06", id="first-winter-day"),
    ],
)
def test_east_coast_daily_job_follows_local_midnight_and_day_length(nominal: str, count: int, first_uri: str) -> None:
    """7.2 use case 1: actions at 00:00 New York time (05:00Z winter, 04:00Z summer); the range has hoursInDay(0) instances."""
    plans = {format_datetime(p.nominal_time): p for p in all_plans(EAST)}
    plan = plans[nominal]
    uris = plan.data_in["EC"]
    assert len(uris) == count
    assert uris[0] == first_uri
    assert uris[-1].endswith(f"/{nominal[11:13]}")  # the range ends at the action's own (local midnight) instance
    assert plan.configuration["wfInput"] == ",".join(uris)
    assert len({p.nominal_time.hour for p in plans.values()}) == 2  # 05:00Z and 04:00Z, never anything else
