"""One chaos run (inside the child process whose DATABASE_URL is the run's own PostgreSQL).

Sets up the cluster, Redis, workers and beat; submits catch-up coordinators and keyed jobs;
injects the faults on a schedule while the work runs; waits until everything settled; counts.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import DatabaseError, connection, transaction
from django.db.models import Max
from django.utils import timezone
from rest_framework.authtoken.models import Token

from coordinators.choices import ACTION_TERMINAL, ActionStatus, JobStatus
from coordinators.models import CoordinatorAction, CoordinatorJob
from coordinators.services import control, submit_coordinator
from datasets.timeline import format_datetime
from project.launcher import free_port, port_is_free, wait_for
from tooling.chaos.analysis import Counts, analyse_actions, analyse_keyed, lost_attempts
from tooling.chaos.hosts import Network
from tooling.chaos.infra import PostgresCluster, RedisProcess, ServiceProcess, celery
from tooling.chaos.probe import create_table, probe_pids
from workflows.choices import NodeStatus
from workflows.models import WorkflowNode
from xcommands.choices import LEASED_STATUSES, TERMINAL_STATUSES, CommandStatus
from xcommands.keyed import enqueue_job
from xcommands.models import Command

Log = Callable[[str], None]
T = TypeVar("T")

DATABASE = "chaos"
QUEUES = "commands,services,actions,default"
APP = """<coordinator-app name="chaos-{n:02d}" frequency="${{coord:minutes(1)}}" start="{start}" end="{end}"
    timezone="UTC" xmlns="uri:oozie:coordinator:0.4">
  <controls><concurrency>{concurrency}</concurrency><throttle>{actions}</throttle></controls>
  <action><workflow><app-path>task:chaos.probe</app-path><configuration>
    <property><name>seconds</name><value>{seconds}</value></property>
  </configuration></workflow></action>
</coordinator-app>"""

# Quiet-phase jobs: every minute's action waits for a file nobody writes.
WAITING_APP = """<coordinator-app name="quiet-{n}" frequency="${{coord:minutes(1)}}" start="{start}" end="{end}"
    timezone="UTC" xmlns="uri:oozie:coordinator:0.4">
  <datasets><dataset name="in" frequency="${{coord:minutes(1)}}" initial-instance="2020-01-01T00:00Z" timezone="UTC">
    <uri-template>file://{data}/${{YEAR}}${{MONTH}}${{DAY}}${{HOUR}}${{MINUTE}}</uri-template></dataset></datasets>
  <input-events><data-in name="in" dataset="in"><instance>${{coord:current(0)}}</instance></data-in></input-events>
  <action><workflow><app-path>task:chaos.probe</app-path></workflow></action>
