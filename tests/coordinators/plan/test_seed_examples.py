"""The seed specification's examples (sections 4.4, 4.4.1, 4.4.2, 5.1, 6.3, 6.6.1-6.6.5, 6.6.10, 6.7, 6.8, 7.2) end to end.

Each test carries the spec's values. Where the spec's text and its own XML or formulas
disagree, the test follows the decision recorded in docs/adr/0004-time-semantics.md
("Where the specification contradicts itself") and says so in its id or comment. The spec's
`<workflow>...</workflow>` elisions are filled with a bare app-path; everything else is as
printed. The example tables of 4.4.1, 4.4.2, 6.6.1-6.6.5 are also tested at the time line
level in tests/datasets/test_timeline_spec.py; here they go through the coord: EL functions.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

import pytest

from coordinators.plan import (
    ActionPlan,
    ResolvedCoordinator,
    iter_action_plans,
    plan_action,
    resolve_coordinator,
)
from datasets.timeline import count_before, format_datetime, parse_datetime
from oozie.definitions import DefinitionError, SchemaValidationError, parse_coordinator
from oozie.el import Phase, evaluate

P = parse_datetime
NOW = P("2026-01-01T00:00Z")
WORKFLOW = "<workflow><app-path>hdfs://bar:8020/usr/joe/wf</app-path></workflow>"


def resolve(
    xml: str,
    properties: Mapping[str, str] | None = None,
    *,
    includes: Mapping[str, str] | None = None,
    processing: str = "UTC",
) -> ResolvedCoordinator:
    """Parse (includes served from memory) and resolve a spec example."""
    files = {url: text.encode() for url, text in (includes or {}).items()}

    def loader(url: str) -> bytes:
        return files[url]

    xml = re.sub(r"<workflow>\s*\.\.\.\s*</workflow>", WORKFLOW, xml)
    xml = re.sub(r"<action>\s*\.\.\.\s*</action>", f"<action>{WORKFLOW}</action>", xml)
    app = parse_coordinator(xml, "spec.xml", loader=loader)
    return resolve_coordinator(app, dict(properties or {}), user="joe", processing_timezone=processing)


def plans(resolved: ResolvedCoordinator, count: int = 5) -> list[ActionPlan]:
    return list(iter_action_plans(resolved, now=NOW, max_actions=count))


def times(items: list[ActionPlan]) -> list[str]:
    return [format_datetime(p.nominal_time) for p in items]


def el(resolved: ResolvedCoordinator, text: str, nominal: str, dataset: str | None = None) -> Any:
    """Evaluate an expression as an action would at nominal (in a dataset's instance context if named)."""
    extra: dict[str, Any] = {"nominal": P(nominal), "actual": NOW}
    if dataset is not None:
        extra.update(dataset=resolved.datasets[dataset], role="instance")
    return evaluate(text, resolved.context(Phase.CREATION, **extra))


def hourly_urls(first: str, count: int, base: str = "hdfs://bar:8020/app/logs") -> list[str]:
    start = P(first)
    return [f"{base}/{(start + timedelta(hours=h)).strftime('%Y/%m/%d/%H')}" for h in range(count)]


# --- 4.4 Frequency and time-period representation ----------------------------------------

TIMES = """<coordinator-app name="c" frequency="${coord:days(1)}" start="2009-03-08T08:00Z" end="2009-03-10T08:00Z"
    timezone="America/Los_Angeles" xmlns="uri:oozie:coordinator:0.2">
  <action><workflow><app-path>hdfs://bar:8020/usr/joe/wf</app-path><configuration>
    <property><name>value</name><value>EXPR</value></property>
  </configuration></workflow></action>
</coordinator-app>"""


@pytest.mark.parametrize(
    ("expression", "value"),
    [
        pytest.param("${coord:minutes(45)}", "45", id="minutes-45"),
        pytest.param("${coord:hours(3)}", "180", id="hours-3"),
        pytest.param("${coord:days(2)}", "2820", id="days-2-over-the-dst-switch"),
        pytest.param("${coord:months(1)}", "44580", id="months-1-march-with-dst"),
        pytest.param("${5 * HOUR}", "300", id="section-5.1-five-hours"),
    ],
)
def test_4_4_frequency_functions_are_minutes_in_an_action(expression: str, value: str) -> None:
    """4.4 table: minutes(45) -> 45, hours(3) -> 180, days/months -> minutes of full days/months from the nominal time."""
    (first, *_) = plans(resolve(TIMES.replace("EXPR", expression)))
    assert first.configuration == {"value": value}


def test_4_4_constants_express_a_dataset_frequency() -> None:
    """5.1: a frequency 'can be expressed using EL expressions, for example: ${5 * HOUR}' (300 minutes)."""
    xml = INDIA_LIKE.replace('frequency="${coord:hours(1)}"', 'frequency="${5 * HOUR}"')
    resolved = resolve(xml)
    assert resolved.datasets["hourlyLogs"].timeline.frequency.fixed_minutes() == 300


# --- 4.4.1.2 and 4.4.2.2: the applications with endOfDays / endOfMonths datasets ---------

END_OF_DAYS_APP = """<coordinator-app name="hello-coord" frequency="${coord:days(1)}"
                  start="2009-01-02T08:00Z" end="2009-01-04T08:00Z" timezone="America/Los_Angeles"
                 xmlns="uri:oozie:coordinator:0.1">
      <controls>
        <timeout>10</timeout>
        <concurrency>${concurrency_level}</concurrency>
        <execution>${execution_order}</execution>
        <throttle>${materialization_throttle}</throttle>
      </controls>      <datasets>
       <dataset name="din" frequency="${coord:endOfDays(1)}"
                initial-instance="2009-01-02T08:00Z" timezone="America/Los_Angeles">
         <uri-template>${baseFsURI}/${YEAR}/${MONTH}/${DAY}/${HOUR}/${MINUTE}</uri-template>
        </dataset>
       <dataset name="dout" frequency="${coord:minutes(30)}"
                initial-instance="2009-01-02T08:00Z" timezone="UTC">
         <uri-template>${baseFsURI}/${YEAR}/${MONTH}/${DAY}/${HOUR}/${MINUTE}</uri-template>
        </dataset>
      </datasets>
      <input-events>
         <data-in name="input" dataset="din">
				<instance>${coord:current(0)}</instance>
         </data-in>
      </input-events>
      <output-events>
         <data-out name="output" dataset="dout">
				<instance>${coord:current(1)}</instance>
         </data-out>
      </output-events>
      <action>
        <workflow>
          <app-path>${wf_app_path}</app-path>
          <configuration>
              <property>
              <name>wfInput</name>
              <value>${coord:dataIn('input')}</value>
            </property>
            <property>
              <name>wfOutput</name>
              <value>${coord:dataOut('output')}</value>
            </property>
         </configuration>
       </workflow>
      </action>
 </coordinator-app>"""
END_OF_MONTHS_APP = (
    END_OF_DAYS_APP.replace('frequency="${coord:days(1)}"\n', 'frequency="${coord:months(1)}"\n')
    .replace('end="2009-01-04T08:00Z"', 'end="2009-04-02T08:00Z"')
    .replace("${coord:endOfDays(1)}", "${coord:endOfMonths(1)}")
)
# Printed under schema 0.1, which has no <throttle>; the newer reference prints them under 0.5.
END_OF_DAYS_APP_05 = END_OF_DAYS_APP.replace("coordinator:0.1", "coordinator:0.5")
END_OF_MONTHS_APP_05 = END_OF_MONTHS_APP.replace("coordinator:0.1", "coordinator:0.5")
CONTROLS = {
    "concurrency_level": "2", "execution_order": "LIFO", "materialization_throttle": "5",
    "wf_app_path": "hdfs://bar:8020/usr/joe/wf", "baseFsURI": "hdfs://bar:8020/data",
}


@pytest.mark.parametrize(
    ("xml", "nominal", "data_in", "data_out"),
    [
        # din's first instance moves to the end of its day: 2009-01-03T08:00Z, after the first action.
        pytest.param(END_OF_DAYS_APP_05, ["2009-01-02T08:00Z", "2009-01-03T08:00Z"], [[], ["2009/01/03/08/00"]],
                     ["2009/01/02/08/30", "2009/01/03/08/30"], id="4.4.1.2-end-of-days-dataset"),
        # din's first instance moves to the end of its month: 2009-02-01T08:00Z (Feb 1, 00:00 PST).
        # April 2, 00:00 PDT is 07:00Z, before the end (08:00Z): a fourth action.
        pytest.param(END_OF_MONTHS_APP_05, ["2009-01-02T08:00Z", "2009-02-02T08:00Z", "2009-03-02T08:00Z", "2009-04-02T07:00Z"],
                     [[], ["2009/02/01/08/00"], ["2009/03/01/08/00"], ["2009/04/01/07/00"]],
                     ["2009/01/02/08/30", "2009/02/02/08/30", "2009/03/02/08/30", "2009/04/02/07/30"],
                     id="4.4.2.2-end-of-months-dataset"),
    ],
)
def test_4_4_end_of_applications(xml: str, nominal: list[str], data_in: list[list[str]], data_out: list[str]) -> None:
    """4.4.1.2/4.4.2.2 XML: controls from properties; an endOf dataset's instances start at the end of the day/month."""
    resolved = resolve(xml, CONTROLS)
    assert (resolved.timeout, resolved.concurrency, resolved.execution, resolved.throttle) == (10, 2, "LIFO", 5)
    actions = plans(resolved)
    assert times(actions) == nominal
    base = "hdfs://bar:8020/data/"
    assert [p.data_in["input"] for p in actions] == [[base + u for u in uris] for uris in data_in]
    assert [p.configuration["wfOutput"] for p in actions] == [base + u for u in data_out]
    assert actions[0].app_path == "hdfs://bar:8020/usr/joe/wf"


@pytest.mark.parametrize("xml", [pytest.param(END_OF_DAYS_APP, id="4.4.1.2"), pytest.param(END_OF_MONTHS_APP, id="4.4.2.2")])
def test_4_4_end_of_applications_as_printed_in_the_seed_use_throttle_under_0_1(xml: str) -> None:
    """The seed prints these applications as schema 0.1, which has no <throttle>: refused, naming it."""
    with pytest.raises(SchemaValidationError, match="throttle"):
        resolve(xml, CONTROLS)


# --- 5.1 Synchronous datasets ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("frequency", "initial", "template", "done_flag", "expected"),
    [
        # The spec lists hdfs://foo:8020/usr/app/[market]/2009/02/15/data; the template it gives
        # yields app/logs/us/200902/15/data (ADR 0004: the template wins).
        pytest.param(
            "${coord:days(1)}", "2009-02-15T08:15Z", "hdfs://foo:8020/app/logs/${market}/${YEAR}${MONTH}/${DAY}/data", "",
            ["hdfs://foo:8020/app/logs/us/200902/15/data", "hdfs://foo:8020/app/logs/us/200902/16/data",
             "hdfs://foo:8020/app/logs/us/200902/17/data"],
            id="example-1-daily-at-00-15-pacific-empty-done-flag",
        ),
        pytest.param(
            "${coord:months(1)}", "2009-01-10T10:00Z", "hdfs://foo:8020/usr/app/stats/${YEAR}/${MONTH}/data", None,
            ["hdfs://foo:8020/usr/app/stats/2009/01/data", "hdfs://foo:8020/usr/app/stats/2009/02/data",
             "hdfs://foo:8020/usr/app/stats/2009/03/data"],
            id="example-2-monthly-on-the-10th-default-done-flag",
        ),
        pytest.param(
            "${coord:months(3)}", "2009-01-31T20:00Z", "hdfs://foo:8020/usr/app/stats/${YEAR}/${MONTH}/data", "trigger.dat",
            ["hdfs://foo:8020/usr/app/stats/2009/01/data", "hdfs://foo:8020/usr/app/stats/2009/04/data",
             "hdfs://foo:8020/usr/app/stats/2009/07/data"],
            id="example-3-quarterly-trigger-dat",
        ),
        pytest.param(
            "${coord:days(1)}", "2009-01-01T10:30Z", "hdfs://foo:8020/usr/app/logs/${YEAR}/${MONTH}/${DAY}/data", None,
            ["hdfs://foo:8020/usr/app/logs/2009/01/01/data", "hdfs://foo:8020/usr/app/logs/2009/01/02/data",
             "hdfs://foo:8020/usr/app/logs/2009/01/03/data"],
            id="example-4-template-precision-like-the-frequency",
        ),
        pytest.param(
            "${coord:days(1)}", "2009-01-01T10:30Z", "hdfs://foo:8020/usr/app/logs/${YEAR}/${MONTH}/${DAY}/${HOUR}/${MINUTE}/data", None,
            ["hdfs://foo:8020/usr/app/logs/2009/01/01/10/30/data", "hdfs://foo:8020/usr/app/logs/2009/01/02/10/30/data",
             "hdfs://foo:8020/usr/app/logs/2009/01/03/10/30/data"],
            id="example-5-finer-template-has-fixed-values",
        ),
    ],
)
def test_5_1_dataset_examples(frequency: str, initial: str, template: str, done_flag: str | None, expected: list[str]) -> None:
    """5.1: each example dataset resolves to the listed URIs (constants in UTC), with its done-flag (default _SUCCESS)."""
    flag = "" if done_flag is None else f"<done-flag>{done_flag}</done-flag>"
    xml = f"""<coordinator-app name="c" frequency="{frequency}" start="{initial}" end="2010-01-01T00:00Z" timezone="America/Los_Angeles"
        xmlns="uri:oozie:coordinator:0.1">
      <datasets><dataset name="ds" frequency="{frequency}" initial-instance="{initial}" timezone="America/Los_Angeles">
        <uri-template>{template}</uri-template>{flag}</dataset></datasets>
      <input-events><data-in name="in" dataset="ds"><instance>${{coord:current(0)}}</instance></data-in></input-events>
      <action>{WORKFLOW}</action>
    </coordinator-app>"""
    resolved = resolve(xml, {"market": "us"})
    assert [p.data_in["in"][0] for p in plans(resolved, 3)] == expected
    assert resolved.datasets["ds"].done_flag == ("_SUCCESS" if done_flag is None else done_flag)


