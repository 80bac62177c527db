"""`manage.py job`: the `oozie job` command line for coordinators (DG_CommandLineTool)."""

from __future__ import annotations

import getpass
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.models import QuerySet

from coordinators.choices import IllegalTransition
from coordinators.definitions import DefinitionError, load_configuration
from coordinators.dryrun import APP_PATH_PROPERTY, as_text, dryrun, locate_application
from coordinators.models import CoordinatorAction, CoordinatorJob
from coordinators.permissions import JobPermissionDenied
from datasets.timeline import format_datetime

VERBS = ("run", "submit", "start", "info", "kill", "suspend", "resume", "change", "rerun", "dryrun")


class Command(BaseCommand):
    """Submit and control coordinator jobs as `oozie job` does."""

    help = (
        "oozie job for coordinators: -run|-submit|-dryrun -config F; -start|-info|-kill|-suspend|-resume ID; "
        "-change ID -value endtime=..;concurrency=..;pausetime=..; -rerun ID -action 1,3-4 | -date A::B [-refresh] [-nocleanup] [-failed]"
    )

    def add_arguments(self, parser: CommandParser) -> None:
        """Oozie's single-dash options."""
        group = parser.add_mutually_exclusive_group(required=True)
        for verb in ("run", "submit", "dryrun"):
            group.add_argument(f"-{verb}", dest="verb", action="store_const", const=verb)
        for verb in ("start", "info", "kill", "suspend", "resume", "change", "rerun"):
            group.add_argument(f"-{verb}", dest=verb, metavar="JOB_ID")
        parser.add_argument("-config", help="job .properties or Hadoop XML configuration file")
        parser.add_argument("-user", default=None, help="act as this user (default: your login name)")
        parser.add_argument("-value", default=None, help="-change: endtime=...;concurrency=...;pausetime=...;status=RUNNING")
        parser.add_argument("-action", default=None, help="-rerun: action numbers and ranges, e.g. 1,3-4,7-40")
        parser.add_argument("-date", default=None, help="-rerun: nominal times and ranges (UTC), e.g. 2009-01-01T01:00Z::2009-01-31T23:59Z")
        parser.add_argument("-refresh", action="store_true", help="-rerun: re-resolve and re-check every input")
        parser.add_argument("-nocleanup", action="store_true", help="-rerun: keep the output instances")
        parser.add_argument("-failed", action="store_true", help="-rerun: only the actions that did not succeed")
        parser.add_argument("-len", type=int, default=50, help="-info: actions per page")
        parser.add_argument("-offset", type=int, default=1, help="-info: first action (1-based)")
        parser.add_argument("-filter", default="", help="-info: status=RUNNING;status=WAITING ...")
        parser.add_argument("-order", choices=("asc", "desc"), default="asc", help="-info: action order")

    def handle(self, *args: Any, **options: Any) -> None:
        """Dispatch the verb; user errors are one line, exit 1."""
        verb = options.get("verb") or next((v for v in VERBS if options.get(v)), None)
        try:
            if verb in ("run", "submit", "dryrun"):
                self._submit(verb, options)
            elif verb == "info":
                self._info(options["info"], options)
            elif verb == "change":
                self._change(options["change"], options)
            elif verb == "rerun":
                self._rerun(options["rerun"], options)
            elif verb is not None:
                self._control(verb, options[verb], options)
        except (DefinitionError, IllegalTransition, JobPermissionDenied, ValueError) as exc:
            raise CommandError(" ".join(str(exc).split())) from None
        except CoordinatorJob.DoesNotExist:
            raise CommandError(f"no coordinator job {options.get(verb or '')!r}") from None

    def _user(self, options: dict[str, Any]) -> Any:
        name = options["user"] or getpass.getuser()
        user = get_user_model().objects.filter(username=name).first()
        if user is None:
            raise CommandError(f"no user {name!r}; pass -user NAME of an existing user")
        return user

    def _submit(self, verb: str, options: dict[str, Any]) -> None:
        if not options["config"]:
            raise CommandError(f"-{verb} needs -config JOB.properties")
        config = Path(options["config"])
        if verb == "dryrun":
            from django.utils import timezone

            self.stdout.write(as_text(dryrun(config, now=timezone.now(), max_actions=options["len"] or 1000)))
            return
        from coordinators.services import submit_coordinator

        try:
            properties = load_configuration(config.read_bytes(), str(config))
        except OSError as exc:
            raise CommandError(f"cannot read {config}: {exc.strerror or exc}") from None
        if APP_PATH_PROPERTY not in properties:
            raise CommandError(f"{config}: {APP_PATH_PROPERTY} is not set")
        xml_path = locate_application(config, properties[APP_PATH_PROPERTY])
        try:
            xml = xml_path.read_text()
        except OSError as exc:
            raise CommandError(f"cannot read {xml_path}: {exc.strerror or exc}") from None
        job = submit_coordinator(
            xml, properties, owner=self._user(options), app_dir=str(xml_path.parent), start=(verb == "run"),
            trusted=True,  # an operator on the server: reads what its user can read
        )
        self.stdout.write(f"job: {job.id}")

    def _existing(self, job_id: str) -> None:
        if not CoordinatorJob.objects.filter(pk=job_id).exists():
            raise CoordinatorJob.DoesNotExist(job_id)

    def _change(self, job_id: str, options: dict[str, Any]) -> None:
        from coordinators.services import change_job

        if options["value"] is None:
            raise CommandError("-change needs -value, e.g. -value 'endtime=2026-12-01T00:00Z;concurrency=2'")
        self._existing(job_id)
        change_job(job_id, options["value"], actor=self._user(options))
        self.stdout.write(f"change: {job_id} queued ({options['value']})")

    def _rerun(self, job_id: str, options: dict[str, Any]) -> None:
        from coordinators.services import rerun_job

        if bool(options["action"]) == bool(options["date"]):
            raise CommandError("-rerun needs exactly one of -action or -date")
        self._existing(job_id)
        rerun_type, scope = ("action", options["action"]) if options["action"] else ("date", options["date"])
        actions = rerun_job(
            job_id, actor=self._user(options), rerun_type=rerun_type, scope=scope,
            refresh=options["refresh"], nocleanup=options["nocleanup"], failed=options["failed"],
        )
        lines = [f"{'ID':<45} Nominal Time", "-" * 64]
        lines += [f"{action.id:<45} {format_datetime(action.nominal_time)}" for action in actions]
        lines.append(f"rerun: {len(actions)} action(s) of {job_id} queued")
        self.stdout.write("\n".join(lines))

    def _control(self, verb: str, job_id: str, options: dict[str, Any]) -> None:
        from coordinators.services import control, start_job

        self._existing(job_id)
        actor = self._user(options)
        if verb == "start":
            start_job(job_id, actor=actor)
        else:
            control(job_id, verb, actor=actor)
        self.stdout.write(f"{verb}: {job_id} queued")

    def _info(self, job_id: str, options: dict[str, Any]) -> None:
        job = CoordinatorJob.objects.select_related("owner").get(pk=job_id)
        lines = [
            f"Job ID : {job.id}",
            "-" * 80,
            f"Job Name    : {job.app_name}",
            f"App Path    : {job.app_path}",
            f"Status      : {job.status}",
            f"User        : {job.owner.get_username()}",
            f"Start Time  : {format_datetime(job.start_time)}",
            f"End Time    : {format_datetime(job.end_time)}",
            f"Frequency   : {job.frequency} {job.time_unit}",
            f"Concurrency : {job.concurrency}  Execution: {job.execution}  Timeout: {job.timeout}  Throttle: {job.throttle}",
            "-" * 80,
            f"{'ID':<45} {'Status':<10} {'Ext ID':<36} {'Nominal Time':<18} Err",
        ]
        actions: QuerySet[CoordinatorAction] = job.actions.all()
        statuses = [p.split("=", 1)[1].upper() for p in options["filter"].split(";") if p.startswith("status=")]
        if statuses:
            actions = actions.filter(status__in=statuses)
        actions = actions.order_by("number" if options["order"] == "asc" else "-number")
        start = max(0, options["offset"] - 1)
        for action in actions[start:start + max(1, options["len"])]:
            lines.append(
                f"{action.id:<45} {action.status:<10} {action.external_id or '-':<36} "
                f"{format_datetime(action.nominal_time):<18} {action.error_message[:40]}"
            )
        self.stdout.write("\n".join(lines))
