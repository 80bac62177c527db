"""`manage.py bench <name>`: benchmarks that print their figures (ratios against a same-run baseline)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError, connection
from django.db.migrations.executor import MigrationExecutor
from django.test.utils import override_settings

from tooling.benchmarks.actions import run_actions_bench
from tooling.benchmarks.api_pages import run_api_pages_bench
from tooling.benchmarks.batch import run_batch_bench
from tooling.benchmarks.batch_memory import run_batch_memory_bench
from tooling.benchmarks.bundle import BenchmarkUnavailable, run_bundle_bench
from tooling.benchmarks.keyed_queue import bench_allowed_tasks, run_keyed_queue_bench
from tooling.benchmarks.materialize_plan import run_materialize_plan_bench
from tooling.benchmarks.operation import run_operation_bench
from tooling.benchmarks.pages import run_pages_bench
from tooling.benchmarks.purge import run_purge_bench
from tooling.benchmarks.runtime import run_materialize_bench, run_trigger_latency_bench
from tooling.benchmarks.scale import Sizes, run_scale_bench
from tooling.benchmarks.workflow import run_workflow_bench


def _keyed_queue(options: dict[str, Any], log: Callable[[str], None]) -> dict[str, Any]:
    return run_keyed_queue_bench(
        options["commands"], options["keys"] or 50, options["workers"], log, samples=options["samples"]
    )


def _operation(options: dict[str, Any], log: Callable[[str], None]) -> dict[str, Any]:
    return run_operation_bench(options["jobs"] or 5000, options["keys"] or 100, options["workers"], log)


def _materialize_plan(options: dict[str, Any], log: Callable[[str], None]) -> dict[str, Any]:
    return run_materialize_plan_bench(options["actions"] or 100_000, log)


def _materialize(options: dict[str, Any], log: Callable[[str], None]) -> dict[str, Any]:
    return run_materialize_bench(options["actions"] or 100_000, log)


def _trigger_latency(options: dict[str, Any], log: Callable[[str], None]) -> dict[str, Any]:
    return run_trigger_latency_bench(options["jobs"] or 500, options["minutes"], options["workers"], log,
                                     lead_seconds=options["lead_seconds"])


def _bundle(options: dict[str, Any], log: Callable[[str], None]) -> dict[str, Any]:
    try:
        return run_bundle_bench(options["coordinators"], options["workers"], log)
    except BenchmarkUnavailable as exc:
        raise CommandError(f"bench bundle: {exc}") from None


def _batch(options: dict[str, Any], log: Callable[[str], None]) -> dict[str, Any]:
    return run_batch_bench(options["objects"], options["workers"], log, options["object_bytes"] or 0)


def _batch_memory(options: dict[str, Any], log: Callable[[str], None]) -> dict[str, Any]:
    return run_batch_memory_bench(options["large_bytes"], log)


def _workflow(options: dict[str, Any], log: Callable[[str], None]) -> dict[str, Any]:
    return run_workflow_bench(options["jobs"] or 200, options["width"], options["workers"], log)


def _actions(options: dict[str, Any], log: Callable[[str], None]) -> dict[str, Any]:
    return run_actions_bench(options["jobs"] or 100, options["actions"] or 100, options["workers"], log)


def _purge(options: dict[str, Any], log: Callable[[str], None]) -> dict[str, Any]:
    return run_purge_bench(options["jobs"] or 100, options["actions"] or 100, log)


def _api_pages(options: dict[str, Any], log: Callable[[str], None]) -> dict[str, Any]:
    return run_api_pages_bench(options["list_jobs"], options["job_actions"], options["repeat"] or 30, log)


def _pages(options: dict[str, Any], log: Callable[[str], None]) -> dict[str, Any]:
    return run_pages_bench(
        options["jobs"] or 1000, options["actions"] or 10_000, options["small_actions"], options["repeat"] or 5, log,
    )


def _scale(options: dict[str, Any], log: Callable[[str], None]) -> dict[str, Any]:
    return run_scale_bench(Sizes(
        jobs=options["jobs"] or 10_000, history=options["history"], trigger_jobs=options["trigger_jobs"],
        materialize_actions=options["actions"] or 20_000, repeat=options["repeat"] or 11, workers=options["workers"],
    ), log)


NO_DATABASE = frozenset({"materialize-plan"})  # pure computation; every other benchmark stores rows


def check_database() -> None:
    """CommandError unless the database answers and every migration is applied (one line, no traceback)."""
    try:
        executor = MigrationExecutor(connection)
        plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except DatabaseError as exc:
        raise CommandError(f"cannot reach the database: {' '.join(str(exc).split())}") from None
    if plan:
        names = [f"{migration.app_label}.{migration.name}" for migration, _ in plan]
        raise CommandError(
            f"the database is not migrated ({len(names)} migration(s) not applied, e.g. {', '.join(names[:3])}): "
            "run `python manage.py migrate` first"
        )


BENCHMARKS: dict[str, Callable[[dict[str, Any], Callable[[str], None]], dict[str, Any]]] = {
    "keyed-queue": _keyed_queue,
    "materialize-plan": _materialize_plan,
    "materialize": _materialize,
    "trigger-latency": _trigger_latency,
    "api-pages": _api_pages,
    "bundle": _bundle,
    "operation": _operation,
    "batch": _batch,
    "batch-memory": _batch_memory,
    "workflow": _workflow,
    "actions": _actions,
    "pages": _pages,
    "purge": _purge,
    "scale": _scale,
}


class Command(BaseCommand):
    """Run a named benchmark; progress goes to stderr, figures to stdout."""

    help = "Run a benchmark and print its figures (keyed-queue, ...)."

    def add_arguments(self, parser: CommandParser) -> None:
        """The benchmark's name and its sizes."""
        parser.add_argument("name", help="which benchmark: " + ", ".join(sorted(BENCHMARKS)))
        parser.add_argument("--json", action="store_true", help="print one JSON object")
        parser.add_argument("--commands", type=int, default=3000)
        parser.add_argument("--keys", type=int, help="keyed-queue: keys (default 50); operation: keys (default 100)")
        parser.add_argument("--workers", type=int, default=2)
        parser.add_argument(
            "--samples", type=int, default=300, help="keyed-queue: cold-key latencies measured per phase"
        )
        parser.add_argument(
            "--actions", type=int,
            help="materialize(-plan): actions to create or plan (default 100,000); actions, purge: per job (default 100); "
                 "pages: the big job's actions (default 10,000); scale: materialized per phase (default 20,000)"
        )
        parser.add_argument(
            "--jobs", type=int,
            help="trigger-latency: coordinators to run (default 500); operation: jobs (default 5000); actions, purge: "
                 "coordinators (default 100); pages: jobs stored (default 1,000); scale: jobs of the history (default 10,000)"
        )
        parser.add_argument("--minutes", type=int, default=2, help="trigger-latency: nominal times per coordinator")
        parser.add_argument(
            "--lead-seconds", type=float,
            help="trigger-latency: seconds at least between submitting the jobs and their first nominal time (default: "
                 "the minute two minutes from now); a long lead lets the fresh jobs' start commands drain first",
        )
        parser.add_argument("--list-jobs", type=int, default=10_000, help="api-pages: jobs stored")
        parser.add_argument("--job-actions", type=int, default=50_000, help="api-pages: actions of the big job")
        parser.add_argument("--coordinators", type=int, default=200, help="bundle: coordinators in the bundle")
        parser.add_argument("--repeat", type=int, help="api-pages: requests timed per page (default 30); pages: (default 5); scale: (default 11)")
        parser.add_argument("--small-actions", type=int, default=24, help="pages: actions of each job but the big one")
        parser.add_argument("--objects", type=int, default=10_000, help="batch: objects ingested (one file each)")
        parser.add_argument("--object-bytes", type=int,
                            help="batch: bytes of each object's file (default: one short line)")
        parser.add_argument("--large-bytes", type=int, default=2 * 1024**3,
                            help="batch-memory: bytes of the large object (default 2 GiB; a sparse file)")
        parser.add_argument("--history", type=int, default=5_000_000, help="scale: ended actions stored (with their runs)")
        parser.add_argument("--trigger-jobs", type=int, default=500, help="scale: due jobs whose trigger latency is timed (0: not timed)")
        parser.add_argument("--width", type=int, default=10, help="workflow: actions in each workflow's fork")

    def handle(self, *args: Any, **options: Any) -> None:
        """Dispatch to the named benchmark."""
        runner = BENCHMARKS.get(options["name"])
        if runner is None:
            raise CommandError(f"unknown benchmark {options['name']!r}; choose from {sorted(BENCHMARKS)}")
        for name in ("commands", "keys", "workers", "samples", "actions", "jobs", "minutes", "list_jobs", "job_actions", "repeat",
                     "coordinators", "objects", "width", "small_actions", "object_bytes", "large_bytes", "history"):
            if options.get(name) is not None and options[name] < 1:
                raise CommandError(f"--{name} must be at least 1")
        if options.get("trigger_jobs") is not None and options["trigger_jobs"] < 0:
            raise CommandError("--trigger-jobs must be 0 (the trigger is not timed) or more")
        if options.get("lead_seconds") is not None and options["lead_seconds"] < 0:
            raise CommandError("--lead-seconds must be 0 or more")

        if options["name"] not in NO_DATABASE:
            check_database()

        def log(line: str) -> None:
            self.stderr.write(line)
            self.stderr.flush()

        try:
            # The benchmarks submit the example tasks (their no-ops): allowed for this run only.
            with override_settings(ALLOWED_TASKS=bench_allowed_tasks()):
                figures = runner(options, log)
        except RuntimeError as exc:  # a benchmark that cannot run says why (e.g. before `migrate`)
            raise CommandError(str(exc)) from exc
        if options["json"]:
            self.stdout.write(json.dumps(figures))
        else:
            for key, value in figures.items():
                self.stdout.write(f"{key:36} {value}")
