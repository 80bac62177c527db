"""Phase 1 (spec 6.5): every parameterized attribute resolves from job properties or `<parameters>` defaults.

An unresolved variable in any of them refuses the submission naming the variable. Identifiers
(dataset `name`, data-in/data-out `name` and `dataset`) are not parameterized: they stay as written.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from coordinators.dryrun import dryrun
from coordinators.models import CoordinatorJob
from coordinators.plan import ResolvedCoordinator, plan_action, resolve_coordinator
from coordinators.plan.resolve import MAX_NAME_LENGTH
from coordinators.preparation import load_resolved
from coordinators.services import submit_coordinator
from coordinators.sla.evaluate import evaluate_sla
from datasets.timeline import Frequency, format_datetime
from oozie.definitions import (
    DefinitionError,
    SchemaValidationError,
    UndefinedDatasetError,
    parse_coordinator,
)

NOW = datetime(2026, 1, 1, tzinfo=UTC)

#: Every parameterizable text of the definition, as written when a test does not override it.
DEFAULTS = {
    "name": "app-coord",
    "frequency": "${coord:days(1)}",
    "start": "2009-01-02T00:00Z",
    "end": "2009-01-04T00:00Z",
    "timezone": "UTC",
    "timeout": "-1",
    "concurrency": "1",
    "execution": "FIFO",
    "throttle": "12",
    "dataset-frequency": "${coord:hours(1)}",
    "initial-instance": "2009-01-01T00:00Z",
    "dataset-timezone": "UTC",
    "uri-template": "hdfs://bar:8020/logs/${YEAR}/${MONTH}/${DAY}/${HOUR}",
    "done-flag": "_SUCCESS",
    "data-in-instance": "${coord:current(0)}",
    "data-out-instance": "${coord:current(0)}",
    "app-path": "task:examples.noop",
    "property-name": "input",
    "property-value": "${coord:dataIn('input')}",
    "sla:nominal-time": "${coord:nominalTime()}",
    "sla:should-start": "${5 * MINUTES}",
    "sla:should-end": "${55 * MINUTES}",
    "sla:max-duration": "${30 * MINUTES}",
    "sla:alert-events": "start_miss",
    "sla:alert-contact": "joe@example.com",
    "sla:notification-msg": "run",
    "sla:upstream-apps": "ingest",
}


def app_xml(overrides: Mapping[str, str] | None = None, parameters: str = "") -> str:
    """The test application: DEFAULTS, with `overrides` (by DEFAULTS key) in their place."""
    v = {**DEFAULTS, **(overrides or {})}
    sla = "".join(f"<{k}>{val}</{k}>" for k, val in v.items() if k.startswith("sla:"))
    return f"""<coordinator-app name="{v['name']}" frequency="{v['frequency']}" start="{v['start']}"
        end="{v['end']}" timezone="{v['timezone']}"
        xmlns="uri:oozie:coordinator:0.4" xmlns:sla="uri:oozie:sla:0.2">
      {parameters}
      <controls><timeout>{v['timeout']}</timeout><concurrency>{v['concurrency']}</concurrency>
        <execution>{v['execution']}</execution><throttle>{v['throttle']}</throttle></controls>
      <datasets>
        <dataset name="logs" frequency="{v['dataset-frequency']}" initial-instance="{v['initial-instance']}"
                 timezone="{v['dataset-timezone']}">
          <uri-template>{v['uri-template']}</uri-template><done-flag>{v['done-flag']}</done-flag>
        </dataset>
      </datasets>
      <input-events><data-in name="input" dataset="logs"><instance>{v['data-in-instance']}</instance></data-in></input-events>
      <output-events><data-out name="output" dataset="logs"><instance>{v['data-out-instance']}</instance></data-out></output-events>
      <action>
        <workflow><app-path>{v['app-path']}</app-path><configuration>
          <property><name>{v['property-name']}</name><value>{v['property-value']}</value></property>
        </configuration></workflow>
        <sla:info>{sla}</sla:info>
      </action>
    </coordinator-app>"""


def resolve(xml: str, properties: dict[str, str] | None = None) -> ResolvedCoordinator:
    return resolve_coordinator(parse_coordinator(xml, "c.xml"), properties or {}, user="ann")


def first_plan(resolved: ResolvedCoordinator) -> Any:
    return plan_action(resolved, 1, now=NOW)


def sla(resolved: ResolvedCoordinator) -> Any:
    assert resolved.app.sla is not None
    return evaluate_sla(resolved.app.sla, resolved, nominal=resolved.start, now=NOW)


Reader = Callable[[ResolvedCoordinator], Any]


@dataclass(frozen=True)
class Case:
    """One parameterized attribute: what it is written as, the value given, and how to read the result."""

    key: str  # a DEFAULTS key
    written: str  # the attribute with `${variable}` in it
    variable: str
    value: str
    read: Reader
    expected: Any


def case(key: str, written: str, variable: str, value: str, read: Reader, expected: Any, *, id: str = "") -> Any:
    """A pytest.param of one Case, its id the attribute's (`sla:should-end` -> `sla-should-end`)."""
    return pytest.param(Case(key, written, variable, value, read, expected), id=id or key.replace(":", "-"))


