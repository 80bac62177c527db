"""The `oozie` command: a thin client of the Oozie Web Services API, standard library only.

It follows Oozie's DG_CommandLineTool (`oozie job`, `jobs`, `admin`, `validate`, `info`,
`version`, `help`) and speaks to this service's `/oozie/` or to any Oozie server, from a
machine with neither a database nor Django settings. Nothing here imports Django, Celery or
another package of this project (import-linter's `oozieclient-standalone` contract).

Modules, top down: `cli` (arguments, dispatch, exit codes) > `commands` (one function per
sub-command) > `upload` (`-upload`: a local application sent with the submission) >
`configuration` (a job's properties, user and time zone), `render` (Oozie's tables and info
blocks), `http` (requests, auth, Oozie's error headers) > `properties` (job.properties and
Hadoop XML configurations).
"""

from __future__ import annotations

__version__ = "0.1.0"
