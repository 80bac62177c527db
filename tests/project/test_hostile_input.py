"""Hostile input on both APIs is a 4xx naming the problem, never a 500, and writes nothing (issue 10, item 5).

NUL characters and lone surrogates (in JSON strings and keys, URL paths, query strings, headers,
form bodies), absurdly deep JSON, bad paging parameters and integers beyond what a database
column holds. CI reruns these on PostgreSQL, which refuses NUL in text where SQLite stores it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from django.contrib.auth.models import User
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coordinators.choices import JobStatus
from coordinators.models import CoordinatorAction, CoordinatorJob
from coordinators.services import submit_coordinator
from kernel.parsers import MAX_JSON_DEPTH
from oozie.definitions import serialize_hadoop_configuration
from project.flower_auth import flower_child
from project.launcher import LauncherError
from tests.coordinators.api.factories import bulk_actions, coordinator_xml, token, user, window
from tests.oozieapi.client import basic, error_of
from xcommands.models import Command

pytestmark = pytest.mark.django_db

KEYED = "/api/v1/keyed-jobs/"
JOBS = "/api/v1/coordinator-jobs/"
HUGE = "99999999999999999999"


@pytest.fixture
def ann(db: None) -> User:
    """A submitter with a token and a password."""
    return user("ann")


@pytest.fixture
def job_id(ann: User) -> str:
    """A RUNNING job of ann's with three finished actions (so verbs reach their value checks)."""
    job = submit_coordinator(coordinator_xml(), window(), owner=ann, start=False)
    bulk_actions(job.id, 3, statuses=("SUCCEEDED",))
    CoordinatorJob.objects.filter(pk=job.id).update(status=JobStatus.RUNNING)
    return job.id


@pytest.fixture
def native(ann: User) -> Client:
    """ann on the native API (token)."""
    return Client(headers={"Authorization": f"Token {token(ann)}"})


@pytest.fixture
def oozie(ann: User) -> Client:
    """ann on the Oozie API (HTTP basic)."""
    return Client(headers={"Authorization": basic(ann)})


def rows() -> tuple[int, int, int]:
    """What a refusal must not change: jobs, commands, actions."""
    return CoordinatorJob.objects.count(), Command.objects.count(), CoordinatorAction.objects.count()


def refused(send: Callable[[], Any]) -> tuple[int, str]:
    """Send; the status and the whole body as text, after checking that no row was written."""
    before = rows()
    response = send()
    assert rows() == before, response.content[:300]
    return response.status_code, response.content.decode("utf-8", "replace")


def native_refusal(send: Callable[[], Any], *words: str, status: int = 400) -> dict[str, Any]:
    """A native refusal: the status, `{"detail": ...}` or `{"<field>": [...]}`, naming every word; nothing written."""
    code, text = refused(send)
    assert code == status, text[:300]
    body = json.loads(text)
    assert isinstance(body, dict) and body, body
    messages = " ".join(
        f"{key}: {' '.join(map(str, value)) if isinstance(value, list) else value}" for key, value in body.items()
    )
    for word in words:
        assert word in messages, (word, messages[:300])
    return body


def oozie_refusal(send: Callable[[], Any], code: str, *words: str) -> str:
    """An Oozie refusal: 400 with the error code and a one-line ASCII message naming every word; nothing written."""
    before = rows()
    status, error_code, message = error_of(send())
    assert rows() == before
    assert (status, error_code) == (400, code), message
    assert message.startswith(f"{code}: ") and message.isascii() and "\n" not in message and "\r" not in message
    for word in words:
        assert word in message, (word, message)
    return message


def post_json(client: Client, url: str, body: str | bytes) -> Callable[[], Any]:
    """A request that POSTs these exact bytes as JSON."""
    return lambda: client.post(url, body, content_type="application/json")


def nested(depth: int) -> str:
    """A keyed job whose args hold arrays nested so that the whole body is `depth` levels deep."""
    inner = "[" * (depth - 2) + "]" * (depth - 2)
    return '{"key": "k", "task_name": "examples.noop", "args": [' + inner + "]}"


