"""`manage.py jobs`: the `oozie jobs` command line: list coordinator or bundle jobs, or kill, suspend or resume them in bulk.

`manage.py jobs -jobtype coordinator -filter 'name=etl;status=RUNNING'` lists a page of jobs;
with `-kill`, `-suspend` or `-resume` (and a `-filter`, as Oozie requires) the jobs of that page
(`-offset`, `-len`, as in Oozie) get the verb through one operation (operations.bulk), whose
progress is printed until it ends (`-nowait`: print its id and return). Jobs the user may not
act on, or whose status refuses the verb, are listed as failed, and the command then exits 1.
"""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import CommandError, CommandParser
from django.db.models import QuerySet
from django.utils import timezone

from bundles.choices import BundleStatus
from bundles.models import BundleJob
from coordinators.choices import JobStatus
from coordinators.models import CoordinatorJob
from datasets.timeline import format_datetime
from kernel.cli import ProductCommand, acting_user, add_user_option, table
from kernel.permissions import readable_jobs
from oozieapi.bulk import owner_scope
from oozieapi.errors import OozieError
from oozieapi.filters import filter_jobs
from operations.bulk import start_bulk
from operations.choices import OperationStatus
from operations.models import Operation
from operations.services import OperationConflict, progress

COORDINATOR_COLUMNS = ("Job ID", "App Name", "Status", "Freq", "Unit", "Started", "Next Materialized")
BUNDLE_COLUMNS = ("Job ID", "Bundle Name", "Status", "Kickoff", "Created", "User")
JOBTYPES = {"coordinator": "coordinator", "coord": "coordinator", "bundle": "bundle"}
POLL_SECONDS = 0.5
FAILURES_SHOWN = 50


def _when(moment: Any) -> str:
    return format_datetime(moment) if moment is not None else "-"


def job_table(kind: str, jobs: list[Any]) -> list[str]:
    """The rows Oozie's `jobs` prints: coordinators with frequency and next materialization, bundles with kick-off."""
    if not jobs:
        return ["No Jobs match your criteria!"]
    if kind == "bundle":
        return table(BUNDLE_COLUMNS, [
            (job.pk, job.app_name, job.status, _when(job.kick_off_time), _when(job.created_at), job.owner.get_username())
            for job in jobs
        ])
    return table(COORDINATOR_COLUMNS, [
        (job.pk, job.app_name, job.status, str(job.frequency), job.time_unit, _when(job.start_time),
         _when(None if job.done_materializing else job.next_materialize_at))
        for job in jobs
    ])


