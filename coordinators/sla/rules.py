"""SLA rules, pure (no Django, no clock): event and status names, and what an action's facts imply.

Oozie's SLA calculator in one function: given what is expected of an action (start, end,
duration), what already happened to its SLA record, the action's actual times and status,
and `now`, `assess` says which events are now decided, the SLA status and when the record
next needs a look. Each of the three criteria is decided once; deciding is monotonic.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime, timedelta


class EventType(enum.StrEnum):
    """An SLA event (Oozie's EventStatus)."""

    START_MET = "START_MET"
    START_MISS = "START_MISS"
    DURATION_MET = "DURATION_MET"
    DURATION_MISS = "DURATION_MISS"
    END_MET = "END_MET"
    END_MISS = "END_MISS"

    @property
    def criterion(self) -> str:
        """'start', 'duration' or 'end'."""
        return self.value.split("_", 1)[0].lower()

    @property
    def is_miss(self) -> bool:
        """True for the *_MISS events."""
        return self.value.endswith("_MISS")


class SLAStatus(enum.StrEnum):
    """Overall SLA status of an action (Oozie's SLAStatus), driven by the end criterion."""

    NOT_STARTED = "NOT_STARTED"
    IN_PROCESS = "IN_PROCESS"
    MET = "MET"
    MISS = "MISS"


MISS_EVENTS = frozenset(e for e in EventType if e.is_miss)
# Terminal action statuses that count as failing the SLA whatever the time (Oozie:
# isTerminalWithFailure). SKIPPED and IGNORED end without failure.
FAILED_STATUSES = frozenset({"FAILED", "KILLED", "TIMEDOUT"})
TERMINAL_STATUSES = frozenset({"SUCCEEDED", "FAILED", "KILLED", "TIMEDOUT", "SKIPPED", "IGNORED"})


@dataclass(frozen=True, slots=True)
class Expectations:
    """What the SLA block promises: absolute expected start and end, a maximum duration."""

    expected_start: datetime | None
    expected_end: datetime | None
    expected_duration: timedelta | None


@dataclass(frozen=True, slots=True)
class Decided:
    """Events already recorded for the current run, one per criterion ('' when undecided)."""

    start: str = ""
    duration: str = ""
    end: str = ""

    def get(self, criterion: str) -> str:
        """The event decided for a criterion, or ''."""
        return str(getattr(self, criterion))


@dataclass(frozen=True, slots=True)
class Facts:
    """What the action did: its status and when it started and ended (None: not yet)."""

    status: str
    started_at: datetime | None
    ended_at: datetime | None


@dataclass(frozen=True, slots=True)
class Assessment:
    """New events (in order), the SLA status, the next due time and whether the record is done."""

    events: tuple[tuple[EventType, datetime], ...]
    sla_status: SLAStatus
    next_check_at: datetime | None
    closed: bool


def _start(expect: Expectations, facts: Facts, now: datetime) -> tuple[EventType, datetime] | None:
    if expect.expected_start is None:
        return None
    if facts.started_at is not None:
        late = facts.started_at > expect.expected_start
        return (EventType.START_MISS if late else EventType.START_MET), facts.started_at
    if now > expect.expected_start:
        # Not started by the deadline (whether it is still waiting or ended without running).
        return EventType.START_MISS, expect.expected_start
    return None


def _duration(expect: Expectations, facts: Facts, ended: datetime | None, now: datetime) -> tuple[EventType, datetime] | None:
    if expect.expected_duration is None or facts.started_at is None:
        return None
    if ended is not None:
        over = ended - facts.started_at > expect.expected_duration
        return (EventType.DURATION_MISS if over else EventType.DURATION_MET), ended
    deadline = facts.started_at + expect.expected_duration
    return (EventType.DURATION_MISS, deadline) if now > deadline else None


def _end(expect: Expectations, facts: Facts, ended: datetime | None, now: datetime) -> tuple[EventType, datetime] | None:
    if expect.expected_end is None:
        return None
    if ended is not None:
        miss = facts.status in FAILED_STATUSES or ended > expect.expected_end
        return (EventType.END_MISS if miss else EventType.END_MET), ended
    return (EventType.END_MISS, expect.expected_end) if now > expect.expected_end else None


def assess(expect: Expectations, decided: Decided, facts: Facts, now: datetime) -> Assessment:
    """Decide what can be decided now; never re-decide a criterion already in `decided`."""
    ended = (facts.ended_at or now) if facts.status in TERMINAL_STATUSES else None
    found = {
        "start": _start(expect, facts, now),
        "duration": _duration(expect, facts, ended, now),
        "end": _end(expect, facts, ended, now),
    }
    events = tuple(event for criterion, event in found.items() if event is not None and not decided.get(criterion))
    end_event = decided.end or next((e.value for e, _ in events if e.criterion == "end"), "")
    if ended is not None:
        end_missed = facts.status in FAILED_STATUSES or (
            expect.expected_end is not None and ended > expect.expected_end
        )
        status = SLAStatus.MISS if end_missed or end_event == EventType.END_MISS else SLAStatus.MET
        return Assessment(events, status, None, True)
    if end_event == EventType.END_MISS:
        status = SLAStatus.MISS
    elif facts.started_at is not None:
        status = SLAStatus.IN_PROCESS
    else:
        status = SLAStatus.NOT_STARTED
    now_decided = {criterion for criterion in found if decided.get(criterion)} | {e.criterion for e, _ in events}
    deadlines = []
    if "start" not in now_decided and expect.expected_start is not None and facts.started_at is None:
        deadlines.append(expect.expected_start)
    if "end" not in now_decided and expect.expected_end is not None:
        deadlines.append(expect.expected_end)
    if "duration" not in now_decided and expect.expected_duration is not None and facts.started_at is not None:
        deadlines.append(facts.started_at + expect.expected_duration)
    return Assessment(events, status, min(deadlines) if deadlines else None, False)
