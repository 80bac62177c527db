"""Oozie's admin resources beyond status: instrumentation, metrics, prometheus, configuration, queue-dump, servers.

`instrumentation` (Oozie's InstrumentationService JSON), `metrics` (its Codahale metrics JSON)
and `prometheus` are three renderings of `monitoring.compute_figures()`, the figures
/metrics shows. Any authenticated caller may read those and `available-oozie-servers`;
`configuration` (an allow-list of non-secret settings, URLs without credentials) and
`queue-dump` (the command queue per key) only job admins (ADR 0014). As in Oozie's
V1AdminServlet, `metrics`, `prometheus` and `available-oozie-servers` are v2 only.
"""

from __future__ import annotations

import re
import socket
import statistics
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from importlib.metadata import PackageNotFoundError, version
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db.models import Count, Min, Q
from django.http import HttpRequest, HttpResponse

from kernel.lookups import in_constants
from kernel.permissions import is_admin
from monitoring import Figures, compute_figures, prometheus_text
from oozieapi.errors import OozieError
from oozieapi.filters import MAX_LEN, int_parameter
from oozieapi.formats import json_response, rfc822
from xcommands.choices import ACTIVE_STATUSES, LEASED_STATUSES, CommandStatus
from xcommands.models import Command

PUBLIC_RESOURCES = frozenset({"instrumentation", "metrics", "prometheus", "available-oozie-servers"})
ADMIN_RESOURCES = frozenset({"configuration", "queue-dump"})
RESOURCES = PUBLIC_RESOURCES | ADMIN_RESOURCES
V2_ONLY = frozenset({"metrics", "prometheus", "available-oozie-servers"})
QUEUE_DUMP_DEFAULT = 100


def answer(request: HttpRequest, caller: Any, api_version: str, resource: str) -> HttpResponse:
    """The admin resource `resource` for `caller`: 401 E0500 anonymous, 403 E0500 non-admins on admin-only ones."""
    if caller is None:
        raise OozieError(401, "E0500", "authentication required: HTTP basic or 'Authorization: Token <key>'")
    if resource in V2_ONLY and api_version == "v1":
        raise OozieError(400, "E0302", "Not supported in v1")
    if resource in ADMIN_RESOURCES and not is_admin(caller):
        raise OozieError(403, "E0500", f"user {caller.get_username()!r} is not a job admin ({resource} is for job admins)")
    if resource == "instrumentation":
        return json_response(instrumentation_json(instrumentation(compute_figures())))
    if resource == "metrics":
        figures = compute_figures()
        return json_response(metrics_json(instrumentation(figures), figures))
    if resource == "prometheus":
        body, content_type = prometheus_text(compute_figures(), request.META.get("HTTP_ACCEPT", ""))
        return HttpResponse(body, content_type=content_type)
    if resource == "configuration":
        return json_response(configuration())
    if resource == "queue-dump":
        return json_response(queue_dump(int_parameter(request.GET, "len", QUEUE_DUMP_DEFAULT, minimum=1, maximum=MAX_LEN)))
    base = request.path[: request.path.rindex(f"/{api_version}/admin/")]
    return json_response({socket.gethostname(): request.build_absolute_uri(base)})


# --- The figures as Oozie's instrumentation -----------------------------------------------


@dataclass(frozen=True)
class Timing:
    """A timer's events: durations (seconds) and when each ended."""

    durations: tuple[float, ...]
    ends: tuple[datetime, ...]


@dataclass(frozen=True)
class Instrumentation:
    """Oozie's four kinds of instruments, each as group -> name -> value."""

    computed_at: datetime
    window_seconds: int
    counters: dict[str, dict[str, int]] = field(default_factory=dict)
    variables: dict[str, dict[str, Any]] = field(default_factory=dict)
    samplers: dict[str, dict[str, float]] = field(default_factory=dict)
    timers: dict[str, dict[str, Timing]] = field(default_factory=dict)


def _build_version() -> str:
    try:
        return version("oozie-py")
    except PackageNotFoundError:
        return "unknown"