# --- 6.3 Synchronous coordinator application definition -----------------------------------

HELLO = """<coordinator-app name="hello-coord" frequency="${coord:days(1)}"
                    start="2009-01-02T08:00Z" end="2010-01-02T08:00Z"
                    timezone="America/Los_Angeles"
                    xmlns="uri:oozie:coordinator:0.1">
      <datasets>
        <dataset name="logs" frequency="${coord:days(1)}"
                 initial-instance="2009-01-02T08:00Z" timezone="America/Los_Angeles">
          <uri-template>hdfs://bar:8020/app/logs/${YEAR}${MONTH}/${DAY}/data</uri-template>
        </dataset>
        <dataset name="siteAccessStats" frequency="${coord:days(1)}"
                 initial-instance="2009-01-02T08:00Z" timezone="America/Los_Angeles">
          <uri-template>hdfs://bar:8020/app/stats/${YEAR}/${MONTH}/${DAY}/data</uri-template>
        </dataset>
      </datasets>
      <input-events>
        <data-in name="input" dataset="logs">
          <instance>${coord:current(0)}</instance>
        </data-in>
      </input-events>
      <output-events>
         <data-out name="output" dataset="siteAccessStats">
           <instance>${coord:current(0)}</instance>
         </data-out>
      </output-events>
      <action>
        <workflow>
          <app-path>hdfs://bar:8020/usr/joe/logsprocessor-wf</app-path>
          <configuration>
            <property>
              <name>wfInput</name>
              <value>${coord:dataIn('input')}</value>
            </property>
            <property>
              <name>wfOutput</name>
              <value>${coord:dataOut('output')}</value>
            </property>
         </configuration>
       </workflow>
      </action>
   </coordinator-app>"""


@pytest.mark.parametrize(
    ("number", "wf_input", "wf_output"),
    [
        pytest.param(1, "hdfs://bar:8020/app/logs/200901/02/data", "hdfs://bar:8020/app/stats/2009/01/02/data", id="first-action"),
        pytest.param(2, "hdfs://bar:8020/app/logs/200901/03/data", "hdfs://bar:8020/app/stats/2009/01/03/data", id="second-action"),
    ],
)
def test_6_3_example_2_daily_actions(number: int, wf_input: str, wf_output: str) -> None:
    """6.3 example 2: each day's action reads that day's logs and writes that day's stats (URIs in UTC)."""
    plan = plan_action(resolve(HELLO), number, now=NOW)
    assert plan.app_path == "hdfs://bar:8020/usr/joe/logsprocessor-wf"
    assert plan.configuration == {"wfInput": wf_input, "wfOutput": wf_output}