# ---- JSON bodies ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "words"),
    [
        pytest.param('{"key": "k", "task_name": "examples.noop", "kwargs": {"a\\u0000": 1}}',
                     ["NUL", '"a\\u0000"', "$.kwargs"], id="nul-in-key"),
        pytest.param('{"key": "k", "task_name": "examples.noop", "kwargs": {"a": "x\\u0000"}}',
                     ["NUL", "$.kwargs.a"], id="nul-in-string"),
        pytest.param('{"key": "k", "task_name": "examples.noop", "args": [1, ["\\ud800"]]}',
                     ["lone surrogate (U+D800)", "$.args[1][0]"], id="surrogate-in-string"),
        pytest.param('{"key": "k", "task_name": "examples.noop", "kwargs": {"\\udfff": 1}}',
                     ["lone surrogate (U+DFFF)", "$.kwargs"], id="surrogate-in-key"),
        pytest.param('{"key": "k\\u0000", "task_name": "examples.noop"}', ["NUL", "$.key"], id="nul-in-field"),
        pytest.param("[" * 100_000 + "]" * 100_000, [f"deeper than {MAX_JSON_DEPTH} levels"], id="100000-deep"),
        pytest.param(nested(MAX_JSON_DEPTH + 1), [f"deeper than {MAX_JSON_DEPTH} levels", "$.args"], id="one-too-deep"),
        pytest.param('{"key": "k", "task_name": "examples.noop", "kwargs": {"a": 1e999}}', ["out of range"], id="infinity"),
        pytest.param('{"key": "k", "task_name": "examples.noop", "kwargs": {"a": NaN}}', ["NaN"], id="nan"),
        pytest.param('{"key": "k\x00"}', ["NUL"], id="raw-nul-byte"),
        pytest.param(b'{"key": "k\xff", "task_name": "examples.noop"}', ["not valid utf-8", "0xFF"], id="not-utf-8"),
        pytest.param(b'{"key": "k\xed\xa0\x80", "task_name": "examples.noop"}', ["lone surrogate (U+D800)"],
                     id="encoded-surrogate"),
    ],
)
def test_json_bodies_with_unstorable_text_or_deep_nesting_are_refused(
    native: Client, body: str | bytes, words: list[str]
) -> None:
    """NUL, lone surrogates, >64 levels, infinities and non-UTF-8 bytes in a JSON body: 400 naming the problem and where."""
    reply = native_refusal(post_json(native, KEYED, body), "JSON parse error", *words)
    assert set(reply) == {"detail"}


def test_json_at_the_nesting_limit_and_real_unicode_pass(native: Client) -> None:
    """64 levels, astral characters (a surrogate pair in JSON), accents and huge integers in kwargs are accepted."""
    assert native.post(KEYED, nested(MAX_JSON_DEPTH), content_type="application/json").status_code == 201
    body = '{"key": "caf\\u00e9 \\ud83d\\ude00", "task_name": "examples.noop", "kwargs": {"n": 1e300, "big": ' + HUGE + "}}"
    response = native.post(KEYED, body, content_type="application/json")
    assert response.status_code == 201, response.content
    assert response.json()["key"] == "café \U0001f600"


def test_submission_bodies_are_checked_in_every_string(native: Client) -> None:
    """A NUL in a property value inside a submission: 400 naming the property's path; no job stored."""
    body = json.dumps({"definition": coordinator_xml(), "properties": {**window(), "x": "a\x00"}})
    native_refusal(post_json(native, JOBS, body), "NUL", "$.properties.x")


# ---- URL paths, query strings, headers ----------------------------------------------------


@pytest.mark.parametrize(
    ("url", "words"),
    [
        pytest.param("/api/v1/coordinator-jobs/a%00b/", ["URL path", "NUL"], id="job-id-nul"),
        pytest.param("/api/v1/coordinator-actions/a%00b@1/", ["URL path", "NUL"], id="action-id-nul"),
        pytest.param("/api/v1/coordinator-jobs/a%ED%A0%80b/", ["URL path", "lone surrogate (U+D800)"], id="job-id-surrogate"),
        pytest.param("/api/v1/keyed-jobs/%FF/", ["URL path", "not valid utf-8"], id="keyed-id-not-utf-8"),
        pytest.param("/api/v1/keyed-jobs/?key=a%00b", ["query parameter 'key'", "NUL"], id="key-filter-nul"),
        pytest.param("/api/v1/keyed-jobs/?status=%ED%BF%BF", ["query parameter 'status'", "lone surrogate (U+DFFF)"],
                     id="status-filter-surrogate"),
        pytest.param("/api/v1/coordinator-jobs/?name=caf%E9", ["query parameter 'name'", "not valid utf-8"],
                     id="latin-1-query"),
        pytest.param("/api/v1/coordinator-jobs/?a%00=1", ["query parameter 'a%00'", "NUL"], id="nul-in-parameter-name"),
        pytest.param("/admin/?next=%00", ["query parameter 'next'", "NUL"], id="outside-the-apis-too"),
    ],
)
def test_nul_and_surrogates_in_urls_are_refused_before_any_view(native: Client, url: str, words: list[str]) -> None:
    """A NUL, a lone surrogate or non-UTF-8 bytes in the path or query: 400 {"detail": ...} naming where."""
    reply = native_refusal(lambda: native.get(url), *words)
    assert set(reply) == {"detail"}