def instrumentation(figures: Figures) -> Instrumentation:
    """The figures in Oozie's groups: job statuses as variables (Oozie's `jobstatus` is workflow jobs),
    queue sizes as `callablequeue` samplers, wait (`time.in.queue`) and run (`call`) times as timers,
    and the commands finished in the window as counters."""
    inst = Instrumentation(computed_at=figures.computed_at, window_seconds=figures.window_seconds)
    inst.variables["oozie"] = {"mode": "NORMAL", "version": _build_version()}
    groups = {
        "jobstatus": "workflow_jobs", "coord.jobs": "coordinator_jobs", "coord.actions": "coordinator_actions",
        "bundle.jobs": "bundle_jobs", "batches": "batches", "batch.jobs": "batch_jobs",
    }
    for group, entity in groups.items():
        inst.variables[group] = dict(figures.statuses[entity])
    inst.variables["coord.actions.due"] = {
        **figures.due_actions, "oldest.age.seconds": round(figures.age(figures.oldest_due_at)),
    }
    commands: dict[str, Any] = {}
    for name, load in figures.commands.items():
        commands[f"{name}.queued"] = load.queued
        commands[f"{name}.running"] = load.running
        commands[f"{name}.parked"] = load.parked
        commands[f"{name}.oldest.queued.age.seconds"] = round(figures.age(load.oldest_queued_at))
    inst.variables["commands"] = commands
    inst.variables["workers"] = {worker: int(moment.timestamp()) for worker, moment in figures.workers.items()}
    inst.samplers["callablequeue"] = {
        "queue.size": float(sum(load.queued for load in figures.commands.values())),
        "threads.active": float(sum(load.running for load in figures.commands.values())),
        "parked": float(sum(load.parked for load in figures.commands.values())),
    }
    finished: dict[str, int] = {}
    timers: dict[str, Timing] = {}
    everything = figures.finished
    queue_timers: dict[str, Timing] = {
        "time.in.queue": Timing(tuple(c.wait_seconds for c in everything), tuple(c.finished_at for c in everything)),
    }
    for name, done in sorted(figures.finished_by_class().items()):
        ends = tuple(c.finished_at for c in done)
        timers[f"{name}.time.in.queue"] = Timing(tuple(c.wait_seconds for c in done), ends)
        timers[f"{name}.call"] = Timing(tuple(c.run_seconds for c in done), ends)
        for command in done:
            finished[f"{name}.{command.status}"] = finished.get(f"{name}.{command.status}", 0) + 1
    inst.counters["callablequeue"] = {
        "executed": len(everything),
        "failed": sum(1 for c in everything if c.status == "FAILED"),
    }
    inst.counters["commands"] = dict(sorted(finished.items()))
    if everything:
        inst.timers["callablequeue"] = queue_timers
    if timers:
        inst.timers["commands"] = timers
    return inst


def _groups(instruments: Mapping[str, Mapping[str, Any]], render: Callable[[Any], dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"group": group, "data": [{"name": name, **render(value)} for name, value in data.items()]}
        for group, data in instruments.items()
    ]


def _ms(seconds: float) -> int:
    return round(seconds * 1000)


def _oozie_timer(timing: Timing) -> dict[str, Any]:
    """Oozie's Instrumentation.Timer: milliseconds as whole numbers (clients read them as longs)."""
    values = [seconds * 1000 for seconds in timing.durations]
    average, deviation = round(statistics.fmean(values)), statistics.pstdev(values)
    low, high = round(min(values)), round(max(values))
    return {
        "ticks": len(values),
        "ownTimeAvg": average, "totalTimeAvg": average,
        "ownTimeStdDev": deviation, "totalTimeStdDev": deviation,
        "ownMinTime": low, "ownMaxTime": high, "totalMinTime": low, "totalMaxTime": high,
    }


def instrumentation_json(inst: Instrumentation) -> dict[str, Any]:
    """Oozie's GET admin/instrumentation body (BaseAdminServlet.instrToJson)."""
    return {
        "variables": _groups(inst.variables, lambda value: {"value": value}),
        "samplers": _groups(inst.samplers, lambda value: {"value": value}),
        "counters": _groups(inst.counters, lambda value: {"value": value}),
        "timers": _groups(inst.timers, _oozie_timer),
    }


def _quantile(ordered: list[float], q: float) -> float:
    """Linear interpolation between closest ranks."""
    if len(ordered) == 1:
        return ordered[0]
    position = q * (len(ordered) - 1)
    lower = int(position)
    upper = min(lower + 1, len(ordered) - 1)
    return ordered[lower] + (ordered[upper] - ordered[lower]) * (position - lower)


def _snapshot(values: Iterable[float]) -> dict[str, Any]:
    """A Codahale histogram snapshot (count, min, max, mean, stddev, p50 ... p999)."""
    ordered = sorted(values)
    return {
        "count": len(ordered),
        "min": ordered[0], "max": ordered[-1],
        "mean": statistics.fmean(ordered), "stddev": statistics.pstdev(ordered),
        "p50": _quantile(ordered, 0.5), "p75": _quantile(ordered, 0.75), "p95": _quantile(ordered, 0.95),
        "p98": _quantile(ordered, 0.98), "p99": _quantile(ordered, 0.99), "p999": _quantile(ordered, 0.999),
    }