def test_6_3_example_2_runs_for_a_year() -> None:
    """6.3 example 2: actions at 2009-01-02T08:00 ... 2010-01-01T08:00 (end exclusive), local midnight every day."""
    resolved = resolve(HELLO)
    assert count_before(resolved.start, resolved.end, resolved.frequency, resolved.tz) == 365
    last = plan_action(resolved, 365, now=NOW)
    assert format_datetime(last.nominal_time) == "2010-01-01T08:00Z"
    summer = plan_action(resolved, 190, now=NOW)  # July: 00:00 PDT is 07:00Z
    assert format_datetime(summer.nominal_time) == "2009-07-10T07:00Z"


WEEKLY = """<coordinator-app name="hello2-coord" frequency="${coord:days(7)}"
                    start="2009-01-07T24:00Z" end="2009-12-12T24:00Z"
                    timezone="UTC"
                    xmlns="uri:oozie:coordinator:0.1">
      <datasets>
        <dataset name="logs" frequency="${coord:days(1)}"
                 initial-instance="2009-01-01T24:00Z" timezone="UTC">
          <uri-template>hdfs://bar:8020/app/logs/${YEAR}${MONTH}/${DAY}</uri-template>
        </dataset>
        <dataset name="weeklySiteAccessStats" frequency="${coord:days(7)}"
                 initial-instance="2009-01-07T24:00Z" timezone="UTC">
          <uri-template>hdfs://bar:8020/app/weeklystats/${YEAR}/${MONTH}/${DAY}</uri-template>
        </dataset>
      </datasets>
      <input-events>
        <data-in name="input" dataset="logs">
          <start-instance>${coord:current(-6)}</start-instance>
          <end-instance>${coord:current(0)}</end-instance>
        </data-in>
      </input-events>
      <output-events>
         <data-out name="output" dataset="siteAccessStats">
           <instance>${coord:current(0)}</instance>
         </data-out>
      </output-events>
      <action>
        <workflow>
          <app-path>hdfs://bar:8020/usr/joe/logsprocessor-wf</app-path>
          <configuration>
            <property>
              <name>wfInput</name>
              <value>${coord:dataIn('input')}</value>
            </property>
            <property>
              <name>wfOutput</name>
              <value>${coord:dataOut('output')}</value>
            </property>
         </configuration>
       </workflow>
      </action>
   </coordinator-app>"""


def test_6_3_example_3_as_printed_writes_to_an_undefined_dataset() -> None:
    """6.3 example 3 names dataset 'siteAccessStats' for its output but defines only 'weeklySiteAccessStats'."""
    with pytest.raises(DefinitionError, match="undefined dataset 'siteAccessStats'"):
        resolve(WEEKLY)


@pytest.mark.parametrize(
    ("number", "days", "output"),
    [
        # The spec prints 200901/01..07 (with 05 twice) and stats/2009/01/07: it names each daily
        # instance by the day that ends at its 24:00. ${DAY} of 2009-01-01T24:00Z is 02 (4.1.1), so
        # the 7 URIs are 02..08 and the output 2009/01/08 (ADR 0004).
        pytest.param(1, range(2, 9), "hdfs://bar:8020/app/weeklystats/2009/01/08", id="first-week-adr-24-00-is-next-day"),
        # The spec prints 08..13 and 16 for the second week: 7 consecutive days 09..15.
        pytest.param(2, range(9, 16), "hdfs://bar:8020/app/weeklystats/2009/01/15", id="second-week-seven-consecutive-days"),
    ],
)
def test_6_3_example_3_weekly_range_of_seven_days(number: int, days: range, output: str) -> None:
    """6.3 example 3 (output dataset name fixed): a range of the last 7 daily instances, oldest first, comma-separated."""
    plan = plan_action(resolve(WEEKLY.replace('dataset="siteAccessStats"', 'dataset="weeklySiteAccessStats"')), number, now=NOW)
    expected = [f"hdfs://bar:8020/app/logs/200901/{d:02d}" for d in days]
    assert plan.data_in["input"] == expected
    assert plan.configuration == {"wfInput": ",".join(expected), "wfOutput": output}


# --- 6.6.1 coord:current --------------------------------------------------------------------

HOURLY_DATASETS = """<datasets>  <dataset name="logs" frequency="${coord:hours(1)}"
           initial-instance="2009-01-01T01:00Z" timezone="UTC">
    <uri-template>hdfs://bar:8020/app/logs/${YEAR}${MONTH}/${DAY}/${HOUR}</uri-template>
  </dataset>
</datasets>"""
INCLUDE = "hdfs://foo:8020/app/dataset-definitions/datasets.xml"
ROLLING = """<coordinator-app name="app-coord" frequency="${coord:days(1)}"
                    start="2009-01-01T24:00Z" end="2009-12-31T24:00Z" timezone="UTC"
                    xmlns="uri:oozie:coordinator:0.1">
      <datasets>
        <include>hdfs://foo:8020/app/dataset-definitions/datasets.xml</include>
      </datasets>
      <input-events>
        <data-in name="input" dataset="logs">
          <start-instance>${coord:current(-23)}</start-instance>
          <end-instance>${coord:current(0)}</end-instance>
        </data-in>
      </input-events>
      <action>
        <workflow>
        ...
       </workflow>
      </action>
   </coordinator-app>"""
SLIDING = ROLLING.replace('frequency="${coord:days(1)}"', 'frequency="${coord:hours(1)}"', 1)


@pytest.mark.parametrize(
    ("xml", "actions", "shared"),
    [
        # "365 coordinator actions": with end exclusive, 2009-01-02 .. 2009-12-31 is 364 (ADR 0004).
        pytest.param(ROLLING, 364, 0, id="example-2a-daily-rolling-window"),
        # "8760 (24*8760)" hourly actions: 364 days of 24 with end exclusive (ADR 0004).
        pytest.param(SLIDING, 364 * 24, 23, id="example-2b-hourly-sliding-window"),
    ],
)
def test_6_6_1_example_2_windows(xml: str, actions: int, shared: int) -> None:
    """6.6.1 example 2: the last 24 hourly instances; daily actions use disjoint windows, hourly ones share 23."""
    resolved = resolve(xml, includes={INCLUDE: HOURLY_DATASETS})
    assert count_before(resolved.start, resolved.end, resolved.frequency, resolved.tz) == actions
    first, second = plans(resolved, 2)
    assert first.data_in["input"] == [u.replace("/2009/01/", "/200901/") for u in hourly_urls("2009-01-01T01:00Z", 24)]
    assert len(second.data_in["input"]) == 24
    assert len(set(first.data_in["input"]) & set(second.data_in["input"])) == shared


STATS_DATASETS = """<datasets>
  <dataset name="logs" frequency="${coord:hours(1)}"
           initial-instance="2009-01-01T01:00Z" timezone="UTC">
    <uri-template>hdfs://bar:8020/app/logs/${YEAR}/${MONTH}/${DAY}/${HOUR}</uri-template>
  </dataset>
  <dataset name="stats" frequency="${coord:days(1)}"
           initial-instance="2009-01-01T24:00Z" timezone="UTC">
    <uri-template>hdfs://bar:8020/app/logs/${YEAR}/${MONTH}/${DAY}</uri-template>
  </dataset>
</datasets>"""
PRODUCER = ROLLING.replace(
    "</input-events>",
    """</input-events>
      <output-events>
        <data-out name="output" dataset="stats">
          <instance>${coord:current(0)}</instance>
        </data-out>
      </output-events>""",
)


@pytest.mark.parametrize(
    ("number", "first_hour", "output"),
    [
        pytest.param(1, "2009-01-01T01:00Z", "hdfs://bar:8020/app/logs/2009/01/02", id="first-day"),
        pytest.param(2, "2009-01-02T01:00Z", "hdfs://bar:8020/app/logs/2009/01/03", id="second-day"),
    ],
)
def test_6_6_1_example_3_output_instance_per_action(number: int, first_hour: str, output: str) -> None:
    """6.6.1 example 3: each daily action reads 24 hourly instances and creates the day's 'stats' instance."""
    plan = plan_action(resolve(PRODUCER, includes={INCLUDE: STATS_DATASETS}), number, now=NOW)
    assert plan.data_in["input"] == hourly_urls(first_hour, 24)
    assert plan.data_out == {"output": [output]}


