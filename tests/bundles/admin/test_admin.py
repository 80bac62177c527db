"""The bundles admin: a filtered list, bulk verbs through bundles.services, a read-only page with a shared timeline."""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.admin.utils import quote
from django.contrib.auth.models import User
from django.db import connection
from django.db.models import Count
from django.test import Client
from django.test.utils import CaptureQueriesContext

import bundles.services as services
from bundles.choices import BundleStatus as B
from bundles.models import BundleAction, BundleJob
from coordinators.choices import ActionStatus
from coordinators.choices import JobStatus as J
from coordinators.models import CoordinatorAction, CoordinatorJob
from kernel.display import exact_time, status_words
from tests.bundles.factories import minute
from tests.support.bundles import settle
from tests.support.users import staff
from xcommands.models import Command

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("in_process_engine")]
Make = Callable[..., BundleJob]

BUNDLES = "/admin/bundles/bundlejob/"


def page_of(bundle: BundleJob) -> str:
    return f"{BUNDLES}{quote(bundle.pk)}/change/"


def bulk(client: Client, verb: str, *bundles: BundleJob) -> str:
    """Run a bulk verb from the list on these bundles; the page it lands on."""
    response = client.post(
        BUNDLES, {"action": f"{verb}_bundles", "_selected_action": [b.pk for b in bundles]}, follow=True
    )
    assert response.status_code == 200
    return response.content.decode()


def results(client: Client, query: dict[str, str] | None = None) -> str:
    """The list's result table (not its filters, which name every app)."""
    page = client.get(BUNDLES, query or {}).content.decode()
    match = re.search(r'<table id="result_list">.*?</table>', page, re.S)
    return match.group(0) if match else ""


def status_of(bundle: BundleJob) -> str:
    return BundleJob.objects.get(pk=bundle.pk).status


BUNDLE_OPERATOR = ("bundles.view_bundlejob", "bundles.change_bundlejob")


# --- the list -----------------------------------------------------------------------------


def test_list_shows_short_ids_statuses_and_coordinators_done(operator: Client, make_bundle: Make) -> None:
    """One row per bundle: short id (full id in its title), name, status, kick-off, coordinators ended/total, created."""
    running = make_bundle(name="nightly-load")
    waiting = make_bundle(name="later", start=False)
    page = operator.get(BUNDLES).content.decode()
    assert f'title="{running.pk}">{running.pk.split("-")[0]}<' in page
    assert "nightly-load" in page and "later" in page
    assert ">0/2<" in page and ">not started<" in page and ">at once<" in page
    bulk(operator, "kill", running)
    settle()
    assert ">2/2<" in operator.get(BUNDLES).content.decode()
    assert status_of(waiting) == B.PREP


def test_list_filters_and_search(operator: Client, make_bundle: Make) -> None:
    """Filters by status, owner, app name, created and kick-off; search by id (or its sequence), name and owner."""
    nightly = make_bundle(name="nightly-load")
    other = make_bundle(name="hourly-export", owner=User.objects.create_user("bob"), start=False)
    page = results(operator, {"status__exact": "RUNNING"})
    assert "nightly-load" in page and "hourly-export" not in page
    for query, shown, hidden in [
        ({"q": "nightly"}, nightly, other),
        ({"q": other.pk}, other, nightly),
        ({"q": other.pk.split("-")[0]}, other, nightly),
        ({"q": "bob"}, other, nightly),
        ({"owner__id__exact": str(other.owner_id)}, other, nightly),
        ({"app_name": "nightly-load"}, nightly, other),
    ]:
        page = results(operator, query)
        assert shown.app_name in page and hidden.app_name not in page, query
    for query in ({"created_at__gte": "2000-01-01 00:00:00+00:00"}, {"kick_off_time__isnull": "True"}):
        assert operator.get(BUNDLES, query).status_code == 200
    filters = operator.get(BUNDLES).content.decode()
    assert all(f"By {name}" in filters for name in ("status", "owner", "app name", "created at", "kick off time"))


def test_staff_without_bundle_permissions_cannot_see_bundles(make_bundle: Make) -> None:
    """Django's model permissions apply: staff without bundle permissions get 403."""
    bundle = make_bundle(start=False)
    browser = staff("intern")
    assert browser.get(BUNDLES).status_code == 403
    assert browser.get(page_of(bundle)).status_code == 403


