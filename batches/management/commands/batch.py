"""`manage.py batch VERB`: submit batches, read them and their reports, and the admin verbs on batches, jobs and collections.

The CLI is an operator's tool on the server: a submission reads what its user can (`trusted`:
payloads are not limited to BATCH_PAYLOAD_ROOTS), and every verb acts as `-user` (default: the
login name) under the same rules as the APIs (owner, ACL, job admins). User errors are one line,
exit status 1.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError, CommandParser

from batches import services
from batches.choices import PRIORITY_MAX, PRIORITY_MIN, JobStatus, SubmissionMode, SubmissionType
from batches.commands import NeedsConfirmation
from batches.models import Batch, BatchJob, BatchReport, Collection
from datasets.timeline import format_datetime
from kernel.cli import ProductCommand, acting_user, add_user_option
from kernel.permissions import JobPermissionDenied
from kernel.statemachine import IllegalTransition

RULE = "-" * 80


def batch_id(text: str) -> int:
    """`17` or the seed's `bid0000017`."""
    return _number(text, "bid", "batch")


def job_id(text: str) -> int:
    """`42` or the seed's `jid0000042`."""
    return _number(text, "jid", "job")


def _number(text: str, prefix: str, what: str) -> int:
    match = re.fullmatch(rf"(?:{prefix})?([0-9]{{1,18}})", text.strip(), re.IGNORECASE)
    if match is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not a {what} id (17 or {prefix}0000017)")
    return int(match[1])


def priority_value(text: str) -> int:
    """A priority, 0 (first) to 99 (last)."""
    if not text.strip().isdigit() or not PRIORITY_MIN <= int(text) <= PRIORITY_MAX:
        raise argparse.ArgumentTypeError(f"{text!r}: use {PRIORITY_MIN} (first) to {PRIORITY_MAX} (last)")
    return int(text)


def _confirm_hint(exc: NeedsConfirmation) -> str:
    """The refusal, telling the CLI's way to confirm."""
    text = " ".join(str(exc).split())
    return text.removesuffix("confirm to delete") + "pass --yes to delete" if text.endswith("confirm to delete") else (
        f"{text} (pass --yes)"
    )


