"""Collections (hold, release), profiles (the task checked) and the ingest settings row: edited by job admins only."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from batches.choices import BatchStatus as B
from batches.choices import JobStatus as J
from batches.models import Batch, BatchJob, Collection, IngestSettings, Profile
from batches.services import hold_collection
from tests.support.batches import Ingest, MakeBatch, settle
from tests.support.users import staff

pytestmark = [pytest.mark.django_db(transaction=True)]

COLLECTIONS = "/admin/batches/collection/"
PROFILES = "/admin/batches/profile/"
SETTINGS = "/admin/batches/ingestsettings/"
EDITOR = ("batches.view_profile", "batches.change_profile", "batches.add_profile",
          "batches.view_collection", "batches.change_collection")


def profile_data(**changes: str) -> dict[str, str]:
    data = {"name": "maps", "collection": str(Collection.objects.get(name="demo").pk), "enabled": "on",
            "task": "examples.ingest_store", "priority": "5", "identifier_prefix": "ark:/99999/fk4",
            "notify_emails": "", "webhook_url": "", "callback_url": ""}
    data.update(changes)
    return data


# --- collections -----------------------------------------------------------------------------


def test_hold_asks_for_a_reason_then_holds_through_the_services(operator: Client, ingest: Ingest) -> None:
    """The first click shows a form; sending it holds each collection with the reason, who and when."""
    page = operator.post(COLLECTIONS, {"action": "hold_collections", "_selected_action": [ingest.collection.pk],
                                       "index": "0"}).content.decode()
    assert 'name="reason"' in page and "Hold collections" in page
    assert not Collection.objects.get(pk=ingest.collection.pk).held
    page = operator.post(COLLECTIONS, {"action": "hold_collections", "_selected_action": [ingest.collection.pk],
                                       "apply": "yes", "reason": "storage maintenance"}, follow=True).content.decode()
    assert "Held 1 collection(s): demo" in page
    held = Collection.objects.get(pk=ingest.collection.pk)
    assert held.held and held.held_reason == "storage maintenance" and held.held_by is not None
    listed = operator.get(COLLECTIONS).content.decode()
    assert "storage maintenance" in listed and ">held<" in listed


def test_release_reports_per_collection_what_it_released(operator: Client, ingest: Ingest,
                                                         make_batch: MakeBatch) -> None:
    """Held batches and held jobs of the collection are released through the services, and counted."""
    hold_collection("demo", actor=User.objects.get(username="operator"))
    held_batch = make_batch([], status=B.HELD)
    make_batch([J.HELD, J.HELD, J.FAILED])
    Collection.objects.create(name="letters")
    letters = Collection.objects.get(name="letters")
    page = operator.post(COLLECTIONS, {"action": "release_collections", "index": "0",
                                       "_selected_action": [ingest.collection.pk, letters.pk]}, follow=True)
    text = page.content.decode()
    assert "Released demo: 1 held batch(es) and 2 held job(s) queued for release" in text
    assert "Released letters: 0 held batch(es) and 0 held job(s)" in text
    settle()
    assert Batch.objects.get(pk=held_batch.pk).status != B.HELD
    assert not BatchJob.objects.filter(status=J.HELD).exists()


def test_only_job_admins_hold_and_edit(ingest: Ingest) -> None:
    """Staff with the model permissions but not job admins see collections and profiles read-only, with no actions."""
    carol = staff("carol", *EDITOR)
    listed = carol.get(COLLECTIONS).content.decode()
    assert 'value="hold_collections"' not in listed
    carol.post(COLLECTIONS, {"action": "hold_collections", "_selected_action": [ingest.collection.pk],
                             "apply": "yes", "reason": "x"})
    assert not Collection.objects.get(pk=ingest.collection.pk).held
    assert carol.get(f"{PROFILES}{ingest.profile.pk}/change/").status_code == 200
    assert carol.post(f"{PROFILES}{ingest.profile.pk}/change/", profile_data(name="demo")).status_code == 403
    assert carol.get(f"{PROFILES}add/").status_code == 403
    assert Profile.objects.get(pk=ingest.profile.pk).task == "tests.batches.flaky"


def test_a_collections_name_is_fixed_once_created(operator: Client, ingest: Ingest) -> None:
    """Job keys carry the name: the description may change, the name may not (it is shown, not editable)."""
    url = f"{COLLECTIONS}{ingest.collection.pk}/change/"
    response = operator.post(url, {"name": "renamed", "description": "Maps and plans"}, follow=True)
    assert response.status_code == 200
    collection = Collection.objects.get(pk=ingest.collection.pk)
    assert (collection.name, collection.description) == ("demo", "Maps and plans")
    assert operator.post(f"{COLLECTIONS}add/", {"name": "letters", "description": ""}).status_code == 302
    assert Collection.objects.filter(name="letters").exists()


# --- profiles --------------------------------------------------------------------------------


def test_a_profiles_task_must_be_registered(operator: Client, ingest: Ingest) -> None:
    """An unknown task is refused with the registered ingest tasks named; engine internals are refused too."""
    page = operator.post(f"{PROFILES}add/", profile_data(task="examples.ingest_stroe")).content.decode()
    assert "No processing task &#x27;examples.ingest_stroe&#x27; is registered here" in page
    assert "examples.ingest_noop, examples.ingest_store" in page and "statusservice" not in page
    for internal in ("batches.BatchStartXCommand", "statusservice.batch_dispatch", "celery.chord"):
        assert "is registered here" in operator.post(f"{PROFILES}add/", profile_data(task=internal)).content.decode()
    assert not Profile.objects.filter(name="maps").exists()
    response = operator.post(f"{PROFILES}add/", profile_data(notify_emails=" ops@example.com \n\nlead@example.com"))
    assert response.status_code == 302
    saved = Profile.objects.get(name="maps")
    assert saved.task == "examples.ingest_store" and saved.email_targets() == ["ops@example.com", "lead@example.com"]


def test_a_profiles_email_lines_must_be_addresses(operator: Client, ingest: Ingest) -> None:
    """Each line of notify_emails becomes a mailto: target: a line that is not an address is refused by name."""
    page = operator.post(f"{PROFILES}add/", profile_data(notify_emails="ops@example.com\nnot an address"))
    assert "&#x27;not an address&#x27; is not an e-mail address" in page.content.decode()
    assert not Profile.objects.filter(name="maps").exists()


# --- ingest settings -------------------------------------------------------------------------


def test_the_ingest_settings_list_opens_the_one_row(operator: Client, settings: object) -> None:
    """The row is created from the BATCH_* defaults when first opened; no second row, no delete."""
    response = operator.get(SETTINGS)
    row = IngestSettings.objects.get()
    assert response.status_code == 302 and response["Location"] == f"{SETTINGS}{row.pk}/change/"
    assert operator.get(f"{SETTINGS}add/").status_code == 403
    assert operator.post(f"{SETTINGS}{row.pk}/delete/", {"post": "yes"}).status_code == 403
    assert IngestSettings.objects.count() == 1
    assert staff("intern").get(SETTINGS).status_code == 403


def test_ingest_settings_are_checked_then_saved(operator: Client) -> None:
    """Negative sizes, a sleep under a second and a priority over 99 are refused; good values are stored."""
    operator.get(SETTINGS)
    row = IngestSettings.objects.get()
    url = f"{SETTINGS}{row.pk}/change/"
    bad = {"reserve_bytes": "-1", "provision_sleep_seconds": "0", "large_job_bytes": "-5", "large_job_priority": "120"}
    page = operator.post(url, bad).content.decode()
    assert page.count("must be 0 or more") == 2 and "at least 1 second" in page and "less than or equal to 99" in page
    assert IngestSettings.objects.get().reserve_bytes == row.reserve_bytes
    good = {"reserve_bytes": "1000000", "provision_sleep_seconds": "30", "large_job_bytes": "5000000000",
            "large_job_priority": "20"}
    assert operator.post(url, good).status_code == 302
    saved = IngestSettings.objects.get()
    assert (saved.reserve_bytes, saved.provision_sleep_seconds, saved.large_job_priority) == (1000000, 30, 20)
    viewer = staff("viewer", "batches.view_ingestsettings", "batches.change_ingestsettings")
    assert viewer.post(url, {**good, "reserve_bytes": "1"}).status_code == 403
