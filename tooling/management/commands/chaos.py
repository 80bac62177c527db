"""`manage.py chaos`: coordinators and keyed jobs under injected faults; prints what was lost, twice, stuck.

The command runs the scenario in a child process whose settings point at a private
PostgreSQL cluster and Redis (created in a temporary directory, loopback only), and stops
and removes everything afterwards, even if the child dies.

`--hosts 2` is the multi-host drill: each worker runs on a "host" of its own, a network
namespace joined to this one by its own links to PostgreSQL and to Redis (tooling/chaos/hosts.py),
and the faults are cuts of those links past the lease. The namespaces are made before the
child starts and removed after it ends, whatever happened.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from project.launcher import free_port
from tooling.chaos.hosts import Network, unavailable_reason
from tooling.chaos.infra import ChaosSetupError, PostgresCluster, postgres_bin
from tooling.chaos.scenario import DATABASE, Plan, child_environment, run_chaos

SIZES = ("jobs", "actions", "keys", "per_key", "workers", "worker_concurrency", "lease", "seed", "idle_in_transaction")


class Command(BaseCommand):
    """Run the chaos scenario and print its counts (JSON with --json); exit 1 when a target is missed."""

    help = (
        "Run coordinators and keyed jobs on a private PostgreSQL and Redis while SIGKILLing worker "
        "processes and whole workers, pausing one past its lease, flushing and restarting Redis and "
        "restarting PostgreSQL; print what was lost, run twice, out of order, overlapping, stuck or "
        "wrongly failed, and how long it took to settle."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        """Sizes and output; --quick is the short run of the test suite."""
        parser.add_argument("--json", action="store_true", help="print one JSON object")
        parser.add_argument("--quick", action="store_true", help="the short run (about 1.5 minutes)")
        parser.add_argument("--jobs", type=int, help="coordinators (default 20; quick 4)")
        parser.add_argument("--actions", type=int, help="actions per coordinator (default 30; quick 10)")
        parser.add_argument("--keys", type=int, help="keys of keyed jobs (default 40; quick 6)")
        parser.add_argument("--per-key", type=int, dest="per_key", help="keyed jobs per key (default 60; quick 20)")
        parser.add_argument("--workers", type=int, help="Celery workers (default 2)")
        parser.add_argument("--worker-concurrency", type=int, dest="worker_concurrency",
                            help="processes per worker (default 6; quick 3)")
        parser.add_argument("--lease", type=int, help="command and node lease in seconds (default 5)")
        parser.add_argument("--seed", type=int, help="random seed of the faults' victims")
        parser.add_argument("--hosts", type=int, default=0,
                            help="the multi-host drill: this many worker hosts in network namespaces (2; needs root)")
        parser.add_argument("--idle-in-transaction", type=int, dest="idle_in_transaction",
                            help="DB_IDLE_IN_TRANSACTION_SECONDS of the run (default twice the lease)")
        parser.add_argument("--keep", action="store_true", help="keep the run's directory (logs) afterwards")
        parser.add_argument("--inner", action="store_true", help="internal: run the scenario in this process")
        parser.add_argument("--workdir", help="internal")
        parser.add_argument("--pg-port", type=int, dest="pg_port", help="internal")
        parser.add_argument("--redis-port", type=int, dest="redis_port", help="internal")
        parser.add_argument("--net-tag", type=int, dest="net_tag", help="internal")

    def _log(self, message: str) -> None:
        self.stderr.write(f"[chaos] {message}")
        self.stderr.flush()

    def handle(self, *args: Any, **options: Any) -> None:
        """Outer: prepare ports and a directory, run the inner scenario, clean up. Inner: the scenario."""
        if options["inner"]:
            self._inner(options)
        else:
            self._outer(options)

    def _plan(self, options: dict[str, Any]) -> Any:
        overrides = {name: options[name] for name in SIZES if options.get(name) is not None}
        if options["hosts"]:
            if options["hosts"] != 2:
                raise ValueError("the multi-host drill's faults are written for --hosts 2")
            return Plan.multi_host(options["quick"], **overrides)
        return Plan.quick(**overrides) if options["quick"] else Plan(**overrides)

    def _outer(self, options: dict[str, Any]) -> None:
        try:
            bindir = postgres_bin()
            plan = self._plan(options)
            if plan.hosts:
                reason = unavailable_reason()
                if reason:
                    raise ChaosSetupError(reason)
        except (ChaosSetupError, TypeError, ValueError) as exc:
            raise CommandError(str(exc)) from exc
        network = None
        if plan.hosts:
            try:
                network = Network.create(plan.hosts)
            except ChaosSetupError as exc:
                raise CommandError(str(exc)) from exc
            self._log(f"worker hosts: namespaces {', '.join(network.namespace(h) for h in range(1, plan.hosts + 1))}, "
                      f"links in {network.subnet}")
        try:
            self._run_outer(options, plan, bindir, network)
        finally:
            if network is not None:
                network.destroy()
                self._log("worker hosts removed")

    def _run_outer(self, options: dict[str, Any], plan: Any, bindir: Path, network: Network | None) -> None:
        workdir = Path(tempfile.mkdtemp(prefix="chaos-"))
        workdir.chmod(0o755)  # PostgreSQL may run as another user (as root: postgres)
        pg_port, redis_port = free_port(), free_port()
        env = child_environment(plan, f"postgres://postgres@127.0.0.1:{pg_port}/{DATABASE}",
                                f"redis://127.0.0.1:{redis_port}/0")
        env["PG_BIN"] = str(bindir)
        argv = [sys.executable, str(Path(settings.BASE_DIR) / "manage.py"), "chaos", "--inner",
                "--workdir", str(workdir), "--pg-port", str(pg_port), "--redis-port", str(redis_port)]
        argv += [f"--{name.replace('_', '-')}={options[name]}" for name in SIZES if options.get(name) is not None]
        argv += ["--quick"] if options["quick"] else []
        argv += [f"--hosts={plan.hosts}", f"--net-tag={network.tag}"] if network is not None else []
        self._log(f"run directory {workdir}; {plan.hosts or 'no'} worker hosts, {plan.jobs} coordinators x {plan.actions} actions, "
                  f"{plan.keys * plan.per_key} keyed jobs, {len(plan.faults)} faults")
        child = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, start_new_session=True)  # noqa: S603
        try:
            out, _ = child.communicate(timeout=plan.settle_timeout + 900)
        except (KeyboardInterrupt, subprocess.TimeoutExpired):
            os.killpg(child.pid, signal.SIGTERM)
            time.sleep(5)
            os.killpg(child.pid, signal.SIGKILL)
            raise CommandError("chaos run interrupted; everything it started was stopped") from None
        finally:
            # The child stops its processes; if it died, make sure nothing is left behind.
            if child.poll() is None:
                os.killpg(child.pid, signal.SIGKILL)
            PostgresCluster(workdir / "pg", pg_port, bindir).stop()
            if not options["keep"] and child.returncode == 0:
                shutil.rmtree(workdir, ignore_errors=True)
        if child.returncode != 0 or not out.strip():
            raise CommandError(f"the chaos run failed (exit {child.returncode}); its logs are in {workdir}")
        result = json.loads(out)
        self._print(result, options["json"])
        if not result["ok"]:
            raise CommandError(f"targets missed: {', '.join(result['targets_missed'])}")

    def _print(self, result: dict[str, Any], as_json: bool) -> None:
        if as_json:
            self.stdout.write(json.dumps(result, indent=2))
            return
        for fault in result["faults"]:
            self.stdout.write(f"+{fault['at_s']:6.1f} s  {fault['fault']:<20} {fault['detail']}")
        for what in ("actions", "commands"):
            counts = result[what]
            figures = ", ".join(f"{name.replace('_', ' ')} {value}" for name, value in counts.items() if name != "examples")
            self.stdout.write(f"{what}: {figures}")
            for example in counts["examples"]:
                self.stdout.write(f"  - {example}")
        explained = [r for r in result["reruns"] if r["explained_by"]]
        self.stdout.write(f"re-runs: {len(result['reruns'])}, explained by a fault {len(explained)}, "
                          f"unexplained {result['reruns_unexplained']}")
        for rerun in result["reruns"]:
            if rerun["explained_by"] is None:
                self.stdout.write(f"  - unexplained: {rerun['action']} attempt {rerun['attempt']} on {rerun['worker']}")
        for fault, seconds in result["recovery_s"].items():
            self.stdout.write(f"recovery after {fault}: {seconds} s from the fault until its work was relaunched")
        capacity = ", ".join(f"{w['worker']} {w['took_work']}/{w['processes']}" for w in result["worker_capacity"])
        self.stdout.write(f"workers taking work afterwards (processes): {capacity or 'not checked'}; "
                          f"dead or degraded: {', '.join(result['workers_dead_or_degraded']) or 'none'}")
        quiet = result["quiet"]
        if quiet:
            self.stdout.write(f"quiet system: {quiet['idle_per_minute']} commands a minute alone, "
                              f"{quiet['with_suspended_per_minute']} with suspended and killed jobs waiting for data")
        web = result["web"]
        self.stdout.write(
            f"web: {web['requests']} requests {web['statuses']}, server errors {web['server_errors']}, "
            f"answering 200 afterwards: {web['recovered']}"
        )
        self.stdout.write(
            f"settled {result['settled_after_last_fault_s']} s after the last fault (target "
            f"{result['settle_target_s']} s); processes that exited: {result['processes_exited_unexpectedly'] or 'none'}"
        )
        self.stdout.write("OK" if result["ok"] else f"MISSED: {', '.join(result['targets_missed'])}")

    def _inner(self, options: dict[str, Any]) -> None:
        plan = self._plan(options)
        network = Network(tag=options["net_tag"], hosts=plan.hosts) if plan.hosts else None
        result = run_chaos(
            plan, Path(options["workdir"]), options["pg_port"], options["redis_port"],
            Path(settings.BASE_DIR), self._log, network,
        )
        self.stdout.write(json.dumps(result))
