"""Oozie's admin resources: instrumentation, metrics, prometheus, configuration, queue-dump, available-oozie-servers.

Shapes are checked the way Oozie's Java client reads them (OozieClient.Instrumentation, .Metrics,
GetQueueDump, MapClientCallable): the fields it parses, with the types it casts them to.
"""

from __future__ import annotations

import json
import socket
from datetime import timedelta
from itertools import count
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from coordinators.models import CoordinatorAction
from tests.coordinators.api.factories import bulk_jobs
from tests.oozieapi.client import Oozie, error_of
from xcommands.models import Command

pytestmark = pytest.mark.django_db

PROBE = "tests.AdminProbeXCommand"
_seq = count(1)
HISTOGRAM_FIELDS = ("p999", "p99", "p98", "p95", "p75", "p50", "mean", "min", "max", "stddev")
TIMER_FIELDS = ("ownTimeStdDev", "ownTimeAvg", "ownMaxTime", "ownMinTime", "totalTimeStdDev", "totalTimeAvg",
                "totalMaxTime", "totalMinTime", "ticks")
LONG_TIMER_FIELDS = ("ownTimeAvg", "ownMaxTime", "ownMinTime", "totalTimeAvg", "totalMaxTime", "totalMinTime", "ticks")


def command(status: str, *, key: str | None = None, age: float = 0, run: float | None = None, worker: str = "") -> Command:
    """A command row: enqueued `age` seconds ago; started one second later and finished `run` seconds after, if given."""
    now = timezone.now()
    n = next(_seq)
    enqueued = now - timedelta(seconds=age)
    started = enqueued + timedelta(seconds=1) if run is not None or status in ("RUNNING", "ROLLING_BACK") else None
    finished = started + timedelta(seconds=run) if started is not None and run is not None else None
    history = [{"attempt": 1, "outcome": status, "worker": worker}] if finished and worker else []
    leased = status in ("RUNNING", "ROLLING_BACK")
    return Command.objects.create(
        key=key or f"admin-key-{n}", seq=n, name=PROBE, status=status, not_before=now, enqueued_at=enqueued,
        started_at=started, finished_at=finished, history=history, lease_owner=worker if leased else "",
        lease_expires_at=now + timedelta(seconds=60) if leased else None,
    )


def java_instrumentation(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """What OozieClient.Instrumentation builds: `group.name` maps, counters as longs, samplers as doubles."""
    result: dict[str, dict[str, Any]] = {"counters": {}, "variables": {}, "samplers": {}, "timers": {}}
    for kind in result:
        for group in body[kind]:
            for datum in group["data"]:
                key = f"{group['group']}.{datum['name']}"
                if kind == "counters":
                    assert isinstance(datum["value"], int)
                    result[kind][key] = datum["value"]
                elif kind == "samplers":
                    result[kind][key] = float(datum["value"])
                elif kind == "timers":
                    assert set(TIMER_FIELDS) <= set(datum)
                    for name in LONG_TIMER_FIELDS:  # Long.valueOf(...toString()): whole numbers only
                        assert isinstance(datum[name], int), (key, name, datum[name])
                    result[kind][key] = datum
                else:
                    result[kind][key] = datum["value"]
    return result


def prometheus(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text) for sample in family.samples
    }


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_anonymous_callers_are_refused_as_elsewhere(version: str) -> None:
    """Every new admin resource answers 401 E0500 with a basic challenge without credentials; status stays open."""
    oozie = Oozie(None, version=version)
    for resource in ("instrumentation", "metrics", "prometheus", "configuration", "queue-dump", "available-oozie-servers"):
        response = oozie.get(f"admin/{resource}")
        assert error_of(response)[:2] == (401, "E0500"), resource
        assert response["WWW-Authenticate"].startswith("Basic")
        assert b"NORMAL" not in response.content and b"queueDump" not in response.content
    assert oozie.get("admin/status").json() == {"systemMode": "NORMAL"}


