"""The admin kit every app's pages share: read-only model admins, status filters in words, badges, links, JSON, secrets shown.

Below every app (kernel): what a page shows of a job's secrets is decided here for all of them
(`remember_reader`, `shown`), and a status looks the same on every page (`badge`: the one label
of kernel.display).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from django.contrib import admin
from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.admin.utils import quote, unquote
from django.contrib.admin.views.main import ChangeList
from django.core.exceptions import EmptyResultSet, FieldError, PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.db import DataError, OperationalError, transaction
from django.db.models import QuerySet
from django.http import Http404, HttpRequest
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.functional import cached_property
from django.utils.html import format_html, format_html_join

from kernel import admin_tries
from kernel.display import exact_time, status_label, status_words
from kernel.history import status_records
from kernel.secrets import Masker, masker, masker_for

#: The most messages one bulk action writes on the page (the rest are counted).
MAX_MESSAGES = 20
#: The most status changes a History page shows (the newest).
HISTORY_ROWS = 200


def badge(status: str) -> str:
    """A status as the one coloured label of every page (kernel.display.status_label)."""
    return status_label(status)


def pretty(value: Any) -> str:
    """JSON in a <pre>."""
    return format_html("<pre style='margin:0'>{}</pre>", json.dumps(value, indent=2, sort_keys=True, default=str))


#: Where an object page keeps what its reader is shown of the job's secret properties (kernel.secrets).
SHOWN = "_secrets_shown"


def remember_reader(obj: Any, user: Any, owner_id: Any, *sources: Any) -> Any:
    """Note on the object (loaded for one request) what `user` is shown: display methods get the object only."""
    setattr(obj, SHOWN, masker_for(user, owner_id, *sources))
    return obj


def shown(obj: Any, *sources: Any) -> Masker:
    """What the page's reader is shown of the object's secrets; everything masked when nobody noted the reader."""
    remembered: Masker | None = getattr(obj, SHOWN, None)
    return remembered if remembered is not None else masker(*sources)


def change_link(obj: Any, text: str | None = None) -> str:
    """A link to an object's admin page (ids with '@' are quoted as the admin expects)."""
    meta = obj._meta
    url = reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[quote(obj.pk)])
    return format_html('<a href="{}">{}</a>', url, text or obj.pk)


def status_heading(obj: Any) -> str:
    """An object's name with its status as the badge (`batch 17 [failed]` as `batch 17` and a red "failed")."""
    status = getattr(obj, "status", None)
    if not isinstance(status, str) or not status:
        return str(obj)
    name = str(obj).replace(f" [{status}]", "")
    return format_html("{} {}", name, status_label(status))


# ---- status history: the admin's "History" page of every kind ----------------------------------


def status_history_table(changes: Sequence[Any], secrets: Masker | None = None, *, what: Callable[[Any], str] | None = None) -> str:
    """Status changes, oldest first: when, (what), from, to, by, why; statuses as the one badge, secrets masked in why.

    `changes`: rows with at, from_status, to_status, by and reason (kernel.StatusRecord, the
    coordinators' StatusChange). `what` names the object of each row when a page lists several
    (a workflow's nodes).
    """
    secrets = secrets if secrets is not None else masker()
    if not changes:
        return "no status change recorded"
    cells = "<td class=\"nowrap\">{}</td>" + ("<td class=\"nowrap\">{}</td>" if what else "") + "<td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
    rows = format_html_join(
        "", "<tr>" + cells + "</tr>",
        ((exact_time(change.at), *([what(change)] if what else []),
          status_label(change.from_status) if change.from_status else "-", status_label(change.to_status),
          change.by or "-", secrets.text(change.reason)[:300] or "-") for change in changes),
    )
    head = "<th>at</th>" + ("<th>of</th>" if what else "") + "<th>from</th><th>to</th><th>by</th><th>why</th>"
    return format_html('<table class="status-history"><thead><tr>{}</tr></thead><tbody>{}</tbody></table>',
                       format_html(head), rows)


def render_status_history(modeladmin: admin.ModelAdmin[Any], request: HttpRequest, object_id: str,
                          table: Callable[[Any], str]) -> Any:
    """The admin's "History" page of an object: its status changes (`table(obj)`) instead of the form log.

    The object is found as its page finds it (`get_object`), and shown only to whoever may view it.
    """
    obj = modeladmin.get_object(request, unquote(object_id))
    if obj is None:
        raise Http404(f"no {modeladmin.opts.verbose_name} {object_id!r}")
    if not modeladmin.has_view_or_change_permission(request, obj):
        raise PermissionDenied
    context = {
        **modeladmin.admin_site.each_context(request),
        "title": f"Status history of {modeladmin.opts.verbose_name} {obj.pk}", "subtitle": None, "object": obj, "opts": modeladmin.opts,
        "is_nav_sidebar_enabled": False,  # the table takes the width
        "table": table(obj), "change_url": reverse(
            f"admin:{modeladmin.opts.app_label}_{modeladmin.opts.model_name}_change", args=[quote(obj.pk)]),
    }
    return TemplateResponse(request, "admin/status_history.html", context)


