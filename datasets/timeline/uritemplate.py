"""URI templates of datasets: ${YEAR} ${MONTH} ${DAY} ${HOUR} ${MINUTE} of an instance."""

from __future__ import annotations

import re
from datetime import datetime, tzinfo

from datasets.timeline.datetimes import to_local

_TIME_VARIABLES = re.compile(r"\$\{(YEAR|MONTH|DAY|HOUR|MINUTE)\}")


def expand_uri_template(template: str, instance: datetime, tz: tzinfo) -> str:
    """Substitute the instance's date parts, zero padded, in the dataset's time zone.

    Any other ${...} is left as it is: job variables are resolved before, EL after.
    """
    local = to_local(instance, tz)
    parts = {
        "YEAR": f"{local.year:04d}",
        "MONTH": f"{local.month:02d}",
        "DAY": f"{local.day:02d}",
        "HOUR": f"{local.hour:02d}",
        "MINUTE": f"{local.minute:02d}",
    }
    return _TIME_VARIABLES.sub(lambda match: parts[match.group(1)], template)
