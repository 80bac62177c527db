"""Fuzzing the Oozie endpoints with bad parameters, bodies and ids: always a 4xx with Oozie's error headers, never a 500."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from django.contrib.auth.models import User
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coordinators.models import CoordinatorAction, CoordinatorJob
from coordinators.services import submit_coordinator
from tests.coordinators.api.factories import bulk_actions, coordinator_xml, window
from tests.oozieapi.client import basic
from xcommands.models import Command

pytestmark = pytest.mark.django_db

FUZZ = settings(max_examples=150, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
PARAMETERS = ("action", "show", "offset", "len", "order", "filter", "logfilter", "timezone", "value", "type", "scope",
              "refresh", "nocleanup", "failed", "jobtype")
# Any code point, NUL and lone surrogates included: they must be refused with a code, not crash anything.
text = st.text(st.characters(codec=None), max_size=40)
hostile = st.sampled_from(["\x00", "a\x00b", "\ud800", "x\udfffy", "\ud83d\ude00", "caf\xe9"])
values = st.one_of(
    text,
    hostile,
    st.sampled_from(["start", "suspend", "resume", "kill", "change", "rerun", "coord-rerun", "dryrun", "info", "log",
                     "errorlog", "definition", "status", "coord", "wf", "bundle", "asc", "desc", "-1", "0", "1",
                     "99999999999", "status=KILLED", "status!=X", "user=ann;name=", "nominaltime>=x", "true", "GMT",
                     "endtime=2030-01-01T00:00Z", "concurrency=-5", "1-3", "3-1", "1,,2", "a::b", "loglevel=ERROR",
                     "concurrency=99999999999999999999", "endtime=99999-01-01T00:00Z", "1-99999999999999999",
                     "99999999999999999999", "startCreatedTime=-999999d", "status=\x00"]),
    st.integers(min_value=-(10**12), max_value=10**12).map(str),
)
query = st.dictionaries(st.sampled_from(PARAMETERS), values, max_size=6)


@pytest.fixture
def job_id(ann: User) -> str:
    """A real job (PREP, with actions) for the fuzzer to hit alongside made-up ids."""
    job = submit_coordinator(coordinator_xml(), window(), owner=ann, start=False)
    bulk_actions(job.id, 30, statuses=("SUCCEEDED", "FAILED", "WAITING"))
    return job.id


@pytest.fixture
def client(ann: User) -> Iterator[Client]:
    yield Client(headers={"Authorization": basic(ann)})


def rows() -> tuple[int, int, int]:
    """What a refusal must not change: jobs, commands, actions."""
    return CoordinatorJob.objects.count(), Command.objects.count(), CoordinatorAction.objects.count()


def assert_oozie_answer(response: Any) -> None:
    """No 5xx; a refusal carries Oozie's two error headers, on one line."""
    assert response.status_code < 500, response.content[:300]
    if response.status_code >= 400 and response.status_code != 404:
        code, message = response.headers.get("oozie-error-code", ""), response.headers.get("oozie-error-message", "")
        assert code.startswith("E") and message.startswith(code), (response.status_code, code, message)
        assert "\n" not in message and "\r" not in message


def test_job_endpoint(client: Client, job_id: str) -> None:
    """GET and PUT /oozie/v2/job/{id} with any parameters, on real, missing and malformed ids."""
    ids = st.one_of(st.just(job_id), st.just(f"{job_id}@3"), st.just(f"{job_id}@99999"), hostile,
                    text.filter(lambda t: "/" not in t))

    @FUZZ
    @given(job=ids, params=query, method=st.sampled_from(["get", "put"]), version=st.sampled_from(["v1", "v2"]))
    def check(job: str, params: dict[str, str], method: str, version: str) -> None:
        before = rows()
        url = f"/oozie/{version}/job/{quote(job, safe='@', errors='surrogatepass')}?{urlencode(params, errors='surrogatepass')}"
        response = getattr(client, method)(url)
        assert_oozie_answer(response)
        if response.status_code >= 400:
            assert rows() == before

    check()


def test_jobs_endpoint(client: Client) -> None:
    """GET /oozie/v2/jobs with any filter, offset, len and jobtype."""

    @FUZZ
    @given(params=query)
    def check(params: dict[str, str]) -> None:
        assert_oozie_answer(client.get(f"/oozie/v2/jobs?{urlencode(params, errors='surrogatepass')}"))

    check()


def test_submissions(client: Client, tmp_path: Any) -> None:
    """POST /oozie/v2/jobs with arbitrary bodies and content types: refused with a code, nothing half-written."""
    (tmp_path / "coordinator.xml").write_text(coordinator_xml())
    property_names = st.sampled_from(["oozie.coord.application.path", "user.name", "start", "end", "oozie.job.acl",
                                      "oozie.wf.application.path", "x"])
    property_values = st.one_of(text, st.just(f"file://{tmp_path}"), st.just(str(tmp_path / "missing.xml")), st.just("ann"),
                                st.just("2026-01-01T00:00Z"))
    configurations = st.dictionaries(property_names, property_values, max_size=5).map(
        lambda props: "<configuration>" + "".join(
            f"<property><name>{n}</name><value>{_escape(v)}</value></property>" for n, v in props.items()
        ) + "</configuration>"
    )
    bodies = st.one_of(configurations, text, st.just("<configuration>"), st.just("<!DOCTYPE x><configuration/>"))

    @FUZZ
    @given(body=bodies, content_type=st.sampled_from(["application/xml", "text/xml;charset=UTF-8", "text/plain", ""]),
           action=st.sampled_from(["", "start", "dryrun", "kill", "\x00", "\ud800"]))
    def check(body: str, content_type: str, action: str) -> None:
        before = CoordinatorJob.objects.count()
        query = urlencode({"action": action}, errors="surrogatepass")
        response = client.post(f"/oozie/v2/jobs?{query}", body.encode("utf-8", "surrogatepass"), content_type=content_type)
        assert_oozie_answer(response)
        assert CoordinatorJob.objects.count() == before + (1 if response.status_code == 201 else 0)

    check()


def test_admin_and_auth_headers() -> None:
    """Admin resources and Authorization headers of every shape: 4xx with codes, never 500."""

    @FUZZ
    @given(resource=text.filter(lambda t: "/" not in t and t), header=st.one_of(text, hostile, st.just("Basic !!!"), st.just("Token"),
           st.just("Basic " + "YTpi"), st.just("Bearer x")))
    def check(resource: str, header: str) -> None:
        headers = {"Authorization": header} if header and "\n" not in header and "\r" not in header else {}
        assert_oozie_answer(Client(headers=headers).get(f"/oozie/v2/admin/{quote(resource, errors='surrogatepass')}"))

    check()


def _escape(value: str) -> str:
    return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")