@pytest.mark.parametrize(
    ("headers", "words"),
    [
        pytest.param({"X-Trace": "a\x00b"}, ["header 'X-Trace'", "NUL"], id="nul"),
        pytest.param({"X-Trace": "a\ud800"}, ["header 'X-Trace'", "lone surrogate (U+D800)"], id="surrogate"),
        pytest.param({"Authorization": "Token \x00"}, ["header 'Authorization'", "NUL"], id="credentials"),
    ],
)
def test_nul_and_surrogates_in_headers_are_refused(ann: User, headers: dict[str, str], words: list[str]) -> None:
    """Header values are checked too (and never echoed: they may be credentials)."""
    client = Client(headers={"Authorization": f"Token {token(ann)}", **headers})
    reply = native_refusal(lambda: client.get(JOBS), *words)
    assert "\x00" not in reply["detail"] and "Token" not in reply["detail"]


def test_ordinary_unicode_in_urls_and_headers_passes(native: Client, job_id: str) -> None:
    """UTF-8 query values and headers, and '%' itself, are not hostile."""
    assert native.get(JOBS, {"name": "café ☃ 😀"}, headers={"X-Trace": "ascii"}).status_code == 200
    # HTTP headers travel as latin-1: a non-UTF-8 byte there (a stray cookie) is no reason to refuse.
    assert native.get(JOBS, headers={"X-Trace": "caf\xe9"}).status_code == 200
    assert native.get(f"{JOBS}?name=100%25").status_code == 200
    assert native.get(f"{JOBS}{job_id}/").status_code == 200


# ---- form and multipart bodies -------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "words"),
    [
        pytest.param("key=k&task_name=examples.noop&kwargs.a%00=1", ['"kwargs.a\\u0000"', "NUL"], id="nul-in-name"),
        pytest.param("key=k&task_name=examples.noop&kwargs.a=1%00", ['"kwargs.a"', "NUL"], id="nul-in-value"),
        pytest.param("key=k%ED%A0%80&task_name=examples.noop", ['"key"', "lone surrogate (U+D800)"], id="surrogate"),
        pytest.param("key=caf%E9&task_name=examples.noop", ['"key"', "not valid utf-8"], id="latin-1"),
    ],
)
def test_form_bodies_with_unstorable_text_are_refused(native: Client, body: str, words: list[str]) -> None:
    """x-www-form-urlencoded fields are checked after percent-decoding, before Django replaces bad bytes."""
    send = lambda: native.post(KEYED, body, content_type="application/x-www-form-urlencoded")  # noqa: E731
    native_refusal(send, "Form parse error", *words)


def test_multipart_fields_with_nul_are_refused(native: Client) -> None:
    """multipart/form-data field values and names with NUL: 400 naming the field."""
    send = lambda: native.post(KEYED, {"key": "k", "task_name": "examples.noop", "kwargs.a": "1\x00"})  # noqa: E731
    native_refusal(send, "Multipart form parse error", '"kwargs.a"', "NUL")


def test_form_bodies_still_work(native: Client) -> None:
    """An ordinary form submission of a keyed job is accepted."""
    body = urlencode({"key": "café", "task_name": "examples.noop", "kwargs.a": "1"})
    response = native.post(KEYED, body, content_type="application/x-www-form-urlencoded")
    assert response.status_code == 201, response.content


# ---- paging ---------------------------------------------------------------------------------