def _rate(timing: Timing, now: datetime, horizon: int, window: int) -> float:
    """Events per second over the last `horizon` seconds (no further back than the window)."""
    span = min(horizon, window)
    since = now - timedelta(seconds=span)
    return sum(1 for end in timing.ends if end >= since) / span


def metrics_json(inst: Instrumentation, figures: Figures) -> dict[str, Any]:
    """Oozie's GET admin/metrics body (MetricsInstrumentation's Codahale registry as JSON): variables
    are gauges (`group.name`), counters counters, samplers histograms (`group.name.histogram`),
    timers timers (`group.name.timer`, milliseconds; rates per second over the window)."""
    now, window = inst.computed_at, inst.window_seconds
    timers: dict[str, Any] = {}
    for group, data in inst.timers.items():
        for name, timing in data.items():
            timers[f"{group}.{name}.timer"] = {
                **_snapshot(seconds * 1000 for seconds in timing.durations),
                "mean_rate": len(timing.ends) / window,
                "m1_rate": _rate(timing, now, 60, window),
                "m5_rate": _rate(timing, now, 300, window),
                "m15_rate": _rate(timing, now, 900, window),
                "duration_units": "milliseconds",
                "rate_units": "calls/second",
            }
    return {
        "gauges": {f"{group}.{name}": {"value": value} for group, data in inst.variables.items() for name, value in data.items()},
        "counters": {f"{group}.{name}": {"count": value} for group, data in inst.counters.items() for name, value in data.items()},
        "histograms": {
            f"{group}.{name}.histogram": _snapshot([value]) for group, data in inst.samplers.items() for name, value in data.items()
        },
        "timers": timers,
    }


# --- Configuration: an allow-list, URLs without credentials -------------------------------

#: Settings shown as they are (numbers, switches, names, lists of protocols or statuses).
PLAIN_SETTINGS = (
    "DEBUG", "ALLOWED_HOSTS", "TIME_ZONE", "OOZIE_PROCESSING_TIMEZONE",
    "COMMAND_LEASE_SECONDS", "COMMAND_SWEEP_SECONDS", "BROKER_VISIBILITY_TIMEOUT", "COMMAND_DRAIN_MAX",
    "COMMAND_DRAIN_QUANTUM_MS", "COMMAND_PREPARED_STATEMENTS", "COMMAND_RING_STALE_SECONDS",
    "COMMAND_HISTORY_DAYS", "ALLOWED_TASKS",
    "COORD_MATERIALIZATION_LOOKAHEAD_SECONDS", "COORD_MATERIALIZATION_CHUNK", "COORD_INPUT_CHECK_SECONDS",
    "COORD_INPUT_CHECK_MAX_SECONDS", "COORD_INPUT_TICK_SECONDS", "COORD_EXECUTION_NONE_TOLERANCE_MINUTES",
    "COORD_RECOVERY_SECONDS", "COORD_RESTRICT_READS", "COORD_MAX_INSTANCES_PER_INPUT", "COORD_INCLUDE_PROTOCOLS",
    "STATUS_SERVICE_SECONDS", "BUNDLE_KICKOFF_SECONDS",
    "WORKFLOW_LEASE_SECONDS", "WORKFLOW_MAX_LAUNCHES", "WORKFLOW_RESEND_SECONDS", "WORKFLOW_RESEND_MAX_SECONDS",
    "WORKFLOW_REPORT_RETRY_SECONDS", "WORKFLOW_RETRY_TRANSIENT_ERRORS",
    "BATCH_SLOTS", "BATCH_WORK_ROOT", "BATCH_PAYLOAD_PROTOCOLS", "BATCH_ALLOW_HTTP", "BATCH_MANIFEST_MAX_BYTES",
    "BATCH_DOWNLOAD_RETRIES", "BATCH_DOWNLOAD_PARALLELISM", "BATCH_HTTP_TIMEOUT_SECONDS", "BATCH_RESERVE_BYTES",
    "BATCH_PROVISION_SLEEP_SECONDS", "BATCH_LARGE_JOB_BYTES", "BATCH_LARGE_JOB_PRIORITY", "BATCH_RETENTION_DAYS",
    "BATCH_DISPATCH_SECONDS",
    "SLA_ALERT_EVENTS", "SLA_EMAIL_ENABLED", "SLA_WEBHOOK_EVENTS", "SLA_WEBHOOK_TIMEOUT_SECONDS",
    "SLA_NOTIFY_MAX_ATTEMPTS", "SLA_NOTIFY_RETRY_SECONDS", "SLA_DISABLE_ALERTS_OLDER_THAN_HOURS",
    "EMAIL_HOST", "EMAIL_PORT", "EMAIL_USE_TLS", "EMAIL_TIMEOUT",
    "METRICS_WINDOW_SECONDS", "METRICS_COMMAND_SAMPLE", "METRICS_ENDED_ACTIONS_SECONDS", "OOZIE_BULK_WAIT_SECONDS",
)
#: Settings holding URLs (or lists of them): shown without user, password, query or fragment.
#: SLA_WEBHOOK_URL is left out altogether: webhook URLs often carry their secret in the path.
URL_SETTINGS = ("REDIS_URL", "CELERY_RESULT_BACKEND", "COORD_APPLICATION_ROOTS", "BATCH_PAYLOAD_ROOTS", "SLA_ADMIN_BASE_URL")
#: A last guard: a name like these is never shown, whatever the lists above say.
SECRET_NAME = re.compile(r"SECRET|PASSWORD|PASSWD|TOKEN|CREDENTIAL|PRIVATE|(^|_)KEY($|_)|_USER$")