</coordinator-app>"""


@dataclass(frozen=True)
class Plan:
    """Sizes, timings and the fault schedule of a run."""

    jobs: int = 20
    actions: int = 30
    concurrency: int = 2
    action_seconds: float = 1.2
    keys: int = 40
    per_key: int = 60
    keyed_seconds: float = 0.05
    workers: int = 2
    worker_concurrency: int = 6
    lease: int = 5
    sweep: int = 1
    settle_timeout: float = 300.0
    seed: int = 7
    #: Each of the two windows of the quiet phase (commands alone, then with suspended jobs).
    quiet_seconds: float = 60.0
    #: Worker hosts in network namespaces (tooling/chaos/hosts.py); 0: every worker on this host.
    hosts: int = 0
    #: DB_IDLE_IN_TRANSACTION_SECONDS of the run (0: twice the lease, the default).
    idle_in_transaction: int = 0
    # (seconds after the work started, fault)
    faults: tuple[tuple[float, str], ...] = (
        (8, "kill-process"), (20, "kill-worker"), (35, "pause-worker"),
        (50, "flush-redis"), (62, "restart-redis"), (75, "restart-postgres"),
    )

    @classmethod
    def quick(cls, **overrides: Any) -> Plan:
        """A short run for the test suite: every fault, fewer and longer actions, faults closer together."""
        base = cls(
            jobs=4, actions=16, action_seconds=2.5, keys=6, per_key=42, keyed_seconds=0.15,
            worker_concurrency=3, settle_timeout=120.0, quiet_seconds=15.0,
            faults=((3, "kill-process"), (8, "kill-worker"), (13, "pause-worker"),
                    (21, "flush-redis"), (24, "restart-redis"), (28, "restart-postgres")),
        )
        return cls(**{**base.__dict__, **overrides})

    @classmethod
    def multi_host(cls, quick: bool, **overrides: Any) -> Plan:
        """The multi-host drill: two worker hosts cut from PostgreSQL, from Redis and from both, past the lease.

        Cut faults read `cut-<what>:<host>:<below|above>`: `below` lasts lease + 3 s, shorter
        than the idle-in-transaction timeout (a cut host's open transactions survive it and
        fencing must refuse what they commit afterwards); `above` outlasts that timeout by 4 s
        (PostgreSQL ends them and releases their locks first).
        """
        faults: tuple[tuple[float, str], ...]
        if quick:
            faults = ((3, "cut-host:1:below"), (15, "cut-redis:2:below"), (27, "cut-postgres:1:above"),
                      (45, "cut-host:2:above"))
            base = cls.quick(hosts=2, workers=2, actions=24, faults=faults)
        else:
            faults = ((8, "cut-host:1:below"), (26, "cut-redis:2:below"), (44, "cut-postgres:1:above"),
                      (66, "cut-host:2:above"), (92, "cut-postgres:2:below"), (112, "cut-redis:1:above"))
            base = cls(hosts=2, workers=2, actions=40, faults=faults)
        plan = cls(**{**base.__dict__, **overrides})
        if plan.workers != plan.hosts:
            raise ValueError(f"the multi-host drill runs one worker per host: --workers {plan.workers} "
                             f"with {plan.hosts} hosts")
        if plan.cut_seconds("below") <= plan.lease:
            raise ValueError(f"--idle-in-transaction {plan.idle_seconds} leaves no cut past the "
                             f"{plan.lease} s lease that is shorter than it")
        return plan

    @property
    def idle_seconds(self) -> int:
        """PostgreSQL's idle-in-transaction timeout of the run."""
        return self.idle_in_transaction or 2 * self.lease

    def cut_seconds(self, length: str) -> int:
        """How long a `below` or `above` cut lasts (both past the lease)."""
        if length == "below":
            return min(self.lease + 3, self.idle_seconds - 1)
        if length == "above":
            return self.idle_seconds + 4
        raise ValueError(f"a cut is `below` or `above` the idle-in-transaction timeout, not {length!r}")

    @property
    def keyed_waves(self) -> tuple[float, ...]:
        """When keyed jobs are enqueued: at the start and 2 s before each fault, so every fault meets some."""
        return (0.0, *(max(0.0, at - 2) for at, _ in self.faults))

    @property
    def settle_target(self) -> float:
        """The promise: settled within lease + sweep + 30 s of the last fault."""
        return self.lease + self.sweep + 30.0


def child_environment(plan: Plan, database_url: str, redis_url: str) -> dict[str, str]:
    """The settings every process of the run shares: fast services, short leases, the probe task."""
    env = dict(os.environ)
    env.update({
        "DJANGO_SETTINGS_MODULE": "project.settings",
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "PYTHONUNBUFFERED": "1",
        "EXTRA_TASK_MODULES": "examples.tasks,tooling.chaos.probe",
        "ALLOWED_TASKS": "actions.*,examples.*,chaos.*",
        "COMMAND_LEASE_SECONDS": str(plan.lease),
        "DB_IDLE_IN_TRANSACTION_SECONDS": str(plan.idle_seconds),
        "WORKFLOW_LEASE_SECONDS": str(plan.lease),
        "COMMAND_SWEEP_SECONDS": str(plan.sweep),
        "COMMAND_RING_STALE_SECONDS": str(max(2, plan.lease)),
        "STATUS_SERVICE_SECONDS": "1",
        "COORD_INPUT_TICK_SECONDS": "1",
        "COORD_RECOVERY_SECONDS": str(plan.lease * 2),
        "WORKFLOW_RESEND_SECONDS": str(plan.lease * 2),
        "WORKFLOW_RESEND_MAX_SECONDS": str(plan.lease * 4),
        "WORKFLOW_MAX_LAUNCHES": "10",
        "SLA_EMAIL_ENABLED": "false",
        "LOG_LEVEL": "WARNING",
    })
    return env