@pytest.mark.parametrize("url", [JOBS, "{job}/actions/", "/api/v1/coordinator-actions/", KEYED, "/api/v1/dataset-events/"])
@pytest.mark.parametrize(
    ("params", "name", "words"),
    [
        pytest.param({"limit": "-1"}, "limit", ["0 or more", "'-1'"], id="negative-limit"),
        pytest.param({"limit": "ten"}, "limit", ["0 or more", "'ten'"], id="non-numeric-limit"),
        pytest.param({"limit": "0"}, "limit", ["1 or more"], id="zero-limit"),
        pytest.param({"offset": "-5"}, "offset", ["0 or more", "'-5'"], id="negative-offset"),
        pytest.param({"offset": "1e3"}, "offset", ["0 or more"], id="non-numeric-offset"),
        pytest.param({"offset": HUGE}, "offset", ["at most 2147483647"], id="huge-offset"),
    ],
)
def test_bad_paging_parameters_are_refused_by_name(
    native: Client, job_id: str, url: str, params: dict[str, str], name: str, words: list[str]
) -> None:
    """Every /api/v1/ list: a negative, zero (limit) or non-numeric limit/offset is a 400 {"<name>": [...]}."""
    reply = native_refusal(lambda: native.get(url.format(job=JOBS + job_id), params), *words)
    assert list(reply) == [name] and isinstance(reply[name], list)


def test_good_paging_parameters_and_the_cap(native: Client, job_id: str) -> None:
    """Empty values mean the defaults; a limit above 1000 is capped (documented), not refused."""
    page = native.get(f"{JOBS}{job_id}/actions/", {"limit": "2", "offset": "1"}).json()
    assert [a["number"] for a in page["results"]] == [2, 3]
    assert native.get(JOBS, {"limit": "", "offset": ""}).status_code == 200
    assert native.get(JOBS, {"limit": HUGE}).status_code == 200


@pytest.mark.parametrize(
    ("path", "params", "name"),
    [
        pytest.param("jobs", {"jobtype": "coord", "offset": "-1"}, "offset", id="jobs-offset"),
        pytest.param("jobs", {"jobtype": "coord", "len": "-5"}, "len", id="jobs-len"),
        pytest.param("jobs", {"jobtype": "coord", "len": "x"}, "len", id="jobs-len-not-a-number"),
        pytest.param("job/{job}", {"show": "info", "offset": "-1", "len": "5"}, "offset", id="info-offset"),
        pytest.param("job/{job}", {"show": "info", "len": "1.5"}, "len", id="info-len"),
        pytest.param("job/{job}", {"show": "log", "len": "-1"}, "len", id="log-len"),
        pytest.param("job/{job}", {"show": "log", "offset": HUGE}, "offset", id="log-offset-huge"),
    ],
)
def test_oozie_paging_parameters_must_be_whole_numbers(
    oozie: Client, job_id: str, path: str, params: dict[str, str], name: str
) -> None:
    """/oozie/: offset and len negative or not numbers are E0303 naming the parameter."""
    oozie_refusal(lambda: oozie.get(f"/oozie/v2/{path.format(job=job_id)}", params), "E0303", f"[{name}]", "whole number")


def test_oozie_paging_keeps_its_tolerances(oozie: Client, job_id: str) -> None:
    """offset=0 reads as 1 and a len above the cap (5,000) is capped, the answer's len saying so (ADR 0013)."""
    page = oozie.get("/oozie/v2/jobs", {"jobtype": "coord", "offset": "0", "len": "9999"}).json()
    assert (page["offset"], page["len"], page["total"]) == (1, 5000, 1)


# ---- hostile input on the Oozie API -----------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "words"),
    [
        pytest.param("/oozie/v2/job/a%00b", ["[path]", "/oozie/v2/job/a%00b", "NUL"], id="job-id-nul"),
        pytest.param("/oozie/v2/job/a%00b@1", ["[path]", "NUL"], id="action-id-nul"),
        pytest.param("/oozie/v1/job/a%ED%A0%80", ["[path]", "lone surrogate (U+D800)"], id="job-id-surrogate"),
        pytest.param("/oozie/v2/jobs?jobtype=coord&filter=user%3Da%00", ["[filter]", "user=a%00", "NUL"], id="filter-nul"),
        pytest.param("/oozie/v2/jobs?jobtype=coord&filter=user%3D%ED%A0%80", ["[filter]", "lone surrogate"],
                     id="filter-surrogate"),
        pytest.param("/oozie/v2/jobs?jobtype=coord&filter=user%3D%FF", ["[filter]", "not valid utf-8"], id="filter-latin-1"),
        pytest.param("/oozie/v2/admin/status?timezone=%00", ["[timezone]", "NUL"], id="anonymous-resource-too"),
    ],
)
def test_oozie_urls_with_nul_or_surrogates_are_e0303(oozie: Client, url: str, words: list[str]) -> None:
    """Under /oozie/ the refusal carries Oozie's headers: E0303 naming the parameter (or path) and the problem."""
    oozie_refusal(lambda: oozie.get(url), "E0303", *words)


