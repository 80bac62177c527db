"""Real Oozie examples (seed 6.3, 6.5, 12) and one application per schema version, from fixture files."""

from __future__ import annotations

from pathlib import Path

import pytest

from oozie.definitions import (
    Controls,
    DataIn,
    DataOut,
    MissingParameterError,
    Parameter,
    SchemaValidationError,
    UndefinedDatasetError,
    merge_parameters,
    parse_coordinator,
)

FIXTURES = Path(__file__).parent / "fixtures"


def load(name: str):  # type: ignore[no-untyped-def]
    return parse_coordinator((FIXTURES / name).read_bytes(), name, app_dir=str(FIXTURES))


def test_seed_6_3_example_1_single_action() -> None:
    """Seed 6.3 example 1 parses verbatim, every value still raw."""
    app = load("seed_6_3_example1.xml")
    assert (app.schema_version, app.name, app.frequency, app.start, app.end, app.timezone) == (
        "0.1", "hello-coord", "${coord:days(1)}", "2009-01-02T08:00Z", "2009-01-02T08:00Z", "America/Los_Angeles",
    )
    assert [d.name for d in app.datasets] == ["logs", "siteAccessStats"]
    logs = app.dataset("logs")
    assert logs is not None
    assert logs.uri_template == "hdfs://bar:8020/app/logs/${YEAR}${MONTH}/${DAY}/data"
    assert logs.initial_instance == "2009-01-02T08:00Z" and logs.done_flag == "_SUCCESS"
    assert app.input_events == (DataIn("input", "logs", instances=("2009-01-02T08:00Z",)),)
    assert app.output_events == (DataOut("output", "siteAccessStats", "2009-01-02T08:00Z"),)
    assert app.action.app_path == "hdfs://bar:8020/usr/joe/logsprocessor-wf"
    assert app.action.configuration == (
        ("wfInput", "${coord:dataIn('input')}"), ("wfOutput", "${coord:dataOut('output')}"),
    )
    assert app.controls == Controls() and app.parameters == () and app.sla is None


def test_seed_6_3_example_2_current_instances() -> None:
    """Seed 6.3 example 2: EL instances are kept as written."""
    app = load("seed_6_3_example2.xml")
    assert app.end == "2010-01-02T08:00Z"
    assert app.input_events[0].instances == ("${coord:current(0)}",)
    assert not app.input_events[0].is_range


def test_seed_6_3_example_3_names_an_undefined_dataset() -> None:
    """Seed 6.3 example 3 as printed writes to 'siteAccessStats', which it never defines: refused."""
    with pytest.raises(UndefinedDatasetError) as caught:
        load("seed_6_3_example3.xml")
    error = caught.value
    assert (error.source, error.line, error.element) == ("seed_6_3_example3.xml", 22, "data-out")
    assert "'siteAccessStats'" in str(error) and "weeklySiteAccessStats" in str(error)


def test_seed_6_3_example_3_fixed_has_a_range() -> None:
    """With the dataset name corrected, example 3's input is a 7-instance range."""
    text = (FIXTURES / "seed_6_3_example3.xml").read_text().replace(
        'dataset="siteAccessStats"', 'dataset="weeklySiteAccessStats"'
    )
    event = parse_coordinator(text, "c.xml").input_events[0]
    assert event.is_range and (event.start_instance, event.end_instance) == ("${coord:current(-6)}", "${coord:current(0)}")


def test_seed_6_5_examples_as_printed_are_schema_errors() -> None:
    """The 6.5 examples elide the workflow (`...`) and use <parameters> under schema 0.1: both refused by the XSDs."""
    with pytest.raises(SchemaValidationError) as caught:
        load("seed_6_5_parameterized.xml")
    assert (caught.value.line, caught.value.element) == (19, "workflow")
    with pytest.raises(SchemaValidationError) as caught:
        load("seed_6_5_formal_parameters.xml")
    assert (caught.value.line, caught.value.element) == (4, "parameters")
    assert "seed_6_5_formal_parameters.xml:4: <parameters>:" in str(caught.value)


def test_seed_6_5_parameterized_keeps_variables_raw() -> None:
    """Seed 6.5: parameterized attributes and templates stay unevaluated."""
    app = load("seed_6_5_parameterized_fixed.xml")
    assert (app.start, app.end, app.timezone) == ("${jobStart}", "${jobEnd}", "${timezone}")
    logs = app.datasets[0]
    assert logs.initial_instance == "${logsInitialInstance}" and logs.timezone == "${timezone}"
    assert logs.uri_template == "hdfs://bar:8020/app/logs/${market}/${language}/${YEAR}${MONTH}/${DAY}/${HOUR}"


def test_seed_6_5_formal_parameters_under_schema_0_4() -> None:
    """Seed 6.5 formal parameters: jobStart required, jobEnd defaulted; missing ones are all named."""
    app = load("seed_6_5_formal_parameters_v04.xml")
    assert app.parameters == (Parameter("jobStart", None), Parameter("jobEnd", "2012-12-01T22:00Z"))
    assert merge_parameters(app, {"jobStart": "2012-01-01T00:00Z"}) == {
        "jobStart": "2012-01-01T00:00Z", "jobEnd": "2012-12-01T22:00Z",
    }
    assert merge_parameters(app, {"jobStart": "a", "jobEnd": "b"})["jobEnd"] == "b"
    with pytest.raises(MissingParameterError, match="required parameters not given: jobStart") as caught:
        merge_parameters(app, {"jobEnd": "x"})
    assert caught.value.missing == ("jobStart",) and caught.value.element == "parameters"