def test_bad_credentials_are_refused(ann: User) -> None:
    """A wrong password is 401 E0500, as on the job endpoints."""
    oozie = Oozie(None)
    oozie.headers["Authorization"] = "Basic YW5uOndyb25n"  # ann:wrong
    assert error_of(oozie.get("admin/instrumentation"))[:2] == (401, "E0500")


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_instrumentation_has_oozies_shape_and_moves_with_the_rows(ann: User, version: str) -> None:
    """{"variables","samplers","counters","timers"}: lists of {"group","data":[{"name",...}]}, readable by Oozie's client."""
    oozie = Oozie(ann, version=version)
    before = java_instrumentation(oozie.get("admin/instrumentation").json())
    assert before["variables"]["oozie.mode"] == "NORMAL"
    assert before["variables"]["coord.actions.RUNNING"] == 0

    [job] = bulk_jobs(ann, 1)
    now = timezone.now()
    for number, status in enumerate(["RUNNING", "RUNNING", "WAITING"], start=1):
        CoordinatorAction.objects.create(id=f"{job}@{number}", job_id=job, number=number,
                                         nominal_time=now - timedelta(minutes=number), status=status)
    command("PENDING")
    command("PENDING")
    command("RUNNING", worker="w1@host:7")
    command("SUCCEEDED", age=10, run=2.5, worker="w2@host:8")
    command("FAILED", age=10, run=0.5, worker="w2@host:8")

    response = oozie.get("admin/instrumentation")
    assert response["Content-Type"] == "application/json;charset=UTF-8"
    body = response.json()
    assert set(body) == {"variables", "samplers", "counters", "timers"}
    after = java_instrumentation(body)
    assert after["variables"]["coord.actions.RUNNING"] == 2
    assert after["variables"]["coord.jobs.RUNNING"] == 1
    assert after["variables"]["coord.actions.due.WAITING"] == 1
    assert after["variables"][f"commands.{PROBE}.queued"] == 2
    assert after["variables"][f"commands.{PROBE}.running"] == 1
    assert "w1@host:7" in {key.removeprefix("workers.") for key in after["variables"]}
    assert after["samplers"]["callablequeue.queue.size"] >= 2
    assert after["counters"][f"commands.{PROBE}.SUCCEEDED"] == 1
    assert after["counters"][f"commands.{PROBE}.FAILED"] == 1
    call = after["timers"][f"commands.{PROBE}.call"]
    assert (call["ticks"], call["ownMinTime"], call["ownMaxTime"], call["ownTimeAvg"]) == (2, 500, 2500, 1500)
    assert after["timers"][f"commands.{PROBE}.time.in.queue"]["ownTimeAvg"] == 1000


def test_metrics_is_codahale_json_with_the_same_figures_as_prometheus(ann: User) -> None:
    """v2 admin/metrics: gauges/counters/histograms/timers as Oozie's client reads them; values equal /metrics'."""
    oozie = Oozie(ann)
    command("PENDING")
    command("SUCCEEDED", age=5, run=0.25)
    command("SUCCEEDED", age=5, run=0.75)
    body = oozie.get("admin/metrics").json()
    assert set(body) == {"gauges", "counters", "histograms", "timers"}
    for entry in body["counters"].values():
        assert isinstance(entry["count"], int)
    for entry in body["gauges"].values():
        assert "value" in entry
    for entry in [*body["histograms"].values(), *body["timers"].values()]:
        for name in HISTOGRAM_FIELDS:
            float(entry[name])
        assert isinstance(entry["count"], int)
    timer = body["timers"][f"commands.{PROBE}.call.timer"]
    for name in ("m15_rate", "m5_rate", "m1_rate", "mean_rate"):
        float(timer[name])
    assert (timer["duration_units"], timer["rate_units"]) == ("milliseconds", "calls/second")
    assert (timer["count"], timer["min"], timer["max"], timer["mean"]) == (2, 250, 750, 500)
    assert timer["m1_rate"] == pytest.approx(2 / 60)

    text = oozie.get("admin/prometheus")
    assert text["Content-Type"].startswith("text/plain")
    samples = prometheus(text.content.decode())
    assert samples[("scheduler_commands_queued", (("command", PROBE),))] == body["gauges"][f"commands.{PROBE}.queued"]["value"] == 1
    assert samples[("scheduler_command_run_seconds_gcount", (("command", PROBE),))] == timer["count"]
    for status in ("RUNNING", "PREP", "KILLED"):
        assert samples[("scheduler_coordinator_jobs", (("status", status),))] == body["gauges"][f"coord.jobs.{status}"]["value"]
    assert body["histograms"]["callablequeue.queue.size.histogram"]["max"] >= 1


@pytest.mark.parametrize("resource", ["metrics", "prometheus", "available-oozie-servers"])
def test_v2_only_resources_answer_v1_as_oozie_does(ann: User, resource: str) -> None:
    """Oozie's V1AdminServlet: 400 E0302 "Not supported in v1"."""
    status, code, message = error_of(Oozie(ann, version="v1").get(f"admin/{resource}"))
    assert (status, code) == (400, "E0302")
    assert "Not supported in v1" in message


def test_available_oozie_servers_names_this_service(ann: User) -> None:
    """{"<host name>": "<this service's Oozie URL>"}, the one-server answer of a non-HA Oozie."""
    assert Oozie(ann).get("admin/available-oozie-servers").json() == {socket.gethostname(): "http://testserver/oozie"}