def test_oozie_put_with_nul_in_the_change_value(oozie: Client, job_id: str) -> None:
    """PUT ...?action=change&value=... with a NUL: E0303, nothing queued."""
    oozie_refusal(lambda: oozie.put(f"/oozie/v2/job/{job_id}?action=change&value=concurrency%3D1%00"), "E0303", "[value]", "NUL")


def test_oozie_headers_with_nul_are_e0303(ann: User) -> None:
    """A header with NUL under /oozie/: E0303 naming the header, its value not echoed."""
    client = Client(headers={"Authorization": basic(ann), "X-Trace": "\x00secret"})
    message = oozie_refusal(lambda: client.get("/oozie/v2/jobs"), "E0303", "[X-Trace header]", "NUL")
    assert "secret" not in message


# ---- integers beyond what a column holds -------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "words"),
    [
        pytest.param(f"concurrency={HUGE}", ["concurrency", "between -1 (unlimited) and 2147483647"], id="huge-concurrency"),
        pytest.param("concurrency=2147483648", ["between -1 (unlimited) and 2147483647"], id="concurrency-just-beyond"),
        pytest.param("concurrency=-2", ["between -1 (unlimited) and 2147483647"], id="concurrency-below"),
        pytest.param("concurrency=٣", ["must be an integer"], id="non-ascii-digit"),
        pytest.param("endtime=99999-01-01T00:00Z", ["endtime=99999-01-01T00:00Z"], id="year-99999"),
        pytest.param("pausetime=99999-01-01T00:00Z", ["pausetime=99999-01-01T00:00Z"], id="pause-year-99999"),
    ],
)
def test_change_values_out_of_range_are_refused(
    native: Client, oozie: Client, job_id: str, value: str, words: list[str]
) -> None:
    """-change values a column cannot hold: 400 on the native API, E1015 on Oozie's; nothing queued."""
    native_refusal(lambda: native.post(f"{JOBS}{job_id}/change/", {"value": value}, content_type="application/json"), *words)
    oozie_refusal(lambda: oozie.put(f"/oozie/v2/job/{job_id}?{urlencode({'action': 'change', 'value': value})}"),
                  "E1015", *words)


@pytest.mark.parametrize(
    ("rerun_type", "scope", "words"),
    [
        pytest.param("action", "1-99999999999999999", ["action numbers go from 1 to 2147483647"], id="huge-range"),
        pytest.param("action", HUGE, ["action numbers go from 1 to 2147483647"], id="huge-number"),
        pytest.param("action", "2147483648", ["action numbers go from 1 to 2147483647"], id="just-beyond"),
        pytest.param("action", "9" * 5000, ["action numbers go from 1 to 2147483647"], id="5000-digits"),
        pytest.param("date", "2026-01-01T00:00Z::99999-01-01T00:00Z", ["99999-01-01T00:00Z"], id="year-99999"),
    ],
)
def test_rerun_scopes_out_of_range_are_refused(
    native: Client, oozie: Client, job_id: str, rerun_type: str, scope: str, words: list[str]
) -> None:
    """Rerun scopes naming numbers beyond 32 bits or years beyond 9999: 400 / E1018, nothing queued."""
    body = {"type": rerun_type, "scope": scope}
    if len(scope) <= 4096:  # the native serializer's own limit answers longer scopes
        native_refusal(lambda: native.post(f"{JOBS}{job_id}/rerun/", body, content_type="application/json"), *words)
    oozie_refusal(lambda: oozie.put(f"/oozie/v2/job/{job_id}?{urlencode({'action': 'coord-rerun', **body})}"),
                  "E1018", *words)


def test_dryrun_and_keyed_job_integers_are_bounded(native: Client, oozie: Client, job_id: str) -> None:
    """max_actions, max_retries and Oozie's dry-run len beyond their bounds: 400 naming the field / E0303."""
    dryrun = {"definition": coordinator_xml(), "properties": window(), "max_actions": int(HUGE)}
    native_refusal(post_json(native, f"{JOBS}dryrun/", json.dumps(dryrun)), "max_actions")
    keyed = {"key": "k", "task_name": "examples.noop", "max_retries": int(HUGE)}
    native_refusal(post_json(native, KEYED, json.dumps(keyed)), "max_retries")
    oozie_refusal(lambda: oozie.put(f"/oozie/v2/job/{job_id}?action=dryrun&len={HUGE}"), "E0303", "[len]")
    oozie_refusal(lambda: oozie.put(f"/oozie/v2/job/{job_id}?action=dryrun&len=-3"), "E0303", "[len]")


