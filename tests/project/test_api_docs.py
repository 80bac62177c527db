"""API docs offline: Swagger UI and ReDoc come from the pinned drf-spectacular-sidecar package, never a CDN.

The pages may name only local static files; those files must exist in the installed package
(found by the staticfiles finders, as collectstatic and the test server find them); and a real
headless Chromium must render Swagger UI with the API's operations and no console error.
"""

from __future__ import annotations

import re
import urllib.request
from html.parser import HTMLParser
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.staticfiles import finders
from django.test import Client

DOC_PAGES = ("/api/docs/", "/api/redoc/")


class _Assets(HTMLParser):
    """Collects every URL a page loads: script src, link href, img src."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        wanted = {"script": "src", "link": "href", "img": "src"}.get(tag)
        for name, value in attrs:
            if name == wanted and value:
                self.urls.append(value)


def assets_of(html: str) -> list[str]:
    """The URLs of the scripts, stylesheets, icons and images a page loads."""
    parser = _Assets()
    parser.feed(html)
    return parser.urls


@pytest.mark.parametrize("page", DOC_PAGES, ids=["swagger-ui", "redoc"])
def test_the_docs_pages_load_only_local_static_files(client: Client, page: str) -> None:
    """Every asset of the page is under STATIC_URL, and no absolute http(s) URL appears anywhere in it."""
    response = client.get(page)
    assert response.status_code == 200
    html = response.content.decode()
    urls = assets_of(html)
    assert any(url.endswith(".js") for url in urls), f"{page} loads no script at all: {urls}"
    static = "/" + settings.STATIC_URL.lstrip("/")
    outside = [url for url in urls if not url.startswith(static)]
    assert not outside, f"{page} loads assets from outside {static}: {outside}"
    absolute = re.findall(r"(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}[^\s\"'<>]*", html, flags=re.IGNORECASE)
    assert not absolute, f"{page} names other hosts: {absolute}"


@pytest.mark.parametrize("page", DOC_PAGES, ids=["swagger-ui", "redoc"])
def test_the_docs_assets_are_files_of_the_installed_sidecar(client: Client, page: str) -> None:
    """Each static asset is found by the staticfiles finders, inside drf_spectacular_sidecar, and is not empty."""
    html = client.get(page).content.decode()
    static = "/" + settings.STATIC_URL.lstrip("/")
    for url in assets_of(html):
        relative = url[len(static):].split("?", 1)[0]
        found = finders.find(relative)
        assert found, f"{url}: no staticfiles finder has {relative}"
        path = Path(str(found))
        assert "drf_spectacular_sidecar" in path.parts, f"{url} is served from {path}, not the sidecar package"
        assert path.stat().st_size > 0


def test_the_sidecar_is_pinned() -> None:
    """drf-spectacular-sidecar is a declared dependency, pinned in constraints.txt to the installed version."""
    root = Path(__file__).resolve().parents[2]
    pins = dict(
        line.split("==", 1) for line in (root / "constraints.txt").read_text().splitlines() if "==" in line
    )
    assert pins.get("drf-spectacular-sidecar") == version("drf-spectacular-sidecar")
    assert "drf-spectacular-sidecar" in (root / "pyproject.toml").read_text()


def test_a_static_file_of_the_sidecar_is_served(live_server: Any) -> None:
    """The test server (staticfiles handler) answers the Swagger UI bundle the page names, as JavaScript."""
    html = Client().get("/api/docs/").content.decode()
    bundle = next(url for url in assets_of(html) if url.endswith("swagger-ui-bundle.js"))
    with urllib.request.urlopen(f"{live_server.url}{bundle}", timeout=30) as response:  # noqa: S310 - test server
        body = response.read()
        kind = response.headers.get("Content-Type", "")
    assert response.status == 200
    assert "javascript" in kind
    assert b"SwaggerUIBundle" in body


@pytest.fixture
def chromium(browser: Any) -> Any:
    """Headless Debian chromium (tests.support.browser: skipped where missing, failed in CI)."""
    return browser


def _resources_from_other_hosts(driver: Any, base: str) -> list[str]:
    """URLs the page fetched from anywhere but the test server (the browser's resource timings)."""
    names = driver.execute_script("return performance.getEntriesByType('resource').map(entry => entry.name)")
    return [name for name in names if not name.startswith(base) and not name.startswith("data:")]


@pytest.mark.django_db
def test_swagger_ui_renders_the_operations_in_chromium(chromium: Any, live_server: Any) -> None:
    """Swagger UI draws the API's operations (coordinator jobs among them), fetching nothing from another host."""
    from selenium.webdriver.common.by import By  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs
    from selenium.webdriver.support.wait import WebDriverWait  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs

    chromium.get(f"{live_server.url}/api/docs/")
    WebDriverWait(chromium, 60).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, ".opblock")) > 10)
    paths = {element.get_attribute("data-path") for element in chromium.find_elements(By.CSS_SELECTOR, ".opblock-summary-path")}
    assert "/api/v1/coordinator-jobs/" in paths, sorted(p for p in paths if p)[:20]
    assert chromium.find_elements(By.CSS_SELECTOR, ".info .title"), "no API title drawn"
    assert "Scheduler API" in chromium.find_element(By.CSS_SELECTOR, ".info .title").text
    assert not _resources_from_other_hosts(chromium, live_server.url)
    severe = [entry for entry in chromium.get_log("browser") if entry["level"] == "SEVERE"]
    assert not severe, f"console errors: {severe}"


@pytest.mark.django_db
def test_redoc_renders_the_operations_in_chromium(chromium: Any, live_server: Any) -> None:
    """ReDoc draws the operations menu, fetching nothing from another host, without console errors."""
    from selenium.webdriver.common.by import By  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs
    from selenium.webdriver.support.wait import WebDriverWait  # noqa: PLC0415 - selenium is optional: imported only when a browser test runs

    chromium.get(f"{live_server.url}/api/redoc/")
    WebDriverWait(chromium, 60).until(lambda d: "coordinator-jobs" in d.find_element(By.TAG_NAME, "body").text)
    assert "Scheduler API" in chromium.find_element(By.TAG_NAME, "h1").text
    assert not _resources_from_other_hosts(chromium, live_server.url)
    severe = [entry for entry in chromium.get_log("browser") if entry["level"] == "SEVERE"]
    assert not severe, f"console errors: {severe}"
