"""No admin page answers 500, whatever its query string: every changelist and page is fuzzed here.

The probes are what a typo, a stale bookmark or a hostile link puts in a URL: years out of range,
impossible months, numbers that are words, filters given nonsense, unknown lookups, huge pages.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib import admin
from django.contrib.admin import SimpleListFilter
from django.contrib.auth.models import User
from django.db import models
from django.test import Client
from django.urls import NoReverseMatch, URLPattern, reverse

from kernel.admin_kit import CheckedChangeList, OperatorAdminSite

pytestmark = pytest.mark.django_db

#: Every changelist gets these, whatever its fields.
GENERAL = ["o=99", "o=abc.-", "p=-1", "p=abc", "p=99999999999999999999", "q=%00", "q=" + "x" * 5000,
           "e=1", "all=", "_to_field=password", "status__exact=%3Cscript%3E", "status__in=,,,"]
DATE_PROBES = ["__year=99999", "__year=0", "__year=-1", "__month=13", "__day=0", "__gte=not-a-date",
               "__date=2026-02-30", "__week_day=99", "__hour=25", "__lt=99999-01-01"]
NUMBER_PROBES = ["=abc", "__in=1,x", "__gt=99999999999999999999999", "__range=1"]
TEXT_PROBES = ["__regex=(", "__isnull=maybe", "__nosuchlookup=1"]
#: What the admin's own pages take (grid, Gantt, timeline, history...).
PAGE_PROBES = ["start=99999-01-01", "end=x", "from=0000-00-00", "to=%00", "job=%27", "zoom=-1",
               "page=abc", "n=-5", "days=99999999999", "date=2026-13-45T99:99", "range=x::y", "limit=1e309"]


@pytest.fixture
def operator() -> Client:
    client = Client()
    client.force_login(User.objects.create_superuser("fuzzer", "fuzzer@example.com", "pw"))
    return client


def _changelists() -> list[tuple[str, Any]]:
    found = []
    for model, model_admin in admin.site._registry.items():
        try:
            url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
        except NoReverseMatch:
            continue
        found.append((url, model_admin))
    return sorted(found, key=lambda pair: pair[0])


def _probes(model_admin: Any) -> list[str]:
    probes = list(GENERAL)
    for field in model_admin.model._meta.get_fields():
        if not getattr(field, "concrete", False) or field.is_relation and not field.many_to_one:
            continue
        name = field.name if not field.is_relation else f"{field.name}__pk"
        if isinstance(field, (models.DateField, models.DateTimeField)):
            probes += [name + probe for probe in DATE_PROBES]
        elif isinstance(field, (models.IntegerField, models.AutoField, models.FloatField, models.DecimalField)) or field.is_relation:
            probes += [name + probe for probe in NUMBER_PROBES]
        elif isinstance(field, (models.CharField, models.TextField)):
            probes += [name + probe for probe in TEXT_PROBES[:1]]
        probes.append(name + "__isnull=maybe")
    for spec in model_admin.list_filter:
        if isinstance(spec, type) and issubclass(spec, SimpleListFilter):
            probes += [f"{spec.parameter_name}=%3Cjunk%3E", f"{spec.parameter_name}=99999"]
    probes.append(TEXT_PROBES[2].lstrip("_"))
    return probes


def test_the_site_checks_every_changelist() -> None:
    """The probes below reach the checked changelist: every registered admin, ours and Django's, uses it."""
    assert isinstance(admin.site._wrapped if hasattr(admin.site, "_wrapped") else admin.site, OperatorAdminSite)
    lists = _changelists()
    assert len(lists) >= 15
    for _url, model_admin in lists:
        assert issubclass(model_admin.get_changelist(None), CheckedChangeList), type(model_admin).__name__


def test_a_year_out_of_range_redirects_to_the_invalid_lookup_page(operator: Client) -> None:
    """The issue's case: `?created_at__year=99999` on the workflow jobs list was a 500."""
    url = reverse("admin:workflows_workflowjob_changelist")
    response = operator.get(url + "?created_at__year=99999")
    assert response.status_code == 302 and response["Location"].endswith("?e=1")
    assert operator.get(url + "?created_at__year=2026").status_code == 200


def test_a_pattern_the_database_refuses_redirects_and_leaves_the_page_usable(operator: Client) -> None:
    """`__regex=(` fails only when the database runs it on a row (the operator's own user is one)."""
    url = reverse("admin:auth_user_changelist")
    response = operator.get(url + "?username__regex=(")
    assert response.status_code == 302 and response["Location"].endswith("?e=1")
    assert "fuzzer" in operator.get(url + "?username__regex=^fuz").content.decode()


@pytest.mark.parametrize(("url", "model_admin"), _changelists(), ids=lambda value: str(value).strip("/").replace("/", "."))
def test_no_query_string_makes_a_changelist_fail(operator: Client, url: str, model_admin: Any) -> None:
    """Every probe answers a page, a redirect or a 4xx; never a server error."""
    failed = []
    for probe in _probes(model_admin):
        response = operator.get(f"{url}?{probe}")
        if response.status_code >= 500:
            failed.append(probe)
    assert not failed, f"{url}: {failed}"


def _pages() -> list[str]:
    """The admin's own pages that take no object id (grid, Gantt and the like), by URL."""
    urls = []
    for model, model_admin in admin.site._registry.items():
        prefix = f"/admin/{model._meta.app_label}/{model._meta.model_name}/"
        for pattern in model_admin.get_urls():
            if not isinstance(pattern, URLPattern):
                continue
            route = str(pattern.pattern)
            if route in ("", "add/") or "<" in route or route.startswith("^"):
                continue
            urls.append(prefix + route.lstrip("^").rstrip("$"))
    return sorted(set(urls))


def test_no_query_string_makes_an_admin_page_fail(operator: Client) -> None:
    """The pages of our own (grid, Gantt, timeline, bulk change, history) and object pages of unknown ids."""
    pages = _pages()
    assert pages, "no page of its own found: the scan no longer sees the admin's URLs"
    failed = []
    for page in pages:
        for probe in PAGE_PROBES:
            if operator.get(f"{page}?{probe}").status_code >= 500:
                failed.append(f"{page}?{probe}")
    for url, _model_admin in _changelists():
        for junk in ("%00", "x@1", "99999999999999999999", "..%2F..%2Fetc"):
            for suffix in ("change/", "history/", "delete/"):
                if operator.get(f"{url}{junk}/{suffix}").status_code >= 500:
                    failed.append(f"{url}{junk}/{suffix}")
    assert not failed, failed