def _text(value: Any) -> str:
    """A setting as Oozie's configuration shows it: a string (lists comma-separated, booleans lower case)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple | set | frozenset):
        return ",".join(_text(item) for item in value)
    return "" if value is None else str(value)


def redact_url(url: str) -> str:
    """The URL without user, password, query and fragment (`redis://:pw@h:6379/0?x=1` -> `redis://h:6379/0`)."""
    if "://" not in url:
        return url if "@" not in url else "(redacted)"
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return "(unparseable URL)"
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{port}" if port is not None else host
    return f"{parts.scheme}://{netloc}{parts.path}"


def _database_url() -> str:
    """The default database as a URL without user and password: engine, host, port, name."""
    entry = settings.DATABASES.get("default", {})
    engine = str(entry.get("ENGINE", "")).rsplit(".", 1)[-1]
    if engine == "sqlite3":
        return f"sqlite:///{entry.get('NAME', '')}"
    host, port = str(entry.get("HOST") or ""), str(entry.get("PORT") or "")
    return redact_url(f"{engine}://{host}{':' + port if port else ''}/{entry.get('NAME', '')}")


def configuration() -> dict[str, str]:
    """GET admin/configuration: the allow-listed settings as strings (Oozie's Map<String, String>)."""
    shown: dict[str, str] = {}
    for name in PLAIN_SETTINGS:
        if hasattr(settings, name) and not SECRET_NAME.search(name):
            shown[name] = _text(getattr(settings, name))
    for name in URL_SETTINGS:
        if hasattr(settings, name) and not SECRET_NAME.search(name):
            value = getattr(settings, name)
            urls = value if isinstance(value, list | tuple) else [value]
            shown[name] = ",".join(redact_url(str(url)) for url in urls if url)
    shown["DATABASE_URL"] = _database_url()
    return dict(sorted(shown.items()))


# --- Queue dump -----------------------------------------------------------------------------


def queue_dump(limit: int) -> dict[str, Any]:
    """GET admin/queue-dump: per key with active commands (oldest waiting first, at most `limit`) its waiting,
    running and parked commands and oldest enqueue time, as Oozie's `queueDump` (`callableDump` strings
    plus the fields); the leased commands as its `uniqueMapDump` (`uniqueEntryDump`)."""
    active = Command.objects.filter(in_constants("status", ACTIVE_STATUSES))
    keys = (
        active.values("key")
        .annotate(
            waiting=Count("id", filter=Q(status=CommandStatus.PENDING)),
            running=Count("id", filter=Q(status__in=sorted(LEASED_STATUSES))),
            parked=Count("id", filter=Q(status=CommandStatus.PARKED)),
            oldest=Min("enqueued_at"),
        )
        .order_by("oldest", "key")
    )
    total = keys.count()
    queue = [
        {
            "callableDump": (
                f"key={row['key']} waiting={row['waiting']} running={row['running']} parked={row['parked']} "
                f"oldestEnqueued={rfc822(row['oldest'])}"
            ),
            "key": row["key"], "waiting": row["waiting"], "running": row["running"], "parked": row["parked"],
            "oldestEnqueued": rfc822(row["oldest"]),
        }
        for row in keys[:limit]
    ]
    leased = active.filter(in_constants("status", LEASED_STATUSES)).order_by("started_at", "id").values(
        "id", "key", "name", "status", "lease_owner", "started_at", "attempts"
    )[:limit]
    unique = [
        {
            "uniqueEntryDump": (
                f"{row['name']}#{row['id']} key={row['key']} {row['status']} worker={row['lease_owner']} "
                f"attempt={row['attempts']} since={rfc822(row['started_at'])}"
            ),
            "command": row["name"], "id": row["id"], "key": row["key"], "status": row["status"],
            "worker": row["lease_owner"], "attempt": row["attempts"], "startedAt": rfc822(row["started_at"]),
        }
        for row in leased
    ]
    return {"queueDump": queue, "uniqueMapDump": unique, "total": total, "len": limit}
