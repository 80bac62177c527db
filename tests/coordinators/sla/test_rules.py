"""The SLA decision rules (pure): which events an action's facts imply, once each, and when to look again."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from coordinators.sla.rules import Decided, EventType, Expectations, Facts, SLAStatus, assess

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
EXPECT = Expectations(T0 + timedelta(minutes=10), T0 + timedelta(minutes=60), timedelta(minutes=30))
E = EventType


def m(n: float) -> datetime:
    return T0 + timedelta(minutes=n)


@pytest.mark.parametrize(
    ("facts", "now", "events", "status", "next_check", "closed"),
    [
        pytest.param(Facts("WAITING", None, None), m(5), [], "NOT_STARTED", m(10), False, id="before-anything"),
        pytest.param(Facts("WAITING", None, None), m(11), [E.START_MISS], "NOT_STARTED", m(60), False, id="start-deadline-passed"),
        pytest.param(Facts("RUNNING", m(8), None), m(9), [E.START_MET], "IN_PROCESS", m(38), False, id="started-in-time"),
        pytest.param(Facts("RUNNING", m(12), None), m(13), [E.START_MISS], "IN_PROCESS", m(42), False, id="started-late"),
        pytest.param(Facts("RUNNING", m(5), None), m(36), [E.START_MET, E.DURATION_MISS], "IN_PROCESS", m(60), False, id="running-too-long"),
        pytest.param(Facts("RUNNING", m(40), None), m(61), [E.START_MISS, E.END_MISS], "MISS", m(70), False, id="end-deadline-passed-running"),
        pytest.param(Facts("SUCCEEDED", m(5), m(20)), m(21), [E.START_MET, E.DURATION_MET, E.END_MET], "MET", None, True, id="all-met"),
        pytest.param(Facts("SUCCEEDED", m(5), m(50)), m(51), [E.START_MET, E.DURATION_MISS, E.END_MET], "MET", None, True, id="duration-miss-end-met"),
        pytest.param(Facts("FAILED", m(5), m(20)), m(21), [E.START_MET, E.DURATION_MET, E.END_MISS], "MISS", None, True, id="failure-is-end-miss"),
        pytest.param(Facts("TIMEDOUT", None, m(30)), m(31), [E.START_MISS, E.END_MISS], "MISS", None, True, id="timed-out-never-started"),
        pytest.param(Facts("SKIPPED", None, m(3)), m(4), [E.END_MET], "MET", None, True, id="skipped-before-start-deadline"),
    ],
)
def test_assess(facts: Facts, now: datetime, events: list[EventType], status: str, next_check: datetime | None, closed: bool) -> None:
    """Misses are decided at their deadline or at the end, mets when the fact is known; failures miss the end."""
    result = assess(EXPECT, Decided(), facts, now)
    assert [e for e, _ in result.events] == events
    assert (result.sla_status, result.next_check_at, result.closed) == (SLAStatus(status), next_check, closed)


def test_decided_criteria_are_never_decided_again() -> None:
    """A START_MISS recorded while waiting is not followed by START_MET when the action starts."""
    result = assess(EXPECT, Decided(start="START_MISS"), Facts("RUNNING", m(12), None), m(13))
    assert result.events == ()
    done = assess(EXPECT, Decided(start="START_MISS", end="END_MISS"), Facts("SUCCEEDED", m(12), m(70)), m(71))
    assert [e for e, _ in done.events] == [E.DURATION_MISS]
    assert done.sla_status == SLAStatus.MISS and done.closed


def test_event_times_are_the_deadline_or_the_fact() -> None:
    """A miss at a deadline is dated at the deadline; a decision on a fact at the fact's time."""
    waiting = assess(EXPECT, Decided(), Facts("WAITING", None, None), m(61))
    assert dict(waiting.events) == {E.START_MISS: m(10), E.END_MISS: m(60)}
    ended = assess(EXPECT, Decided(), Facts("SUCCEEDED", m(12), m(30)), m(40))
    assert dict(ended.events) == {E.START_MISS: m(12), E.DURATION_MET: m(30), E.END_MET: m(30)}


def test_no_deadlines_means_nothing_to_schedule() -> None:
    """Only should-end: nothing until the end deadline; after it (decided) the record waits for the end only."""
    only_end = Expectations(None, m(60), None)
    assert assess(only_end, Decided(), Facts("RUNNING", m(1), None), m(2)).next_check_at == m(60)
    after = assess(only_end, Decided(end="END_MISS"), Facts("RUNNING", m(1), None), m(70))
    assert after.events == () and after.next_check_at is None and not after.closed
