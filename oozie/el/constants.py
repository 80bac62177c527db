"""Constants EL expressions may use: offset units and SLA durations in minutes."""

from __future__ import annotations

from typing import Any


class UnitConstant(str):
    """MINUTE, HOUR, DAY, MONTH, YEAR: a unit name for coord:offset(n, DAY), minutes in arithmetic.

    Spec 5.1 writes a dataset frequency as `${5 * HOUR}` (300 minutes) while
    `coord:offset(-1, DAY)` passes the name; MONTH and YEAR have no fixed length and stay names.
    """

    __slots__ = ()

    def el_number(self) -> int | None:
        """Minutes when the unit has a fixed length (MINUTE 1, HOUR 60, DAY 1440), else None."""
        return UNIT_MINUTES.get(str(self))


UNIT_MINUTES: dict[str, int] = {"MINUTE": 1, "HOUR": 60, "DAY": 1440}

# coord:offset(n, 'DAY') takes the unit as a string; the bare names work too: ${coord:offset(-1, DAY)}.
TIME_UNITS: dict[str, str] = {unit: UnitConstant(unit) for unit in ("MINUTE", "HOUR", "DAY", "MONTH", "YEAR")}

# SLA expressions such as ${10 * MINUTES} or ${2 * HOURS} (DG_SLAMonitoring).
SLA_DURATIONS: dict[str, int] = {"MINUTES": 1, "HOURS": 60, "DAYS": 1440}

# SLA 0.1 alert names (LAST_HOUR, ...) are passed through as text.
SLA_ALERTS: dict[str, str] = {name: name for name in ("LAST_HOUR", "LAST_DAY", "LAST_MONTH")}


def default_variables() -> dict[str, Any]:
    """Constants every evaluation sees; job properties of the same name take precedence."""
    return {**TIME_UNITS, **SLA_DURATIONS, **SLA_ALERTS}
