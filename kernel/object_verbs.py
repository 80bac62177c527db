"""Verbs on an object's admin page: a button per verb, a confirmation page naming what changes, then the service.

Shared by every object page (coordinator jobs and actions, workflow jobs and their nodes,
bundles, batches, batch jobs), so they look alike and take one code path:

- the page shows a button per verb (`admin/object_verbs.html`, in the change form's
  `form_top` block); a verb the object's status does not allow is shown disabled, the reason
  in its title; the bar is shown to users with the model's change permission only;
- a button opens `<object>/verb/<verb>/`: a confirmation page naming what will change (the
  object, its status now and the status expected, the new value), after the value's form
  when the verb takes one;
- its Confirm button POSTs (CSRF) with `confirm=yes`: the verb runs through the app's
  service, the one the REST API and `manage.py job` call, with its permission check. A user
  who may not act on the object gets a 403 and nothing changes; a refusal (the status moved
  meanwhile, a bad value) is shown on the page (409, 400) and nothing changes; done, the
  browser goes back to the object page with a message saying what was queued.

Each model admin mixes in ObjectVerbsAdmin and lists its verbs in `object_verbs`; nothing here
knows an app (the kernel imports none).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import ObjectDoesNotExist, PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.http import urlencode

from kernel.permissions import JobPermissionDenied

#: Refusals shown on the page (a status that moved, a bad value); IllegalTransition and the apps' *Refused are ValueErrors.
REFUSALS: tuple[type[Exception], ...] = (ValueError, ObjectDoesNotExist)


@dataclass(frozen=True)
class ObjectVerb:
    """One verb on one object: its button, why it is refused now, what it changes, and how it runs.

    `effect(data)` and `run(data)` take the form's cleaned data ({} without a form); `run`
    calls the app's service as the request's user and returns the message for the page.
    `params` name a part of the object the verb acts on (a workflow's node), carried in the
    verb's URL and its confirmation form.
    """

    name: str
    label: str
    effect: Callable[[Mapping[str, Any]], list[str]]
    run: Callable[[Mapping[str, Any]], str]
    refused: str = ""
    form: type[forms.Form] | None = None
    params: Mapping[str, str] = field(default_factory=dict)
    danger: bool = False
    title: str = ""


def verb_url(opts: Any, object_id: Any, verb: str, params: Mapping[str, str] | None = None) -> str:
    """The verb's confirmation page for an object (`params`: the part it acts on)."""
    url = reverse(f"admin:{opts.app_label}_{opts.model_name}_verb", args=[quote(object_id), verb])
    return f"{url}?{urlencode(dict(params))}" if params else url


def button(opts: Any, object_id: Any, verb: ObjectVerb) -> dict[str, Any]:
    """What the template shows of a verb: its label, link, and the reason it is disabled."""
    return {
        "name": verb.name, "label": verb.label, "refused": verb.refused, "danger": verb.danger,
        "title": verb.refused or verb.title or verb.label,
        "url": "" if verb.refused else verb_url(opts, object_id, verb.name, verb.params),
    }


class ObjectVerbsAdmin(admin.ModelAdmin[Any]):
    """A model admin whose object page carries verb buttons; mixed in before its base."""

    #: Query parameters a verb may take (the part of the object it acts on).
    verb_params: ClassVar[tuple[str, ...]] = ()
    #: Exceptions the services raise to refuse (shown on the page, nothing changed).
    verb_refusals: ClassVar[tuple[type[Exception], ...]] = REFUSALS

    def object_verbs(self, request: HttpRequest, obj: Any, params: Mapping[str, str]) -> list[ObjectVerb]:
        """The object's verbs (of the part `params` name), each with why its status refuses it now."""
        return []

    def verb_forbidden(self, request: HttpRequest, obj: Any) -> str:
        """Why this user may not act on the object ('' when they may: owner, ACL, job admins)."""
        return ""

    def verbs_shown(self, request: HttpRequest) -> bool:
        """Whether the page shows verbs at all: the model's change permission, as the list's bulk actions need."""
        return bool(super().has_change_permission(request))

    def verb_buttons(self, request: HttpRequest, obj: Any, params: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
        """The buttons of the object (or of one of its parts) for this user."""
        if obj is None or not self.verbs_shown(request):
            return []
        forbidden = self.verb_forbidden(request, obj)
        shown = []
        for verb in self.object_verbs(request, obj, params or {}):
            item = button(self.model._meta, obj.pk, verb)
            if forbidden and not verb.refused:
                item.update(refused=forbidden, title=forbidden, url="")
            shown.append(item)
        return shown

    def render_change_form(self, request: HttpRequest, context: dict[str, Any], add: bool = False,
                           change: bool = False, form_url: str = "", obj: Any = None) -> Any:
        """The stock page with its verb bar (`object_verbs`)."""
        context["object_verbs"] = self.verb_buttons(request, obj)
        return super().render_change_form(request, context, add, change, form_url, obj)

    def get_urls(self) -> list[URLPattern]:
        opts = self.model._meta
        verb = path(
            "<path:object_id>/verb/<str:verb>/", self.admin_site.admin_view(self.object_verb_view),
            name=f"{opts.app_label}_{opts.model_name}_verb",
        )
        return [verb, *super().get_urls()]

    # ---- the confirmation page and the POST ------------------------------------------------------

    def object_verb_view(self, request: HttpRequest, object_id: str, verb: str) -> HttpResponse:
        """GET: the verb's confirmation (or its value's form); POST confirm=yes: run it, back to the object page."""
        obj = self.get_object(request, unquote(object_id))
        if obj is None:
            raise Http404(f"no {self.model._meta.verbose_name} {object_id}")
        if not self.has_view_permission(request, obj) or not self.verbs_shown(request):
            raise PermissionDenied
        data = request.POST if request.method == "POST" else request.GET
        params = {name: str(data[name]) for name in self.verb_params if name in data}
        found = next((v for v in self.object_verbs(request, obj, params) if v.name == verb), None)
        if found is None:
            raise Http404(f"no verb {verb!r} here")
        form = None
        if found.form is not None:
            fields = set(found.form.base_fields)
            form = found.form(data if request.method == "POST" or fields & set(data) else None)
        if request.method != "POST":
            return self.verb_page(request, obj, found, form, values=form is None)
        if form is not None and not form.is_valid():
            return self.verb_page(request, obj, found, form, values=False, status=400)
        cleaned: Mapping[str, Any] = form.cleaned_data if form is not None else {}
        if request.POST.get("confirm") != "yes":
            return self.verb_page(request, obj, found, form, values=True, cleaned=cleaned)
        forbidden = self.verb_forbidden(request, obj)  # as the services: who may act first, then the status
        if forbidden:
            raise PermissionDenied(forbidden)
        if found.refused:
            return self.verb_page(request, obj, found, form, values=True, cleaned=cleaned, error=found.refused,
                                  status=409)
        try:
            message = found.run(cleaned)
        except JobPermissionDenied as exc:
            raise PermissionDenied(str(exc)) from exc
        except self.verb_refusals as exc:
            return self.verb_page(request, obj, found, form, values=True, cleaned=cleaned, error=str(exc), status=409)
        self.message_user(request, message, messages.SUCCESS)
        opts = self.model._meta
        return HttpResponseRedirect(reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[quote(obj.pk)]))

    def verb_page(self, request: HttpRequest, obj: Any, verb: ObjectVerb, form: forms.Form | None, *, values: bool,
                  cleaned: Mapping[str, Any] | None = None, error: str = "", status: int = 200) -> TemplateResponse:
        """The confirmation page: what will change (once the values are known), or the form asking for them."""
        opts = self.model._meta
        effect: list[str] = []
        if values and not verb.refused:
            try:
                effect = verb.effect(cleaned or {})
            except self.verb_refusals as exc:
                error, status = error or str(exc), status if status != 200 else 409
        context = {
            **self.admin_site.each_context(request),
            "opts": opts, "original": obj, "verb": verb, "form": form, "effect": effect,
            "asking": form is not None and not values, "error": error or verb.refused,
            "params": dict(verb.params), "object_url": reverse(
                f"admin:{opts.app_label}_{opts.model_name}_change", args=[quote(obj.pk)]),
            "title": f"{verb.label}: {obj}", "media": self.media, "is_nav_sidebar_enabled": False,
        }
        return TemplateResponse(request, "admin/object_verb_confirm.html", context, status=status)
