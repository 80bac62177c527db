"""Buttons on a bundle's page: allowed verbs per status, a confirmation naming the change, the service, 403s."""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import pytest
from django.contrib.admin.utils import quote
from django.test import Client
from lxml import html

from bundles.choices import BundleStatus as B
from bundles.models import BundleJob
from tests.support.bundles import settle
from tests.support.users import staff
from xcommands.models import Command

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("in_process_engine")]
Make = Callable[..., BundleJob]

BUNDLES = "/admin/bundles/bundlejob/"


def buttons(client: Client, bundle: BundleJob) -> dict[str, str]:
    response = client.get(f"{BUNDLES}{quote(bundle.pk)}/change/")
    assert response.status_code == 200
    bar = cast(html.HtmlElement, html.fromstring(response.content)).get_element_by_id("object-verbs")
    return {e.get("data-verb", ""): (e.get("title", "") if "disabled" in e.get("class", "") else "")
            for e in bar.find_class("object-verb")}


def test_a_running_bundle_offers_suspend_change_and_kill_a_prep_one_start(operator: Client, make_bundle: Make) -> None:
    """The buttons follow the status; each disabled one says why."""
    running = make_bundle()
    shown = buttons(operator, running)
    assert {verb for verb, reason in shown.items() if not reason} == {"suspend", "change", "kill"}
    assert "it is RUNNING" in shown["resume"] and "it is RUNNING" in shown["start"]
    prep = make_bundle(start=False)
    assert buttons(operator, prep)["start"] == ""


def test_suspend_confirms_then_the_service_suspends(operator: Client, make_bundle: Make) -> None:
    """GET names RUNNING -> SUSPENDED; POST confirm suspends the bundle and says so."""
    bundle = make_bundle()
    url = f"{BUNDLES}{quote(bundle.pk)}/verb/suspend/"
    assert f"bundle job {bundle.pk} (" in operator.get(url).content.decode()
    assert "RUNNING -&gt; SUSPENDED" in operator.get(url).content.decode()
    response = operator.post(url, {"confirm": "yes"}, follow=True)
    assert f"Suspend of bundle job {bundle.pk} queued" in response.content.decode()
    settle()
    assert BundleJob.objects.get(pk=bundle.pk).status == B.SUSPENDED


def test_change_names_the_new_end_time_and_a_bad_value_changes_nothing(operator: Client, make_bundle: Make) -> None:
    """The review shows `end time: old -> new`; an unreadable time is refused (409), nothing queued."""
    bundle = make_bundle()
    url = f"{BUNDLES}{quote(bundle.pk)}/verb/change/"
    review = operator.post(url, {"endtime": "2099-01-01T00:00Z"}).content.decode()
    assert "-&gt; 2099-01-01T00:00Z" in review
    before = Command.objects.count()
    assert operator.post(url, {"endtime": "soon", "confirm": "yes"}).status_code == 409
    assert Command.objects.count() == before


def test_a_staff_user_who_may_not_act_on_the_bundle_gets_403(make_bundle: Make) -> None:
    """The model's permissions without the job's: buttons disabled, the POST a 403, the bundle unchanged."""
    bundle = make_bundle()
    helper = staff("helper", "bundles.view_bundlejob", "bundles.change_bundlejob")
    shown = buttons(helper, bundle)
    assert all(shown.values()) and "you may not act" in shown["kill"]  # every one disabled, the allowed ones so
    assert helper.post(f"{BUNDLES}{quote(bundle.pk)}/verb/kill/", {"confirm": "yes"}).status_code == 403
    settle()
    assert BundleJob.objects.get(pk=bundle.pk).status == B.RUNNING