class StatusHistoryAdmin(admin.ModelAdmin[Any]):
    """A model admin whose "History" button shows the object's status changes (kernel.history).

    `history_kind`: the kind its changes are recorded under; `history_children`: a kind whose
    records name the object as parent, listed with it (a workflow's nodes, an operation's jobs).
    """

    history_kind = ""
    history_children = ""

    def history_secrets(self, obj: Any) -> Masker:
        """What the reader is shown of secrets in a change's reason (everything masked unless the page noted the reader)."""
        return shown(obj)

    def history_what(self, change: Any) -> str:
        """How a row names its object when children are listed: the object itself, or the child's id."""
        return change.kind if change.kind == self.history_kind else f"{change.kind} {change.object_id}"

    def history_table(self, obj: Any) -> str:
        """The object's status changes (and its children's), as a table."""
        changes = status_records(self.history_kind, obj.pk, HISTORY_ROWS, children=self.history_children)
        return status_history_table(changes, self.history_secrets(obj),
                                    what=self.history_what if self.history_children else None)

    def history_view(self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None) -> Any:
        """Its status changes: objects here change through commands, never through the admin's forms."""
        return render_status_history(self, request, object_id, self.history_table)


class ReadOnlyAdmin(admin.ModelAdmin[Any]):
    """No adding, deleting or editing: objects change through commands, never through a form."""

    #: False: the list hides the admin's app sidebar, leaving its columns the width of the screen.
    nav_sidebar = True

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Model-level "change" lets operators run bulk actions; an object page is view-only.
        return obj is None and super().has_change_permission(request)

    def render_change_form(self, request: HttpRequest, context: dict[str, Any], add: bool = False, change: bool = False,
                           form_url: str = "", obj: Any = None) -> Any:
        """The object's heading writes its status as the one badge, as its list does."""
        if obj is not None and context.get("subtitle"):
            context["subtitle"] = status_heading(obj)
        return super().render_change_form(request, context, add, change, form_url, obj)

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> Any:
        """Titled by what it lists ("Coordinator actions"), not "Select ... to change": nothing here is edited."""
        title = str(self.model._meta.verbose_name_plural)
        context: dict[str, Any] = {"title": title[:1].upper() + title[1:]}
        if not self.nav_sidebar:
            context["is_nav_sidebar_enabled"] = False
        return super().changelist_view(request, {**context, **(extra_context or {})})


class StatusWordsFilter(admin.SimpleListFilter):
    """The status filter with statuses in words ("running with error"); same parameter as the stock one."""

    title = "status"
    parameter_name = "status__exact"
    statuses: tuple[str, ...] = ()

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin[Any]) -> list[tuple[str, str]]:
        return [(status, status_words(status)) for status in self.statuses]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        return queryset.filter(status=self.value()) if self.value() in self.statuses else queryset


class CappedCountPaginator(Paginator[Any]):
    """A changelist's pages counted up to COUNT_CAP rows (a COUNT over a LIMITed subquery), never the whole table.

    A list of millions of ended rows (coordinator actions) then costs the same as a list of a
    thousand; past the cap the count shows the cap and the filters narrow the list (ADR 0039).
    """

    cap = 10_000

    @cached_property
    def count(self) -> int:
        """The rows, or the cap when there are more."""
        rows = self.object_list
        if isinstance(rows, QuerySet):
            return int(rows.order_by()[: self.cap].count())
        return min(len(rows), self.cap)


# ---- no 500 for any query string ---------------------------------------------------------------


class CheckedChangeList(ChangeList):
    """A changelist whose query is compiled before the page renders: a lookup the database cannot
    take (`?created_at__year=99999`, a value of the wrong type, a list filter given nonsense)
    is an IncorrectLookupParameters, which the admin answers with its "invalid lookup"
    redirect (`?e=1`) instead of a 500 from inside the template.
    """

    def get_queryset(self, request: HttpRequest, exclude_parameters: Any = None) -> QuerySet[Any]:
        try:
            queryset = super().get_queryset(request, exclude_parameters)
            queryset.query.get_compiler(using=queryset.db).as_sql()
        except EmptyResultSet:
            return queryset  # a filter that can match nothing: an empty page, not an error
        except (ValueError, TypeError, OverflowError, IndexError, KeyError, ValidationError, FieldError) as exc:
            raise IncorrectLookupParameters(exc) from exc
        return queryset

    def get_results(self, request: HttpRequest) -> None:
        """Count and fetch the page: a value the database refuses (an invalid regular expression) is an
        invalid lookup too (inside a transaction, in a savepoint, so the transaction stays usable)."""
        try:
            if transaction.get_connection().in_atomic_block:  # a failed statement must not break the request's transaction
                with transaction.atomic():
                    super().get_results(request)
            else:
                super().get_results(request)
        except DataError as exc:
            raise IncorrectLookupParameters(exc) from exc
        except OperationalError as exc:
            if "user-defined function raised exception" not in str(exc):  # SQLite's REGEXP given a bad pattern
                raise
            raise IncorrectLookupParameters(exc) from exc


class CheckedLookupsAdmin(admin.ModelAdmin[Any]):
    """Every model admin of the site: its changelist is a CheckedChangeList."""

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        base = super().get_changelist(request, **kwargs)
        if issubclass(base, CheckedChangeList):
            return base
        return type(f"Checked{base.__name__}", (CheckedChangeList, base), {})


class OperatorAdminSite(admin.AdminSite):
    """The admin site: every model admin registered on it (ours, Django's auth, DRF's tokens)
    answers a query string it cannot use with the admin's "invalid lookup" page, never a 500.
    """

    def register(self, model_or_iterable: Any, admin_class: Any = None, **options: Any) -> None:
        base = admin_class or admin.ModelAdmin
        if not issubclass(base, CheckedLookupsAdmin):
            base = type(base.__name__, (CheckedLookupsAdmin, base), {"__module__": base.__module__})
        super().register(model_or_iterable, base, **options)

    def get_urls(self) -> list[Any]:
        """The admin's URLs and a try's download (kernel.admin_tries), behind the admin's login."""
        return [
            path("tries/<int:pk>/download/", self.admin_view(admin_tries.download), name="kernel_try_download"),
            *super().get_urls(),
        ]
