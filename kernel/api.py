"""What every native API view set shares: declared filters, bounded pagination, domain errors as 4xx.

App view sets are declarations on `DomainViewSet` (queryset, serializer, filter set, the
exceptions that mean 409): they parse input and call domain actions; this module turns the
typed errors those actions raise into clear 4xx answers, never 500s.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar

from django.core.exceptions import ObjectDoesNotExist
from django.db.models import Model, QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse
from rest_framework import exceptions, serializers, status, viewsets
from rest_framework.filters import BaseFilterBackend
from rest_framework.generics import get_object_or_404
from rest_framework.request import Request
from rest_framework.response import Response

from kernel.models import TaskTry
from kernel.pagination import Pagination
from kernel.secrets import Masker


class Conflict(exceptions.APIException):
    """The resource's current state does not allow the request (an illegal status transition)."""

    status_code = status.HTTP_409_CONFLICT
    default_detail = "the request conflicts with the current state"
    default_code = "conflict"


class BadInput(exceptions.APIException):
    """Input the domain refused (bad XML, unresolved variable, bad value): the message and where."""

    status_code = status.HTTP_400_BAD_REQUEST
    default_code = "invalid"

    def __init__(self, body: dict[str, Any]) -> None:
        super().__init__()
        self.detail = body  # type: ignore[assignment]  # kept as is: line numbers stay integers


ERROR_BODY = OpenApiResponse(
    OpenApiTypes.OBJECT,
    description='`{"detail": "message naming the problem"}` (definition errors add `source`, `line`, '
    '`element`), or `{"<field>": ["message", ...]}` for invalid fields',
)


# ---- declared query filters -------------------------------------------------------------


@dataclass(frozen=True)
class Filter:
    """One query parameter: `?name=value` (repeatable or comma-separated when `multiple`) -> a lookup."""

    field: str
    lookup: str = "exact"
    kind: str = "str"  # str | datetime | choice
    choices: tuple[str, ...] = ()
    multiple: bool = False
    upper: bool = False
    description: str = ""

    def parse(self, name: str, raw: str) -> Any:
        """The Python value of one raw parameter value; ValidationError naming the parameter."""
        if "\x00" in raw:
            raise exceptions.ValidationError({name: "NUL characters are not allowed"})
        value = raw.strip().upper() if self.upper else raw.strip()
        if self.kind == "datetime":
            try:
                parsed: datetime = serializers.DateTimeField().to_internal_value(value)
            except exceptions.ValidationError as exc:
                raise exceptions.ValidationError({name: exc.detail}) from None
            return parsed
        if self.choices and value not in self.choices:
            raise exceptions.ValidationError({name: f"{value!r} is not one of {', '.join(self.choices)}"})
        if len(value) > 255:
            raise exceptions.ValidationError({name: "at most 255 characters"})
        return value

    def apply(self, queryset: QuerySet[Any], name: str, raw_values: list[str]) -> QuerySet[Any]:
        """Narrow the queryset by this filter's values."""
        if self.multiple:
            values = [self.parse(name, part) for raw in raw_values for part in raw.split(",") if part.strip()]
            return queryset.filter(**{f"{self.field}__in": values}) if values else queryset
        return queryset.filter(**{f"{self.field}__{self.lookup}": self.parse(name, raw_values[-1])})


class FilterSet:
    """A declaration of the query filters a list accepts (`filters = {"status": Filter(...)}`)."""

    filters: ClassVar[dict[str, Filter]] = {}

    @classmethod
    def filter_queryset(cls, request: Request, queryset: QuerySet[Any]) -> QuerySet[Any]:
        """Apply every declared filter present in the query string."""
        for name, declared in cls.filters.items():
            raw = [value for value in request.query_params.getlist(name) if value != ""]
            if raw:
                queryset = declared.apply(queryset, name, raw)
        return queryset


class DeclaredFilterBackend(BaseFilterBackend):
    """Applies the view's filter set for the current action and describes it in the OpenAPI schema."""

    def filter_queryset(self, request: Request, queryset: QuerySet[Any], view: Any) -> QuerySet[Any]:
        """Narrow by the declared filters of this action (none declared: unchanged)."""
        filterset = view.filtersets.get(getattr(view, "action", None))
        return queryset if filterset is None else filterset.filter_queryset(request, queryset)

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        """The query parameters of the action's filter set, as OpenAPI parameter objects."""
        filterset = view.filtersets.get(getattr(view, "action", None))
        if filterset is None:
            return []
        parameters = []
        for name, declared in filterset.filters.items():
            schema: dict[str, Any] = {"type": "string"}
            if declared.kind == "datetime":
                schema["format"] = "date-time"
            elif declared.choices and not declared.multiple:
                schema["enum"] = list(declared.choices)
            parameters.append({
                "name": name, "in": "query", "required": False, "schema": schema,
                "description": declared.description,
            })
        return parameters


# ---- domain errors -> 4xx -----------------------------------------------------------------


def definition_details(exc: Exception) -> dict[str, Any]:
    """The message and, for definition errors, where: file, line, element."""
    body: dict[str, Any] = {"detail": " ".join(str(exc).split())}
    for name in ("source", "line", "element"):
        if hasattr(exc, name):
            body[name] = getattr(exc, name)
    return body