CASES = [
    case("name", "${appName}", "appName", "hourly", lambda r: r.name, "hourly"),
    case("name", "etl-${market}", "market", "us", lambda r: r.name, "etl-us", id="name-with-text-around"),
    case("frequency", "${jobFrequency}", "jobFrequency", "60", lambda r: r.frequency, Frequency.minutes(60)),
    case("start", "${jobStart}", "jobStart", "2009-01-02T06:00Z", lambda r: format_datetime(r.start), "2009-01-02T06:00Z"),
    case("end", "${jobEnd}", "jobEnd", "2009-01-03T00:00Z", lambda r: format_datetime(r.end), "2009-01-03T00:00Z"),
    case("timezone", "${jobTimezone}", "jobTimezone", "America/Los_Angeles", lambda r: str(r.tz), "America/Los_Angeles"),
    case("timeout", "${jobTimeout}", "jobTimeout", "10", lambda r: r.timeout, 10),
    case("concurrency", "${jobConcurrency}", "jobConcurrency", "3", lambda r: r.concurrency, 3),
    case("execution", "${jobExecution}", "jobExecution", "LAST_ONLY", lambda r: r.execution, "LAST_ONLY"),
    case("throttle", "${jobThrottle}", "jobThrottle", "7", lambda r: r.throttle, 7),
    case(
        "dataset-frequency", "${logsFrequency}", "logsFrequency", "30",
        lambda r: r.datasets["logs"].timeline.frequency, Frequency.minutes(30),
    ),
    case(
        "initial-instance", "${logsInitialInstance}", "logsInitialInstance", "2009-01-01T06:00Z",
        lambda r: format_datetime(r.datasets["logs"].timeline.initial_instance), "2009-01-01T06:00Z",
    ),
    case(
        "dataset-timezone", "${logsTimezone}", "logsTimezone", "Europe/Berlin",
        lambda r: str(r.datasets["logs"].tz), "Europe/Berlin",
    ),
    case(
        "uri-template", "${logsRoot}/${YEAR}/${MONTH}/${DAY}/${HOUR}", "logsRoot", "hdfs://nn:8020/logs",
        lambda r: first_plan(r).data_in["input"], ["hdfs://nn:8020/logs/2009/01/02/00"],
    ),
    case("done-flag", "${flagName}", "flagName", "_READY", lambda r: r.datasets["logs"].done_flag, "_READY"),
    case(
        "data-in-instance", "${coord:current(0 - inputLag)}", "inputLag", "2",
        lambda r: first_plan(r).data_in["input"], ["hdfs://bar:8020/logs/2009/01/01/22"],
    ),
    case(
        "data-out-instance", "${coord:current(outputLead)}", "outputLead", "1",
        lambda r: first_plan(r).data_out["output"], ["hdfs://bar:8020/logs/2009/01/02/01"],
    ),
    case("app-path", "task:${taskName}", "taskName", "examples.noop", lambda r: r.app_path, "task:examples.noop"),
    case(
        "property-value", "${queueName}", "queueName", "etl",
        lambda r: first_plan(r).configuration, {"input": "etl"},
    ),
    case(
        "property-name", "${inputProperty}", "inputProperty", "wfInput",
        lambda r: list(first_plan(r).configuration), ["wfInput"],
    ),
    case(
        "sla:nominal-time", "${slaNominal}", "slaNominal", "2009-01-02T01:00Z",
        lambda r: sla(r).nominal_time, datetime(2009, 1, 2, 1, tzinfo=UTC),
    ),
    case(
        "sla:should-start", "${slaStart}", "slaStart", "7",
        lambda r: sla(r).expected_start, datetime(2009, 1, 2, 0, 7, tzinfo=UTC),
    ),
    case(
        "sla:should-end", "${slaEnd}", "slaEnd", "45",
        lambda r: sla(r).expected_end, datetime(2009, 1, 2, 0, 45, tzinfo=UTC),
    ),
    case("sla:max-duration", "${slaDuration}", "slaDuration", "20", lambda r: sla(r).expected_duration, timedelta(minutes=20)),
    case("sla:alert-events", "${slaEvents}", "slaEvents", "end_miss", lambda r: sla(r).alert_events, ("END_MISS",)),
    case("sla:alert-contact", "${slaContact}", "slaContact", "ops@example.com", lambda r: sla(r).alert_contact, "ops@example.com"),
    case("sla:notification-msg", "load ${market}", "market", "us", lambda r: sla(r).notification_msg, "load us"),
    case("sla:upstream-apps", "${slaUpstream}", "slaUpstream", "ingest,clean", lambda r: sla(r).upstream_apps, "ingest,clean"),
]


