"""`<sla:info>` 0.1 and 0.2 evaluated at action creation: expected times from nominal, durations in minutes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from coordinators.plan import plan_action, resolve_coordinator
from coordinators.sla.evaluate import (
    SLAError,
    action_sla,
    evaluate_sla,
    from_json,
    parse_alert_events,
    plan_sla,
    validate_sla,
)
from oozie.definitions import DefinitionError, parse_coordinator

FIXTURES = Path(__file__).resolve().parents[1] / "definitions" / "fixtures"
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def coordinator_02(sla: str) -> str:
    return f"""<coordinator-app name="sla-app" frequency="${{coord:hours(1)}}" start="2026-03-01T00:00Z"
        end="2026-03-02T00:00Z" timezone="UTC" xmlns="uri:oozie:coordinator:0.4" xmlns:sla="uri:oozie:sla:0.2">
      <action><workflow><app-path>task:examples.noop</app-path></workflow>
        <sla:info>{sla}</sla:info></action>
    </coordinator-app>"""


def resolved(xml: str, properties: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    return resolve_coordinator(parse_coordinator(xml, "c.xml"), properties or {}, user="joe")


FULL_02 = """<sla:nominal-time>${coord:nominalTime()}</sla:nominal-time>
    <sla:should-start>${10 * MINUTES}</sla:should-start>
    <sla:should-end>${2 * HOURS}</sla:should-end>
    <sla:max-duration>${30 * MINUTES}</sla:max-duration>
    <sla:alert-events>start_miss,end_miss,duration_miss</sla:alert-events>
    <sla:alert-contact>${owner}@example.com</sla:alert-contact>
    <sla:notification-msg>run at ${coord:nominalTime()}</sla:notification-msg>
    <sla:upstream-apps>ingest</sla:upstream-apps>"""


def test_sla_0_2_every_field() -> None:
    """0.2: expected start/end are nominal + minutes; max-duration; alert-events upper-cased; text evaluated."""
    coord = resolved(coordinator_02(FULL_02), {"owner": "ops"})
    nominal = datetime(2026, 3, 1, 5, 0, tzinfo=UTC)
    assert coord.app.sla is not None
    sla = evaluate_sla(coord.app.sla, coord, nominal=nominal, now=NOW)
    assert sla.version == "0.2"
    assert sla.nominal_time == nominal
    assert sla.expected_start == nominal + timedelta(minutes=10)
    assert sla.expected_end == nominal + timedelta(hours=2)
    assert sla.expected_duration == timedelta(minutes=30)
    assert sla.alert_events == ("START_MISS", "END_MISS", "DURATION_MISS")
    assert sla.alert_contact == "ops@example.com"
    assert sla.notification_msg == "run at 2026-03-01T05:00Z"
    assert sla.upstream_apps == "ingest"
    assert sla.app_name == "sla-app"  # 0.2 has no app-name: the coordinator's
    assert from_json(sla.as_json()) == sla  # what materialization stores reads back the same


def test_sla_0_2_minimal_has_no_start_and_no_duration() -> None:
    """Only the required nominal-time and should-end: no expected start, no duration, default alert events."""
    coord = resolved(coordinator_02(
        "<sla:nominal-time>${coord:nominalTime()}</sla:nominal-time><sla:should-end>45</sla:should-end>"
    ))
    assert coord.app.sla is not None
    sla = evaluate_sla(coord.app.sla, coord, nominal=datetime(2026, 3, 1, 1, 0, tzinfo=UTC), now=NOW)
    assert (sla.expected_start, sla.expected_duration, sla.alert_events) == (None, None, None)
    assert sla.expected_end == datetime(2026, 3, 1, 1, 45, tzinfo=UTC)


def test_without_max_duration_the_window_is_the_duration() -> None:
    """Oozie: no max-duration but should-start and should-end: expected duration is end minus start."""
    coord = resolved(coordinator_02(
        "<sla:nominal-time>${coord:nominalTime()}</sla:nominal-time><sla:should-start>${5 * MINUTES}</sla:should-start>"
        "<sla:should-end>${1.5 * HOURS}</sla:should-end>"
    ))
    assert coord.app.sla is not None
    sla = evaluate_sla(coord.app.sla, coord, nominal=datetime(2026, 3, 1, 1, 0, tzinfo=UTC), now=NOW)
    assert sla.expected_duration == timedelta(minutes=85)


def test_sla_0_1_block_of_the_spec() -> None:
    """0.1 (spec section 12): every field of the schema stored; ${24 * LAST_HOUR} kept as written."""
    xml = (FIXTURES / "sla_0.1_xsd_order.xml").read_text()
    coord = resolved(xml)
    nominal = datetime(2009, 1, 2, 16, 1, tzinfo=UTC)
    plan = plan_action(coord, 1, now=NOW, nominal=nominal)
    data = plan_sla(coord, plan, NOW)
    assert data is not None and "error" not in data
    assert data["version"] == "0.1"
    assert data["app-name"] == "hello-coord"
    assert data["expected-start"] == "2009-01-02T16:06:00+00:00"
    assert data["expected-end"] == "2009-01-02T16:56:00+00:00"
    assert data["expected-duration-minutes"] == 50  # 0.1 has no max-duration: end - start
    assert data["notification-msg"] == "log processor run for: 2009-01-02T16:01Z"
    assert {data[k] for k in ("alert-contact", "dev-contact", "qa-contact", "se-contact")} == {
        "joe@example.com", "abc@example.com",
    }
    assert data["alert-frequency"] == "${24 * LAST_HOUR}"
    assert data["alert-percentage"] == "99"
    assert data["upstream-apps"] == "application-a,application-b"
    assert data["alert-events"] is None  # 0.1 has none: the server default applies


@pytest.mark.parametrize(
    ("should_end", "message"),
    [
        pytest.param("${-5 * MINUTES}", "must not be negative", id="negative"),
        pytest.param("soon", "number of minutes", id="not-a-number"),
        pytest.param("${coord:latest(0)}", "sla:info", id="wrong-phase"),
    ],
)
def test_bad_times_are_errors_not_crashes(should_end: str, message: str) -> None:
    """A should-end that is not a non-negative number of minutes: the action keeps an error, no SLA is tracked."""
    coord = resolved(coordinator_02(
        f"<sla:nominal-time>${{coord:nominalTime()}}</sla:nominal-time><sla:should-end>{should_end}</sla:should-end>"
    ))
    assert coord.app.sla is not None
    with pytest.raises(SLAError, match=message):
        evaluate_sla(coord.app.sla, coord, nominal=NOW, now=NOW)
    stored = action_sla(coord, nominal=NOW, now=NOW)
    assert stored is not None and message in stored["error"]


@pytest.mark.parametrize(
    ("text", "events"),
    [
        pytest.param(None, None, id="absent"),
        pytest.param(" start_miss , END_MET", ("START_MISS", "END_MET"), id="case-and-spaces"),
        pytest.param("start_late,end_miss", ("END_MISS",), id="unknown-becomes-end-miss"),
    ],
)
def test_alert_events(text: str | None, events: tuple[str, ...] | None) -> None:
    """alert-events: comma separated, case-insensitive; an unknown name stands for END_MISS (Oozie)."""
    assert parse_alert_events(text) == events


def test_no_sla_block_stores_nothing() -> None:
    """A coordinator without sla:info stores None on its actions."""
    xml = coordinator_02("x").replace("<sla:info>x</sla:info>", "")
    assert action_sla(resolved(xml), nominal=NOW, now=NOW) is None


def test_validate_sla_reports_a_definition_error_for_submission() -> None:
    """validate_sla (for submit and dry-run) turns a bad SLA into a DefinitionError naming sla:info."""
    good = resolved(coordinator_02(FULL_02), {"owner": "ops"})
    validate_sla(good, now=NOW)
    bad = resolved(coordinator_02(
        "<sla:nominal-time>${coord:nominalTime()}</sla:nominal-time><sla:should-end>${-1 * DAYS}</sla:should-end>"
    ))
    with pytest.raises(DefinitionError, match="must not be negative") as caught:
        validate_sla(bad, now=NOW)
    assert caught.value.element == "sla:info"
