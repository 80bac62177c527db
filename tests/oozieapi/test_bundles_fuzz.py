"""Fuzzing the Oozie endpoints on bundles: any parameters, filters and submissions get a 4xx with Oozie's headers, never a 500, and a refusal writes nothing."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote, urlencode

import pytest
from django.contrib.auth.models import User
from django.test import Client
from hypothesis import given
from hypothesis import strategies as st

from bundles.models import BundleAction, BundleJob
from coordinators.models import CoordinatorJob
from tests.bundles.api.factories import bundle_app, stored_bundle
from tests.bundles.factories import window
from tests.oozieapi.client import basic
from tests.oozieapi.test_fuzz import FUZZ, _escape, assert_oozie_answer, hostile, text, values
from xcommands.models import Command

pytestmark = pytest.mark.django_db

PARAMETERS = ("action", "show", "offset", "len", "filter", "timezone", "value", "coord-scope", "date-scope", "refresh",
              "nocleanup", "jobtype", "logfilter", "order")
bundle_values = st.one_of(
    values,
    st.sampled_from(["bundle-rerun", "coord-rerun", "rerun", "c0", "c1,c0", " ,", "bundle", "pausetime=", "endtime=",
                     "pausetime=2099-01-01T00:00Z", "endtime=2001-01-01T00:00Z;pausetime=", "2026-01-01T00:00Z::2026-01-02T00:00Z",
                     "99999-01-01T00:00Z", "2026-01-01T00:00Z::", "status=PREPPAUSED", "status=IGNORED", "id=" + "9" * 300]),
)
query = st.dictionaries(st.sampled_from(PARAMETERS), bundle_values, max_size=6)
# Verbs Oozie clients send, with plausible and hostile values: most reach the domain's checks.
verbs = st.fixed_dictionaries(
    {"action": st.sampled_from(["start", "suspend", "resume", "kill", "change", "rerun", "bundle-rerun", "dryrun"])},
    optional={name: bundle_values for name in ("value", "coord-scope", "date-scope", "refresh", "nocleanup")},
)


def rows() -> tuple[int, int, int, int]:
    """What a refusal must not change: bundles, their actions, coordinator jobs, commands."""
    return BundleJob.objects.count(), BundleAction.objects.count(), CoordinatorJob.objects.count(), Command.objects.count()


@pytest.fixture
def client(ann: User) -> Client:
    return Client(headers={"Authorization": basic(ann)})


def test_bundle_job_endpoint(client: Client, ann: User) -> None:
    """GET and PUT /oozie/v{1,2}/job/{id} on a real bundle (two coordinators with actions), missing and malformed -B ids."""
    bundle = stored_bundle(ann, 2, 5)
    ids = st.one_of(st.just(bundle.id), st.just("0000099-260101000000000-B"), hostile.map(lambda h: f"{h}-B"),
                    text.filter(lambda t: "/" not in t).map(lambda t: f"{t}-B"))

    @FUZZ
    @given(job=st.one_of(st.just(bundle.id), ids), params=st.one_of(verbs, query), method=st.sampled_from(["get", "put", "put"]),
           version=st.sampled_from(["v1", "v2"]))
    def check(job: str, params: dict[str, str], method: str, version: str) -> None:
        before = rows()
        url = f"/oozie/{version}/job/{quote(job, errors='surrogatepass')}?{urlencode(params, errors='surrogatepass')}"
        response = getattr(client, method)(url)
        assert_oozie_answer(response)
        if response.status_code >= 400:
            assert rows() == before

    check()


def test_bundle_list(client: Client, ann: User) -> None:
    """GET /oozie/v2/jobs?jobtype=bundle with any filter, offset and len."""
    stored_bundle(ann, 1, 1)

    @FUZZ
    @given(params=query)
    def check(params: dict[str, str]) -> None:
        params = {**params, "jobtype": "bundle"}
        assert_oozie_answer(client.get(f"/oozie/v2/jobs?{urlencode(params, errors='surrogatepass')}"))

    check()


def test_bundle_submissions(client: Client, tmp_path: Path) -> None:
    """POST /oozie/v2/jobs naming oozie.bundle.application.path with arbitrary properties: a code, or one bundle stored."""
    good = bundle_app(tmp_path)
    good_values = {"oozie.bundle.application.path": str(good), **window()}
    property_values = st.one_of(text, st.just(str(good)), st.just(f"file://{tmp_path}"), st.just(str(tmp_path / "missing.xml")),
                                st.just("ann"), st.just("bob"), st.just(window()["start"]), st.just("x" * 2000))
    # A valid submission (bundle path, start, end) with some properties replaced or added, hostile or not.
    changes = st.dictionaries(
        st.sampled_from([*good_values, "oozie.coord.application.path", "user.name", "oozie.job.acl", "oozie.bundle.external.id",
                         "x"]),
        property_values, max_size=3,
    )
    configurations = changes.map(lambda props: "<configuration>" + "".join(
        f"<property><name>{n}</name><value>{_escape(v)}</value></property>" for n, v in {**good_values, **props}.items()
    ) + "</configuration>")

    @FUZZ
    @given(body=configurations, action=st.sampled_from(["", "", "start", "start", "dryrun", "kill", "\ud800"]))
    def check(body: str, action: str) -> None:
        before = rows()
        query_string = urlencode({"action": action}, errors="surrogatepass")
        response = client.post(f"/oozie/v2/jobs?{query_string}", body.encode("utf-8", "surrogatepass"), content_type="application/xml")
        assert_oozie_answer(response)
        if response.status_code != 201:
            assert rows() == before

    check()
