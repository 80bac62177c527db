"""The batch and job lists: columns, progress bars, why jobs wait, filters, search, a bounded number of queries."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from batches.choices import BatchStatus as B
from batches.choices import JobStatus as J
from batches.models import BatchJob, Collection, Profile
from tests.support.batches import Ingest, MakeBatch
from tests.support.users import staff

pytestmark = [pytest.mark.django_db(transaction=True)]

BATCHES = "/admin/batches/batch/"
JOBS = "/admin/batches/batchjob/"


def results(client: Client, url: str, query: dict[str, str] | None = None) -> str:
    """The list's result table (not its filters)."""
    response = client.get(url, query or {})
    assert response.status_code == 200, response.status_code
    match = re.search(r'<table id="result_list">.*?</table>', response.content.decode(), re.S)
    return match.group(0) if match else ""


def rows(table: str) -> list[str]:
    return re.findall(r"<tr>.*?</tr>", table.split("<tbody>", 1)[-1], re.S)


# --- batches ---------------------------------------------------------------------------------


def test_a_batch_row_shows_its_id_submission_status_and_a_bar_of_its_jobs(operator: Client, make_batch: MakeBatch) -> None:
    """bid0000017 style id, profile, collection, submitter (and owner), type, status, and job counts as a stacked bar."""
    statuses = [J.COMPLETED] * 5 + [J.FAILED] * 2 + [J.DOWNLOADING, J.PENDING, J.HELD]
    batch = make_batch(statuses, submitter="depositor")
    table = results(operator, BATCHES)
    assert f"bid{batch.pk:07d}" in table and "depositor" in table and "as ann" in table
    assert "manifest-of-manifests" in table and ">processing<" in table
    widths = dict(re.findall(r'class="segment segment-([a-z-]+)" style="width:([\d.]+)%', table))
    assert widths == {"completed": "50.0", "failed": "20.0", "in-stages": "10.0", "waiting": "10.0", "held": "10.0"}
    assert re.search(r'class="figures">5/10 <span class="failed">2 failed</span>', table)
    assert 'title="completed 5, failed 2, in stages 1, waiting 1, held 1"' in table


def test_a_batch_without_jobs_says_so(operator: Client, make_batch: MakeBatch) -> None:
    """A pending or held batch has no jobs yet: no empty bar."""
    make_batch([], status=B.HELD)
    assert "no jobs yet" in results(operator, BATCHES)


def test_batch_filters_and_search(operator: Client, make_batch: MakeBatch, ingest: Ingest) -> None:
    """Status, profile, collection and created filter; search finds an id (bid0000017 or 17), a submitter, a payload URL."""
    other = Collection.objects.create(name="letters")
    letters = Profile.objects.create(name="letters", collection=other, task="tests.batches.flaky")
    failed = make_batch([J.FAILED], status=B.FAILED, submitter="alice", payload_url="file:///deposits/maps/batch.checkm")
    held = make_batch([], status=B.HELD, submitter="bob", profile=letters, collection=other)
    tag = {b.pk: f"bid{b.pk:07d}" for b in (failed, held)}

    def shown(query: dict[str, str]) -> set[int]:
        table = results(operator, BATCHES, query)
        return {pk for pk, text in tag.items() if text in table}

    assert shown({}) == {failed.pk, held.pk}
    assert shown({"status__exact": "failed"}) == {failed.pk}
    assert shown({"profile__id__exact": str(letters.pk)}) == {held.pk}
    assert shown({"collection__id__exact": str(ingest.collection.pk)}) == {failed.pk}
    assert shown({"created_at__gte": (timezone.now() - timedelta(days=1)).isoformat()}) == {failed.pk, held.pk}
    assert shown({"created_at__gte": (timezone.now() + timedelta(days=1)).isoformat()}) == set()
    assert shown({"q": tag[held.pk]}) == {held.pk}
    assert shown({"q": str(failed.pk)}) == {failed.pk}
    assert shown({"q": "BOB"}) == {held.pk}
    assert shown({"q": "maps/batch"}) == {failed.pk}
    filters = operator.get(BATCHES).content.decode()
    assert all(f"By {name}" in filters for name in ("status", "profile", "collection", "created at"))


def test_the_batch_list_costs_the_same_queries_for_3_or_30_batches(
    operator: Client, make_batch: MakeBatch, django_assert_max_num_queries: Any
) -> None:
    """The bars of a page are one grouped query (services.job_counts), never one per batch."""
    for _ in range(3):
        make_batch([J.COMPLETED, J.FAILED, J.PENDING])
    operator.get(BATCHES)  # warm the session and content-type caches
    with django_assert_max_num_queries(9) as few:
        assert operator.get(BATCHES).status_code == 200
    for _ in range(27):
        make_batch([J.COMPLETED, J.FAILED, J.PENDING, J.HELD, J.PROCESSING])
    with django_assert_max_num_queries(len(few.captured_queries)):
        page = results(operator, BATCHES)
    assert page.count('class="batch-progress"') == 30