PIPELINE_DATASETS = """<datasets>
   <!--- Dataset A - produced every 15 minutes. -->
  <dataset name="15MinLogs" frequency="${coord:minutes(15)}"
           initial-instance="2009-01-01T00:15:00Z" timezone="UTC">
    <uri-template>hdfs://bar:8020/app/logs/${YEAR}/${MONTH}/${DAY}/${HOUR}/${MINUTE}</uri-template>
  </dataset>
  <dataset name="1HourLogs" frequency="${coord:hours(1)}"
           initial-instance="2009-01-01T01:00:00Z" timezone="UTC">
    <uri-template>hdfs://bar:8020/app/logs/${YEAR}/${MONTH}/${DAY}/${HOUR}</uri-template>
  </dataset>
  <dataset name="1DayLogs" frequency="${coord:hours(24)}"
           initial-instance="2009-01-01T24:00:00Z" timezone="UTC">
    <uri-template>hdfs://bar:8020/app/logs/${YEAR}/${MONTH}/${DAY}</uri-template>
  </dataset>
</datasets>"""
PIPELINE_HOURLY = """<coordinator-app name="app-coord-hourly" frequency="${coord:hours(1)}"
                    start="2009-01-01T01:00Z" end="2009-12-31T24:00Z" timezone="UTC"
                    xmlns="uri:oozie:coordinator:0.1">
      <datasets>
        <include>hdfs://foo:8020/app/dataset-definitions/datasets.xml</include>
      </datasets>
      <input-events>
        <data-in name="input" dataset="15MinLogs">
          <start-instance>${coord:current(-3)}</start-instance>
          <end-instance>${coord:current(0)}</end-instance>
        </data-in>
      </input-events>
      <output-events>
        <data-out name="output" dataset="1HourLogs">
          <instance>${coord:current(0)}</instance>
        </data-out>
      </output-events>
      <action>
        <workflow>
        ...
       </workflow>
      </action>
   </coordinator-app>"""
PIPELINE_DAILY = """<coordinator-app name="app-coord-daily" frequency="${coord:days(1)}"
                    start="2009-01-01T24:00Z" end="2009-12-31T24:00Z" timezone="UTC"
                    xmlns="uri:oozie:coordinator:0.1">
      <datasets>
        <include>hdfs://foo:8020/app/dataset-definitions/datasets.xml</include>
      </datasets>
      <input-events>
        <data-in name="input" dataset="1HourLogs">
          <start-instance>${coord:current(-23)}</start-instance>
          <end-instance>${coord:current(0)}</end-instance>
        </data-in>
      </input-events>
      <output-events>
        <data-out name="output" dataset="1DayLogs">
          <instance>${coord:current(0)}</instance>
        </data-out>
      </output-events>
      <action>
        <workflow>
        ...
       </workflow>
      </action>
   </coordinator-app>"""
# The printed names start with a digit and the initial instances carry seconds: both refused (ADR 0004).
PIPELINE_NAMES = {"15MinLogs": "minLogs15", "1HourLogs": "hourLogs1", "1DayLogs": "dayLogs1"}


def _fixed(text: str) -> str:
    for old, new in PIPELINE_NAMES.items():
        text = text.replace(old, new)
    return re.sub(r"(T\d\d:\d\d):00Z", r"\1Z", text)


@pytest.mark.parametrize(
    ("datasets", "error"),
    [
        pytest.param(PIPELINE_DATASETS, SchemaValidationError, id="dataset-names-are-not-identifiers"),
        pytest.param(PIPELINE_DATASETS.replace("15MinLogs", "minLogs15").replace("1HourLogs", "hourLogs1").replace("1DayLogs", "dayLogs1"),
                     DefinitionError, id="initial-instance-with-seconds"),
    ],
)
def test_6_6_1_example_4_as_printed_is_refused(datasets: str, error: type[DefinitionError]) -> None:
    """6.6.1 example 4 as printed: dataset names must be identifiers (XSD), datetimes have minute precision (4.1)."""
    xml = PIPELINE_HOURLY.replace("15MinLogs", "minLogs15").replace("1HourLogs", "hourLogs1")
    with pytest.raises(error):
        resolve(xml if error is not SchemaValidationError else PIPELINE_HOURLY, includes={INCLUDE: datasets})


@pytest.mark.parametrize(
    ("number", "quarters"),
    [
        pytest.param(1, ["2009/01/01/00/15", "2009/01/01/00/30", "2009/01/01/00/45", "2009/01/01/01/00"], id="first-hour"),
        pytest.param(24, ["2009/01/01/23/15", "2009/01/01/23/30", "2009/01/01/23/45", "2009/01/02/00/00"], id="24th-hour"),
    ],
)
def test_6_6_1_example_4_pipeline_outputs_feed_the_daily_inputs(number: int, quarters: list[str]) -> None:
    """6.6.1 example 4: hourly actions turn 4 quarter-hours into an hour; the daily action reads those 24 hours."""
    includes = {INCLUDE: _fixed(PIPELINE_DATASETS)}
    hourly = plans(resolve(_fixed(PIPELINE_HOURLY), includes=includes), 24)
    (daily,) = plans(resolve(_fixed(PIPELINE_DAILY), includes=includes), 1)
    assert hourly[number - 1].data_in["input"] == [f"hdfs://bar:8020/app/logs/{q}" for q in quarters]
    assert all(len(p.data_in["input"]) == 4 for p in hourly)
    assert [p.data_out["output"][0] for p in hourly] == daily.data_in["input"] == hourly_urls("2009-01-01T01:00Z", 24)
    assert daily.data_out == {"output": ["hdfs://bar:8020/app/logs/2009/01/02"]}


# --- 6.6.2 coord:offset ---------------------------------------------------------------------

OFFSET_APP = """<coordinator-app name="app-coord" frequency="${coord:days(1)}"
                    start="2009-01-01T24:00Z" end="2009-12-31T24:00Z" timezone="UTC"
                    xmlns="uri:oozie:coordinator:0.1">
      <datasets>
        <include>hdfs://foo:8020/app/dataset-definitions/datasets.xml</include>
      </datasets>
      <input-events>
        <data-in name="input" dataset="logs">
          <start-instance>${coord:offset(-90, "MINUTE")}</start-instance>
          <end-instance>${coord:offset(0, "DAY")}</end-instance>
        </data-in>
      </input-events>
      <output-events>
        <data-out name="output" dataset="stats">
          <instance>${coord:offset(0, "DAY")}</instance>
        </data-out>
      </output-events>
      <action>
        <workflow>
        ...
       </workflow>
      </action>
   </coordinator-app>"""


@pytest.mark.parametrize(
    ("number", "first_hour", "output"),
    [
        pytest.param(1, "2009-01-01T23:00Z", "hdfs://bar:8020/app/logs/2009/01/02", id="first-day"),
        pytest.param(2, "2009-01-02T23:00Z", "hdfs://bar:8020/app/logs/2009/01/03", id="second-day"),
    ],
)
def test_6_6_2_example_2_start_instance_fast_forwards(number: int, first_hour: str, output: str) -> None:
    """6.6.2 example 2: start offset(-90, MINUTE) on an hourly dataset is current(-1); end offset(0, DAY) is current(0)."""
    plan = plan_action(resolve(OFFSET_APP, includes={INCLUDE: STATS_DATASETS}), number, now=NOW)
    assert plan.data_in["input"] == hourly_urls(first_hour, 2)
    assert plan.data_out == {"output": [output]}


# --- 6.6.3 coord:hoursInDay, 6.6.4 coord:daysInMonth, 6.6.5 coord:tzOffset ------------------

def _dataset_app(tz: str, frequency: str, job_tz: str | None = None) -> str:
    return f"""<coordinator-app name="c" frequency="${{coord:days(1)}}" start="2009-01-01T00:00Z" end="2010-01-01T00:00Z"
        timezone="{job_tz or tz}" xmlns="uri:oozie:coordinator:0.1">
      <datasets><dataset name="ds" frequency="{frequency}" initial-instance="2008-01-01T00:00Z" timezone="{tz}">
        <uri-template>hdfs://bar:8020/ds/${{YEAR}}/${{MONTH}}/${{DAY}}</uri-template></dataset></datasets>
      <action>{WORKFLOW}</action>
    </coordinator-app>"""


LA, LONDON = "America/Los_Angeles", "Europe/London"


