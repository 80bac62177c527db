"""`manage.py coord dryrun --config JOB.properties`: materialize a coordinator's actions on paper."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import CommandError, CommandParser
from django.utils import timezone

from coordinators.dryrun import as_text, dryrun, dumps
from kernel.cli import ProductCommand
from oozie.definitions import DefinitionError, fsspec_loader


class Command(ProductCommand):
    """Coordinator tools that need no database: dryrun."""

    help = "Coordinator tools. dryrun: print every action's nominal time, inputs, outputs and configuration."

    def add_arguments(self, parser: CommandParser) -> None:
        """Subcommand and its options."""
        sub = parser.add_subparsers(dest="verb", required=True)
        run = sub.add_parser("dryrun", help="materialize every action from start to end without side effects")
        run.add_argument("--config", required=True, help="job .properties (or Hadoop XML) file")
        run.add_argument("--format", choices=("json", "text"), default="json")
        run.add_argument("--max-actions", type=int, default=1000, help="at most this many actions (default 1000)")

    def handle(self, *args: Any, **options: Any) -> None:
        """Run the subcommand; a rejected definition is one line on stderr and exit code 1."""
        if options["max_actions"] < 1:
            raise CommandError("--max-actions must be at least 1")
        try:
            result = dryrun(
                Path(options["config"]),
                now=timezone.now(),
                max_actions=options["max_actions"],
                processing_timezone=settings.OOZIE_PROCESSING_TIMEZONE,
                max_instances=settings.COORD_MAX_INSTANCES_PER_INPUT,
                loader=fsspec_loader(allowed_protocols=settings.COORD_INCLUDE_PROTOCOLS),
            )
        except DefinitionError as exc:
            raise CommandError(" ".join(str(exc).split())) from None
        self.stdout.write(dumps(result) if options["format"] == "json" else as_text(result))
