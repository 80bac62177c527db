"""What the pages compute from rows, without a database: bar segments, durations, history lines, files."""

from __future__ import annotations

import pytest

from batches.admin.display import duration, file_rows, history_rows, segments, size


@pytest.mark.parametrize(
    ("counts", "expected"),
    [
        pytest.param({"completed": 3, "failed": 1}, [("completed", 3, 75.0), ("failed", 1, 25.0)], id="done-and-failed"),
        pytest.param({"downloading": 1, "recording": 1, "pending": 2},
                     [("in stages", 2, 50.0), ("waiting", 2, 50.0)], id="stages-grouped-pending-waits"),
        pytest.param({"held": 1, "deleted": 2}, [("held", 1, 33.33), ("deleted", 2, 66.67)], id="held-and-deleted"),
        pytest.param({}, [], id="no-jobs"),
    ],
)
def test_segments_group_statuses_and_share_the_bar(counts: dict[str, int], expected: list[tuple[str, int, float]]) -> None:
    """Completed, failed, every stage but pending (in stages), pending (waiting), held, deleted; empty ones left out."""
    assert [(s.label, s.count, s.percent) for s in segments(counts)] == expected


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0.25, "0.25 s"), (14.4, "14 s"), (185, "3 min 5 s"), (7440, "2 h 4 min")],
    ids=["sub-second", "seconds", "minutes", "hours"],
)
def test_durations_read_at_a_glance(seconds: float, text: str) -> None:
    """Short stages keep their fraction; long ones are minutes or hours."""
    assert duration(seconds) == text


def test_history_lines_show_a_date_only_when_it_changes(settings: object) -> None:
    """The first time carries its date, later ones on the same day only the clock; waits are counted."""
    setattr(settings, "TIME_ZONE", "UTC")  # noqa: B010 - pytest-django's settings fixture
    rows = history_rows([
        {"stage": "pending", "to": "estimating", "started": "2026-01-05T23:59:58+00:00", "at": "2026-01-05T23:59:59+00:00"},
        {"stage": "provisioning", "to": "provisioning", "at": "2026-01-06T00:00:09+00:00", "waits": True, "tries": 4},
    ])
    assert (rows[0]["started"], rows[0]["ended"], rows[0]["duration"]) == ("2026-01-05 23:59:58 UTC", "23:59:59 UTC", "1.00 s")
    assert (rows[1]["ended"], rows[1]["waits"], rows[1]["to_badge"]) == ("2026-01-06 00:00:09 UTC", 4, "")


def test_file_rows_show_a_computed_digest_only_when_it_differs() -> None:
    """The manifest's digest; the computed one beside it when they differ (a container's files have only computed)."""
    same = {"name": "a.txt", "size": 1500, "digest": {"algorithm": "md5", "value": "ab"},
            "computed": {"algorithm": "md5", "value": "ab"}, "done": True}
    unpacked = {"name": "b.txt", "size": 3, "computed": {"algorithm": "md5", "value": "cd"}, "from_container": True}
    rows = file_rows([same, unpacked])
    assert (rows[0]["digest"], rows[0]["size"], rows[0]["downloaded"]) == ("md5:ab", "1.5 kB", True)
    assert (rows[1]["digest"], rows[1]["from_container"]) == ("computed md5:cd", True)
    assert size(None) == "-" and size(999) == "999 B"