@pytest.mark.parametrize(
    ("nominal", "tz", "end_of", "n", "hours"),
    [
        pytest.param("2009-01-01T08:00Z", "UTC", False, 0, 24, id="utc-jan01"),
        pytest.param("2009-01-01T08:00Z", LA, False, 0, 24, id="la-jan01"),
        pytest.param("2009-01-01T08:00Z", LA, False, -1, 24, id="la-dec31-previous-day"),
        pytest.param("2009-03-08T08:00Z", "UTC", False, 0, 24, id="utc-mar08"),
        pytest.param("2009-03-08T08:00Z", LONDON, False, 0, 24, id="london-mar08"),
        pytest.param("2009-03-08T08:00Z", LA, False, 0, 23, id="la-mar08-dst-switch"),
        pytest.param("2009-03-08T08:00Z", LA, False, 1, 24, id="la-mar09-next-day"),
        pytest.param("2009-03-07T08:00Z", LA, True, 0, 24, id="la-end-of-day-mar07"),
        pytest.param("2009-03-07T08:00Z", LA, True, 1, 23, id="la-end-of-day-mar08-dst-switch"),
    ],
)
def test_6_6_3_hours_in_day_table(nominal: str, tz: str, end_of: bool, n: int, hours: int) -> None:
    """6.6.3 table: coord:hoursInDay(n) for the dataset's zone, n days from the nominal day; endOfDays datasets alike."""
    resolved = resolve(_dataset_app(tz, "${coord:endOfDays(1)}" if end_of else "${coord:days(1)}"))
    assert el(resolved, f"${{coord:hoursInDay({n})}}", nominal, "ds") == hours


@pytest.mark.parametrize(
    ("nominal", "tz", "end_of", "n", "days"),
    [
        pytest.param("2008-02-01T00:00Z", "UTC", False, 0, 29, id="utc-2008-feb-leap"),
        pytest.param("2009-02-01T00:00Z", "UTC", False, 0, 28, id="utc-2009-feb"),
        pytest.param("2009-02-01T00:00Z", "UTC", False, -1, 31, id="utc-2009-jan-previous-month"),
        pytest.param("2009-03-01T00:00Z", "UTC", False, 1, 30, id="utc-2009-apr-next-month"),
        # "Americas/Los_Angeles" in the table is not a zone identifier (ADR 0004): America/Los_Angeles.
        pytest.param("2009-02-01T00:00Z", LA, False, 0, 31, id="la-still-january"),
        pytest.param("2008-02-01T00:00Z", "UTC", True, 0, 29, id="end-of-month-2008-feb-leap"),
        pytest.param("2008-02-01T00:00Z", "UTC", True, -1, 31, id="end-of-month-2008-jan"),
        pytest.param("2009-02-01T00:00Z", "UTC", True, 0, 28, id="end-of-month-2009-feb"),
        pytest.param("2009-02-01T00:00Z", "UTC", True, -1, 31, id="end-of-month-2009-jan"),
        pytest.param("2009-03-01T00:00Z", "UTC", True, 1, 30, id="end-of-month-2009-apr"),
        pytest.param("2009-02-01T00:00Z", LA, True, 0, 31, id="end-of-month-la-still-january"),
    ],
)
def test_6_6_4_days_in_month_table(nominal: str, tz: str, end_of: bool, n: int, days: int) -> None:
    """6.6.4 table: coord:daysInMonth(n) in the dataset's zone, leap years included; endOfMonths datasets alike."""
    resolved = resolve(_dataset_app(tz, "${coord:endOfMonths(1)}" if end_of else "${coord:months(1)}"))
    assert el(resolved, f"${{coord:daysInMonth({n})}}", nominal, "ds") == days


def test_6_6_4_unknown_zone_of_the_table_is_refused() -> None:
    """'Americas/Los_Angeles' (the table's spelling) is not a zoneinfo identifier: a clear error."""
    with pytest.raises(DefinitionError, match="unknown time zone 'Americas/Los_Angeles'"):
        resolve(_dataset_app("Americas/Los_Angeles", "${coord:months(1)}", job_tz="UTC"))


@pytest.mark.parametrize(
    ("nominal", "dataset_tz", "job_tz", "minutes"),
    [
        pytest.param("2009-01-15T00:00Z", LA, "UTC", -480, id="los-angeles-winter"),
        # The spec writes "India offset is -330 (+05:30 hours)": +05:30 is +330 minutes (ADR 0004).
        pytest.param("2009-01-15T00:00Z", "Asia/Kolkata", "UTC", 330, id="india-plus-0530"),
        pytest.param("2009-01-15T00:00Z", "Europe/Berlin", LA, 540, id="europe-vs-us-west-9-hours"),
        pytest.param("2009-03-15T00:00Z", "Europe/Berlin", LA, 480, id="europe-vs-us-west-8-hours-when-dst-differs"),
    ],
)
def test_6_6_5_tz_offset(nominal: str, dataset_tz: str, job_tz: str, minutes: int) -> None:
    """6.6.5: coord:tzOffset() = dataset UTC offset - job UTC offset in minutes at the nominal time; DST changes it."""
    resolved = resolve(_dataset_app(dataset_tz, "${coord:hours(1)}", job_tz=job_tz))
    assert el(resolved, "${coord:tzOffset()}", nominal, "ds") == minutes


HOURS_IN_DAY_APP = """<coordinator-app name="app-coord" frequency="${coord:days(1)}"
                    start="${jobStart}" end="${jobEnd}" timezone="${timezone}"
                    xmlns="uri:oozie:coordinator:0.1">
      <datasets>
        <dataset name="logs" frequency="${coord:hours(1)}"
                 initial-instance="${logsInitialInstance}" timezone="${timezone}">
          <uri-template>
            hdfs://bar:8020/app/logs/${market}/${language}/${YEAR}${MONTH}/${DAY}/${HOUR}
          </uri-template>
        </dataset>
      </datasets>
      <input-events>
        <data-in name="input" dataset="logs">
          <start-instance>${coord:current( -(coord:hoursInDay(0) - 1) )}</start-instance>
          <end-instance>${coord:current(0)}</end-instance>
        </data-in>
      </input-events>
      <action>
        <workflow>
        ...
       </workflow>
      </action>
   </coordinator-app>"""


@pytest.mark.parametrize(
    ("nominal", "count"),
    [
        pytest.param("2009-03-07T08:00Z", 24, id="regular-day"),
        pytest.param("2009-03-08T08:00Z", 23, id="spring-forward-day"),
        pytest.param("2009-11-01T07:00Z", 25, id="fall-back-day"),
    ],
)
def test_6_6_3_example_daily_range_follows_day_length(nominal: str, count: int) -> None:
    """6.6.3 example: -(coord:hoursInDay(0) - 1) makes the range 23, 24 or 25 hourly instances in a DST zone."""
    properties = {
        "jobStart": "2009-03-06T08:00Z", "jobEnd": "2009-12-01T08:00Z", "timezone": LA,
        "logsInitialInstance": "2009-01-01T08:00Z", "market": "us", "language": "en",
    }
    resolved = resolve(HOURS_IN_DAY_APP, properties)
    plan = {format_datetime(p.nominal_time): p for p in plans(resolved, 300)}[nominal]
    assert len(plan.data_in["input"]) == count
    assert plan.data_in["input"][0].startswith("hdfs://bar:8020/app/logs/us/en/")


DAYS_IN_MONTH_APP = """<coordinator-app name="app-coord" frequency="${coord:months(1)}"
                    start="2009-01-31T24:00Z" end="2009-12-31T24:00" timezone="UTC"
                    xmlns="uri:oozie:coordinator:0.1">
      <datasets>
        <dataset name="logs" frequency="${coord:days(1)}"
                 initial-instance="2009-01-01T24:00Z" timezone="UTC">
          <uri-template>
            hdfs://bar:8020/app/logs/${market}/${language}/${YEAR}${MONTH}/${DAY}
          </uri-template>
        </dataset>
      </datasets>
      <input-events>
        <data-in name="input" dataset="logs">
          <start-instance>${coord:current( -(coord:daysInMonth(0) - 1) )}</start-instance>
          <end-instance>${coord:current(0)}</end-instance>
        </data-in>
      </input-events>
      <action>
        <workflow>
        ...
       </workflow>
      </action>
   </coordinator-app>"""