def written(case: Case, parameters: str = "") -> str:
    return app_xml({case.key: case.written}, parameters)


@pytest.mark.parametrize("case", CASES)
def test_resolved_from_job_properties(case: Case) -> None:
    """`${variable}` in the attribute takes the job property's value at submission."""
    assert case.read(resolve(written(case), {case.variable: case.value})) == case.expected


@pytest.mark.parametrize("case", CASES)
def test_resolved_from_parameter_defaults(case: Case) -> None:
    """Without the property, the `<parameters>` default (schema 0.4) gives the value."""
    parameters = f"<parameters><property><name>{case.variable}</name><value>{case.value}</value></property></parameters>"
    assert case.read(resolve(written(case, parameters))) == case.expected


@pytest.mark.parametrize("case", CASES)
def test_unresolved_variable_refuses_the_submission(case: Case) -> None:
    """With neither property nor default, the submission is refused in one line naming the variable."""
    with pytest.raises(DefinitionError) as refused:
        resolve(written(case))
    message = str(refused.value)
    assert case.variable in message
    assert "\n" not in message


def test_the_written_name_is_kept_when_it_has_no_variable() -> None:
    """A literal name is the job's name, surrounding spaces trimmed (Oozie trims attribute values)."""
    assert resolve(app_xml({"name": "  daily-load "})).name == "daily-load"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        pytest.param("", "empty", id="empty"),
        pytest.param("   ", "empty", id="only-spaces"),
        pytest.param("x" * (MAX_NAME_LENGTH + 1), f"at most {MAX_NAME_LENGTH}", id="one-character-too-long"),
    ],
)
def test_a_name_that_cannot_be_stored_is_refused(value: str, message: str) -> None:
    """The resolved name must be 1 to MAX_NAME_LENGTH characters; the refusal is one line, not the name."""
    with pytest.raises(DefinitionError, match=message) as refused:
        resolve(app_xml({"name": "${appName}"}), {"appName": value})
    assert refused.value.element == "name"
    assert "\n" not in str(refused.value) and len(str(refused.value)) < 200


@pytest.mark.parametrize(
    ("name", "message"),
    [
        pytest.param("", "empty", id="empty"),
        pytest.param("y" * 1000, f"1000 characters; at most {MAX_NAME_LENGTH}", id="too-long"),
    ],
)
def test_a_written_name_that_cannot_be_stored_is_refused(name: str, message: str) -> None:
    """A name attribute without variables gets the same check (the XSD allows any string); the message stays short."""
    with pytest.raises(DefinitionError, match=message) as refused:
        resolve(app_xml({"name": name}))
    assert len(str(refused.value)) < 200


