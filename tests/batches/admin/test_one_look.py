"""One look on every page: the History button of each kind lists its status changes; one time format; in chromium at
1,280 px, no table wider than its box and every badge in the palette of kernel.display.

One pipeline run gives every kind (tests/batches/conftest.py): a failed batch with its jobs and its operation, a
bundle, a killed workflow, and the commands that moved them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.admin.utils import quote
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from bundles.models import BundleJob
from kernel.display import STATUS_COLOURS, exact_time
from tests.support.batches import Ingest, failed_batch
from tests.support.browser import check_page, log_in
from tests.workflows.api.factories import drive, pipeline_app, submit
from workflows.models import WorkflowJob
from xcommands.models import Command

pytestmark = pytest.mark.django_db(transaction=True)

#: `2026-11-27 14:03:05 UTC`: the one way a time is written.
ONE_FORMAT = re.compile(r"\b\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC\b")
#: A time written any other way: 12-hour, without seconds, or without its zone.
OTHER_FORMATS = re.compile(r"\b\d{1,2}:\d{2} ?[ap]\.?m\.?|\b\d{4}-\d{2}-\d{2} \d{2}:\d{2}(?!:)|\d{2}:\d{2}:\d{2}(?! UTC)(?![\d.+:])")


@pytest.fixture
def every_kind(ingest: Ingest, make_bundle: Callable[..., BundleJob], tmp_path: Path) -> dict[str, Any]:
    """A failed batch (its jobs, its operation), a running bundle, a killed workflow, the commands that did it."""
    batch = failed_batch(ingest, count=3, wrong=frozenset({2}))
    bundle = make_bundle(name="nightly")
    workflow = submit(pipeline_app(tmp_path), ingest.owner)
    drive()
    command = Command.objects.filter(name="batches.BatchStartXCommand").get()
    return {
        "batch": ("batches_batch", batch.pk), "batch job": ("batches_batchjob", batch.jobs.get(number=2).pk),
        "operation": ("operations_operation", batch.operation_id), "bundle": ("bundles_bundlejob", bundle.pk),
        "workflow": ("workflows_workflowjob", WorkflowJob.objects.get(pk=workflow.pk).pk),
        "command": ("xcommands_command", command.pk),
    }


@pytest.fixture
def operator(client: Client) -> Client:
    """The test client as a staff superuser (a job admin)."""
    client.force_login(User.objects.create_superuser("operator", "operator@example.com", "pw"))
    return client


def history(client: Client, name: str, pk: Any) -> str:
    response = client.get(reverse(f"admin:{name}_history", args=[quote(pk)]))
    assert response.status_code == 200, (name, pk, response.status_code)
    return response.content.decode()


def test_every_kinds_history_lists_its_status_changes(operator: Client, every_kind: dict[str, Any]) -> None:
    """No "doesn't have a change history": each History page has a row per recorded change, badges and who did it."""
    expected = {
        "batch": ["processing", "reporting", "failed", "batches.BatchStartXCommand", "batches.BatchReportXCommand"],
        "batch job": ["failed", "batches."],
        "operation": ["FAILED", "operations.OperationCompleteXCommand", "operation-job"],
        "bundle": ["PREP", "RUNNING", "bundles.BundleStartXCommand"],
        "workflow": ["KILLED", "node check", "FileNotFoundError", "worker w1@host"],
        "command": ["SUCCEEDED", "execute attempt 1"],
    }
    for kind, (name, pk) in every_kind.items():
        page = history(operator, name, pk)
        assert "change history" not in page, kind
        assert 'class="status-history"' in page, kind
        table = page[page.index('class="status-history"'):]
        for text in expected[kind]:
            assert text in table, (kind, text)
        assert ONE_FORMAT.search(table), kind


def test_a_history_is_shown_only_to_who_may_see_the_object(client: Client, every_kind: dict[str, Any]) -> None:
    """A missing object is a 404; someone who is not staff is sent to log in, and sees nothing of it."""
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
    assert client.get(reverse("admin:batches_batch_history", args=["999999"])).status_code in (302, 404)
    client.logout()
    name, pk = every_kind["batch"]
    response = client.get(reverse(f"admin:{name}_history", args=[quote(pk)]))
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_one_time_format_on_a_list_and_an_object_page(operator: Client, every_kind: dict[str, Any], settings: Any) -> None:
    """Lists and object pages (read-only fields included) write `2026-11-27 14:03:05 UTC`, nothing 12-hour or
    without seconds; kernel.display writes the same, in TIME_ZONE with its abbreviation."""
    name, pk = every_kind["operation"]
    listing = operator.get(reverse(f"admin:{name}_changelist")).content.decode()
    page = operator.get(reverse(f"admin:{name}_change", args=[quote(pk)])).content.decode()
    for text in (listing, page):
        body = re.sub(r"<(script|style)\b.*?</\1>", "", text[text.index('id="content"'):], flags=re.S)
        body = re.sub(r'(datetime|title|href|value|data-[\w-]+)="[^"]*"', "", body)
        body = body.replace("<br>", " ")  # a narrow column stacks the date over the time: the same format
        assert ONE_FORMAT.search(body)
        assert not OTHER_FORMATS.search(body), OTHER_FORMATS.search(body)
    now = timezone.now()
    settings.TIME_ZONE = "Europe/Berlin"
    timezone.activate("Europe/Berlin")
    try:
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} CES?T", exact_time(now))
    finally:
        timezone.deactivate()


def test_every_kinds_pages_fit_1280_px_with_palette_badges_in_chromium(
    browser: Any, live_server: Any, screenshots: Path, every_kind: dict[str, Any],
) -> None:
    """The list, the object page and the History page of each kind: no table wider than its box, no page wider than
    the window, and every status badge painted in its colour from kernel.display."""
    from selenium.webdriver.common.by import By  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs

    User.objects.create_superuser("admin", "admin@example.com", "a-long-password")
    log_in(browser, live_server.url, "admin", "a-long-password")
    boxes = ".results, .bundle-scroll, .batch-scroll, .op-scroll, #content-main table, fieldset.module"
    pages = [("dashboard", "/admin/dashboard/")]
    for kind, (name, pk) in every_kind.items():
        slug = kind.replace(" ", "-")
        pages += [(f"{slug}-list", reverse(f"admin:{name}_changelist")),
                  (f"{slug}-page", reverse(f"admin:{name}_change", args=[quote(pk)])),
                  (f"{slug}-history", reverse(f"admin:{name}_history", args=[quote(pk)]))]
    painted = 0
    for shot, path in pages:
        browser.get(f"{live_server.url}{path}")
        assert "Server Error" not in browser.title, shot
        check_page(browser, screenshots, shot, boxes=boxes)
        for label in browser.find_elements(By.CSS_SELECTOR, ".status-label"):
            status = label.get_attribute("title")
            if status in STATUS_COLOURS:
                style = label.get_attribute("style") or ""
                assert STATUS_COLOURS[status] in style or _rgb(STATUS_COLOURS[status]) in style, (shot, status, style)
                painted += 1
    assert painted >= 20  # badges on every kind's pages, not a vacuous pass


def _rgb(colour: str) -> str:
    """`#c62828` as the browser writes a style back: `rgb(198, 40, 40)`."""
    red, green, blue = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgb({red}, {green}, {blue})"