def test_6_6_4_example_as_printed_has_an_end_without_zone() -> None:
    """6.6.4 example: end="2009-12-31T24:00" lacks its zone designator; datetimes need one (4.1)."""
    with pytest.raises(DefinitionError, match="end"):
        resolve(DAYS_IN_MONTH_APP, {"market": "us", "language": "en"})


@pytest.mark.parametrize(
    ("number", "first_day", "count"),
    [
        # daysInMonth(0) at the 2009-02-01T00:00Z action is February's 28 (ADR 0004: the XML, not
        # the prose "the last month", decides), so the range starts on January 5th.
        pytest.param(1, "200901/05", 28, id="february-1-action-28-days"),
        pytest.param(2, "200901/30", 31, id="march-1-action-31-days"),
        pytest.param(3, "200903/03", 30, id="april-1-action-30-days"),
    ],
)
def test_6_6_4_example_monthly_range(number: int, first_day: str, count: int) -> None:
    """6.6.4 example (end given its Z): a monthly action reads coord:daysInMonth(0) daily instances."""
    resolved = resolve(DAYS_IN_MONTH_APP.replace('end="2009-12-31T24:00"', 'end="2009-12-31T24:00Z"'), {"market": "us", "language": "en"})
    plan = plan_action(resolved, number, now=NOW)
    uris = plan.data_in["input"]
    assert len(uris) == count
    assert uris[0] == f"hdfs://bar:8020/app/logs/us/en/{first_day}"


# --- 6.6.10 Instances before the initial instance --------------------------------------------

BOOTSTRAP = """<coordinator-app name="app-coord" frequency="${coord:hours(1)}"
                    start="2009-01-01T01:00Z" end="2009-12-31T24:00Z" timezone="UTC"
                    xmlns="uri:oozie:coordinator:0.1">
      <datasets>
        <dataset name="logs" frequency="${coord:hours(1)}"
                 initial-instance="2009-01-01T00:00Z"  timezone="UTC">
          <uri-template>
            hdfs://bar:8020/app/logs/${YEAR}/${MONTH}/${DAY}/${HOUR}
          </uri-template>
        </dataset>
      </datasets>
      <input-events>
        <data-in name="inputLogs" dataset="logs">
          <start-instance>${coord:current(-23)}</start-instance>
          <end-instance>${coord:current(0)}</end-instance>
        </data-in>
      </input-events>
      <action>
        <workflow>
        ...
       </workflow>
      </action>
   </coordinator-app>"""


@pytest.mark.parametrize(
    ("number", "count"),
    [
        # The spec says the first action resolves "just 1 instance", the second 2, and 24 "after the
        # 24th": the first action is at 01:00, so current(0) is 01:00 and 00:00 is already there:
        # 2, 3, ... and 24 from the 23rd action on (ADR 0004: the formula decides).
        pytest.param(1, 2, id="first-action-adr-two-instances"),
        pytest.param(2, 3, id="second-action"),
        pytest.param(23, 24, id="23rd-action-full-window"),
        pytest.param(24, 24, id="24th-action-constantly-24"),
        pytest.param(100, 24, id="later-actions-24"),
    ],
)
def test_6_6_10_instances_before_the_initial_instance_are_ignored(number: int, count: int) -> None:
    """6.6.10: instances before the initial instance are silently dropped; the range starts at 2009-01-01T00:00Z."""
    plan = plan_action(resolve(BOOTSTRAP), number, now=NOW)
    assert len(plan.data_in["inputLogs"]) == count
    if number < 23:
        assert plan.data_in["inputLogs"][0] == "hdfs://bar:8020/app/logs/2009/01/01/00"


# --- 6.7 coord:dataIn, dataOut, nominalTime, actualTime, user -------------------------------

DATA_IN_APP = """<coordinator-app name="app-coord" frequency="${coord:days(1)}"
                    start="2009-01-01T24:00Z" end="2009-12-31T24:00Z" timezone="UTC"
                    xmlns="uri:oozie:coordinator:0.1">
      <datasets>
        <dataset name="logs" frequency="${coord:hours(1)}"
                 initial-instance="2009-01-01T01:00Z" timezone="UTC">
          <uri-template>
             hdfs://bar:8020/app/logs/${YEAR}/${MONTH}/${DAY}/${HOUR}
          </uri-template>
        </dataset>
      </datasets>
      <input-events>
        <data-in name="inputLogs" dataset="logs">
          <start-instance>${coord:current( -(coord:hoursInDay(0) - 1) )}</start-instance>
          <end-instance>${coord:current(-1)}</end-instance>
        </data-in>
      </input-events>
      <action>
        <workflow>
          <app-path>hdfs://bar:8020/usr/joe/logsprocessor-wf</app-path>
          <configuration>
            <property>
              <name>wfInput</name>
              <value>${coord:dataIn('inputLogs')}</value>
            </property>
         </configuration>
       </workflow>
      </action>
   </coordinator-app>"""


@pytest.mark.parametrize(
    ("nominal", "first", "last"),
    [pytest.param("2009-01-02T00:00Z", "2009/01/01/01", "2009/01/01/23", id="2009-01-02-run")],
)
def test_6_7_1_data_in_is_every_uri_comma_separated(nominal: str, first: str, last: str) -> None:
    """6.7.1: for the 2009-01-02T00:00Z run, dataIn is 2009/01/01/01 ... 2009/01/01/23 as one comma-separated value.

    The spec's listing ends with a 24th URI 2009/02/00/00, an impossible date; current(-23) ..
    current(-1) is 23 instances (ADR 0004).
    """
    (plan,) = plans(resolve(DATA_IN_APP), 1)
    assert format_datetime(plan.nominal_time) == nominal
    expected = hourly_urls("2009-01-01T01:00Z", 23)
    assert expected[0] == f"hdfs://bar:8020/app/logs/{first}" and expected[-1] == f"hdfs://bar:8020/app/logs/{last}"
    assert plan.configuration == {"wfInput": ",".join(expected)}


DATA_OUT_DATASETS = """<datasets>
  <dataset name="hourlyLogs" frequency="${coord:hours(1)}"
           initial-instance="2009-01-01T01:00Z" timezone="UTC">
    <uri-template>hdfs://bar:8020/app/logs/${YEAR}/${MONTH}/${DAY}/${HOUR}</uri-template>
  </dataset>
  <dataset name="dailyLogs" frequency="${coord:days(1)}"
           initial-instance="2009-01-01T24:00Z" timezone="UTC">
    <uri-template>hdfs://bar:8020/app/daily-logs/${YEAR}/${MONTH}/${DAY}</uri-template>
  </dataset>
</datasets>"""
DATA_OUT_APP = """<coordinator-app name="app-coord" frequency="${coord:days(1)}"
                    start="2009-01-01T24:00Z" end="2009-12-31T24:00Z" timezone="UTC"
                    xmlns="uri:oozie:coordinator:0.1">
      <datasets>
        <include>hdfs://foo:8020/app/dataset-definitions/datasets.xml</include>
      </datasets>
      <input-events>
        <data-in name="inputLogs" dataset="hourlyLogs">
          <start-instance>${coord:current( -(coord:hoursInDay(0) -1) )}</start-instance>
          <end-instance>${coord:current(0)}</end-instance>
        </data-in>
      </input-events>
      <output-events>
        <data-out name="outputLogs" dataset="dailyLogs">
          <instance>${coord:current(0)}</instance>
        </data-out>
      </output-events>
      <action>
        <workflow>
          <app-path>hdfs://bar:8020/usr/joe/logsaggretor-wf</app-path>
          <configuration>
            <property>
              <name>wfInput</name>
              <value>${coord:dataIn('inputLogs')}</value>
            </property>
            <property>
              <name>wfOutput</name>
              <value>${coord:dataOut('outputLogs')}</value>
            </property>
         </configuration>
       </workflow>
      </action>
   </coordinator-app>"""


@pytest.mark.parametrize(
    ("name", "value"),
    [
        pytest.param("wfOutput", "hdfs://bar:8020/app/daily-logs/2009/01/02", id="output-adr-template-and-event-name"),
        pytest.param("wfInput", ",".join(hourly_urls("2009-01-01T01:00Z", 24)), id="input-24-hours"),
    ],
)
def test_6_7_2_data_out_is_the_output_instance_uri(name: str, value: str) -> None:
    """6.7.2: for the 2009-01-01T24:00Z run, dataOut is the day's dailyLogs URI; dataIn the last 24 hourly ones.

    The spec prints hdfs://bar:8020/app/logs/2009/01/02 and calls dataOut('dailyLogs'); the XML's
    template and event name give app/daily-logs/2009/01/02 through dataOut('outputLogs') (ADR 0004).
    """
    (first,) = plans(resolve(DATA_OUT_APP, includes={INCLUDE: DATA_OUT_DATASETS}), 1)
    assert first.nominal_time == P("2009-01-01T24:00Z")
    assert first.configuration[name] == value