def _retry_db(step: Callable[[], T], log: Log, what: str, seconds: float = 60) -> T:
    """Run a database step, retrying while PostgreSQL restarts."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return step()
        except DatabaseError as exc:
            if time.monotonic() > deadline:
                raise
            log(f"{what}: database unavailable ({str(exc).strip().splitlines()[0]}); retrying")
            with contextlib.suppress(DatabaseError):
                connection.close()
            time.sleep(0.5)


class WebProbe:
    """Asks the web server twice a second, from a thread, for a page that reads the database and for /healthz."""

    def __init__(self, base: str, token: str) -> None:
        self.base, self.token = base, token
        self.answers: list[tuple[float, str, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="chaos-web-probe", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def ask(self, path: str) -> int:
        """The status of one GET (0 when nothing answered)."""
        request = urllib.request.Request(self.base + path, headers={"Authorization": f"Token {self.token}"})  # noqa: S310
        try:
            with urllib.request.urlopen(request, timeout=5) as response:  # noqa: S310 - loopback
                return int(response.status)
        except urllib.error.HTTPError as exc:
            return int(exc.code)
        except (urllib.error.URLError, OSError):
            return 0

    def _loop(self) -> None:
        while not self._stop.wait(0.5):
            for path in ("/api/v1/coordinator-jobs/?limit=1", "/healthz"):
                self.answers.append((time.monotonic(), path, self.ask(path)))

    def summary(self) -> dict[str, Any]:
        """How the web server answered through the faults, and whether it answers 200 now."""
        statuses: dict[str, int] = {}
        for _, _, status in self.answers:
            statuses[str(status)] = statuses.get(str(status), 0) + 1
        errors = sum(count for status, count in statuses.items() if status.startswith("5") and status != "503")
        now = {path: self.ask(path) for path in ("/api/v1/coordinator-jobs/?limit=1", "/healthz")}
        return {
            "requests": len(self.answers),
            "statuses": dict(sorted(statuses.items())),
            "server_errors": errors,  # 5xx other than 503 (database or broker unavailable)
            "answers_after_settle": now,
            "recovered": all(status == 200 for status in now.values()),
        }


@dataclass
class Run:
    """The live run: its processes, what it submitted, and the faults it injected."""

    plan: Plan
    workdir: Path
    pg: PostgresCluster
    redis: RedisProcess
    log: Log
    workers: list[ServiceProcess] = field(default_factory=list)
    beat: ServiceProcess | None = None
    web: ServiceProcess | None = None
    web_port: int = 0
    job_ids: list[str] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)
    faults: list[dict[str, Any]] = field(default_factory=list)
    started: float = 0.0
    killed_by_us: set[str] = field(default_factory=set)
    token: str = ""
    network: Network | None = None

    # --- processes -------------------------------------------------------------------------

    def _worker_argv(self, name: str) -> list[str]:
        return celery("worker", "--loglevel", "WARNING", "--pool", "prefork", "--concurrency",
                      str(self.plan.worker_concurrency), "--queues", QUEUES, "--hostname", f"{name}@%h",
                      "--without-gossip", "--without-mingle")

    def _host_environment(self, env: dict[str, str], network: Network, host: int) -> dict[str, str]:
        """A worker host's settings: PostgreSQL and Redis reached through its own links."""
        return {
            **env,
            "DATABASE_URL": f"postgres://postgres@{network.server_address(host, 'postgres')}:{self.pg.port}/{DATABASE}",
            "REDIS_URL": f"redis://{network.server_address(host, 'redis')}:{self.redis.port}/0",
        }

    def start_processes(self, env: dict[str, str], cwd: Path) -> None:
        """Workers (all queues; one per worker host in the multi-host drill) and beat; wait until ready."""
        for index in range(1, self.plan.workers + 1):
            if self.network is not None:
                name = f"chaos-h{index}"
                argv, worker_env = self.network.wrap(index, self._worker_argv(name)), self._host_environment(env, self.network, index)
            else:
                name = f"chaos-w{index}"
                argv, worker_env = self._worker_argv(name), env
            self.workers.append(ServiceProcess(name=name, argv=argv, logfile=self.workdir / f"{name}.log",
                                               env=worker_env, cwd=cwd))
        self.beat = ServiceProcess(
            name="beat", argv=celery("beat", "--loglevel", "INFO", "--schedule", str(self.workdir / "beat-schedule"),
                                     "--pidfile", ""),
            logfile=self.workdir / "beat.log", env=env, cwd=cwd,
        )
        self.web = ServiceProcess(
            name="web",
            argv=[sys.executable, "-m", "gunicorn", "project.wsgi:application", "--bind", f"127.0.0.1:{self.web_port}",
                  "--workers", "2", "--threads", "2", "--graceful-timeout", "5", "--no-control-socket"],
            logfile=self.workdir / "web.log", env=env, cwd=cwd,
        )
        for process in [*self.workers, self.beat, self.web]:
            process.start()
        self._wait_ready([*self.workers, self.beat])
        wait_for(lambda: not port_is_free(self.web_port), 60, "the web server")

    def _wait_ready(self, processes: list[ServiceProcess], timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        # Workers log ' ready.' at WARNING level only through celery's own banner: poll for the
        # pool's children instead, and for beat's process to stay up.
        while time.monotonic() < deadline:
            if all(p.alive and (p is self.beat or len(p.pool_pids()) >= self.plan.worker_concurrency) for p in processes):
                time.sleep(1.0)  # consumers attach right after the pool forks
                return
            dead = [p.name for p in processes if not p.alive]
            if dead:
                raise RuntimeError(f"{', '.join(dead)} exited at start; see the logs in {self.workdir}")
            time.sleep(0.2)
        raise RuntimeError(f"workers not ready within {timeout:.0f} s; see the logs in {self.workdir}")

    def stop_processes(self) -> None:
        """Stop workers and beat (warm, then SIGKILL), then Redis and PostgreSQL."""
        for process in [*self.workers, *(p for p in (self.beat, self.web) if p is not None)]:
            process.stop()
        self.redis.stop()
        self.pg.stop()

    # --- workload --------------------------------------------------------------------------

    def submit_coordinators(self) -> None:
        """Catch-up coordinators: every action due at once, concurrency 2, each running the probe."""
        owner, _ = get_user_model().objects.get_or_create(username="chaos")
        self.token = Token.objects.get_or_create(user=owner)[0].key
        end = timezone.now().replace(second=0, microsecond=0)
        start = end - timedelta(minutes=self.plan.actions)
        for n in range(self.plan.jobs):
            xml = APP.format(n=n, start=format_datetime(start), end=format_datetime(end), actions=self.plan.actions,
                             concurrency=self.plan.concurrency, seconds=self.plan.action_seconds)
            self.job_ids.append(submit_coordinator(xml, {}, owner=owner).id)
        self.log(f"submitted {self.plan.jobs} coordinators x {self.plan.actions} actions")

    def enqueue_keyed_wave(self, wave: int) -> None:
        """One wave of keyed jobs: the next slice of numbers of every key, in order."""
        waves = len(self.plan.keyed_waves)
        self.keys = self.keys or [f"chaos-key-{k:02d}" for k in range(self.plan.keys)]
        numbers = [n for n in range(self.plan.per_key) if n * waves // self.plan.per_key == wave]

        def enqueue() -> None:
            with transaction.atomic():
                for key in self.keys:
                    for n in numbers:
                        enqueue_job(key, "chaos.probe", kwargs={
                            "configuration": {"key": key, "n": n, "seconds": self.plan.keyed_seconds},
                        }, max_retries=20, transactional=True)

        _retry_db(enqueue, self.log, f"keyed wave {wave}")
        self.log(f"enqueued keyed wave {wave + 1}/{waves}: {len(self.keys) * len(numbers)} jobs")

    # --- faults ----------------------------------------------------------------------------

    def inject(self, fault: str, rng: random.Random) -> tuple[str, str]:
        """Inject one fault; the name of the worker it hit ("*": every one) and a sentence saying what was done."""
        if fault.startswith("cut-"):
            return self._cut(fault)
        victim = self._busiest_worker()
        return (victim.name if fault in ("kill-process", "kill-worker", "pause-worker") else "*",
                self._hit(fault, victim, rng))

    def _cut(self, fault: str) -> tuple[str, str]:
        """`cut-<what>:<host>:<below|above>`: cut the host's links, wait, heal them."""
        if self.network is None:
            raise ValueError(f"{fault}: cuts need worker hosts (--hosts)")
        kind, host_text, length = fault.partition("-")[2].split(":")
        host, seconds = int(host_text), self.plan.cut_seconds(length)
        victim = self.workers[host - 1]
        self.network.cut(host, kind)
        try:
            time.sleep(seconds)
        finally:
            self.network.heal(host, kind)
        what = {"host": "PostgreSQL and Redis", "postgres": "PostgreSQL", "redis": "Redis"}[kind]
        relation = "shorter" if length == "below" else "longer"
        return victim.name, (f"{victim.name} cut from {what} for {seconds} s (lease {self.plan.lease} s; "
                             f"{relation} than the {self.plan.idle_seconds} s idle-in-transaction timeout)")

    def _hit(self, fault: str, victim: ServiceProcess, rng: random.Random) -> str:
        """A single-host fault (processes, Redis, PostgreSQL); a sentence saying what was done."""
        if fault == "kill-process":
            pid = self._busy_pool_pid(victim) or rng.choice(victim.pool_pids() or [0])
            if pid:
                os.kill(pid, signal.SIGKILL)
            return f"SIGKILL of pool process {pid} of {victim.name}"
        if fault == "kill-worker":
            doomed = victim
            doomed.kill()
            self.killed_by_us.add(doomed.name)
            time.sleep(3)
            doomed.start()  # what systemd's Restart=always does
            return f"SIGKILL of the whole {doomed.name} (main process and pool), restarted 3 s later"
        if fault == "pause-worker":
            pause = self.plan.lease + 3
            victim.signal_group(signal.SIGSTOP)
            time.sleep(pause)
            victim.signal_group(signal.SIGCONT)
            return f"SIGSTOP of {victim.name} for {pause} s (past its {self.plan.lease} s leases), then SIGCONT"
        if fault == "flush-redis":
            self.redis.flush()
            return "FLUSHALL of Redis"
        if fault == "restart-redis":
            self.redis.kill()
            time.sleep(1)
            self.redis.start()
            return "SIGKILL of redis-server, started again empty after 1 s"
        if fault == "restart-postgres":
            self.pg.crash_restart()
            with contextlib.suppress(DatabaseError):
                connection.close()
            return "PostgreSQL stopped immediately (a crash) and started again"
        raise ValueError(f"unknown fault {fault!r}")

    def _busiest_worker(self) -> ServiceProcess:
        """The worker running the most actions right now (so a fault meets live work)."""
        running = _retry_db(lambda: list(WorkflowNode.objects.filter(status=NodeStatus.RUNNING)
                                         .values_list("worker", flat=True)), self.log, "looking for the busiest worker")
        pids = {int(holder.rpartition(":")[2]) for holder in running if holder.rpartition(":")[2].isdigit()}
        # Count live pool processes only: a killed worker's nodes stay RUNNING until their lease lapses.
        return max(self.workers, key=lambda w: len(pids & set(w.pool_pids())))

    def _busy_pool_pid(self, worker: ServiceProcess) -> int | None:
        """The pid of a pool process of `worker` running an action right now, if any (waits up to 5 s)."""
        pool = set(worker.pool_pids())
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            running = _retry_db(lambda: list(WorkflowNode.objects.filter(
                status=NodeStatus.RUNNING, worker__startswith=f"{worker.name}@").values_list("worker", flat=True)),
                self.log, "looking for a busy pool process")
            pids = [int(w.rpartition(":")[2]) for w in running if w.rpartition(":")[2].isdigit()]
            busy = [pid for pid in pids if pid in pool]
            if busy:
                return busy[0]
            time.sleep(0.2)
        return None

    def in_flight(self) -> dict[str, int]:
        """What the next fault can hit: nodes running and queued, commands leased and waiting."""
        def count() -> dict[str, int]:
            return {
                "nodes_running": WorkflowNode.objects.filter(status=NodeStatus.RUNNING).count(),
                "nodes_queued": WorkflowNode.objects.filter(status=NodeStatus.PREP).count(),
                "commands_running": Command.objects.filter(status__in=sorted(LEASED_STATUSES)).count(),
                "commands_waiting": Command.objects.filter(status=CommandStatus.PENDING).count(),
            }

        return _retry_db(count, self.log, "counting work in flight")

    # --- a quiet system ----------------------------------------------------------------------

    def quiet(self, seconds: float) -> dict[str, Any]:
        """Commands created per window of a settled system: alone, then with suspended and killed jobs waiting.

        Idle means idle (ADR 0008): jobs that are suspended or killed while their actions wait
        for data that never comes add no command to what the system does with no job at all.
        """
        idle = self._commands_during(seconds)
        owner = get_user_model().objects.get(username="chaos")
        start = timezone.now().replace(second=0, microsecond=0) - timedelta(minutes=5)
        jobs = [submit_coordinator(WAITING_APP.format(n=n, start=format_datetime(start),
                                                      end=format_datetime(start + timedelta(hours=1)),
                                                      data=self.workdir / "never"), {}, owner=owner).id
                for n in range(3)]
        wait_for(lambda: CoordinatorAction.objects.filter(job_id__in=jobs, status=ActionStatus.WAITING)
                 .values("job_id").distinct().count() == len(jobs), 60, "the quiet jobs' actions to wait for their data")
        for job_id, verb in zip(jobs, ("suspend", "suspend", "kill"), strict=True):
            control(job_id, verb, actor=owner)
        wait_for(lambda: set(CoordinatorJob.objects.filter(pk__in=jobs).values_list("status", flat=True))
                 <= {JobStatus.SUSPENDED, JobStatus.KILLED}, 60, "the quiet jobs to be suspended and killed")
        time.sleep(2)  # the verbs' own commands finish
        with_jobs = self._commands_during(seconds)
        per_minute = 60 / seconds
        self.log(f"quiet: {idle} commands in {seconds:.0f} s alone, {with_jobs} with 2 suspended and 1 killed job waiting")
        return {
            "window_s": seconds,
            "idle_commands": idle,
            "with_suspended_commands": with_jobs,
            "idle_per_minute": round(idle * per_minute, 1),
            "with_suspended_per_minute": round(with_jobs * per_minute, 1),
        }

    def _commands_during(self, seconds: float) -> int:
        """How many commands were created in the next `seconds` (by id, so purged ones count too)."""
        first = Command.objects.aggregate(last=Max("id"))["last"] or 0
        time.sleep(seconds)
        return int(Command.objects.aggregate(last=Max("id"))["last"] or 0) - first

    # --- settling --------------------------------------------------------------------------

    def capacity(self, timeout: float = 90) -> list[dict[str, Any]]:
        """Whether each worker still takes work with every pool process, once the run settled.

        Three 1-second keyed jobs per pool process, on keys of their own, are enqueued at once;
        a pool process that is alive and free takes one. A worker that answers but whose slots
        leaked (or that stopped consuming) leaves processes without work: it is degraded.
        """
        keys = [f"capacity-{i:03d}" for i in range(3 * self.plan.workers * self.plan.worker_concurrency)]

        def enqueue() -> None:
            with transaction.atomic():
                for key in keys:
                    enqueue_job(key, "chaos.probe", kwargs={"configuration": {"key": key, "n": 0, "seconds": 1.0}},
                                transactional=True)

        _retry_db(enqueue, self.log, "capacity check")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not Command.objects.filter(key__in=keys).exclude(status__in=sorted(TERMINAL_STATUSES)).exists():
                break
            time.sleep(0.5)
        ran = set(probe_pids("capacity-"))
        found = []
        for worker in self.workers:
            pool = set(worker.pool_pids())
            found.append({"worker": worker.name, "alive": worker.alive, "processes": self.plan.worker_concurrency,
                          "took_work": len(pool & ran)})
        self.log("capacity: " + ", ".join(f"{w['worker']} {w['took_work']}/{w['processes']} processes took work"
                                          for w in found))
        return found

    def unsettled(self) -> tuple[int, int]:
        """(actions not finished, keyed commands not finished)."""
        def count() -> tuple[int, int]:
            expected = self.plan.jobs * self.plan.actions
            finished = CoordinatorAction.objects.filter(job_id__in=self.job_ids, status__in=sorted(ACTION_TERMINAL)).count()
            pending = Command.objects.filter(key__in=self.keys).exclude(status__in=sorted(TERMINAL_STATUSES)).count()
            return expected - finished, pending

        return _retry_db(count, self.log, "progress")


@contextlib.contextmanager
def infrastructure(
    workdir: Path, pg_port: int, redis_port: int, log: Log, network: Network | None = None,
) -> Iterator[tuple[PostgresCluster, RedisProcess]]:
    """A fresh PostgreSQL cluster with the run's database, and a Redis; stopped on the way out.

    With worker hosts, both also answer on the root ends of the hosts' links."""
    pg = PostgresCluster(workdir / "pg", pg_port,
                         listen=tuple(network.server_addresses("postgres")) if network else (),
                         network=network.subnet if network else "")
    redis = RedisProcess(workdir / "redis", redis_port,
                         listen=tuple(network.server_addresses("redis")) if network else ())
    try:
        pg.init()
        pg.start()
        pg.create_database(DATABASE)
        log(f"PostgreSQL on 127.0.0.1:{pg_port} ({pg.bindir})")
        redis.start()
        log(f"Redis on {redis.url}")
        yield pg, redis
    finally:
        redis.stop()
        pg.stop()


def run_chaos(
    plan: Plan, workdir: Path, pg_port: int, redis_port: int, cwd: Path, log: Log, network: Network | None = None,
) -> dict[str, Any]:
    """Run the whole scenario; the report (counts, faults, re-runs, workers, settle time)."""
    rng = random.Random(plan.seed)  # noqa: S311 - picks fault victims, not secrets
    began = time.monotonic()
    with infrastructure(workdir, pg_port, redis_port, log, network) as (pg, redis):
        env = dict(os.environ)  # the outer command set it up (child_environment)
        call_command("migrate", interactive=False, verbosity=0)
        create_table()
        run = Run(plan=plan, workdir=workdir, pg=pg, redis=redis, log=log, web_port=free_port(), network=network)
        probe: WebProbe | None = None
        try:
            run.start_processes(env, cwd)
            log(f"{plan.workers} workers (concurrency {plan.worker_concurrency}), beat and the web server are up")
            run.submit_coordinators()
            probe = WebProbe(f"http://127.0.0.1:{run.web_port}", run.token)
            probe.start()
            run.started = time.monotonic()
            schedule = sorted([(at, "wave", i) for i, at in enumerate(plan.keyed_waves)]
                              + [(at, fault, 0) for at, fault in plan.faults])
            last_fault_end = run.started
            for at, what, index in schedule:
                time.sleep(max(0.0, run.started + at - time.monotonic()))
                if what == "wave":
                    run.enqueue_keyed_wave(index)
                    continue
                begun = time.monotonic() - run.started
                in_flight = run.in_flight()
                window_from = time.time()
                victim, detail = run.inject(what, rng)
                last_fault_end = time.monotonic()
                run.faults.append({"at_s": round(begun, 1), "fault": what, "victim": victim, "detail": detail,
                                   "in_flight": in_flight, "from": window_from, "until": time.time()})
                log(f"+{begun:5.1f} s  {what}: {detail} (in flight: {in_flight})")
            settled_at = None
            deadline = last_fault_end + plan.settle_timeout
            while time.monotonic() < deadline:
                actions_left, commands_left = run.unsettled()
                if actions_left == 0 and commands_left == 0:
                    settled_at = time.monotonic()
                    break
                time.sleep(0.5)
            log("settled" if settled_at else f"not settled after {plan.settle_timeout:.0f} s")
            actions = _retry_db(lambda: analyse_actions(run.job_ids, plan.actions), log, "analysis")
            commands = _retry_db(lambda: analyse_keyed(run.keys, plan.per_key), log, "analysis")
            reruns = explain(_retry_db(lambda: lost_attempts(run.job_ids), log, "analysis"), run.faults)
            workers = run.capacity() if settled_at else []
            quiet = _retry_db(lambda: run.quiet(plan.quiet_seconds), log, "quiet phase") if settled_at else {}
            probe.stop()
            web = probe.summary()
            unexpected_exits = [p.name for p in [*run.workers, *(p for p in (run.beat, run.web) if p)] if not p.alive]
        finally:
            if probe is not None:
                probe.stop()
            run.stop_processes()
    return report(plan, run, Findings(actions, commands, reruns, workers, quiet, web), settled_at, last_fault_end,
                  unexpected_exits, time.monotonic() - began)


@dataclass
class Findings:
    """What the analysis of a run found."""

    actions: Counts
    commands: Counts
    reruns: list[dict[str, Any]]
    workers: list[dict[str, Any]]
    quiet: dict[str, Any]
    web: dict[str, Any]


def explain(reruns: list[dict[str, Any]], faults: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each re-run with the fault that explains it: one that hit its worker while the lost attempt ran.

    A fault explains a re-run when it hit the lost attempt's worker ("*": every worker) between
    the attempt's start and the moment it was declared lost. `recovery_s`: from the start of that
    fault (the kill, the pause, the cut) to the moment the attempt was given up and the next one
    launched: about a second for a dead pool process, the lease and a sweep for a lost worker.
    `ran_again_s`: to the start of the next attempt's task (later when every slot is busy).
    """
    out = []
    for rerun in reruns:
        worker = str(rerun["worker"]).partition("@")[0]
        cause = next((fault for fault in faults
                      if fault["victim"] in ("*", worker)
                      and fault["from"] <= rerun["lost_at"] and fault["until"] >= rerun["started"] - 1), None)
        relaunched = rerun["relaunched"]
        out.append({
            **{name: rerun[name] for name in ("action", "node", "attempt", "worker")},
            "explained_by": f"{cause['fault']} at +{cause['at_s']} s" if cause else None,
            "recovery_s": round(rerun["lost_at"] - cause["from"], 1) if cause else None,
            "ran_again_s": round(relaunched - cause["from"], 1) if cause and relaunched else None,
        })
    return out


def recovery_times(faults: list[dict[str, Any]], reruns: list[dict[str, Any]]) -> dict[str, float]:
    """For each fault that caused re-runs, the longest time from its start to a relaunch."""
    times: dict[str, float] = {}
    for fault in faults:
        label = f"{fault['fault']} at +{fault['at_s']} s"
        found = [r["recovery_s"] for r in reruns if r["explained_by"] == label and r["recovery_s"] is not None]
        if found:
            times[label] = max(found)
    return times


def report(
    plan: Plan, run: Run, found: Findings, settled_at: float | None, last_fault_end: float,
    unexpected_exits: list[str], duration: float,
) -> dict[str, Any]:
    """The figures the run prints, and whether every target was met."""
    actions, commands, web = found.actions, found.commands, found.web
    settle = None if settled_at is None else round(settled_at - last_fault_end, 1)
    unexplained = [rerun for rerun in found.reruns if rerun["explained_by"] is None]
    degraded = [w["worker"] for w in found.workers if not w["alive"] or w["took_work"] < w["processes"]]
    bad = [
        ("lost", actions.lost + commands.lost),
        ("stuck", actions.stuck + commands.stuck),
        ("wrongly_failed", actions.wrongly_failed + commands.wrongly_failed),
        ("overlapping_beyond_concurrency", actions.overlapping_beyond_concurrency + commands.overlapping_beyond_concurrency),
        ("out_of_order", actions.out_of_order + commands.out_of_order),
        ("run_twice_unexplained", actions.run_twice_unexplained + commands.run_twice_unexplained),
        ("processes_exited", len(unexpected_exits)),
        ("web_server_errors", web["server_errors"]),
        ("web_not_recovered", 0 if web["recovered"] else 1),
        ("reruns_unexplained", len(unexplained)),
        ("workers_dead_or_degraded", len(degraded) if settled_at else 0),
        # Two windows of the same length: periodic work may fall once more into one of them.
        ("quiet_not_idle", max(0, found.quiet.get("with_suspended_commands", 0) - found.quiet.get("idle_commands", 0) - 2)),
    ]
    missed = [name for name, value in bad if value]
    if settle is None or settle > plan.settle_target:
        missed.append("settle_time")
    return {
        "database": "postgresql",
        "hosts": plan.hosts,
        "idle_in_transaction_s": plan.idle_seconds,
        "workers": plan.workers,
        "worker_concurrency": plan.worker_concurrency,
        "lease_s": plan.lease,
        "sweep_s": plan.sweep,
        "faults": [{k: v for k, v in fault.items() if k not in ("from", "until")} for fault in run.faults],
        "reruns": found.reruns,
        "reruns_unexplained": len(unexplained),
        "recovery_s": recovery_times(run.faults, found.reruns),
        "worker_capacity": found.workers,
        "workers_dead_or_degraded": degraded,
        "quiet": found.quiet,
        "actions": actions.as_dict(),
        "commands": commands.as_dict(),
        "web": web,
        "processes_exited_unexpectedly": unexpected_exits,
        "settled_after_last_fault_s": settle,
        "settle_target_s": plan.settle_target,
        "duration_s": round(duration, 1),
        "targets_missed": missed,
        "ok": not missed,
    }
