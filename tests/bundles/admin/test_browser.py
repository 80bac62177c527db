"""The bundles admin in a real browser: Debian's chromium, headless, driven through chromium-driver at 1,280 × 900.

Skipped, with the reason, where chromium, chromium-driver or selenium is missing (a bare
machine); CI installs them (.ci/run), and under CI a missing browser fails instead of
skipping, so the check cannot quietly stop running. Screenshots go to $BROWSER_SCREENSHOTS
when set (to look at them), else to the test's tmp dir.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.admin.utils import quote
from django.contrib.auth.models import User

from bundles.models import BundleJob
from coordinators.models import CoordinatorAction
from tests.bundles.factories import minute
from tests.support.bundles import run_actions

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("in_process_engine")]

CHROMEDRIVER = "/usr/bin/chromedriver"
WIDTH, HEIGHT = 1280, 900
CHROMIUM_FLAGS = [
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", f"--window-size={WIDTH},{HEIGHT}",
]


def missing_browser() -> str | None:
    """Why no browser test can run here, or None."""
    if shutil.which("chromium") is None:
        return "Debian's chromium is not installed (apt-get install chromium chromium-driver)"
    if not os.access(CHROMEDRIVER, os.X_OK):
        return f"{CHROMEDRIVER} is missing (apt-get install chromium-driver)"
    try:
        import selenium  # noqa: F401, PLC0415 - the import itself checks that selenium is installed
    except ImportError:
        return "selenium is not installed (pip install -e '.[dev]')"
    return None


def settled_get(driver: Any) -> Any:
    """`driver.get` that returns once the new document is loaded, not the page that was there before.

    chromium-driver's `get` can return while the previous document (the page a form posted
    from, or the same URL) is still the current one, so a lookup right after it finds the old
    page's elements, or none. The old window is marked, and the wait ends on an unmarked,
    complete document.
    """
    from selenium.webdriver.support.wait import WebDriverWait  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs

    load = driver.get

    def get(url: str) -> None:
        driver.execute_script("window.__previousDocument = true;")
        load(url)
        WebDriverWait(driver, 30).until(
            lambda d: d.execute_script("return !window.__previousDocument && document.readyState === 'complete';")
        )

    return get


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    """Headless chromium with a fresh profile, its console log kept; quit afterwards."""
    reason = missing_browser()
    if reason is not None:
        if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
            pytest.fail(f"CI must run the browser tests: {reason}")
        pytest.skip(reason)
    from selenium import webdriver  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs
    from selenium.webdriver.chrome.options import Options  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs
    from selenium.webdriver.chrome.service import Service  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs

    options = Options()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for flag in [*CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(executable_path=CHROMEDRIVER, log_output=str(tmp_path / "chromedriver.log"))
    driver = webdriver.Chrome(options=options, service=service)
    driver.set_page_load_timeout(60)
    driver.get = settled_get(driver)  # type: ignore[method-assign]
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def screenshots(tmp_path: Path) -> Path:
    """Where this test's screenshots go."""
    directory = Path(os.environ.get("BROWSER_SCREENSHOTS") or tmp_path / "screenshots")
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def log_in(driver: Any, base: str, username: str, password: str) -> None:
    """Log in through the admin's login form, as a person would."""
    from selenium.webdriver.common.by import By  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs
    from selenium.webdriver.support import expected_conditions  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs
    from selenium.webdriver.support.wait import WebDriverWait  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs

    driver.get(f"{base}/admin/login/?next=/admin/")
    driver.find_element(By.ID, "id_username").send_keys(username)
    driver.find_element(By.ID, "id_password").send_keys(password)
    driver.find_element(By.CSS_SELECTOR, "input[type=submit]").click()
    # The click returns when the form is sent, not when the next page is there.
    WebDriverWait(driver, 30).until(expected_conditions.presence_of_element_located((By.ID, "user-tools")))