# --- bulk verbs ---------------------------------------------------------------------------


def test_suspend_resume_kill_go_through_the_services(
    operator: Client, make_bundle: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each verb is services.control_bundle(bundle, verb, actor=the operator), per bundle; the commands do the work."""
    calls: list[tuple[str, str]] = []
    real = services.control_bundle

    def spy(bundle_id: str, verb: str, *, actor: Any) -> BundleJob:
        calls.append((verb, actor.get_username()))
        return real(bundle_id, verb, actor=actor)

    monkeypatch.setattr(services, "control_bundle", spy)
    first, second = make_bundle(name="first"), make_bundle(name="second")
    assert "Suspend queued for 2 bundle(s)" in bulk(operator, "suspend", first, second)
    settle()
    assert (status_of(first), status_of(second)) == (B.SUSPENDED, B.SUSPENDED)
    assert "Resume queued for 1 bundle(s)" in bulk(operator, "resume", first)
    assert "Kill queued for 1 bundle(s)" in bulk(operator, "kill", second)
    settle()
    assert (status_of(first), status_of(second)) == (B.RUNNING, B.KILLED)
    assert set(CoordinatorJob.objects.filter(bundle_id=second.pk).values_list("status", flat=True)) == {J.KILLED}
    assert calls == [("suspend", "operator"), ("suspend", "operator"), ("resume", "operator"), ("kill", "operator")]


def test_start_queues_prep_bundles_and_refuses_started_ones(operator: Client, make_bundle: Make) -> None:
    """Start goes through services.start_bundle: a PREP bundle starts now, a running one is refused by name."""
    prep, running = make_bundle(name="prep", start=False), make_bundle(name="running")
    page = bulk(operator, "start", prep, running)
    assert "Start queued for 1 bundle(s)" in page and f"Start refused for {running.pk}: cannot start" in page
    settle()
    assert status_of(prep) == B.RUNNING


def test_refusals_are_reported_per_bundle_and_the_others_go_through(operator: Client, make_bundle: Make) -> None:
    """A status that makes the verb a no-op is skipped, naming the bundle and its status; the rest of the selection is queued."""
    running, killed = make_bundle(name="running"), make_bundle(name="killed")
    bulk(operator, "kill", killed)
    settle()
    page = bulk(operator, "resume", running)
    assert f"skipped for 1 bundle(s) whose status makes it a no-op: {running.pk} (it is RUNNING)" in page
    page = bulk(operator, "kill", running, killed)
    assert "Kill queued for 1 bundle(s)" in page and f"no-op: {killed.pk} (it is KILLED)" in page


def test_others_act_only_on_bundles_they_own_or_are_named_in(make_bundle: Make) -> None:
    """Owner, ACL and job admins (coordinators.change_coordinatorjob) may act; another operator is refused per bundle."""
    carol = staff("carol", *BUNDLE_OPERATOR)
    dave = staff("dave", *BUNDLE_OPERATOR)
    mine = make_bundle(name="mine", owner=User.objects.get(username="carol"))
    shared, theirs = make_bundle(name="shared"), make_bundle(name="theirs")
    BundleJob.objects.filter(pk=shared.pk).update(acl="dave,ops")
    before = Command.objects.count()
    page = bulk(dave, "suspend", shared, theirs)
    assert f"Suspend queued for 1 bundle(s): {shared.pk}" in page
    assert f"Suspend refused for {theirs.pk}: user &#x27;dave&#x27; may not modify job {theirs.pk}" in page
    assert Command.objects.count() == before + 1
    page = bulk(carol, "kill", mine, theirs)
    assert f"Kill queued for 1 bundle(s): {mine.pk}" in page and f"Kill refused for {theirs.pk}" in page
    admin = staff("erin", *BUNDLE_OPERATOR, "coordinators.change_coordinatorjob")
    assert "Kill queued for 1 bundle(s)" in bulk(admin, "kill", theirs)
    viewer = staff("frank", "bundles.view_bundlejob")
    assert 'value="kill_bundles"' not in viewer.get(BUNDLES).content.decode()


# --- a bundle's page ----------------------------------------------------------------------


def test_a_bundles_page_shows_its_fields_and_each_coordinator(operator: Client, make_bundle: Make) -> None:
    """Kick-off, pause, end, status and pending; per coordinator: status, critical, pending verbs, link, progress."""
    bundle = make_bundle(critical=("hourly",), kick_off=minute(-1))
    hourly = CoordinatorJob.objects.get(bundle_id=bundle.pk, app_name="hourly")
    BundleAction.objects.filter(bundle=bundle, coord_name="daily").update(pending=2)
    newest = hourly.actions.order_by("-nominal_time").first()
    assert newest is not None
    page = operator.get(page_of(bundle)).content.decode()
    summary = dict(re.findall(r"<div><dt>(.*?)</dt><dd>(.*?)</dd></div>", page, re.S))
    assert list(summary)[:6] == ["Status", "Pending", "Owner", "Kick-off time", "Pause time", "End time"]
    assert "RUNNING" in summary["Status"] and ">no<" in summary["Pending"] and summary["Owner"] == "ann"
    assert summary["Kick-off time"] == f"{bundle.kick_off_time:%Y-%m-%d %H:%M:%S} UTC"
    assert summary["Pause time"] == "-" and summary["End time"].startswith("none")
    assert "Configuration:" in page and "Definition:" in page and "&lt;bundle-app" in page
    assert "Coordinators (2)" in page
    rows = re.findall(r'<tr class="bundle-coordinator">(.*?)</tr>', page, re.S)
    assert re.findall(r'<span class="coord-name">(\w+)</span>', page) == ["daily", "hourly"]
    daily_row, hourly_row = rows
    assert "critical" in hourly_row and "critical" not in daily_row
    assert '<td class="nowrap pending">2</td>' in daily_row and '<td class="nowrap pending">-</td>' in hourly_row
    assert f'href="/admin/coordinators/coordinatorjob/{quote(hourly.pk)}/change/"' in hourly_row
    counts = dict(hourly.actions.order_by().values_list("status").annotate(n=Count("pk")).values_list("status", "n"))
    for status, n in counts.items():
        assert f"{status_words(status)} {n}</a>" in hourly_row
    assert newest.nominal_time.strftime("%Y-%m-%d %H:%M") in hourly_row
    assert 'name="_save"' not in page
    assert operator.post(page_of(bundle), {"status": "KILLED"}).status_code == 403
    assert status_of(bundle) == B.RUNNING


def test_a_coordinator_that_could_not_be_submitted_shows_why(operator: Client, make_bundle: Make) -> None:
    """A bundle action without a coordinator job shows its planned id, its status and the submission error."""
    bundle = make_bundle()
    action = BundleAction.objects.get(bundle=bundle, coord_name="daily")
    CoordinatorJob.objects.filter(pk=action.coord_job_id).delete()
    BundleAction.objects.filter(pk=action.pk).update(status=J.FAILED, error_message="coordinator 'daily': <no app>")
    page = operator.get(page_of(bundle)).content.decode()
    row = re.findall(r'<tr class="bundle-coordinator">(.*?)</tr>', page, re.S)[0]
    assert "FAILED" in row and f'title="{action.planned_coord_id}: not submitted"' in row and "none yet" in row
    error = re.findall(r'<tr class="bundle-coordinator-error">(.*?)</tr>', page, re.S)
    assert len(error) == 1 and "coordinator &#x27;daily&#x27;: &lt;no app&gt;" in error[0]


def timeline_squares(page: str) -> list[dict[str, Any]]:
    """The squares of the bundle's timeline: status, count, bucket, link and title of each."""
    return [
        {"href": html.unescape(href), "title": html.unescape(title), "status": status, "count": int(count),
         "bucket": int(bucket)}
        for href, title, status, count, bucket in re.findall(
            r'<a class="tg-cell action" href="([^"]*)" title="([^"]*)" aria-label="[^"]*" data-status="(\w+)" '
            r'data-count="(\d+)" data-bucket="(\d+)"', page)
    ]


def test_the_shared_timeline_has_a_row_per_coordinator_on_one_time_axis(operator: Client, make_bundle: Make) -> None:
    """Rows are coordinators, nominal time across on one axis; every action of the range is counted in one square,
    and a square of one action links its page at its tries, titled with the coordinator, number, time and status."""
    bundle = make_bundle({"hourly": "examples.noop", "daily": "examples.noop", "weekly": "examples.noop"})
    actions = CoordinatorAction.objects.filter(job__bundle_id=bundle.pk)
    page = operator.get(page_of(bundle)).content.decode()
    assert page.count('<tr class="timeline-coordinator">') == 3
    found = timeline_squares(page)
    assert sum(s["count"] for s in found) == actions.count()
    action = actions.order_by("nominal_time").first()
    assert action is not None
    single = [s for s in found if s["count"] == 1]
    assert single and all(s["href"].endswith("/change/#tries") for s in single)
    title = f"#{action.number} · {exact_time(action.nominal_time)} · "
    assert any(title in s["title"] for s in found) or any(s["count"] > 1 for s in found)
    assert 'id="range-form"' in page and page.index('id="range-form"') > page.index("</form>")  # not nested


def test_the_timeline_range_reaches_older_actions_and_refuses_a_bad_one(operator: Client, make_bundle: Make) -> None:
    """The timeline opens on the newest nominal times; "first" reaches the oldest action; "all" counts every action;
    coordinators without an action in a range show an empty row; a bad range is a 400 that says why."""
    bundle = make_bundle()
    hourly = CoordinatorJob.objects.get(bundle_id=bundle.pk, app_name="hourly")
    first = hourly.actions.order_by("nominal_time").first()
    assert first is not None
    CoordinatorAction.objects.bulk_create(
        CoordinatorAction(
            id=CoordinatorAction.action_id(hourly.pk, 1000 + n), job=hourly, number=1000 + n,
            nominal_time=first.nominal_time - timedelta(days=30, hours=n), status=ActionStatus.FAILED,
        )
        for n in range(1, 61)
    )
    total = CoordinatorAction.objects.filter(job__bundle_id=bundle.pk).count()
    newest = operator.get(page_of(bundle)).content.decode()
    assert "FAILED" not in {s["status"] for s in timeline_squares(newest)}
    links = dict(re.findall(r'<a href="([^"]*)" id="range-(first|all)"', newest))
    assert all(link.endswith("#bundle-timeline") for link in links)
    by_name = {name: html.unescape(link) for link, name in links.items()}
    oldest = operator.get(page_of(bundle) + by_name["first"]).content.decode()
    assert "FAILED" in {s["status"] for s in timeline_squares(oldest)}
    assert "no action in this range" in oldest  # daily has no action a month back
    whole = operator.get(page_of(bundle) + by_name["all"]).content.decode()
    assert sum(s["count"] for s in timeline_squares(whole)) == total
    for hostile in ({"from": "x"}, {"from": "2026-01-02", "to": "2026-01-01"}, {"to": "9" * 40}):
        response = operator.get(page_of(bundle), hostile)
        assert response.status_code == 400, hostile
        assert 'id="range-error"' in response.content.decode()


def test_a_bundle_page_costs_the_same_queries_for_3_or_50_coordinators(operator: Client, make_bundle: Make) -> None:
    """Coordinators, their progress and the timeline are a fixed number of queries, not one per coordinator."""
    small = make_bundle({f"c{n:02d}": "examples.noop" for n in range(3)}, name="small")
    large = make_bundle({f"c{n:02d}": "examples.noop" for n in range(50)}, name="large")
    assert CoordinatorAction.objects.filter(job__bundle_id=large.pk).count() >= 100
    operator.get(page_of(small))  # warm the session and content-type caches
    counts = []
    for bundle in (small, large):
        with CaptureQueriesContext(connection) as queries:
            response = operator.get(page_of(bundle))
        assert response.status_code == 200
        counts.append(len(queries))
    assert counts[0] == counts[1] <= 12, counts
    assert response.content.decode().count('<tr class="bundle-coordinator">') == 50
    with CaptureQueriesContext(connection) as queries:
        assert operator.get(BUNDLES).status_code == 200
    assert len(queries) <= 8, [q["sql"] for q in queries.captured_queries]
