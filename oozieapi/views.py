"""The Oozie Web Services API (v1, v2) for coordinator and bundle jobs, on the same domain actions as everything else.

Endpoints: /versions, /v{1,2}/admin/{status,build-version,available-timezones} (and the resources
of oozieapi.admin), /v{1,2}/jobs
(GET list, POST submit with a Hadoop XML configuration, PUT bulk kill/suspend/resume), /v{1,2}/job/{id} (GET info, definition,
log, errorlog, status; PUT start, suspend, resume, kill (the job, or `type=action|date&scope=` its actions),
change, rerun, dryrun, ignore, update) and /job/{id}@{n}.
Views parse Oozie's parameters and call `coordinators.services`; bundles (`-B` ids, `jobtype=bundle`,
`oozie.bundle.application.path`) go to `oozieapi.bundles`, on `bundles.services`. Errors become
Oozie's `oozie-error-code` / `oozie-error-message` answers.
"""

from __future__ import annotations

import re
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.utils import timezone
from django.utils.decorators import method_decorator
from django.views import View
from django.views.decorators.csrf import csrf_exempt

from bundles.models import BundleJob
from coordinators import services
from coordinators.choices import IllegalTransition
from coordinators.commands.actions_kill import KillRefused, NothingToKill
from coordinators.commands.ignore import IgnoreRefused
from coordinators.commands.update import UpdateRefused
from coordinators.dryrun import as_text
from coordinators.models import CoordinatorAction, CoordinatorJob
from kernel.permissions import check_read, readable_jobs, submitter_properties
from oozie.definitions import parse_hadoop_configuration
from oozie.properties import BUNDLE_APP_PATH, COORD_APP_PATH, WF_APP_PATH
from oozieapi import bulk, bundles
from oozieapi import workflows as oozie_workflows
from oozieapi.admin import RESOURCES as ADMIN_RESOURCES
from oozieapi.admin import answer as admin_answer
from oozieapi.auth import authenticate
from oozieapi.errors import OozieError, bad_parameter, error_response, from_exception, is_no_op
from oozieapi.filters import (
    MAX_LEN,
    MAX_PAGE,
    bool_parameter,
    filter_actions,
    filter_jobs,
    int_parameter,
)
from oozieapi.formats import (
    action_json,
    available_timezones_json,
    display_timezone,
    job_json,
    json_response,
)
from oozieapi.ids import is_bundle_id, is_workflow_id
from oozieapi.joblog import LoggedJob, job_log, parse_log_filter
from oozieapi.masking import masked, masker_of

PROTOCOL_VERSIONS = [1, 2]
MAX_OFFSET = 2**31 - 1
APP_PATHS = (WF_APP_PATH, COORD_APP_PATH, BUNDLE_APP_PATH)  # exactly one names the job type
OTHER_APPLICATIONS = ("oozie.jobs.api.generated.xml",)
_JOB_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,80}(@[0-9]{1,9})?$")
XML_TYPES = ("application/xml", "text/xml")


def _build_version() -> str:
    try:
        return version("oozie-py")
    except PackageNotFoundError:
        return "unknown"


