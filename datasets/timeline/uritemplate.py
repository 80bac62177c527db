"""URI templates of datasets: ${YEAR} ${MONTH} ${DAY} ${HOUR} ${MINUTE} of an instance."""

from __future__ import annotations

import re
from datetime import datetime, tzinfo
from functools import lru_cache

from datasets.timeline.datetimes import require_aware

_TIME_VARIABLES = re.compile(r"\$\{(YEAR|MONTH|DAY|HOUR|MINUTE)\}")


@lru_cache(maxsize=1024)
def _compile(template: str) -> tuple[tuple[str, str | None], ...]:
    """The template as (literal, time field or None) pairs, computed once per template."""
    parts: list[tuple[str, str | None]] = []
    last = 0
    for match in _TIME_VARIABLES.finditer(template):
        parts.append((template[last:match.start()], match.group(1)))
        last = match.end()
    parts.append((template[last:], None))
    return tuple(parts)


def expand_uri_template(template: str, instance: datetime, tz: tzinfo) -> str:
    """Substitute the instance's date parts, zero padded, in tz.

    Coordinators pass the processing time zone (UTC by default): the spec (5.1) expects
    the URI constants in UTC whatever the dataset's own time zone.

    Any other ${...} is left as it is: job variables are resolved before, EL after.
    Cached: consecutive actions of a sliding window share almost all their instances.
    """
    return _expand(template, require_aware(instance), tz)


@lru_cache(maxsize=16_384)
def _expand(template: str, instance: datetime, tz: tzinfo) -> str:
    local = instance.astimezone(tz)
    values = {
        "YEAR": f"{local.year:04d}",
        "MONTH": f"{local.month:02d}",
        "DAY": f"{local.day:02d}",
        "HOUR": f"{local.hour:02d}",
        "MINUTE": f"{local.minute:02d}",
    }
    return "".join(literal + (values[name] if name else "") for literal, name in _compile(template))