def test_a_name_of_the_longest_storable_length_is_accepted() -> None:
    """Exactly MAX_NAME_LENGTH characters fit the job's app_name column."""
    name = "x" * MAX_NAME_LENGTH
    assert resolve(app_xml({"name": "${appName}"}), {"appName": name}).name == name


def test_max_name_length_is_the_app_name_column() -> None:
    """The pure check and the model agree (CoordinatorJob.app_name)."""
    assert CoordinatorJob._meta.get_field("app_name").max_length == MAX_NAME_LENGTH


@pytest.mark.parametrize(
    ("xml", "error"),
    [
        pytest.param(
            app_xml().replace('<dataset name="logs"', '<dataset name="${ds}"'), SchemaValidationError,
            id="dataset-name",
        ),
        pytest.param(
            app_xml().replace('<data-in name="input"', '<data-in name="${event}"'), SchemaValidationError,
            id="data-in-name",
        ),
        pytest.param(
            app_xml().replace('<data-in name="input" dataset="logs"', '<data-in name="input" dataset="${ds}"'),
            UndefinedDatasetError, id="data-in-dataset",
        ),
        pytest.param(
            app_xml().replace('<data-out name="output" dataset="logs"', '<data-out name="output" dataset="${ds}"'),
            UndefinedDatasetError, id="data-out-dataset",
        ),
    ],
)
def test_identifiers_are_not_parameterized(xml: str, error: type[DefinitionError]) -> None:
    """Names that link elements stay as written: `${...}` there is refused even when the property exists."""
    with pytest.raises(error):
        resolve_coordinator(parse_coordinator(xml, "c.xml"), {"ds": "logs", "event": "input"}, user="ann")


@pytest.mark.parametrize(
    ("key", "variable"),
    [
        pytest.param("name", "appName", id="name"),
        pytest.param("done-flag", "flagName", id="done-flag"),
        pytest.param("sla:alert-contact", "slaContact", id="sla-alert-contact"),
    ],
)
def test_dry_run_refuses_an_unresolved_variable_by_name(tmp_path: Path, key: str, variable: str) -> None:
    """The file dry-run resolves through the same phase 1: an unresolved variable is one line naming it."""
    (tmp_path / "coordinator.xml").write_text(app_xml({key: f"${{{variable}}}"}))
    config = tmp_path / "job.properties"
    config.write_text("oozie.coord.application.path=.\nuser.name=ann\n")
    with pytest.raises(DefinitionError, match=variable) as refused:
        dryrun(config, now=NOW, max_actions=2)
    assert "\n" not in str(refused.value)
    config.write_text(f"oozie.coord.application.path=.\nuser.name=ann\n{variable}=x\n")
    assert len(dryrun(config, now=NOW, max_actions=2)["actions"]) == 2


@pytest.mark.django_db
def test_submission_stores_the_resolved_name() -> None:
    """submit_coordinator stores `${appName}` resolved; the job re-resolves to the same name."""
    owner = User.objects.create_user("ann")
    job = submit_coordinator(app_xml({"name": "${appName}"}), {"appName": "hourly"}, owner=owner, start=False)
    job.refresh_from_db()
    assert job.app_name == "hourly"
    assert load_resolved(job).name == "hourly"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("properties", "message"),
    [
        pytest.param({}, "appName", id="unresolved"),
        pytest.param({"appName": ""}, "empty", id="empty"),
        pytest.param({"appName": "x" * (MAX_NAME_LENGTH + 1)}, f"at most {MAX_NAME_LENGTH}", id="too-long"),
    ],
)
def test_submission_with_an_unstorable_name_stores_nothing(properties: dict[str, str], message: str) -> None:
    """A name that does not resolve, or resolves to nothing or too much, is refused before any row is written."""
    owner = User.objects.create_user("ann")
    with pytest.raises(DefinitionError, match=message):
        submit_coordinator(app_xml({"name": "${appName}"}), properties, owner=owner, start=False)
    assert not CoordinatorJob.objects.exists()