def test_staff_without_batch_permissions_get_403() -> None:
    """Django's model permissions apply: staff without the batches permissions see neither list."""
    intern = staff("intern")
    assert intern.get(BATCHES).status_code == 403
    assert intern.get(JOBS).status_code == 403


# --- jobs ------------------------------------------------------------------------------------


def test_the_job_list_says_what_each_job_waits_for_and_why(operator: Client, make_batch: MakeBatch, ingest: Ingest) -> None:
    """Runs, blocked by an older job of the same object, waits for space until, waits for a slot, held (why), failed (error)."""
    soon = timezone.now() + timedelta(minutes=5)
    older = make_batch([J.DOWNLOADING], jobs={1: {"dispatched": True, "object_key": "object:demo:ark:/1"}})
    first = BatchJob.objects.get(batch=older)
    batch = make_batch(
        [J.PENDING, J.PROVISIONING, J.ESTIMATING, J.HELD, J.FAILED],
        jobs={1: {"blocked_by": first, "object_key": "object:demo:ark:/1"}, 2: {"not_before": soon},
              5: {"error": "Traceback ...\nStageFailed: file0.txt: md5 digest abc does not match the manifest's 000"}},
    )
    Collection.objects.filter(pk=ingest.collection.pk).update(held=True, held_reason="storage maintenance")
    table = results(operator, JOBS)
    jobs = {job.number: job for job in BatchJob.objects.filter(batch=batch)}
    assert "downloading runs" in table
    assert f"blocked by <a href=\"/admin/batches/batchjob/{first.pk}/change/\">jid{first.pk:07d}</a>" in table
    assert f"waits for space until {timezone.localtime(soon).strftime('%Y-%m-%d %H:%M:%S')}" in table
    assert "waits for a slot since" in table
    assert "held: collection demo is held (storage maintenance)" in table
    assert "md5 digest abc does not match the manifest&#x27;s 000" in table and "Traceback" not in table
    assert f"jid{jobs[5].pk:07d}" in table and f"bid{batch.pk:07d}" in table


def test_job_filters_and_search(operator: Client, make_batch: MakeBatch) -> None:
    """Status, priority, profile, collection and batch filter; search finds a local id, a primary id or a job id."""
    other = Collection.objects.create(name="letters")
    letters = Profile.objects.create(name="letters", collection=other, task="tests.batches.flaky")
    first = make_batch([J.FAILED, J.COMPLETED], jobs={1: {"priority": 2}, 2: {"primary_id": "ark:/99999/fk4done"}})
    second = make_batch([J.HELD], profile=letters, collection=other, jobs={1: {"priority": 12}})
    jobs = {(j.batch_id, j.number): j for j in BatchJob.objects.all()}
    tag = {key: f"jid{job.pk:07d}" for key, job in jobs.items()}

    def shown(query: dict[str, str]) -> set[tuple[int, int]]:
        table = results(operator, JOBS, query)
        return {key for key, text in tag.items() if text in table}

    assert shown({}) == set(tag)
    assert shown({"status__exact": "failed"}) == {(first.pk, 1)}
    assert shown({"priority": "0-4"}) == {(first.pk, 1)}
    assert shown({"priority": "10-99"}) == {(second.pk, 1)}
    assert shown({"priority": "5"}) == {(first.pk, 2)}
    assert shown({"priority": "x"}) == set()
    assert shown({"batch__profile__id__exact": str(letters.pk)}) == {(second.pk, 1)}
    assert shown({"batch__collection__id__exact": str(other.pk)}) == {(second.pk, 1)}
    assert shown({"batch": str(first.pk)}) == {(first.pk, 1), (first.pk, 2)}
    assert shown({"batch": f"bid{second.pk:07d}"}) == {(second.pk, 1)}
    assert shown({"batch": "nonsense"}) == set()
    assert shown({"q": f"b{second.pk}-obj001"}) == {(second.pk, 1)}
    assert shown({"q": "fk4done"}) == {(first.pk, 2)}
    assert shown({"q": tag[(first.pk, 1)]}) == {(first.pk, 1)}
    filters = operator.get(JOBS).content.decode()
    assert all(f"By {name}" in filters for name in ("status", "priority", "profile", "collection", "batch"))


def test_the_job_list_costs_the_same_queries_for_few_or_many_jobs(
    operator: Client, make_batch: MakeBatch, django_assert_max_num_queries: Any
) -> None:
    """Rows come with their batch and collection in one query: no query per job."""
    make_batch([J.HELD, J.FAILED])
    operator.get(JOBS)
    with django_assert_max_num_queries(10) as few:
        assert operator.get(JOBS).status_code == 200
    make_batch([J.HELD, J.FAILED, J.PENDING, J.DOWNLOADING] * 20)
    with django_assert_max_num_queries(len(few.captured_queries)):
        assert len(rows(results(operator, JOBS))) == 82