@method_decorator(csrf_exempt, name="dispatch")
class OozieView(View):
    """Base: authenticate (basic or token header), dispatch, answer errors the Oozie way.

    No session cookies are accepted, hence no CSRF tokens (see oozieapi.auth). Anonymous callers
    may only GET views marked `anonymous_get` (protocol negotiation and system status).
    """

    anonymous_get = False
    http_method_names = ["get", "head"]

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        """Every failure a caller can cause is a 4xx with Oozie's error headers; anything else is a bug."""
        self.caller: Any = None
        self.verb = ""
        try:
            self.caller = authenticate(request)
            if self.caller is None and not (self.anonymous_get and request.method in ("GET", "HEAD")):
                raise OozieError(401, "E0500", "authentication required: HTTP basic or 'Authorization: Token <key>'")
            return super().dispatch(request, *args, **kwargs)
        except Exception as exc:
            user = self.caller.get_username() if self.caller is not None else ""
            error = from_exception(
                exc, job_id=kwargs.get("job_id", ""), verb=self.verb, user=user, value=request.GET.get("value") or "",
            )
            if error is None:
                raise
            return error_response(error)

    def http_method_not_allowed(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        """405, with Oozie's headers."""
        response = error_response(OozieError(405, "E0301", f"{request.method} {request.path}"))
        response["Allow"] = ", ".join(m.upper() for m in self.http_method_names if hasattr(self, m))
        return response


class VersionsView(OozieView):
    """GET /oozie/versions: the protocol versions served (v0 is not)."""

    anonymous_get = True

    def get(self, request: HttpRequest) -> HttpResponse:
        """[1, 2]."""
        return json_response(PROTOCOL_VERSIONS)


class AdminView(OozieView):
    """GET /oozie/v{1,2}/admin/<resource>: status, build-version, available-timezones for anyone; the rest: oozieapi.admin."""

    anonymous_get = True

    def get(self, request: HttpRequest, version: str, resource: str) -> HttpResponse:
        """System mode, build version, time zones, or an oozieapi.admin resource; os-env, sys-props ... are not exposed."""
        if resource == "status":
            return json_response({"systemMode": "NORMAL"})
        if resource == "build-version":
            return json_response({"buildVersion": _build_version()})
        if resource == "available-timezones":
            return json_response(available_timezones_json())
        if resource in ADMIN_RESOURCES:
            return admin_answer(request, self.caller, version, resource)
        raise OozieError(400, "E0301", resource)


class JobsView(OozieView):
    """GET /oozie/v{1,2}/jobs: list coordinator or bundle jobs; POST: submit one; PUT: bulk kill, suspend or resume."""

    http_method_names = ["get", "head", "post", "put"]

    def get(self, request: HttpRequest, version: str) -> HttpResponse:
        """`jobtype=coord` lists coordinator jobs, `jobtype=bundle` bundles, `jobtype=wf` (the default) workflow runs (filter, offset from 1, len)."""
        params = request.GET
        offset = int_parameter(params, "offset", 1, minimum=1, maximum=MAX_OFFSET)
        # Oozie reads a len below 1 as 50 and has no cap; above MAX_PAGE the answer's len says what was served.
        length = int_parameter(params, "len", 50, minimum=0, maximum=MAX_PAGE) or 50
        zone = display_timezone(params.get("timezone"))
        jobtype = (params.get("jobtype") or "wf").lower()
        if jobtype in ("wf", "workflow"):
            return json_response(oozie_workflows.list_workflows(self.caller, params.get("filter", ""), offset=offset, length=length, zone=zone))
        if jobtype == "bundle":
            return json_response(bundles.list_bundles(self.caller, params.get("filter", ""), offset=offset, length=length, zone=zone))
        if jobtype not in ("coord", "coordinator"):
            raise bad_parameter("jobtype", params.get("jobtype"))
        queryset: QuerySet[CoordinatorJob] = CoordinatorJob.objects.select_related("owner").defer("definition")
        queryset = filter_jobs(readable_jobs(queryset, self.caller), params.get("filter", ""), timezone.now())
        total = queryset.count()
        page = queryset[offset - 1:offset - 1 + length] if length else []
        jobs = [job_json(job, zone=zone, with_conf=False) for job in page]
        return json_response({"total": total, "offset": offset, "len": length, "coordinatorjobs": jobs})

    def post(self, request: HttpRequest, version: str) -> HttpResponse:
        """201 {"id": ...}; `action=start` starts it, `action=dryrun` only plans it (200 {"id": <plan text>}).

        The path property decides the job type, as in Oozie: `oozie.coord.application.path` a
        coordinator, `oozie.bundle.application.path` a bundle; naming two is E0302.
        """
        content_type = request.META.get("CONTENT_TYPE", "")
        if content_type.split(";")[0].strip().lower() not in XML_TYPES:
            raise OozieError(400, "E0300", content_type or "(none)")
        action = request.GET.get("action") or ""
        if action not in ("", "start", "dryrun"):
            raise bad_parameter("action", action)
        properties = parse_hadoop_configuration(request.body, "job configuration")
        if sum(name in properties for name in APP_PATHS) > 1:
            raise OozieError(400, "E0302", "Multiple app paths specified, only one is allowed")
        if properties.get(WF_APP_PATH, "").strip():  # a workflow application (oozieapi.workflows)
            return oozie_workflows.submit(self.caller, submitter_properties(properties, self.caller), action)
        other = [name for name in OTHER_APPLICATIONS if name in properties]
        if other:
            raise OozieError(400, "E1008", f"{other[0]}: this service runs workflow, coordinator and bundle jobs only")
        if properties.get(BUNDLE_APP_PATH):
            return bundles.submit(submitter_properties(properties, self.caller), self.caller, action)
        if not properties.get(COORD_APP_PATH):
            raise OozieError(400, "E0405")
        properties = submitter_properties(properties, self.caller)
        if action == "dryrun":
            result = services.dryrun_submission(None, properties, owner=self.caller, now=timezone.now())
            return json_response({"id": as_text(result), "actions": result["actions"]})
        job = services.submit_from_properties(properties, owner=self.caller, start=action == "start")
        return json_response({"id": job.id}, status=201)

    def put(self, request: HttpRequest, version: str) -> HttpResponse:
        """`action=kill|suspend|resume&jobtype=coordinator|bundle&filter=...&offset=&len=`: see oozieapi.bulk."""
        return bulk.bulk_modify(self.caller, request.GET, zone=display_timezone(request.GET.get("timezone")))


class JobView(OozieView):
    """GET /oozie/v{1,2}/job/{id}[@n]?show=...; PUT ...?action=start|suspend|resume|kill|change|rerun|dryrun|ignore|update."""

    http_method_names = ["get", "head", "put"]

    def get(self, request: HttpRequest, version: str, job_id: str) -> HttpResponse:
        """The answer of `_show`, secret properties masked unless the caller owns the job or is a job admin."""
        self.owner_id: Any = None  # the job's owner, once `_show` has read the job (saves reading it again)
        response = self._show(request, version, job_id)
        return _masked(response, self.caller, job_id, self.owner_id)

    def _show(self, request: HttpRequest, version: str, job_id: str) -> HttpResponse:
        """Job info (with a page of actions), definition, log, error log or status; or one action's info."""
        if is_workflow_id(job_id):  # -W ids and their nodes: see oozieapi.workflows
            return oozie_workflows.show(self.caller, job_id, request.GET)
        _check_id(job_id)
        if request.GET.get("show") == "allruns" and not is_bundle_id(job_id):
            return oozie_workflows.all_runs(self.caller, job_id, request.GET)
        params = request.GET
        show = params.get("show") or "info"
        zone = display_timezone(params.get("timezone"))
        if "@" in job_id:
            action = CoordinatorAction.objects.select_related("job__owner").get(pk=job_id)
            check_read(self.caller, action.job)
            self.owner_id = action.job.owner_id
            if show == "info":
                return json_response(action_json(action, zone))
            if show == "status":
                return json_response({"status": action.status})
            raise bad_parameter("show", show)
        if is_bundle_id(job_id):
            bundle = BundleJob.objects.select_related("owner").defer("applications").get(pk=job_id)
            check_read(self.caller, bundle)
            self.owner_id = bundle.owner_id
            if show in ("log", "errorlog"):
                return self._log(request, bundle, errors_only=show == "errorlog")
            return bundles.show(bundle, show, zone)
        job = CoordinatorJob.objects.select_related("owner").get(pk=job_id)
        check_read(self.caller, job)
        self.owner_id = job.owner_id
        if show == "info":
            return self._info(request, version, job, zone)
        if show == "definition":
            return HttpResponse(job.definition, content_type="application/xml;charset=UTF-8")
        if show in ("log", "errorlog"):
            return self._log(request, job, errors_only=show == "errorlog")
        if show == "status":
            return json_response({"status": job.status})
        raise bad_parameter("show", show)

    def _info(self, request: HttpRequest, version: str, job: CoordinatorJob, zone: Any) -> HttpResponse:
        """v2 returns no actions unless `len` asks (Oozie's defaults: v1 len=1000, also for len=0; v2 len=0); at most MAX_PAGE."""
        params = request.GET
        offset = int_parameter(params, "offset", 1, minimum=1, maximum=MAX_OFFSET)
        length = int_parameter(params, "len", 0 if version == "v2" else MAX_LEN, minimum=0, maximum=MAX_PAGE)
        if version != "v2" and not length:
            length = MAX_LEN
        order = params.get("order") or "asc"
        if order not in ("asc", "desc"):
            raise bad_parameter("order", order)
        actions = filter_actions(CoordinatorAction.objects.filter(job_id=job.pk), params.get("filter", ""))
        total = actions.count()
        page = actions.order_by("number" if order == "asc" else "-number")[offset - 1:offset - 1 + length] if length else []
        return json_response(job_json(job, page, total=total, zone=zone))

    def _log(self, request: HttpRequest, job: LoggedJob, *, errors_only: bool) -> HttpResponse:
        """Text lines (see oozieapi.joblog), oldest first unless order=desc, paged by offset/len when given."""
        params = request.GET
        options = parse_log_filter(params.get("logfilter") or params.get("filter") or "")
        lines = job_log(job, options=options, errors_only=errors_only)
        if (params.get("order") or "asc") not in ("asc", "desc"):
            raise bad_parameter("order", params.get("order"))
        if params.get("order") == "desc":
            lines.reverse()
        offset = int_parameter(params, "offset", 1, minimum=1, maximum=MAX_OFFSET)
        length = int_parameter(params, "len", len(lines), minimum=0, maximum=MAX_OFFSET)
        text = "\n".join(lines[offset - 1:offset - 1 + length])
        return HttpResponse(text + ("\n" if text else ""), content_type="text/plain;charset=UTF-8")

    def put(self, request: HttpRequest, version: str, job_id: str) -> HttpResponse:
        """The answer of `_act` (rerun, ignore, update and dryrun list configurations), masked as `get`'s."""
        return _masked(self._act(request, version, job_id), self.caller, job_id)

    def _act(self, request: HttpRequest, version: str, job_id: str) -> HttpResponse:
        """Queue the verb (200, empty body as Oozie answers); rerun, ignore and a scoped kill answer the actions."""
        if is_workflow_id(job_id):
            self.verb = request.GET.get("action") or ""
            return oozie_workflows.put(self.caller, job_id, request.GET, request.body,
                                       request.META.get("CONTENT_TYPE", ""))
        _check_id(job_id)
        params = request.GET
        action = params.get("action")
        if not action:
            raise OozieError(400, "E0305", "action")
        if "@" in job_id:
            raise bad_parameter("action", f"{action} on a coordinator action (use the job id and type=action&scope=N)")
        if action == "ignore" and is_bundle_id(job_id):
            raise OozieError(400, "E0302", "Bundle Ignore Not supported")  # V2JobServlet.ignoreJob's words
        if is_bundle_id(job_id):
            return bundles.put(job_id, self.caller, params)
        self.verb = "rerun" if action in ("rerun", "coord-rerun") else action
        if action == "start":
            services.start_job(job_id, actor=self.caller)
        elif action == "kill" and ("type" in params or "scope" in params):
            return self._kill_actions(request, job_id)
        elif action in ("suspend", "resume", "kill"):
            try:
                services.control(job_id, action, actor=self.caller)
            except IllegalTransition:
                status = CoordinatorJob.objects.filter(pk=job_id).values_list("status", flat=True).first() or ""
                if not is_no_op("coordinator", action, status):
                    raise  # Oozie skips the others silently (200, nothing done; ADR 0013)
        elif action == "change":
            value = params.get("value")
            if not value:
                raise OozieError(400, "E0305", "value")
            services.change_job(job_id, value, actor=self.caller)
        elif self.verb == "rerun":
            return self._rerun(request, job_id)
        elif action == "dryrun":
            return self._dryrun(request, job_id)
        elif action == "ignore":
            return self._ignore(request, job_id)
        elif action == "update":
            return self._update(request, job_id)
        else:
            raise bad_parameter("action", action)
        return HttpResponse(status=200)

    def _kill_actions(self, request: HttpRequest, job_id: str) -> HttpResponse:
        """`type=action|date&scope=...`: the live actions queued to be KILLED (`{"actions": [...]}`); the job goes on.

        Both parameters are required (Oozie kills the whole job when one is missing; here that
        is refused, so that a typo never kills more than asked). Bad syntax: E0302, as Oozie's
        CoordUtils; a finished job or a scope with no live action: E1020; nothing is queued.
        """
        params = request.GET
        kill_type = params.get("type") or ""
        scope = params.get("scope") or ""
        if not kill_type:
            raise OozieError(400, "E0305", "type")
        if kill_type not in ("action", "date"):
            raise OozieError(400, "E0302", f"type={kill_type}: a coordinator kill takes type=action or type=date")
        if not scope.strip():
            raise OozieError(400, "E0305", "scope")
        try:
            actions = services.kill_actions(job_id, actor=self.caller, kill_type=kill_type, scope=scope)
        except KillRefused as exc:
            raise OozieError(400, "E0302", str(exc)) from None
        except NothingToKill as exc:
            raise OozieError(400, "E1020", str(exc)) from None
        return json_response({"actions": [action_json(action) for action in actions]})

    def _ignore(self, request: HttpRequest, job_id: str) -> HttpResponse:
        """`type=action|date&scope=...`: the actions queued to be IGNORED; no scope: the job (200, empty body)."""
        params = request.GET
        ignore_type = params.get("type") or "action"
        scope = params.get("scope") or ""
        try:
            if not scope.strip():
                services.ignore_job(job_id, actor=self.caller)
                return HttpResponse(status=200)
            if ignore_type not in ("action", "date"):
                raise IgnoreRefused(f"Currently ignore only support -action or -date option, not -{ignore_type}")
            actions = services.ignore_actions(job_id, actor=self.caller, ignore_type=ignore_type, scope=scope)
        except IgnoreRefused as exc:
            if not scope.strip():  # CoordChangeXCommand's refusal of status=IGNORED
                raise OozieError(400, "E1015", "IGNORED", str(exc)) from None
            raise OozieError(400, "E1024", str(exc)) from None
        return json_response({"actions": [action_json(action) for action in actions]})

    def _update(self, request: HttpRequest, job_id: str) -> HttpResponse:
        """Optional Hadoop XML configuration body; `dryrun=true` changes nothing; `{"update": {"diff": ...}}` either way."""
        configuration: dict[str, str] = {}
        if request.body.strip():
            content_type = request.META.get("CONTENT_TYPE", "")
            if content_type.split(";")[0].strip().lower() not in XML_TYPES:
                raise OozieError(400, "E0300", content_type or "(none)")
            configuration = dict(parse_hadoop_configuration(request.body, "job configuration"))
        try:
            plan = services.update_job(
                job_id, actor=self.caller, configuration=configuration, dryrun=bool_parameter(request.GET, "dryrun"),
            )
        except UpdateRefused as exc:
            raise OozieError(400, "E1023", str(exc)) from None
        show = (request.GET.get("showdiff") or "true").strip().lower() != "false"  # Oozie's default: show it
        return json_response({"update": {"diff": plan.diff if show else ""}})

    def _rerun(self, request: HttpRequest, job_id: str) -> HttpResponse:
        params = request.GET
        rerun_type = params.get("type")
        if rerun_type not in ("action", "date"):
            raise bad_parameter("type", rerun_type) if rerun_type else OozieError(400, "E0305", "type")
        scope = params.get("scope")
        if not scope:
            raise OozieError(400, "E0305", "scope")
        actions = services.rerun_job(
            job_id, actor=self.caller, rerun_type=rerun_type, scope=scope,
            refresh=bool_parameter(params, "refresh"), nocleanup=bool_parameter(params, "nocleanup"),
            failed=bool_parameter(params, "failed"),
        )
        return json_response({"actions": [action_json(action) for action in actions]})

    def _dryrun(self, request: HttpRequest, job_id: str) -> HttpResponse:
        """Plan the stored job again (readers may): its first `len` actions (default 100, at most 1000)."""
        job = CoordinatorJob.objects.select_related("owner").get(pk=job_id)
        check_read(self.caller, job)
        length = int_parameter(request.GET, "len", 100, minimum=1, maximum=MAX_LEN)
        result = services.dryrun_submission(
            job.definition, job.configuration, owner=job.owner, app_dir=job.app_path or None,
            now=timezone.now(), max_actions=length,
        )
        return json_response({"id": as_text(result), "actions": result["actions"]})


def _masked(response: HttpResponse, caller: Any, job_id: str, owner_id: Any = None) -> HttpResponse:
    """A successful answer about one job, its secrets masked for callers other than the owner and job admins."""
    if response.status_code != 200 or not response.content:
        return response
    return masked(response, masker_of(caller, job_id, owner_id))


def _check_id(job_id: str) -> None:
    """Ids that cannot exist are answered without asking the database."""
    if not _JOB_ID.match(job_id):
        raise OozieError(400, "E0605" if "@" in job_id else "E0604", job_id)