def with_controls(controls: str) -> str:
    """The test coordinator with these <controls>."""
    return coordinator_xml().replace("<action>", f"<controls>{controls}</controls><action>")


@pytest.mark.parametrize(
    ("definition", "properties", "words"),
    [
        pytest.param(with_controls(f"<throttle>{HUGE}</throttle>"), {}, ["throttle", "out of range"], id="throttle"),
        pytest.param(with_controls(f"<concurrency>{HUGE}</concurrency>"), {}, ["concurrency", "out of range"],
                     id="concurrency"),
        pytest.param(with_controls("<timeout>2147483648</timeout>"), {}, ["timeout", "out of range"], id="timeout"),
        pytest.param(coordinator_xml(), {"oozie.job.acl": "ann," * 400}, ["oozie.job.acl", "at most 1024"], id="long-acl"),
        pytest.param(coordinator_xml(frequency=",".join(map(str, range(31))) + " * * * *"), {}, ["frequency", "at most 64"],
                     id="long-cron"),
    ],
)
def test_submissions_a_column_cannot_hold_are_refused(
    native: Client, oozie: Client, tmp_path: Path, definition: str, properties: dict[str, str], words: list[str]
) -> None:
    """Controls beyond 32 bits and values longer than their column: 400 (native) and E1003 (Oozie); no job stored."""
    body = {"definition": definition, "properties": {**window(), **properties}}
    native_refusal(post_json(native, JOBS, json.dumps(body)), *words)
    (tmp_path / "coordinator.xml").write_text(definition)
    configuration = {**window(), **properties, "oozie.coord.application.path": f"file://{tmp_path}"}
    send = lambda: oozie.post("/oozie/v2/jobs", serialize_hadoop_configuration(configuration),  # noqa: E731
                              content_type="application/xml;charset=UTF-8")
    oozie_refusal(send, "E1003", *words)


@pytest.mark.parametrize("escape", ["x=a\\u0000b", "x\\u0000=b"], ids=["in-value", "in-name"])
def test_nul_escapes_in_properties_text_are_refused(native: Client, escape: str) -> None:
    """`.properties` text decodes \\u0000 escapes into NUL: refused before storing (PostgreSQL would refuse it)."""
    w = window()
    body = {"definition": coordinator_xml(), "configuration": f"start={w['start']}\nend={w['end']}\n{escape}"}
    native_refusal(post_json(native, JOBS, json.dumps(body)), "NUL", "property")


def test_relative_created_time_before_year_1_is_e0420(oozie: Client) -> None:
    """startCreatedTime=-999999d reaches before year 1: E0420, not an OverflowError."""
    oozie_refusal(lambda: oozie.get("/oozie/v2/jobs", {"jobtype": "coord", "filter": "startCreatedTime=-999999d"}),
                  "E0420", "before year 1")


# ---- fuzzing with NUL and lone surrogates --------------------------------------------------------

