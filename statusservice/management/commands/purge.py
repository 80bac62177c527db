"""`manage.py purge [--dry-run]`: one purge pass now, as the hourly service runs it (statusservice.purge)."""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from statusservice.purge import KINDS, Policy, Report, purge

#: Seconds between two progress lines on a long run.
PROGRESS_SECONDS = 2.0


class Command(BaseCommand):
    """Purge ended jobs past their ages (or, with --dry-run, say per kind what would go); progress on stderr."""

    help = (
        "Delete ended bundles, coordinators and workflows older than PURGE_*_DAYS with everything theirs, "
        "and coordinators' old actions. --dry-run counts what would go and changes nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        """--dry-run, --json, and the ages and batch size for this pass only."""
        parser.add_argument("--dry-run", action="store_true", help="count what would go; delete nothing")
        parser.add_argument("--json", action="store_true", help="print the counts as one JSON object")
        for kind, setting in (("workflow", "PURGE_WORKFLOW_DAYS"), ("coordinator", "PURGE_COORDINATOR_DAYS"),
                              ("bundle", "PURGE_BUNDLE_DAYS")):
            parser.add_argument(f"--{kind}-days", type=int, help=f"this pass only: instead of {setting} (0: not purged)")
        parser.add_argument("--keep-last-actions", type=int, help="this pass only: instead of PURGE_KEEP_LAST_ACTIONS")
        parser.add_argument("--batch", type=int, help="this pass only: jobs per transaction, instead of PURGE_BATCH")

    def handle(self, *args: Any, **options: Any) -> None:
        """Run the pass with progress lines, then print the counts per kind."""
        for name in ("workflow_days", "coordinator_days", "bundle_days", "keep_last_actions"):
            if options[name] is not None and options[name] < 0:
                raise CommandError(f"--{name.replace('_', '-')} must be 0 or more")
        if options["batch"] is not None and options["batch"] < 1:
            raise CommandError("--batch must be at least 1")
        now = timezone.now()
        policy = self.policy(now, options)
        last = time.monotonic()

        def progress(phase: str, report: Report) -> None:
            nonlocal last
            if time.monotonic() - last >= PROGRESS_SECONDS:
                last = time.monotonic()
                done = ", ".join(f"{count} {kind.replace('_', ' ')}" for kind, count in report.counts.items() if count)
                self.stderr.write(f"{phase}: batch {report.batches}; {'would go' if report.dry_run else 'gone'}: "
                                  f"{done or 'nothing yet'}")

        report = purge(now, dry_run=options["dry_run"], progress=progress, policy=policy)
        if options["json"]:
            self.stdout.write(json.dumps({"dry_run": report.dry_run, **report.as_dict()}))
            return
        verb = "would be deleted" if report.dry_run else "deleted"
        for kind in KINDS:
            self.stdout.write(f"{kind.replace('_', ' '):20} {report.counts[kind]:>10} {verb}")

    def policy(self, now: datetime, options: dict[str, Any]) -> Policy:
        """The settings' policy with this pass's overrides."""
        base = Policy.from_settings(now)

        def cutoff(option: str, default: datetime | None) -> datetime | None:
            days = options[option]
            if days is None:
                return default
            return now - timedelta(days=days) if days > 0 else None

        return Policy(
            workflows=cutoff("workflow_days", base.workflows), coordinators=cutoff("coordinator_days", base.coordinators),
            bundles=cutoff("bundle_days", base.bundles),
            keep_last_actions=base.keep_last_actions if options["keep_last_actions"] is None else options["keep_last_actions"],
            old_actions=base.old_actions,
            batch=options["batch"] or base.batch,
        )
