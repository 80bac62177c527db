"""Both API faces end to end: the running web service (live server), a real worker, beat and Redis.

A submitter sends a Hadoop XML configuration through the Oozie API, watches actions wait for
their data and run, suspends, resumes, reruns and kills the job, and reads every result through
the native API, all over HTTP with HTTP basic and token authentication.
"""

from __future__ import annotations

import base64
import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import override_settings
from django.utils import timezone

from datasets.timeline import format_datetime
from oozie.definitions import serialize_hadoop_configuration
from tests.coordinators.api.factories import token, user
from tests.support.processes import WorkerProcess, wait_until

pytestmark = pytest.mark.integration

FAST = {
    "STATUS_SERVICE_SECONDS": "1",
    "COORD_INPUT_CHECK_SECONDS": "1",
    "COORD_INPUT_CHECK_MAX_SECONDS": "2",
    "COMMAND_SWEEP_SECONDS": "1",
    "COMMAND_RING_STALE_SECONDS": "2",
}

APP = """<coordinator-app name="e2e-api" frequency="${coord:minutes(1)}" start="${start}" end="${end}" timezone="UTC"
    xmlns="uri:oozie:coordinator:0.4">
  <controls><concurrency>3</concurrency></controls>
  <datasets>
    <dataset name="raw" frequency="${coord:minutes(1)}" initial-instance="2020-01-01T00:00Z" timezone="UTC">
      <uri-template>file://${data}/${YEAR}${MONTH}${DAY}${HOUR}${MINUTE}</uri-template></dataset>
    <dataset name="done" frequency="${coord:minutes(1)}" initial-instance="2020-01-01T00:00Z" timezone="UTC">
      <uri-template>file://${out}/${YEAR}${MONTH}${DAY}${HOUR}${MINUTE}</uri-template></dataset>
  </datasets>
  <input-events><data-in name="in" dataset="raw"><instance>${coord:current(0)}</instance></data-in></input-events>
  <output-events><data-out name="out" dataset="done"><instance>${coord:current(0)}</instance></data-out></output-events>
  <action><workflow><app-path>task:examples.produce</app-path><configuration>
    <property><name>input</name><value>${coord:dataIn('in')}</value></property>
    <property><name>output</name><value>${coord:dataOut('out')}</value></property>
  </configuration></workflow></action>
</coordinator-app>"""


class Http:
    """A tiny HTTP client against the live server (no test client: real sockets, real headers)."""

    def __init__(self, base: str, authorization: str) -> None:
        self.base = base
        self.authorization = authorization

    def call(self, method: str, path: str, body: bytes | None = None, content_type: str = "") -> tuple[int, dict[str, str], bytes]:
        request = urllib.request.Request(self.base + path, data=body, method=method)  # noqa: S310 - the test's own server
        request.add_header("Authorization", self.authorization)
        if content_type:
            request.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
                return response.status, dict(response.headers), response.read()
        except urllib.error.HTTPError as error:
            return error.code, dict(error.headers), error.read()

    def json(self, method: str, path: str, **kwargs: Any) -> Any:
        status, headers, body = self.call(method, path, **kwargs)
        assert status < 300, (method, path, status, headers.get("oozie-error-message"), body[:300])
        return json.loads(body) if body else None


def mark_available(data: Path, action: dict[str, Any]) -> None:
    """Create the input instance of an action, with its done-flag."""
    directory = data / action["data_in"]["in"][0].rsplit("/", 1)[-1]
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "_SUCCESS").write_text("")


