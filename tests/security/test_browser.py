"""The security promises an operator sees, in a real browser (Debian's chromium, headless, 1,280 px).

- the admin login, after AUTH_FAILURE_LIMIT wrong passwords, refuses the right one with a message
  saying when to try again, and lets the person in once the window has passed;
- a staff member who is neither the owner nor a job admin sees `********` for a secret property
  on the job's admin page; a superuser sees the value.
Screenshots go to $BROWSER_SCREENSHOTS when set, else to the test's tmp dir.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.admin.utils import quote
from django.contrib.auth.models import Permission, User
from django.utils import timezone

from coordinators.services import submit_coordinator
from kernel.models import AuthFailure
from tests.coordinators.api.factories import coordinator_xml, user, window
from tests.support.browser import check_page, log_in

pytestmark = [pytest.mark.django_db(transaction=True)]

SECRET = "hunter2-warehouse-password"


def submit_form(driver: Any, base: str, username: str, password: str) -> str:
    """Fill and send the admin's login form; the error note of the page that answers."""
    from selenium.webdriver.common.by import By  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs
    from selenium.webdriver.support import expected_conditions  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs
    from selenium.webdriver.support.wait import WebDriverWait  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs

    driver.get(f"{base}/admin/login/?next=/admin/")
    driver.find_element(By.ID, "id_username").send_keys(username)
    driver.find_element(By.ID, "id_password").send_keys(password)
    button = driver.find_element(By.CSS_SELECTOR, "input[type=submit]")
    button.click()
    WebDriverWait(driver, 30).until(expected_conditions.staleness_of(button))  # the answer has replaced the form
    note = WebDriverWait(driver, 30).until(expected_conditions.presence_of_element_located((By.CSS_SELECTOR, ".errornote")))
    return str(note.text)


def test_the_admin_login_locks_out_a_guesser_and_says_when_to_come_back(
    browser: Any, live_server: Any, screenshots: Path, settings: Any,  # noqa: F811
) -> None:
    """Three wrong passwords, then the right one: refused with the lockout message; after the window: signed in."""
    from selenium.webdriver.common.by import By  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs

    settings.AUTH_FAILURE_LIMIT = 3
    User.objects.create_superuser("admin", "admin@example.com", "the-right-password")
    for _ in range(3):
        assert "correct username and password" in submit_form(browser, live_server.url, "admin", "a-wrong-guess")
    note = submit_form(browser, live_server.url, "admin", "the-right-password")
    assert "Too many failed sign-ins from your address" in note and "minute" in note, note
    assert not browser.find_elements(By.ID, "user-tools")  # not signed in
    browser.save_screenshot(str(screenshots / "login-locked.png"))
    logged = [entry["message"] for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    assert all("429" in message for message in logged), logged  # the page's own status: the lockout answered 429
    AuthFailure.objects.update(at=timezone.now() - timedelta(seconds=settings.AUTH_FAILURE_WINDOW_SECONDS + 1))
    log_in(browser, live_server.url, "admin", "the-right-password")
    assert browser.find_elements(By.ID, "user-tools")


def test_staff_see_masked_secrets_and_superusers_see_values(
    browser: Any, live_server: Any, screenshots: Path,  # noqa: F811
) -> None:
    """A view-only staff member sees ******** on ann's job page; a superuser sees the password."""
    ann = user("ann")
    job = submit_coordinator(coordinator_xml(), {**window(), "db.password": SECRET, "queueName": "default"},
                             owner=ann, start=False)
    viewer = User.objects.create_user("viewer", password="viewer-password-123", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_coordinatorjob"))
    User.objects.create_superuser("root", "root@example.com", "root-password-123")
    page = f"{live_server.url}/admin/coordinators/coordinatorjob/{quote(job.pk)}/change/"

    log_in(browser, live_server.url, "viewer", "viewer-password-123")
    browser.get(page)
    text = browser.page_source
    assert "db.password" in text and "********" in text and SECRET not in text
    check_page(browser, screenshots, "job-as-view-only-staff")

    browser.delete_all_cookies()
    log_in(browser, live_server.url, "root", "root-password-123")
    browser.get(page)
    assert SECRET in browser.page_source
    check_page(browser, screenshots, "job-as-superuser")