def check_page(driver: Any, directory: Path, name: str) -> None:
    """Screenshots of the view and the whole page; then no horizontal overflow at 1,280 px, no severe console message."""
    driver.save_screenshot(str(directory / f"{name}.png"))
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(WIDTH, max(HEIGHT, min(height, 6000)))
    driver.save_screenshot(str(directory / f"{name}-full.png"))
    driver.set_window_size(WIDTH, HEIGHT)
    width = driver.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1], f"{name}: the page is {width[0]} px wide in a {width[1]} px window"
    # Tables sit in boxes that scroll sideways when too wide: at 1,280 px none may need to.
    cramped = driver.execute_script(
        "return [...document.querySelectorAll('.results, .bundle-scroll')]"
        ".filter(box => box.scrollWidth > box.clientWidth).map(box => box.parentNode.id || box.className)"
    )
    assert not cramped, f"{name}: these tables do not fit their box at {WIDTH} px: {cramped}"
    severe = [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
    assert not severe, f"{name}: console errors {severe}"


def test_the_bundle_list_and_page_in_chromium(
    browser: Any, live_server: Any, screenshots: Path, make_bundle: Callable[..., BundleJob]
) -> None:
    """An admin sees the list, runs a verb, and opens a bundle of 3 coordinators: rows, a cell per action, no overflow."""
    from selenium.webdriver.common.by import By  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs
    from selenium.webdriver.support import expected_conditions  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs
    from selenium.webdriver.support.select import Select  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs
    from selenium.webdriver.support.wait import WebDriverWait  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs

    User.objects.create_superuser("admin", "admin@example.com", "a-long-password")
    waiting = make_bundle(name="daily-reports", start=False, kick_off=minute(90))
    bundle = make_bundle(
        {"ingest": "examples.noop", "transform": "examples.noop", "publish": "examples.fail"},
        name="nightly-pipeline", critical=("ingest",), window_minutes=(20, 30),
    )
    run_actions()
    actions = CoordinatorAction.objects.filter(job__bundle_id=bundle.pk)
    assert actions.filter(status="FAILED").exists() and actions.filter(status="SUCCEEDED").exists()

    log_in(browser, live_server.url, "admin", "a-long-password")
    browser.get(f"{live_server.url}/admin/bundles/bundlejob/")
    rows = browser.find_elements(By.CSS_SELECTOR, "#result_list tbody tr")
    assert len(rows) == 2 and "nightly-pipeline" in browser.page_source
    check_page(browser, screenshots, "bundle-list")

    # A bulk verb as an operator runs it: tick a bundle, choose the verb, Go; the answer names the bundle.
    browser.find_element(By.CSS_SELECTOR, f"input[name=_selected_action][value='{waiting.pk}']").click()
    Select(browser.find_element(By.NAME, "action")).select_by_value("suspend_bundles")
    browser.find_element(By.NAME, "index").click()
    WebDriverWait(browser, 30).until(expected_conditions.presence_of_element_located((By.CSS_SELECTOR, ".messagelist")))
    assert f"Suspend queued for 1 bundle(s): {waiting.pk}" in browser.find_element(By.CSS_SELECTOR, ".messagelist").text
    check_page(browser, screenshots, "bundle-list-suspended")

    browser.get(f"{live_server.url}/admin/bundles/bundlejob/{quote(bundle.pk)}/change/")
    coordinators = browser.find_elements(By.CSS_SELECTOR, "tr.bundle-coordinator")
    assert [row.find_element(By.CSS_SELECTOR, ".coord-name").text for row in coordinators] == [
        "ingest", "publish", "transform"
    ]
    cells = browser.find_elements(By.CSS_SELECTOR, "a.timeline-cell")
    assert len(cells) == min(actions.count(), 3 * 48)
    first = cells[0]
    assert first.size["width"] >= 8 and first.size["height"] >= 12, first.size
    assert " · started " in first.get_attribute("title") and "@" in first.get_attribute("title")
    assert len(browser.find_elements(By.CSS_SELECTOR, "tr.timeline-coordinator")) == 3
    timeline = browser.find_element(By.ID, "bundle-timeline")
    browser.execute_script("arguments[0].scrollIntoView()", timeline)
    timeline.screenshot(str(screenshots / "bundle-timeline.png"))
    browser.execute_script("window.scrollTo(0, 0)")
    check_page(browser, screenshots, "bundle-page")