class Command(ProductCommand):
    """List jobs by Oozie's filter, or kill/suspend/resume them in bulk as one operation."""

    help = (
        "oozie jobs: -jobtype coordinator|bundle [-filter 'name=N;user=U;status=S;...'] [-offset 1] [-len 50] "
        "[-kill|-suspend|-resume [-nowait] [-timeout 600]] [-user NAME]"
    )

    def add_arguments(self, parser: CommandParser) -> None:
        """Oozie's single-dash options."""
        verbs = parser.add_mutually_exclusive_group()
        for verb in ("kill", "suspend", "resume"):
            verbs.add_argument(f"-{verb}", dest="verb", action="store_const", const=verb,
                               help=f"{verb} every job of the page the filter selects")
        parser.add_argument("-jobtype", default="coordinator", help="coordinator (default) or bundle")
        parser.add_argument("-filter", default=None, help="name=N;user=U;status=S;id=I;text=T;startcreatedtime=..;"
                            "endcreatedtime=..;sortby=createdTime|lastModifiedTime (AND between names, OR within one)")
        parser.add_argument("-offset", type=int, default=1, help="first job (1-based), as in Oozie")
        parser.add_argument("-len", type=int, default=50, help="jobs per page (with a verb: how many get it), as in Oozie")
        add_user_option(parser)
        parser.add_argument("-nowait", action="store_true", help="with a verb: print the operation and return at once")
        parser.add_argument("-timeout", type=float, default=600.0, help="with a verb: seconds to follow the operation")

    def handle(self, *args: Any, **options: Any) -> None:
        """List, or start the bulk operation and follow it."""
        kind = JOBTYPES.get(str(options["jobtype"]).lower())
        if kind is None:
            raise CommandError(f"-jobtype {options['jobtype']!r}: use coordinator or bundle")
        if options["offset"] < 1 or not 1 <= options["len"] <= 1000:
            raise CommandError("-offset must be 1 or more and -len 1 to 1000")
        verb = options["verb"]
        if verb and options["filter"] is None:
            raise CommandError(f"-{verb} needs -filter (as in Oozie, a bulk verb never selects every job by default)")
        user = self._user(options)
        try:
            queryset = self._selection(kind, user, options["filter"] or "")
            total = queryset.count()
        except OozieError as exc:
            raise CommandError(exc.message) from None
        start = options["offset"] - 1
        page = list(queryset[start:start + options["len"]])
        if not verb:
            self._print_page(kind, page, total, options)
            return
        if not page:
            self.stdout.write(f"the filter selects no {kind} job: nothing to {verb}")
            return
        self._bulk(kind, verb, [job.pk for job in page], user, options)

    def _user(self, options: dict[str, Any]) -> Any:
        return acting_user(options["user"])

    def _selection(self, kind: str, user: Any, text: str) -> QuerySet[Any]:
        if kind == "bundle":
            bundles = BundleJob.objects.select_related("owner").defer("definition", "applications", "configuration")
            return filter_jobs(readable_jobs(bundles, user), text, timezone.now(), statuses=tuple(BundleStatus.values))
        jobs = CoordinatorJob.objects.select_related("owner").defer("definition", "configuration")
        return filter_jobs(readable_jobs(jobs, user), text, timezone.now(), statuses=tuple(JobStatus.values))

    def _print_page(self, kind: str, page: list[Any], total: int, options: dict[str, Any]) -> None:
        """Oozie's `jobs` table: the same columns as its CLI, each as wide as its widest value (nothing cut)."""
        self.stdout.write("\n".join(job_table(kind, page)))
        first = options["offset"] if page else 0
        self.stdout.write(f"{kind} jobs {first}-{options['offset'] + len(page) - 1 if page else 0} of {total}")

    def _bulk(self, kind: str, verb: str, job_ids: list[str], user: Any, options: dict[str, Any]) -> None:
        try:
            operation = start_bulk(kind, verb, job_ids, user=user, owner=owner_scope(options["filter"]),
                                   filter_text=options["filter"])
        except OperationConflict as exc:
            raise CommandError(str(exc)) from None
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"operation {operation.pk}: {verb} of {len(job_ids)} {kind} job(s) started")
        if options["nowait"]:
            self.stdout.write(f"follow it at /api/v1/operations/{operation.pk}/ or in the admin")
            return
        deadline = time.monotonic() + options["timeout"]
        shown = None
        while True:
            operation = Operation.objects.get(pk=operation.pk)
            state = progress(operation)
            line = f"  {state['done']}/{state['total']} done, {len(state['failed'])} failed, {len(state['skipped'])} skipped"
            if line != shown:
                self.stdout.write(line)
                shown = line
            if operation.status != OperationStatus.RUNNING:
                break
            if time.monotonic() > deadline:
                raise CommandError(
                    f"operation {operation.pk} still runs after {options['timeout']:g} s (is a worker running?); "
                    f"follow it at /api/v1/operations/{operation.pk}/"
                )
            time.sleep(POLL_SECONDS)
        for skip in state["skipped"][:FAILURES_SHOWN]:  # a verb the job's status makes a no-op: not a failure
            self.stdout.write(f"SKIPPED {skip['partition']}: {skip['reason']}")
        if len(state["skipped"]) > FAILURES_SHOWN:
            self.stdout.write(f"... and {len(state['skipped']) - FAILURES_SHOWN} more skipped")
        for failure in state["failed"][:FAILURES_SHOWN]:
            self.stdout.write(f"FAILED {failure['partition']}: {failure['error']}")
        if len(state["failed"]) > FAILURES_SHOWN:
            self.stdout.write(f"... and {len(state['failed']) - FAILURES_SHOWN} more failed")
        self.stdout.write(f"operation {operation.pk} {operation.status}")
        if state["failed"]:
            raise CommandError(f"{len(state['failed'])} of {state['total']} job(s) failed")