@pytest.mark.filterwarnings("ignore:Overriding setting DATABASES")  # only read here, never connected with
def test_configuration_is_for_job_admins_and_never_shows_a_secret(ann: User, admin: User, settings: Any) -> None:
    """Allow-listed settings as strings; secrets, passwords, tokens and URL credentials never appear."""
    secrets = ["s3cr3t-django-key-0123456789abcdef", "db-pa55word-xyz", "redis-pa55-qwe", "hook-path-secret-987",
               "hook-signing-secret-654", "mail-pa55-asd", "metrics-token-zzz", "s3-access-secret-ooo"]
    settings.SECRET_KEY = secrets[0]
    database = dict(settings.DATABASES["default"])
    settings.DATABASES = {**settings.DATABASES, "default": {**database, "USER": "dbuser", "PASSWORD": secrets[1]}}
    settings.REDIS_URL = f"redis://:{secrets[2]}@redis.internal:6380/2?password={secrets[2]}"
    settings.CELERY_RESULT_BACKEND = f"redis://default:{secrets[2]}@redis.internal:6380/3"
    settings.SLA_WEBHOOK_URL = f"https://hooks.example/services/{secrets[3]}"
    settings.SLA_WEBHOOK_SECRET = secrets[4]
    settings.EMAIL_HOST_PASSWORD = secrets[5]
    settings.METRICS_TOKEN = secrets[6]
    settings.COORD_APPLICATION_ROOTS = ["file:///srv/apps", f"s3://AKIAKEY:{secrets[7]}@bucket/apps"]

    assert error_of(Oozie(ann).get("admin/configuration"))[:2] == (403, "E0500")
    for version in ("v1", "v2"):
        response = Oozie(admin, version=version).get("admin/configuration")
        assert response.status_code == 200
        text = response.content.decode()
        for secret in [*secrets, "dbuser", "AKIAKEY"]:
            assert secret not in text
        body = json.loads(text)
        assert all(isinstance(value, str) for value in body.values())  # Oozie's Map<String, String>
        assert not any(name in body for name in ("SECRET_KEY", "SLA_WEBHOOK_URL", "SLA_WEBHOOK_SECRET", "METRICS_TOKEN",
                                                  "EMAIL_HOST_PASSWORD", "DATABASES"))
        assert body["REDIS_URL"] == "redis://redis.internal:6380/2"
        assert body["CELERY_RESULT_BACKEND"] == "redis://redis.internal:6380/3"
        assert body["COORD_APPLICATION_ROOTS"] == "file:///srv/apps,s3://bucket/apps"
        assert body["COMMAND_LEASE_SECONDS"] == str(settings.COMMAND_LEASE_SECONDS)
        assert body["COORD_RESTRICT_READS"] in ("true", "false")
        assert "DATABASE_URL" in body and "@" not in body["DATABASE_URL"]


def test_queue_dump_lists_the_command_queue_per_key_for_job_admins(ann: User, admin: User) -> None:
    """queueDump: per key waiting/running/parked and oldest enqueue, oldest first, `len` bounded; uniqueMapDump: leased commands."""
    assert error_of(Oozie(ann).get("admin/queue-dump"))[:2] == (403, "E0500")
    oozie = Oozie(admin)
    empty = oozie.get("admin/queue-dump").json()
    assert (empty["queueDump"], empty["uniqueMapDump"], empty["total"]) == ([], [], 0)

    command("RUNNING", key="key-a", age=300, worker="w@h:1")
    command("PENDING", key="key-a", age=200)
    command("PENDING", key="key-a", age=100)
    command("PARKED", key="key-b", age=250)
    command("PENDING", key="key-c", age=50)
    command("SUCCEEDED", key="key-d", age=400, run=1)  # finished: holds no queue
    body = oozie.get("admin/queue-dump").json()
    assert [entry["key"] for entry in body["queueDump"]] == ["key-a", "key-b", "key-c"]
    first = body["queueDump"][0]
    assert (first["waiting"], first["running"], first["parked"]) == (2, 1, 0)
    assert first["callableDump"].startswith("key=key-a waiting=2 running=1 parked=0 oldestEnqueued=")
    assert all(isinstance(entry["callableDump"], str) for entry in body["queueDump"])
    assert body["queueDump"][1]["parked"] == 1
    [leased] = body["uniqueMapDump"]
    assert (leased["key"], leased["worker"], leased["command"]) == ("key-a", "w@h:1", PROBE)
    assert isinstance(leased["uniqueEntryDump"], str) and "w@h:1" in leased["uniqueEntryDump"]
    assert body["total"] == 3

    page = oozie.get("admin/queue-dump", len="2").json()
    assert ([entry["key"] for entry in page["queueDump"]], page["total"], page["len"]) == (["key-a", "key-b"], 3, 2)
    assert error_of(oozie.get("admin/queue-dump", len="two"))[:2] == (400, "E0303")


def test_unknown_admin_resources_are_still_refused(ann: User) -> None:
    """os-env, sys-props and made-up names stay 400 E0301 for authenticated callers too."""
    for resource in ("os-env", "java-sys-properties", "nonsense"):
        assert error_of(Oozie(ann).get(f"admin/{resource}"))[:2] == (400, "E0301")
