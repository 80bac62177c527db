"""Seed section 6.5: parameterized applications; every missing property fails the submission by name."""

from __future__ import annotations

import pytest

from coordinators.plan import iter_action_plans, resolve_coordinator
from datasets.timeline import format_datetime, parse_datetime
from oozie.definitions import DefinitionError, parse_coordinator

NOW = parse_datetime("2026-01-01T00:00Z")


def app(parameters: str = "") -> str:
    return f"""<coordinator-app name="app-coord" frequency="${{coord:days(1)}}"
        start="${{jobStart}}" end="${{jobEnd}}" timezone="${{timezone}}" xmlns="uri:oozie:coordinator:0.4">
      {parameters}
      <datasets>
        <dataset name="logs" frequency="${{coord:hours(1)}}" initial-instance="${{logsInitialInstance}}" timezone="${{timezone}}">
          <uri-template>hdfs://bar:8020/app/logs/${{market}}/${{language}}/${{YEAR}}${{MONTH}}/${{DAY}}/${{HOUR}}</uri-template>
        </dataset>
      </datasets>
      <input-events>
        <data-in name="input" dataset="logs">
          <start-instance>${{coord:current(-23)}}</start-instance><end-instance>${{coord:current(0)}}</end-instance>
        </data-in>
      </input-events>
      <action><workflow><app-path>task:examples.noop</app-path>
        <configuration><property><name>tracker</name><value>${{coord:conf('job.tracker')}}</value></property></configuration>
      </workflow></action>
    </coordinator-app>"""


PROPERTIES = {
    "jobStart": "2009-01-02T00:00Z",
    "jobEnd": "2009-01-04T00:00Z",
    "logsInitialInstance": "2009-01-01T00:00Z",
    "timezone": "UTC",
    "market": "us",
    "language": "en",
    "job.tracker": "jt:8021",
}


@pytest.mark.parametrize(
    ("number", "nominal", "first", "last"),
    [
        pytest.param(1, "2009-01-02T00:00Z", "200901/01/01", "200901/02/00", id="first-action"),
        pytest.param(2, "2009-01-03T00:00Z", "200901/02/01", "200901/03/00", id="second-and-last-action"),
    ],
)
def test_all_six_properties_resolve_the_application(number: int, nominal: str, first: str, last: str) -> None:
    """With the six properties given, times, dataset URIs (${market}/${language}) and coord:conf resolve."""
    resolved = resolve_coordinator(parse_coordinator(app(), "c.xml"), PROPERTIES, user="ann")
    plans = list(iter_action_plans(resolved, now=NOW, max_actions=10))
    assert len(plans) == 2  # jobEnd 2009-01-04T00:00Z is exclusive
    plan = plans[number - 1]
    assert format_datetime(plan.nominal_time) == nominal
    assert plan.data_in["input"][0] == f"hdfs://bar:8020/app/logs/us/en/{first}"
    assert plan.data_in["input"][-1] == f"hdfs://bar:8020/app/logs/us/en/{last}"
    assert len(plan.data_in["input"]) == 24
    assert plan.configuration["tracker"] == "jt:8021"


@pytest.mark.parametrize("missing", ["jobStart", "jobEnd", "logsInitialInstance", "timezone", "market", "language"])
def test_each_missing_property_fails_the_submission_by_name(missing: str) -> None:
    """If a property used in the definition is not given, the submission fails naming it."""
    properties = {k: v for k, v in PROPERTIES.items() if k != missing}
    with pytest.raises(DefinitionError, match=missing):
        resolve_coordinator(parse_coordinator(app(), "c.xml"), properties, user="ann")


def test_formal_parameters_check_up_front_and_supply_defaults() -> None:
    """Schema 0.4 <parameters>: required ones are checked at submission; defaults fill the rest."""
    parameters = (
        "<parameters><property><name>jobStart</name></property>"
        "<property><name>jobEnd</name><value>2012-12-01T22:00Z</value></property></parameters>"
    )
    definition = parse_coordinator(app(parameters), "c.xml")
    without_end = {k: v for k, v in PROPERTIES.items() if k != "jobEnd"}
    resolved = resolve_coordinator(definition, without_end, user="ann")
    assert format_datetime(resolved.end) == "2012-12-01T22:00Z"
    with pytest.raises(DefinitionError, match="required parameters not given: jobStart"):
        resolve_coordinator(definition, {k: v for k, v in without_end.items() if k != "jobStart"}, user="ann")
