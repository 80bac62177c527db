"""How every page writes dates and times: `2026-11-27 14:03:05 UTC`, 24-hour, with seconds and the zone.

The admin's lists, object pages and read-only fields take these (FORMAT_MODULE_PATH), and
kernel.display.exact_time writes the operator pages' times with DATETIME_FORMAT, so a time
reads the same everywhere. The zone is the operator's (TIME_ZONE), written as its abbreviation.
"""

DATETIME_FORMAT = "Y-m-d H:i:s T"
SHORT_DATETIME_FORMAT = "Y-m-d H:i T"
DATE_FORMAT = "Y-m-d"
SHORT_DATE_FORMAT = "Y-m-d"
TIME_FORMAT = "H:i:s"
MONTH_DAY_FORMAT = "m-d"
YEAR_MONTH_FORMAT = "Y-m"
FIRST_DAY_OF_WEEK = 1  # Monday
DATETIME_INPUT_FORMATS = ["%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d %H:%M", "%Y-%m-%d"]
DATE_INPUT_FORMATS = ["%Y-%m-%d"]
TIME_INPUT_FORMATS = ["%H:%M:%S", "%H:%M"]