class Command(ProductCommand):
    """Submit and control batches: one subcommand per verb."""

    help = (
        "batch submit --profile P --type T --payload URL [...] | info BATCH [--jobs] [--status S] | "
        "report BATCH [N] [--format text|json|csv] | hold COLLECTION [--reason R] | "
        "release COLLECTION|--batch ID|--job ID | resume JOB... | requeue JOB... | "
        "delete --batch ID|--job ID [--yes] | priority JOB N | update-report BATCH; each takes -user NAME"
    )

    def add_arguments(self, parser: CommandParser) -> None:
        """One subcommand per verb; every one takes -user."""
        common = CommandParser(add_help=False)
        add_user_option(common, "--user")
        verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")

        submit = verbs.add_parser("submit", parents=[common], help="submit a batch (reads what your user can)")
        submit.add_argument("--profile", required=True, help="the ingest profile's name")
        submit.add_argument("--type", required=True, choices=SubmissionType.values, help="what --payload names")
        submit.add_argument("--payload", required=True, help="the file, container or manifest URL (or a local path)")
        submit.add_argument("--submitter", default="", help="the depositor (default: the user's name)")
        submit.add_argument("--priority", type=priority_value, default=None, help="0 runs first, 99 last")
        submit.add_argument("--mode", choices=SubmissionMode.values, default=SubmissionMode.ADD,
                            help="add to (default) or replace the objects' files")
        for field in ("what", "who", "when", "where"):
            submit.add_argument(f"--{field}", default="", help=f"ERC {field}")
        submit.add_argument("--acl", default="", help="users and groups who may act on it too")
        submit.add_argument("--external-id", default="", help="your id of it: submitting it again answers the first")

        info = verbs.add_parser("info", parents=[common], help="a batch, its job counts and (--jobs) its jobs")
        info.add_argument("batch", type=batch_id, metavar="BATCH_ID")
        info.add_argument("--jobs", action="store_true", help="list its jobs")
        info.add_argument("--status", default="", help="--jobs: only these statuses, comma-separated (failed,held)")

        report = verbs.add_parser("report", parents=[common], help="print a stored report of a batch")
        report.add_argument("batch", type=batch_id, metavar="BATCH_ID")
        report.add_argument("number", type=int, nargs="?", default=None, help="its number (default: the latest)")
        report.add_argument("--format", choices=("text", "json", "csv"), default="text")

        hold = verbs.add_parser("hold", parents=[common], help="hold a collection (job admins)")
        hold.add_argument("collection", metavar="COLLECTION")
        hold.add_argument("--reason", default="", help="why (shown with the collection)")

        release = verbs.add_parser("release", parents=[common],
                                   help="release a collection (job admins), a held batch or a held job")
        release.add_argument("collection", nargs="?", default=None, metavar="COLLECTION")
        release.add_argument("--batch", type=batch_id, default=None, metavar="BATCH_ID")
        release.add_argument("--job", type=job_id, default=None, metavar="JOB_ID")

        for verb, what in (("resume", "resume failed jobs at the stage after their last success"),
                           ("requeue", "send failed jobs back to pending")):
            many = verbs.add_parser(verb, parents=[common], help=what)
            many.add_argument("jobs", type=job_id, nargs="+", metavar="JOB_ID")

        delete = verbs.add_parser("delete", parents=[common], help="delete a failed or held batch or job")
        delete.add_argument("--batch", type=batch_id, default=None, metavar="BATCH_ID")
        delete.add_argument("--job", type=job_id, default=None, metavar="JOB_ID")
        delete.add_argument("--yes", action="store_true", help="confirm: its depositor will never be told")

        priority = verbs.add_parser("priority", parents=[common], help="change a job's priority")
        priority.add_argument("job", type=job_id, metavar="JOB_ID")
        priority.add_argument("priority", type=priority_value, metavar="N", help="0 runs first, 99 last")

        update = verbs.add_parser("update-report", parents=[common], help="report a failed batch again")
        update.add_argument("batch", type=batch_id, metavar="BATCH_ID")

    def handle(self, *args: Any, **options: Any) -> None:
        """Dispatch the verb; user errors are one line, exit 1."""
        verb = options["verb"]
        try:
            getattr(self, f"_{verb.replace('-', '_')}")(options)
        except NeedsConfirmation as exc:
            raise CommandError(_confirm_hint(exc)) from None
        except (IllegalTransition, JobPermissionDenied, ValueError) as exc:
            raise CommandError(" ".join(str(exc).split())) from None
        except Batch.DoesNotExist:
            raise CommandError(f"no batch {options.get('batch')}") from None
        except BatchJob.DoesNotExist:
            raise CommandError(f"no job {options.get('job')}") from None
        except Collection.DoesNotExist:
            raise CommandError(f"no collection {options.get('collection')!r}") from None

    def _user(self, options: dict[str, Any]) -> Any:
        return acting_user(options["user"])

    # ---- submit and read ----------------------------------------------------------------------

    def _submit(self, options: dict[str, Any]) -> None:
        payload = options["payload"]
        if "://" not in payload:
            payload = f"file://{Path(payload).resolve()}"  # a local path, as operators type it
        batch, created = services.submit_batch(
            owner=self._user(options), profile=options["profile"], payload_url=payload, type=options["type"],
            submitter=options["submitter"], submission_mode=options["mode"], priority=options["priority"],
            acl=options["acl"], external_id=options["external_id"], trusted=True,
            erc_what=options["what"], erc_who=options["who"], erc_when=options["when"], erc_where=options["where"],
        )
        self.stdout.write(f"batch: {batch.pk}" + ("" if created else " (submitted before with this external id)"))

    def _info(self, options: dict[str, Any]) -> None:
        batch = services.read_batch(options["batch"], actor=self._user(options))
        counts = services.job_counts([batch.pk]).get(batch.pk, {})
        by_status = ", ".join(f"{status} {n}" for status, n in sorted(counts.items()))
        latest = batch.reports.order_by("-number").first()
        default = f"- (profile: {batch.profile.priority})"
        lines = [
            f"Batch ID    : {batch.pk} ({batch.id_text})",
            RULE,
            f"Profile     : {batch.profile.name}",
            f"Collection  : {batch.collection.name}" + (" [held]" if batch.collection.held else ""),
            f"Status      : {batch.status}",
            f"User        : {batch.owner.get_username()}",
            f"Submitter   : {batch.submitter}",
            f"Type        : {batch.type} ({batch.submission_mode})",
            f"Payload     : {batch.payload_url}",
            f"Priority    : {default if batch.priority is None else batch.priority}",
            f"External ID : {batch.external_id or '-'}",
            f"Operation   : {batch.operation_id or '-'}",
            f"Created     : {format_datetime(batch.created_at)}",
            f"Finished    : {format_datetime(batch.finished_at) if batch.finished_at else '-'}",
            f"Error       : {batch.error or '-'}",
            f"Jobs        : {sum(counts.values())}" + (f" ({by_status})" if by_status else ""),
            f"Reports     : {latest.number} (latest {latest.kind}, {format_datetime(latest.created_at)})" if latest
            else "Reports     : none",
        ]
        if options["jobs"]:
            lines += [RULE, f"{'ID':<10} {'No':>5} {'Status':<14} {'Pri':>3} {'Identifiers':<40} Error"]
            jobs = BatchJob.objects.filter(batch=batch).defer("files", "history").order_by("number")
            statuses = [part.strip() for part in options["status"].split(",") if part.strip()]
            unknown = sorted(set(statuses) - set(JobStatus.values))
            if unknown:
                raise CommandError(f"--status {unknown[0]!r}: use {', '.join(JobStatus.values)}")
            if statuses:
                jobs = jobs.filter(status__in=statuses)
            for job in jobs:
                ids = ", ".join(filter(None, [job.primary_id or job.supplied_primary_id, *job.local_ids])) or "-"
                error = " ".join(job.error.split())  # in full, on one line: the last column
                lines.append(f"{job.pk:<10} {job.number:>5} {job.status:<14} {job.priority:>3} {ids:<40} {error}".rstrip())
        self.stdout.write("\n".join(lines))

    def _report(self, options: dict[str, Any]) -> None:
        batch = services.read_batch(options["batch"], actor=self._user(options))
        reports = BatchReport.objects.filter(batch=batch)
        found = (reports.filter(number=options["number"]) if options["number"] is not None
                 else reports.order_by("-number")).first()
        if found is None:
            which = f"report {options['number']}" if options["number"] is not None else "report yet"
            raise CommandError(f"batch {batch.pk} has no {which}")
        if options["format"] == "json":
            self.stdout.write(json.dumps(found.body, indent=2))
        else:
            self.stdout.write((found.text if options["format"] == "text" else found.csv).rstrip("\n"))

    # ---- verbs ----------------------------------------------------------------------------------

    def _hold(self, options: dict[str, Any]) -> None:
        collection = services.hold_collection(options["collection"], actor=self._user(options), reason=options["reason"])
        self.stdout.write(f"hold: collection {collection.name} held")

    def _release(self, options: dict[str, Any]) -> None:
        chosen = [name for name in ("collection", "batch", "job") if options[name] is not None]
        if len(chosen) != 1:
            raise CommandError("release needs exactly one of COLLECTION, --batch ID or --job ID")
        actor = self._user(options)
        if options["batch"] is not None:
            services.batch_verb(options["batch"], "release", actor=actor)
            self.stdout.write(f"release: batch {options['batch']} queued")
        elif options["job"] is not None:
            services.job_verb(options["job"], "release", actor=actor)
            self.stdout.write(f"release: job {options['job']} queued")
        else:
            collection, batches, jobs = services.release_collection(options["collection"], actor=actor)
            self.stdout.write(f"release: collection {collection.name} released; "
                              f"{batches} held batch(es) and {jobs} held job(s) queued for release")

    def _many(self, verb: str, options: dict[str, Any]) -> None:
        """The verb on every job named; the queued ones are printed, any refusal fails the command (one line)."""
        actor = self._user(options)
        wanted = list(dict.fromkeys(options["jobs"]))
        known = set(BatchJob.objects.filter(pk__in=wanted).values_list("pk", flat=True))
        done, refused = services.jobs_verb([pk for pk in wanted if pk in known], verb, actor=actor)
        refused = [f"job {pk}: no such job" for pk in wanted if pk not in known] + refused
        for pk in done:
            self.stdout.write(f"{verb}: job {pk} queued")
        if refused:
            raise CommandError("; ".join(" ".join(line.split()) for line in refused))

    def _resume(self, options: dict[str, Any]) -> None:
        self._many("resume", options)

    def _requeue(self, options: dict[str, Any]) -> None:
        self._many("requeue", options)

    def _delete(self, options: dict[str, Any]) -> None:
        if (options["batch"] is None) == (options["job"] is None):
            raise CommandError("delete needs exactly one of --batch ID or --job ID")
        actor = self._user(options)
        if options["batch"] is not None:
            services.batch_verb(options["batch"], "delete", actor=actor, confirmed=options["yes"])
            self.stdout.write(f"delete: batch {options['batch']} queued")
        else:
            services.job_verb(options["job"], "delete", actor=actor, confirmed=options["yes"])
            self.stdout.write(f"delete: job {options['job']} queued")

    def _priority(self, options: dict[str, Any]) -> None:
        services.job_verb(options["job"], "priority", actor=self._user(options), priority=options["priority"])
        self.stdout.write(f"priority: job {options['job']} -> {options['priority']} queued")

    def _update_report(self, options: dict[str, Any]) -> None:
        services.batch_verb(options["batch"], "update-report", actor=self._user(options))
        self.stdout.write(f"update-report: batch {options['batch']} queued")