def test_seed_12_sla_example_as_printed_violates_sla_0_1() -> None:
    """The seed's SLA example lacks <sla:app-name> and uses <sla:message>: the sla-0.1 XSD refuses it."""
    with pytest.raises(SchemaValidationError) as caught:
        load("seed_12_sla_0.1.xml")
    assert caught.value.line == 31 and caught.value.element == "nominal-time"
    assert "sla:app-name" in str(caught.value)


def test_sla_0_1_block() -> None:
    """Every sla-0.1 field lands in SLAInfo."""
    sla = load("sla_0.1_xsd_order.xml").sla
    assert sla is not None and sla.version == "0.1"
    assert (sla.app_name, sla.nominal_time, sla.should_start, sla.should_end) == (
        "hello-coord", "${coord:nominalTime()}", "${5 * MINUTES}", "${55 * MINUTES}",
    )
    assert sla.notification_msg == "log processor run for: ${coord:nominalTime()}"
    assert (sla.alert_contact, sla.dev_contact, sla.qa_contact, sla.se_contact) == (
        "joe@example.com", "abc@example.com", "abc@example.com", "abc@example.com",
    )
    assert (sla.upstream_apps, sla.alert_percentage, sla.alert_frequency) == (
        "application-a,application-b", "99", "${24 * LAST_HOUR}",
    )
    assert sla.max_duration is None and sla.get("alert-frequency") == "${24 * LAST_HOUR}"


def test_schema_0_4_application_with_sla_0_2() -> None:
    """Schema 0.4: parameters (with description), throttle, done flags, nocleanup, an sla-0.2 block."""
    app = load("app_0.4.xml")
    assert app.schema_version == "0.4" and app.namespace == "uri:oozie:coordinator:0.4"
    assert app.parameters == (
        Parameter("jobStart", None, "first nominal time"), Parameter("jobEnd", "2012-12-01T22:00Z"), Parameter("market", ""),
    )
    assert [p.required for p in app.parameters] == [True, False, False]
    assert app.controls == Controls(throttle="12")
    raw, clean = app.datasets
    assert raw.done_flag == "trigger.dat" and clean.done_flag == ""
    assert app.output_events[0].nocleanup is True
    sla = app.sla
    assert sla is not None and sla.version == "0.2"
    assert sla.as_dict() == {
        "nominal-time": "${coord:nominalTime()}", "should-end": "${30 * MINUTES}", "should-start": "${10 * MINUTES}",
        "max-duration": "${30 * MINUTES}", "alert-events": "start_miss,end_miss,duration_miss",
        "alert-contact": "joe@example.com", "notification-msg": "clean ${coord:nominalTime()}", "upstream-apps": "raw-coord",
    }


@pytest.mark.parametrize(
    ("name", "version", "controls"),
    [
        ("app_0.1.xml", "0.1", Controls("10", "2", "FIFO", None)),
        ("app_0.2.xml", "0.2", Controls("10", "2", "LIFO", "${throttle}")),
        ("app_0.3.xml", "0.3", Controls("10", "2", "LAST_ONLY", "${throttle}")),
    ],
)
def test_schema_0_1_to_0_3_applications(name: str, version: str, controls: Controls) -> None:
    """Each early schema validates against its own XSD; throttle arrives in 0.2."""
    app = load(name)
    assert app.schema_version == version and app.controls == controls
    assert app.input_events[0].instances == ("${coord:current(-1)}", "${coord:current(0)}")


def test_throttle_is_refused_by_schema_0_1() -> None:
    """<throttle> is not part of schema 0.1."""
    text = (FIXTURES / "app_0.2.xml").read_text().replace("coordinator:0.2", "coordinator:0.1")
    with pytest.raises(SchemaValidationError) as caught:
        parse_coordinator(text, "c.xml")
    assert caught.value.element == "throttle" and caught.value.line == 7


def test_schema_0_5_input_logic_and_namespace_less_include() -> None:
    """Schema 0.5 keeps <input-logic> as raw XML; the include without a namespace adopts the coordinator's."""
    app = load("app_0.5.xml")
    assert app.schema_version == "0.5"
    assert app.dataset_includes == ("shared/datasets.xml",)
    assert [d.name for d in app.datasets] == ["dataset_a", "dataset_b"]
    assert app.datasets[0].source == str(FIXTURES / "shared" / "datasets.xml")
    assert app.input_logic is not None
    assert app.input_logic.startswith("<input-logic") and '<or name="AorB">' in app.input_logic
    assert '<data-in dataset="A" wait="60"/>' in app.input_logic


def test_input_logic_is_refused_before_schema_0_5() -> None:
    """<input-logic> is new in 0.5."""
    text = (FIXTURES / "app_0.5.xml").read_text().replace("coordinator:0.5", "coordinator:0.4")
    with pytest.raises(SchemaValidationError, match="input-logic"):
        parse_coordinator(text, "c.xml", app_dir=str(FIXTURES))