NOMINAL_APP = """<coordinator-app name="app-coord" frequency="${coord:days(1)}"
                    start="2009-01-01T24:00Z" end="2009-12-31T24:00Z" timezone="UTC"
                    xmlns="uri:oozie:coordinator:0.1">
     <datasets>
       <dataset name="hourlyLogs" frequency="${coord:hours(1)}"
                initial-instance="2009-01-01T01:00Z" timezone="UTC">
         <uri-template>hdfs://bar:8020/app/logs/${YEAR}/${MONTH}/${DAY}/${HOUR}</uri-template>
       </dataset>
     </datasets>
      <input-events>
        <data-in name="inputLogs" dataset="hourlyLogs">
          <start-instance>${coord:current(-23)}</start-instance>
          <end-instance>${coord:current(0)}</end-instance>
        </data-in>
      </input-events>
      <action>
        <app-path>${nameNode}/user/${coord:user()}/examples/apps/aggregator</app-path>
        <configuration>
            <property>
              <name>nextInstance</name>
              <value>${coord:dateOffset(coord:nominalTime(), 1, 'DAY')}</value>
            </property>
            <property>
             <name>previousInstance</name>
              <value>${coord:dateOffset(coord:nominalTime(), -1, 'DAY')}</value>
            </property>
         </configuration>
      </action>
   </coordinator-app>"""
NOMINAL_FIXED = NOMINAL_APP.replace("<action>\n", "<action><workflow>\n").replace("</configuration>\n      </action>", "</configuration></workflow>\n      </action>")


def test_6_7_3_example_as_printed_lacks_the_workflow_element() -> None:
    """6.7.3/6.7.4 put <app-path> directly in <action>; every schema wants <action><workflow>."""
    with pytest.raises(SchemaValidationError, match="app-path"):
        resolve(NOMINAL_APP, {"nameNode": "hdfs://bar:8020"})


@pytest.mark.parametrize(
    ("number", "nominal", "next_instance", "previous_instance"),
    [
        # 6.8.1: "'nextInstance' will be '2009-01-02T24:00Z' ... 'previousInstance' '2008-12-31T24:00Z'".
        pytest.param(1, "2009-01-02T00:00Z", "2009-01-02T24:00Z", "2008-12-31T24:00Z", id="first-action"),
        pytest.param(2, "2009-01-03T00:00Z", "2009-01-03T24:00Z", "2009-01-01T24:00Z", id="second-action"),
        pytest.param(3, "2009-01-04T00:00Z", "2009-01-04T24:00Z", "2009-01-02T24:00Z", id="third-action"),
        # The spec's list ends at 2010-01-01T00:00Z; with end exclusive the last is 2009-12-31 (ADR 0004).
        pytest.param(364, "2009-12-31T00:00Z", "2009-12-31T24:00Z", "2009-12-29T24:00Z", id="last-action-adr-end-exclusive"),
    ],
)
def test_6_7_3_nominal_times_and_date_offsets(number: int, nominal: str, next_instance: str, previous_instance: str) -> None:
    """6.7.3/6.8.1: nominal times 2009-01-02T00:00Z, 01-03, 01-04 ...; next/previous instance one day either side."""
    resolved = resolve(NOMINAL_FIXED, {"nameNode": "hdfs://bar:8020"})
    assert count_before(resolved.start, resolved.end, resolved.frequency, resolved.tz) == 364
    plan = plan_action(resolved, number, now=NOW)
    assert format_datetime(plan.nominal_time) == nominal
    assert P(plan.configuration["nextInstance"]) == P(next_instance)
    assert P(plan.configuration["previousInstance"]) == P(previous_instance)


ACTUAL_APP = """<coordinator-app name="app-coord" frequency="${coord:days(1)}"
                    start="2011-05-01T24:00Z" end="2011-12-31T24:00Z" timezone="UTC"
                    xmlns="uri:oozie:coordinator:0.1">
     <datasets>
       <dataset name="hourlyLogs" frequency="${coord:hours(1)}"
                initial-instance="2011-04-01T01:00Z" timezone="UTC">
         <uri-template>hdfs://bar:8020/app/logs/${YEAR}/${MONTH}/${DAY}/${HOUR}</uri-template>
       </dataset>
     </datasets>
      <input-events>
        <data-in name="inputLogs" dataset="hourlyLogs">
          <start-instance>${coord:current(-23)}</start-instance>
          <end-instance>${coord:current(0)}</end-instance>
        </data-in>
      </input-events>
      <action><workflow>
        <app-path>${nameNode}/user/${coord:user()}/examples/apps/aggregator</app-path>
        <configuration>
            <property>
              <name>actualTime</name>
              <value>${coord:formatTime(coord:actualTime(), 'yyyy-MM-dd')}</value>
            </property>
         </configuration>
      </workflow></action>
   </coordinator-app>"""


@pytest.mark.parametrize(
    ("number", "actual"),
    [pytest.param(1, "2011-05-01", id="first"), pytest.param(2, "2011-05-02", id="second"), pytest.param(3, "2011-05-03", id="third")],
)
def test_6_7_4_actual_time_is_when_the_action_was_created(number: int, actual: str) -> None:
    """6.7.4: a job started 2011-05-01 creates each action the day before its nominal time: actualTime 2011-05-01, -02, -03."""
    resolved = resolve(ACTUAL_APP, {"nameNode": "hdfs://bar:8020"})
    nominal = plan_action(resolved, number, now=NOW).nominal_time
    created = nominal - timedelta(hours=1)  # materialized ahead of its nominal time ("current mode")
    assert plan_action(resolved, number, now=created).configuration == {"actualTime": actual}


@pytest.mark.parametrize("xml", [pytest.param(NOMINAL_FIXED, id="6.7.3-app"), pytest.param(ACTUAL_APP, id="6.7.4-app")])
def test_6_7_5_user_is_the_submitter(xml: str) -> None:
    """6.7.5: coord:user() is the user that submitted the job (joe), as in the examples' app paths."""
    (first,) = plans(resolve(xml, {"nameNode": "hdfs://bar:8020"}), 1)
    assert first.app_path == "hdfs://bar:8020/user/joe/examples/apps/aggregator"


# --- 6.8 Parameterization of the coordinator application -----------------------------------

@pytest.mark.parametrize(
    ("expression", "value"),
    [
        pytest.param("${coord:dateOffset('2009-01-01T00:00Z', 2, 'MONTH')}", "2009-03-01T00:00Z", id="6.8.1-plus-2-months"),
        pytest.param("${coord:dateOffset('2009-01-01T00:00Z', 1, 'YEAR')}", "2010-01-01T00:00Z", id="6.8.1-plus-1-year"),
        pytest.param("${coord:formatTime('2009-01-01T00:00Z', 'yyyy')}", "2009", id="6.8.2-year"),
    ],
)
def test_6_8_date_functions(expression: str, value: str) -> None:
    """6.8.1/6.8.2: dateOffset moves a date by calendar units; formatTime applies a Java SimpleDateFormat pattern."""
    (first, *_) = plans(resolve(TIMES.replace("EXPR", expression)))
    assert first.configuration == {"value": value}


# --- 4.1 / processing time zone ----------------------------------------------------------------

def test_4_1_gmt_offset_processing_zone_writes_datetimes_in_it() -> None:
    """4.1: with processing zone GMT+05:30, datetime values are written in that offset (2009-08-10T13:10+0530)."""
    xml = TIMES.replace("EXPR", "${coord:nominalTime()}|${coord:dateOffset(coord:nominalTime(), 1, 'DAY')}")
    (first, *_) = plans(resolve(xml, processing="GMT+05:30"))
    assert first.configuration == {"value": "2009-03-08T13:30+0530|2009-03-09T13:30+0530"}
    assert P("2009-03-08T13:30+0530") == first.nominal_time


# --- 7 Time zones and daylight saving ---------------------------------------------------------