FUZZ = settings(max_examples=60, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
hostile_text = st.one_of(
    st.text(st.characters(codec=None), max_size=12),
    st.sampled_from(["\x00", "a\ud800", "\udfff", "\ud83d\ude00", "é", "k"]),
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | hostile_text,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(hostile_text, children, max_size=3),
    max_leaves=8,
)


def test_native_posts_never_answer_500(native: Client, job_id: str) -> None:
    """Arbitrary JSON with NUL and lone surrogates in strings and keys to every native POST: < 500, nothing half-written."""
    endpoints = st.sampled_from([KEYED, JOBS, f"{JOBS}dryrun/", f"{JOBS}{job_id}/change/", f"{JOBS}{job_id}/rerun/",
                                 "/api/v1/dataset-events/"])
    fields = st.sampled_from(["key", "task_name", "kwargs", "args", "definition", "properties", "configuration", "value",
                              "concurrency", "type", "scope", "uri", "max_actions", "max_retries"])

    @FUZZ
    @given(url=endpoints, body=st.dictionaries(fields | hostile_text, json_values, max_size=4))
    def check(url: str, body: dict[str, Any]) -> None:
        before = rows()
        raw = json.dumps(body).encode("utf-8")  # surrogates travel as \\udxxx escapes, as a hostile client sends them
        response = native.post(url, raw, content_type="application/json")
        assert response.status_code < 500, response.content[:300]
        if response.status_code >= 400:
            assert rows() == before

    check()


def test_native_urls_never_answer_500(native: Client, job_id: str) -> None:
    """Paths and query strings with NUL, lone surrogates and odd numbers on every native GET: < 500."""
    bases = st.sampled_from([JOBS, f"{JOBS}{job_id}/actions/", "/api/v1/coordinator-actions/", KEYED, "/api/v1/dataset-events/"])
    names = st.sampled_from(["limit", "offset", "key", "status", "name", "job", "order", "created_after", "nominal_after"])
    values = hostile_text | st.integers(min_value=-(10**30), max_value=10**30).map(str)

    @FUZZ
    @given(base=bases, ident=st.none() | hostile_text.filter(lambda t: "/" not in t and t not in (".", "..")),
           params=st.dictionaries(names, values, max_size=3))
    def check(base: str, ident: str | None, params: dict[str, str]) -> None:
        path = base if ident is None else f"{base}{quote(ident, safe='@', errors='surrogatepass')}/"
        response = native.get(f"{path}?{urlencode(params, errors='surrogatepass')}")
        assert response.status_code < 500, response.content[:300]

    check()


def test_every_native_operation_in_the_schema_refuses_hostile_text(native: Client, job_id: str) -> None:
    """For every operation /api/schema/ lists: NUL or a lone surrogate in each path parameter, each query parameter
    and each body property (JSON, form, multipart) is a 400 naming the problem, and nothing is written."""
    schema = native.get("/api/schema/", {"format": "json"}).json()
    components = schema["components"]["schemas"]
    operations = [(path, method, operation) for path, item in schema["paths"].items() if path.startswith("/api/v1/")
                  for method, operation in item.items() if method in ("get", "post")]
    assert len(operations) >= 15
    sent = 0
    for path, method, operation in operations:
        send = getattr(native, method)
        parameters = operation.get("parameters", [])
        fill = {p["name"]: job_id for p in parameters if p["in"] == "path"}
        for encoded, word in (("a%00b", "NUL"), ("a%ED%A0%80b", "lone surrogate (U+D800)")):
            for name in fill:
                url = path.format(**{**fill, name: encoded})
                native_refusal(lambda: send(url), "URL path", word)  # noqa: B023 - called at once
                sent += 1
            for name in (p["name"] for p in parameters if p["in"] == "query"):
                url = f"{path.format(**fill)}?{name}={encoded}"
                native_refusal(lambda: send(url), f"query parameter '{name}'", word)  # noqa: B023
                sent += 1
        content = operation.get("requestBody", {}).get("content", {})
        if "application/json" not in content:
            continue
        ref = content["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
        url = path.format(**fill)
        for prop in components[ref].get("properties", {}):
            for value, word in (("a\x00b", "NUL"), ("\ud800", "lone surrogate (U+D800)")):
                raw = json.dumps({prop: value}).encode()
                native_refusal(lambda: send(url, raw, content_type="application/json"), word)  # noqa: B023
                form = urlencode({prop: value}, errors="surrogatepass")
                native_refusal(lambda: send(url, form, content_type="application/x-www-form-urlencoded"), word)  # noqa: B023
                sent += 2
            native_refusal(lambda: send(url, {prop: "a\x00b"}), "NUL")  # noqa: B023 - multipart
            sent += 1
    assert sent > 150


# ---- security boundaries (SECURITY.md; in depth: tests/security/) -------------------------------
# One section per promise: each hostile request is refused by name and changes nothing.


# -- 1 and 2: tasks users name: one allow-list, internal tasks never, the examples not by default --


@pytest.mark.parametrize("task", ["statusservice.tick", "xcommands.service.purge", "celery.backend_cleanup",
                                  "workflows.notify", "coordinators.CoordKillXCommand"])
def test_internal_tasks_are_refused_by_name_under_a_star(native: Client, settings: Any, task: str) -> None:
    """ALLOWED_TASKS=*: an internal task as a keyed job or a `task:` app-path is a 400 naming it; nothing stored."""
    settings.ALLOWED_TASKS = ["*"]
    native_refusal(post_json(native, KEYED, json.dumps({"key": "k", "task_name": task})), task, "internal")
    body = json.dumps({"definition": coordinator_xml(task=task), "properties": window()})
    native_refusal(post_json(native, JOBS, body), task, "internal")


def test_example_tasks_are_refused_by_default(native: Client, settings: Any, tmp_path: Path) -> None:
    """The probe's write-anywhere request: under the default list, examples.listing is a 400 naming the setting."""
    settings.ALLOWED_TASKS = ["actions.*"]
    body = {"key": "k", "task_name": "examples.listing", "args": ["x", f"file://{tmp_path}/evil.pth"]}
    native_refusal(post_json(native, KEYED, json.dumps(body)), "examples.listing", "ALLOWED_TASKS")
    assert not (tmp_path / "evil.pth").exists()


# -- 3: paths: roots compare what is opened -------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "words"),
    [
        pytest.param("file://localhost/etc/passwd", ["no host"], id="file-host-form"),
        pytest.param("FILE:///etc/passwd", ["lower case"], id="upper-case-protocol"),
        pytest.param("file:///tmp/%2e%2e/etc/passwd", ["%-escaped"], id="escaped-dot-dot"),
        pytest.param("../../etc", ["relative path"], id="relative"),
        pytest.param("file:///etc", ["outside the application roots"], id="outside"),
    ],
)
def test_application_paths_outside_or_ambiguous_are_refused(native: Client, path: str, words: list[str]) -> None:
    """A coordinator submitted by path: every form fsspec would read elsewhere is a 400 naming the problem."""
    body = json.dumps({"app_path": path, "properties": window()})
    native_refusal(post_json(native, JOBS, body), *words)


# -- 4: guessing credentials is throttled ----------------------------------------------------------


def test_guessing_tokens_locks_the_address_even_for_the_right_token(ann: User, settings: Any) -> None:
    """AUTH_FAILURE_LIMIT wrong tokens, then the right one: 429 with Retry-After; nothing about the token said."""
    settings.AUTH_FAILURE_LIMIT = 3
    for guess in range(3):
        assert Client(headers={"Authorization": f"Token wrong{guess}"}).get(JOBS).status_code == 401
    response = Client(headers={"Authorization": f"Token {token(ann)}"}).get(JOBS)
    assert response.status_code == 429 and int(response["Retry-After"]) > 0


# -- 5: outbound requests: an allow-list -----------------------------------------------------------


@pytest.mark.parametrize("url", ["http://169.254.169.254/latest/meta-data/", "http://127.0.0.1:6379/", "gopher://x/"])
def test_notification_urls_to_unlisted_hosts_are_refused(native: Client, settings: Any, url: str) -> None:
    """A notification URL to a host OUTBOUND_ALLOWED_HOSTS does not list (metadata, loopback, other schemes): 400."""
    settings.OUTBOUND_ALLOWED_HOSTS = ["hooks.example.com"]
    body = json.dumps({"definition": coordinator_xml(),
                       "properties": {**window(), "oozie.wf.workflow.notification.url": url}})
    native_refusal(post_json(native, JOBS, body), "oozie.wf.workflow.notification.url")


# -- 6: secrets in properties: masked for everyone but the owner and admins --------------------------


def test_another_user_never_reads_a_secret_property(ann: User) -> None:
    """bob reads ann's job: db.password and a value built from it are masked; ann sees them."""
    secret = "s3cr3t-Pa55word"
    job = submit_coordinator(coordinator_xml(), {**window(), "db.password": secret, "jdbc": f"db://u:{secret}@h"},
                             owner=ann, start=False)
    bob = user("bob")
    for url in (f"{JOBS}{job.id}/", f"/oozie/v2/job/{job.id}?show=info", f"/oozie/v2/job/{job.id}?show=definition"):
        shown = Client(headers={"Authorization": f"Token {token(bob)}"}).get(url)
        assert shown.status_code == 200 and secret not in shown.content.decode(), url
    assert secret in Client(headers={"Authorization": f"Token {token(ann)}"}).get(f"{JOBS}{job.id}/").content.decode()


# -- 7: Flower never runs without a login by accident --------------------------------------------------


@pytest.mark.parametrize("basic_auth", ["", "   ", "no-colon-here", "ops-only:"])
def test_flower_refuses_an_empty_or_malformed_login(tmp_path: Path, basic_auth: str) -> None:
    """FLOWER_BASIC_AUTH empty or malformed: the launcher refuses to start Flower, without echoing the value."""
    with pytest.raises(LauncherError) as refused_start:
        flower_child(python="python", port=5555, var_dir=tmp_path, basic_auth=basic_auth)
    assert "FLOWER_BASIC_AUTH" in str(refused_start.value)
    assert basic_auth.strip() == "" or basic_auth not in str(refused_start.value)
