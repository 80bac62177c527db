"""Browser tests' kit: Debian's chromium, headless, through chromium-driver at 1,280 x 900 (a plugin of the root conftest).

Every test may ask for `browser` and `screenshots`. A bare machine skips, with the reason, where
chromium, chromium-driver or selenium is missing; under CI a missing browser fails instead of
skipping, so the check cannot quietly stop running. Screenshots go to $BROWSER_SCREENSHOTS when
set (to look at them), else to the test's tmp dir.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

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


def arrived(driver: Any, url: str) -> None:
    """Wait until the browser is at `url`: a click on a form's submit returns before its redirect is followed."""
    from selenium.webdriver.support.wait import WebDriverWait  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs

    WebDriverWait(driver, 30).until(lambda d: d.current_url == url, f"the browser did not come to {url}")


def check_page(driver: Any, directory: Path, name: str, *, boxes: str = ".results, .bundle-scroll") -> None:
    """Screenshots of the view and the whole page; then no horizontal overflow at 1,280 px, no table too wide for its
    box (`boxes`: the page's scrolling boxes, a CSS selector), no severe console message."""
    driver.save_screenshot(str(directory / f"{name}.png"))
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(WIDTH, max(HEIGHT, min(height, 6000)))
    driver.save_screenshot(str(directory / f"{name}-full.png"))
    driver.set_window_size(WIDTH, HEIGHT)
    width = driver.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
    assert width[0] <= WIDTH and width[0] <= width[1], f"{name}: the page is {width[0]} px wide in a {width[1]} px window"
    # Tables sit in boxes that scroll sideways when too wide: at 1,280 px none may need to.
    cramped = driver.execute_script(
        "return [...document.querySelectorAll(arguments[0])]"
        ".filter(box => box.scrollWidth > box.clientWidth).map(box => box.parentNode.id || box.className)", boxes,
    )
    assert not cramped, f"{name}: these tables do not fit their box at {WIDTH} px: {cramped}"
    severe = [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
    assert not severe, f"{name}: console errors {severe}"