INDIA_LIKE = """<coordinator-app name="app-coord" frequency="${coord:days(1)}"
                    start="2008-12-31T19:30Z" end="2009-12-30T19:30Z" timezone="UTC"
                    xmlns="uri:oozie:coordinator:0.1">
      <datasets>
        <dataset name="hourlyLogs" frequency="${coord:hours(1)}"
                 initial-instance="2008-12-31T19:30Z"  timezone="UTC">
          <uri-template>hdfs://bar:8020/app/logs/${YEAR}/${MONTH}/${DAY}/${HOUR}</uri-template>
        </dataset>
      </datasets>
      <input-events>
        <data-in name="inputLogs" dataset="hourlyLogs">
          <start-instance>${coord:current(-23)}</start-instance>
          <end-instance>${coord:current(0)}</end-instance>
        </data-in>
      </input-events>
      <action>
      ...
      </action>
   </coordinator-app>"""

WEST = """<coordinator-app name="eastcoast-europe-processing" frequency="${coord:days(1)}"
                 start="2009-01-02T09:00Z" end="2010-01-02T09:00Z" timezone="America/Los_Angeles"
                 xmlns="uri:oozie:coordinator:0.1">
  <datasets>
    <dataset name="eastlogs" frequency="${coord:hours(1)}"
             initial-instance="2009-01-01T06:00Z" timezone="America/New_York">
      <uri-template>
         hdfs://bar:8020/app/logs/eastcoast/${YEAR}/${MONTH}/${DAY}/${HOUR}
      </uri-template>
    </dataset>
    <dataset name="estlogs" frequency="${coord:hours(1)}"
             initial-instance="2009-01-01T09:00Z" timezone="America/Los_Angeles">
      <uri-template>
         hdfs://bar:8020/app/logs/westcoast/${YEAR}/${MONTH}/${DAY}/${HOUR}
      </uri-template>
    </dataset>
  </datasets>
  <input-events>
    <data-in name="EC" dataset="eastlogs">
      <start-instance>${coord:current( -(coord:hoursInDay(0) - 1) -3)}</start-instance>
      <end-instance>${coord:current(-3)}</end-instance>
    </data-in>
    <data-in name="WC" dataset="westlogs">
      <start-instance>$coord:{current(- (coord:hoursInDay(0) - 1) )}</start-instance>
      <end-instance>${coord:current(0)}</end-instance>
    </data-in>
  </input-events>
  <action>
   <workflow>
     <app-path>hdfs://bar:8020/usr/joe/logsaggretor-wf</app-path>
     <configuration>
       <property>
         <name>wfInput</name>
         <value>${coord:dataIn('EC')},${coord:dataIn('WC')}</value>
       </property>
    </configuration>
  </workflow>
  </action>
</coordinator-app>"""
WEST_FIXED = WEST.replace('name="estlogs"', 'name="westlogs"').replace("$coord:{current(", "${coord:current(")


@pytest.mark.parametrize(
    ("xml", "message"),
    [
        pytest.param(WEST, "undefined dataset 'westlogs'", id="dataset-estlogs-vs-westlogs"),
        pytest.param(WEST.replace('name="estlogs"', 'name="westlogs"'), "not a datetime", id="misplaced-brace-is-a-literal"),
    ],
)
def test_7_2_use_case_2_as_printed_is_refused(xml: str, message: str) -> None:
    """7.2 use case 2 defines 'estlogs' but reads 'westlogs', and writes `$coord:{current(...)}`: both refused."""
    with pytest.raises(DefinitionError, match=message):
        resolve(xml)


@pytest.mark.parametrize(
    ("nominal", "count", "east_last", "west_last"),
    [
        # The job starts 2009-01-02T09:00Z: actions at 01:00 Pacific (09:00Z winter, 08:00Z summer).
        # Each range has hoursInDay(0) instances of its own zone; East ends 3 instances earlier.
        pytest.param("2009-01-05T09:00Z", 24, "2009/01/05/06", "2009/01/05/09", id="winter-day"),
        pytest.param("2009-03-08T09:00Z", 23, "2009/03/08/06", "2009/03/08/09", id="spring-forward-day-both-coasts"),
        pytest.param("2009-07-05T08:00Z", 24, "2009/07/05/05", "2009/07/05/08", id="summer-day"),
    ],
)
def test_7_2_use_case_2_east_and_west_coast(nominal: str, count: int, east_last: str, west_last: str) -> None:
    """7.2 use case 2 (names fixed): at Pacific midnight, a day of West coast hours and the East coast day shifted by -3."""
    plan = {format_datetime(p.nominal_time): p for p in plans(resolve(WEST_FIXED), 200)}[nominal]
    east, west = plan.data_in["EC"], plan.data_in["WC"]
    assert len(west) == count and len(east) == count
    assert east[-1] == f"hdfs://bar:8020/app/logs/eastcoast/{east_last}"
    assert west[-1] == f"hdfs://bar:8020/app/logs/westcoast/{west_last}"
    assert plan.configuration["wfInput"] == ",".join(east) + "," + ",".join(west)


EUROPE = """<coordinator-app name="eastcoast-europe-processing" frequency="${coord:days(1)}"
                 start="2009-01-02T05:00Z" end="2010-01-02T05:00Z" timezone="America/New_York"
                 xmlns="uri:oozie:coordinator:0.1">
  <datasets>
    <dataset name="eastlogs" frequency="${coord:hours(1)}"
             initial-instance="2009-01-01T06:00Z" timezone="America/New_York">
      <uri-template>
         hdfs://bar:8020/app/logs/eastcoast/${YEAR}/${MONTH}/${DAY}/${HOUR}
      </uri-template>
    </dataset>
    <dataset name="europelogs" frequency="${coord:hours(1)}"
             initial-instance="2009-01-01T01:00Z" timezone="Europe/Berlin">
      <uri-template>
         hdfs://bar:8020/app/logs/europe/${YEAR}/${MONTH}/${DAY}/${HOUR}
      </uri-template>
    </dataset>
  </datasets>
  <input-events>
    <data-in name="EC" dataset="eastlogs">
      <start-instance>${coord:current( -(coord:hoursInDay(0) - 1) )}</start-instance>
      <end-instance>${coord:current(-1)}</end-instance>
    </data-in>
    <data-in name="EU" dataset="eastlogs">
      <start-instance>${coord:current( -(coord:hoursInDay(0) -1) - coord:tzOffset()/60)}</start-instance>
      <end-instance>${coord:current( - coord:tzOffset()/60)}</end-instance>
    </data-in>
  </input-events>
  <action>
   <workflow>
     <app-path>hdfs://bar:8020/usr/joe/logsaggretor-wf</app-path>
     <configuration>
       <property>
         <name>wfInput</name>
         <value>${coord:dataIn('EC')}</value>
       </property>
    </configuration>
  </workflow>
  </action>
</coordinator-app>"""


def test_7_2_use_case_3_as_printed_reads_the_east_coast_twice() -> None:
    """7.2 use case 3 as printed points EU at 'eastlogs': tzOffset() is 0 there, so EU equals the East range shifted by 0."""
    plan = plan_action(resolve(EUROPE), 4, now=NOW)
    assert plan.data_in["EU"][:-1] == plan.data_in["EC"]  # EU ends at current(0), EC at current(-1)


@pytest.mark.parametrize(
    ("nominal", "offset_hours", "east_count"),
    [
        pytest.param("2009-01-05T05:00Z", 6, 23, id="winter-6-hours"),
        pytest.param("2009-03-10T04:00Z", 5, 23, id="us-dst-only-5-hours"),
        pytest.param("2009-04-10T04:00Z", 6, 23, id="both-dst-6-hours"),
    ],
)
def test_7_2_use_case_3_europe_shifted_by_tz_offset(nominal: str, offset_hours: int, east_count: int) -> None:
    """7.2 use case 3 (EU reading 'europelogs' as the text intends): the Europe range moves by coord:tzOffset()/60 hours."""
    resolved = resolve(EUROPE.replace('<data-in name="EU" dataset="eastlogs">', '<data-in name="EU" dataset="europelogs">'))
    plan = {format_datetime(p.nominal_time): p for p in plans(resolved, 120)}[nominal]
    europe, east = plan.data_in["EU"], plan.data_in["EC"]
    assert len(east) == east_count  # current(-(hoursInDay(0)-1)) .. current(-1), as printed
    assert len(europe) == 24
    expected_last = (P(nominal) - timedelta(hours=offset_hours)).strftime("%Y/%m/%d/%H")
    assert europe[-1].endswith(expected_last)
    assert plan.configuration == {"wfInput": ",".join(east)}