class DomainViewSet(viewsets.GenericViewSet[Any]):
    """Base of the native API's view sets: declared filters, pagination, typed errors as 4xx.

    `conflict_errors` lists the domain exceptions that mean "not in this state" (409) and
    `missing_errors` those that mean "no such part" (404, checked first: they may subclass a
    conflict); other ValueErrors are bad input (400), PermissionErrors 403, missing rows 404.
    """

    pagination_class = Pagination
    filter_backends: ClassVar[list[type[BaseFilterBackend]]] = [DeclaredFilterBackend]  # type: ignore[misc]
    filtersets: ClassVar[dict[str, type[FilterSet]]] = {}  # action name -> its query filters
    conflict_errors: ClassVar[tuple[type[Exception], ...]] = ()
    missing_errors: ClassVar[tuple[type[Exception], ...]] = ()
    lookup_value_regex = "[^/]+"

    def get_object(self) -> Any:
        """The object named in the URL among `get_queryset()` (query filters are for lists, not lookups)."""
        key = self.lookup_url_kwarg or self.lookup_field
        obj = get_object_or_404(self.get_queryset(), **{self.lookup_field: self.kwargs[key]})
        self.check_object_permissions(self.request, obj)
        return obj

    def handle_exception(self, exc: Exception) -> Response:
        """Typed domain errors become DRF errors with the right status and a message naming the problem."""
        key = self.kwargs.get(self.lookup_url_kwarg or self.lookup_field) if hasattr(self, "kwargs") else None
        if isinstance(exc, ObjectDoesNotExist) and key is not None:
            exc = exceptions.NotFound(f"{type(exc).__qualname__.split('.')[0]} {key!r} does not exist")
        return super().handle_exception(translate_error(exc, self.conflict_errors, self.missing_errors))


def translate_error(exc: Exception, conflicts: Iterable[type[Exception]] = (),
                    missing: Iterable[type[Exception]] = ()) -> Exception:
    """The DRF exception answering a domain error (or the error itself when DRF knows it)."""
    if isinstance(exc, exceptions.APIException):
        return exc
    if isinstance(exc, tuple(missing)):
        return exceptions.NotFound(" ".join(str(exc).split()))
    if isinstance(exc, ObjectDoesNotExist):
        return exceptions.NotFound(" ".join(str(exc).split()) or "not found")
    if isinstance(exc, PermissionError):
        return exceptions.PermissionDenied(str(exc))
    if isinstance(exc, tuple(conflicts)):
        return Conflict(str(exc))
    if isinstance(exc, ValueError):
        return BadInput(definition_details(exc))
    return exc


def accepted(serializer: Callable[..., serializers.BaseSerializer[Any]], instance: Model, request: Request) -> Response:
    """202: the verb is queued as a command; the body is the resource as it was when queued."""
    return Response(serializer(instance, context={"request": request}).data, status=status.HTTP_202_ACCEPTED)


# ---- schema post-processing -------------------------------------------------------------


def document_unsupported_media(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """drf-spectacular hook: every operation that reads a body also answers 415 to a media type no parser reads.

    DRF answers `415 {"detail": "Unsupported media type ..."}` before the view runs, whatever
    the view declares; the schema says so once here rather than on every verb.
    """
    for methods in result.get("paths", {}).values():
        for operation in methods.values():
            if not isinstance(operation, dict) or "requestBody" not in operation:
                continue
            operation.setdefault("responses", {}).setdefault("415", {
                "content": {"application/json": {"schema": {"type": "object", "additionalProperties": {}}}},
                "description": '`{"detail": "Unsupported media type \\"...\\" in request."}`',
            })
    return result


def reader(context: Mapping[str, Any]) -> Any:
    """The user a serializer answers (None without a request: everything secret is then masked)."""
    return getattr(context.get("request"), "user", None)


def siblings(serializer: serializers.BaseSerializer[Any]) -> list[Any]:
    """The other instances of the list being serialized (a page), to read what they need in one query."""
    parent = serializer.parent
    if isinstance(parent, serializers.ListSerializer) and isinstance(parent.instance, list | tuple):
        return list(parent.instance)
    return []


class TaskTrySerializer(serializers.ModelSerializer[Any]):
    """One try (kernel.tries): how it ended, its error, traceback and log, as stored (secrets masked)."""

    class Meta:
        model = TaskTry
        fields = ["id", "kind", "object_id", "job_id", "action_id", "name", "run", "attempt", "worker", "status",
                  "started_at", "ended_at", "error_code", "error_message", "traceback", "log", "log_dropped"]
        read_only_fields = fields


def tries_page(view: DomainViewSet, tries: QuerySet[Any], mask: Masker) -> Response:
    """A page of tries, newest first (a rerun, a retry and a relaunch each add one; earlier ones stay), their
    error, traceback and log through the reader's masker."""
    page = view.paginate_queryset(tries.order_by("-id"))
    rows = TaskTrySerializer(page, many=True, context=view.get_serializer_context()).data
    for row in rows:
        for name in ("error_message", "traceback", "log"):
            row[name] = mask.text(row[name])
    return view.get_paginated_response(rows)