def test_submit_watch_suspend_resume_rerun_kill_over_http(
    live_server: Any, live_workers: Callable[..., WorkerProcess], live_beat: Callable[..., WorkerProcess],
    tmp_path: Path, celery_to_test_redis: str,
) -> None:
    """Oozie API in, native API out, a real worker doing the work; every verb observed through the API."""
    ann: User = user("ann")
    oozie = Http(f"{live_server.url}/oozie/v2", "Basic " + base64.b64encode(b"ann:ann-password-123").decode())
    native = Http(f"{live_server.url}/api/v1", f"Token {token(ann)}")
    data, out, app = tmp_path / "data", tmp_path / "out", tmp_path / "app"
    app.mkdir()
    (app / "coordinator.xml").write_text(APP)
    start = (timezone.now() - timedelta(minutes=3)).replace(second=0, microsecond=0)
    configuration = serialize_hadoop_configuration({
        "user.name": "ann", "oozie.coord.application.path": f"file://{app}", "oozie.job.acl": "ops",
        "start": format_datetime(start), "end": format_datetime(start + timedelta(minutes=4)),
        "data": str(data), "out": str(out),
    })

    with override_settings(COMMAND_RING_STALE_SECONDS=2):
        job_id = oozie.json("POST", "/jobs?action=start", body=configuration, content_type="application/xml;charset=UTF-8")["id"]
        live_workers(name="w1", **FAST)
        live_beat(**FAST)
        actions_url = f"/coordinator-jobs/{job_id}/actions/"

        # Materialized actions wait for their data; the first one runs once its input appears.
        wait_until(lambda: native.json("GET", actions_url)["count"] >= 3, 60, "3 actions")
        time.sleep(2)
        waiting = native.json("GET", f"{actions_url}?status=WAITING")
        assert waiting["count"] >= 3
        first = native.json("GET", f"/coordinator-actions/{job_id}@1/")
        mark_available(data, first)
        wait_until(lambda: native.json("GET", f"/coordinator-actions/{job_id}@1/")["status"] == "SUCCEEDED", 60, "action 1")
        assert (out / first["data_out"]["out"][0].rsplit("/", 1)[-1] / "data.json").exists()
        info = oozie.json("GET", f"/job/{job_id}?show=info&len=10")
        assert info["status"] == "RUNNING" and info["actions"][0]["status"] == "SUCCEEDED"
        assert info["actions"][0]["externalStatus"] == "SUCCEEDED" and info["actions"][0]["externalId"]

        # Suspend through the Oozie API, resume through the native API.
        assert oozie.call("PUT", f"/job/{job_id}?action=suspend")[0] == 200
        wait_until(lambda: native.json("GET", f"/coordinator-jobs/{job_id}/")["status"] == "SUSPENDED", 30, "suspended")
        assert native.call("POST", f"/coordinator-jobs/{job_id}/resume/")[0] == 202
        wait_until(lambda: native.json("GET", f"/coordinator-jobs/{job_id}/")["status"] == "RUNNING", 30, "resumed")

        # Rerun action 1 through the Oozie API: it runs again and succeeds again.
        before = native.json("GET", f"/coordinator-actions/{job_id}@1/")["last_modified"]
        rerun = oozie.json("PUT", f"/job/{job_id}?action=coord-rerun&type=action&scope=1&refresh=false&nocleanup=false")
        assert [a["actionNumber"] for a in rerun["actions"]] == [1]

        def rerun_done() -> bool:
            action = native.json("GET", f"/coordinator-actions/{job_id}@1/")
            return bool(action["status"] == "SUCCEEDED" and action["last_modified"] > before)

        wait_until(rerun_done, 60, "action 1 to run again")
        log = oozie.call("GET", f"/job/{job_id}?show=log")[2].decode()
        assert "CoordRerunXCommand" in log and "CoordSuspendXCommand" in log and "CoordResumeXCommand" in log

        # Kill through the native API: the job and its unfinished actions end KILLED.
        assert native.call("POST", f"/coordinator-jobs/{job_id}/kill/")[0] == 202
        wait_until(lambda: native.json("GET", f"/coordinator-jobs/{job_id}/")["status"] == "KILLED", 30, "killed")
        statuses = {a["status"] for a in native.json("GET", f"{actions_url}?limit=100")["results"]}
        assert statuses <= {"SUCCEEDED", "KILLED"} and "KILLED" in statuses
        listed = oozie.json("GET", "/jobs?jobtype=coord&filter=status%3DKILLED%3Buser%3Dann")
        assert [j["coordJobId"] for j in listed["coordinatorjobs"]] == [job_id]
        status, headers, _ = oozie.call("PUT", f"/job/{job_id}?action=resume")  # Oozie skips it: 200 (ADR 0013)
        assert status == 200 and native.json("GET", f"/coordinator-jobs/{job_id}/")["status"] == "KILLED"
