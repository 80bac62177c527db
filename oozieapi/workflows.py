"""Workflow jobs (`...-W`) on the Oozie Web Services API: info, definition, log, lists, verbs, a coordinator action's runs.

Every launch of a coordinator action is a workflow job (`workflows.models`); the job view
hands over `-W` ids (and `<wf id>@<node>`), `jobtype=wf` lists, and `show=allruns` of a
coordinator action. Who may read or act on a workflow is who may read or act on its parent
coordinator job (coordinators.permissions). Formats follow Oozie's WorkflowJobBean and
WorkflowActionBean `toJSONObject`; decisions are in docs/adr/0012-workflow-jobs-api.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from typing import Any

from django.db.models import F, Q, QuerySet
from django.http import HttpResponse
from django.utils import timezone
from lxml import etree

from coordinators.api.filters import readable_jobs
from coordinators.models import CoordinatorAction, CoordinatorJob
from coordinators.permissions import OwnedJob, check_modify, check_read
from oozieapi.errors import OozieError, bad_parameter, one_line
from oozieapi.filters import filter_jobs, int_parameter
from oozieapi.formats import configuration_xml, display_timezone, json_response, rfc822
from oozieapi.joblog import parse_log_filter
from workflows.choices import NodeStatus, WorkflowStatus
from workflows.models import WorkflowJob, WorkflowNode
from workflows.services import VerbNotSupported, parent_key, request_control
from xcommands.models import Command

WORKFLOW_SUFFIX = "-W"
_WORKFLOW_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,80}-W(@[A-Za-z0-9_.:-]{1,100})?$")
WORKFLOW_STATUSES = tuple(WorkflowStatus.values)
WF_PATH_PROPERTY = "oozie.wf.application.path"
WORKFLOW_NS = "uri:oozie:workflow:1.0"
NODE_NS = {"celery-task": "uri:oozie-py:celery-task:0.1", "batch": "uri:oozie-py:batch:0.1"}
MAX_SCOPE_DIGITS = 9
MAX_LOG_ROWS = 5000
#: What Oozie's externalStatus says about a node's external work (the Celery task or the batch).
EXTERNAL_STATUS: dict[str, str] = {
    NodeStatus.RUNNING: "RUNNING", NodeStatus.OK: "SUCCEEDED", NodeStatus.ERROR: "FAILED",
    NodeStatus.FAILED: "FAILED", NodeStatus.KILLED: "KILLED",
}
#: The node a workflow moves to when one ends (the generated definition's `<ok to>` / `<error to>`).
TRANSITION: dict[str, str] = {NodeStatus.OK: "end", NodeStatus.ERROR: "fail", NodeStatus.FAILED: "fail"}
USER_RETRY_INTERVAL = 10  # Oozie's default (minutes); nodes here have no user retries
NOT_SERVED_VERBS = ("rerun", "coord-rerun", "change", "update")


def is_workflow_id(job_id: str) -> bool:
    """Workflow ids (and their nodes' ids) end with -W before any '@' (Oozie routes on the suffix too)."""
    return job_id.partition("@")[0].endswith(WORKFLOW_SUFFIX)


def _check_id(job_id: str) -> None:
    """Ids that cannot exist are answered without asking the database."""
    if not _WORKFLOW_ID.match(job_id):
        raise OozieError(400, "E0605" if "@" in job_id else "E0604", job_id)


# ---- who may read and act: the parent coordinator job's rules -------------------------------


@dataclass(frozen=True)
class _Unparented:
    """A workflow without a parent action answers to its owner (and admins) only."""

    id: str
    owner_id: Any
    acl: str = ""
    kind_name: str = "workflow job"


def guard(workflow: WorkflowJob) -> OwnedJob:
    """What permissions are checked against: the parent coordinator job, else the workflow itself."""
    if workflow.coord_action_id:
        return CoordinatorJob.objects.only("id", "owner_id", "acl").get(pk=parent_key(workflow))
    return _Unparented(workflow.id, workflow.owner_id)


def _load(caller: Any, workflow_id: str) -> tuple[WorkflowJob, OwnedJob]:
    workflow = WorkflowJob.objects.select_related("owner").get(pk=workflow_id)
    job = guard(workflow)
    check_read(caller, job)
    return workflow, job


# ---- Oozie's JSON -----------------------------------------------------------------------------


def _conf(workflow: WorkflowJob) -> str | None:
    """The run's configuration as Hadoop XML, with the properties an Oozie workflow's conf always has."""
    values: dict[str, Any] = dict(workflow.configuration)
    values.setdefault(WF_PATH_PROPERTY, workflow.app_path)
    if workflow.owner is not None:
        values.setdefault("user.name", workflow.owner.get_username())
    return configuration_xml(values)


def node_element(node: WorkflowNode) -> Any:
    """The node's action body in the generated definition: `<celery-task>` (task, queue) or `<batch>` (profile)."""
    namespace = NODE_NS.get(node.type, NODE_NS["celery-task"])
    nsmap: Any = {None: namespace}  # the default namespace (lxml's stubs want str keys)
    element = etree.Element(f"{{{namespace}}}{node.type if node.type in NODE_NS else 'celery-task'}", nsmap=nsmap)
    if node.type == "batch":
        etree.SubElement(element, f"{{{namespace}}}profile").text = node.task_name.partition(":")[2]
    else:
        etree.SubElement(element, f"{{{namespace}}}task").text = node.task_name
        etree.SubElement(element, f"{{{namespace}}}queue").text = node.queue
    return element


def definition_xml(workflow: WorkflowJob, nodes: Iterable[WorkflowNode]) -> str:
    """A workflow-app (uri:oozie:workflow:1.0) equivalent to what the run does: start, its node(s), end or fail."""
    nodes = list(nodes)
    nsmap: Any = {None: WORKFLOW_NS}
    app = etree.Element(f"{{{WORKFLOW_NS}}}workflow-app", nsmap=nsmap, name=workflow.app_name or workflow.id)
    etree.SubElement(app, f"{{{WORKFLOW_NS}}}start", to=nodes[0].name if nodes else "end")
    for node in nodes:
        action = etree.SubElement(app, f"{{{WORKFLOW_NS}}}action", name=node.name)
        action.append(node_element(node))
        etree.SubElement(action, f"{{{WORKFLOW_NS}}}ok", to="end")
        etree.SubElement(action, f"{{{WORKFLOW_NS}}}error", to="fail")
    kill = etree.SubElement(app, f"{{{WORKFLOW_NS}}}kill", name="fail")
    etree.SubElement(kill, f"{{{WORKFLOW_NS}}}message").text = "${wf:errorCode(wf:lastErrorNode())}: ${wf:errorMessage(wf:lastErrorNode())}"
    etree.SubElement(app, f"{{{WORKFLOW_NS}}}end", name="end")
    text: str = etree.tostring(app, encoding="unicode", pretty_print=True)
    return text


def node_json(node: WorkflowNode, zone: tzinfo = UTC) -> dict[str, Any]:
    """A node as WorkflowActionBean.toJSONObject writes it: externalId is the Celery task id (or `batch:<id>`)."""
    external = node.task_id or (node.worker if node.type == "batch" and node.worker else None)
    return {
        "id": node.id,
        "name": node.name,
        "cred": None,
        "type": node.type,
        "conf": etree.tostring(node_element(node), encoding="unicode"),
        "status": node.status,
        "retries": max(0, node.attempt - 1),
        "startTime": rfc822(node.started_at, zone),
        "endTime": rfc822(node.ended_at, zone),
        "transition": TRANSITION.get(node.status),
        "data": None,
        "stats": None,
        "externalChildIDs": None,
        "externalId": external,
        "externalStatus": EXTERNAL_STATUS.get(node.status) if external else None,
        "trackerUri": node.worker if node.type != "batch" and node.worker else None,
        "consoleUrl": None,
        "errorCode": node.error_code or None,
        "errorMessage": node.error_message or None,
        "toString": f"Action name[{node.name}] status[{node.status}]",
        "userRetryInterval": USER_RETRY_INTERVAL,
        "userRetryCount": 0,
        "userRetryMax": 0,
    }


def workflow_json(
    workflow: WorkflowJob, nodes: Iterable[WorkflowNode] = (), *, acl: str = "", zone: tzinfo = UTC, with_conf: bool = True,
) -> dict[str, Any]:
    """A workflow job as WorkflowJobBean.toJSONObject writes it; `parentId` is the coordinator action."""
    owner = workflow.owner.get_username() if workflow.owner is not None else None
    return {
        "appPath": workflow.app_path,
        "appName": workflow.app_name,
        "id": workflow.id,
        "externalId": None,
        "parentId": workflow.coord_action_id,
        "conf": _conf(workflow) if with_conf else None,
        "status": workflow.status,
        "lastModTime": rfc822(workflow.last_modified, zone),
        "createdTime": rfc822(workflow.created_at, zone),
        "startTime": rfc822(workflow.started_at, zone),
        "endTime": rfc822(workflow.ended_at, zone),
        "user": owner,
        "group": acl or None,
        "acl": acl or None,
        "run": workflow.run,
        "consoleUrl": None,
        "actions": [node_json(node, zone) for node in nodes],
        "toString": f"Workflow id[{workflow.id}] status[{workflow.status}]",
    }


# ---- reads ------------------------------------------------------------------------------------


def show(caller: Any, job_id: str, params: Mapping[str, str]) -> HttpResponse:
    """GET /job/<wf id>?show=info|status|definition|log|errorlog, or /job/<wf id>@<node>?show=info|status."""
    _check_id(job_id)
    what = params.get("show") or "info"
    zone = display_timezone(params.get("timezone"))
    workflow_id, _, node_name = job_id.partition("@")
    workflow, job = _load(caller, workflow_id)
    if node_name:
        node = WorkflowNode.objects.filter(workflow_id=workflow.pk, name=node_name).first()
        if node is None:
            raise OozieError(400, "E0605", job_id)
        if what == "info":
            return json_response(node_json(node, zone))
        if what == "status":
            return json_response({"status": node.status})
        raise bad_parameter("show", what)
    nodes = list(workflow.nodes.order_by("id"))
    if what == "info":
        return json_response(workflow_json(workflow, nodes, acl=job.acl, zone=zone))
    if what == "status":
        return json_response({"status": workflow.status})
    if what == "definition":
        return HttpResponse(definition_xml(workflow, nodes), content_type="application/xml;charset=UTF-8")
    if what in ("log", "errorlog"):
        return log_response(workflow, nodes, params, errors_only=what == "errorlog")
    raise bad_parameter("show", what)


def list_workflows(caller: Any, text: str, *, offset: int, length: int, zone: tzinfo) -> dict[str, Any]:
    """`jobs?jobtype=wf`: readable workflow jobs matching Oozie's jobs filter, newest first, a page of them (offset from 1).

    As in Oozie's list, each comes without `conf` and `actions` (clients ask for the job for those).
    """
    queryset: QuerySet[WorkflowJob] = (
        WorkflowJob.objects.select_related("owner").defer("configuration")
        .annotate(parent_acl=F("coord_action__job__acl"))
    )
    queryset = filter_jobs(readable_workflows(queryset, caller), text, timezone.now(), statuses=WORKFLOW_STATUSES)
    total = queryset.count()
    page = queryset[offset - 1:offset - 1 + length] if length else []
    jobs = [workflow_json(wf, acl=getattr(wf, "parent_acl", "") or "", zone=zone, with_conf=False) for wf in page]
    return {"total": total, "offset": offset, "len": length, "workflows": jobs}


def readable_workflows(queryset: QuerySet[WorkflowJob], caller: Any) -> QuerySet[WorkflowJob]:
    """The workflows whose parent coordinator job the caller may read (unparented ones: their owner's)."""
    readable = readable_jobs(queryset, caller, prefix="coord_action__job__")
    if readable is queryset:  # reads are not restricted, or the caller is an admin
        return queryset
    return queryset.filter(Q(pk__in=readable.values("pk")) | Q(coord_action__isnull=True, owner_id=caller.pk))


def all_runs(caller: Any, job_id: str, params: Mapping[str, str]) -> HttpResponse:
    """`show=allruns`: every workflow run of one coordinator action, oldest first, as V1JobServlet.getJobsByParentId answers.

    The action is `<coord id>@<n>`, or `<coord id>` with `type=action&scope=<n>` (Oozie's two forms).
    """
    job_part, _, number = job_id.partition("@")
    if not number:
        kind, scope = params.get("type"), (params.get("scope") or "").strip()
        if kind != "action":
            raise bad_parameter("type", kind) if kind else OozieError(400, "E0305", "type")
        if not scope:
            raise OozieError(400, "E0305", "scope")
        number = scope
    if not number.isdigit() or len(number) > MAX_SCOPE_DIGITS:
        raise bad_parameter("scope", f"{number[:40]} (one action number)")
    job = CoordinatorJob.objects.only("id", "owner_id", "acl").filter(pk=job_part).first()
    if job is None:
        raise OozieError(400, "E0604", job_part)
    check_read(caller, job)
    action_id = CoordinatorAction.action_id(job.id, int(number))
    if not CoordinatorAction.objects.filter(pk=action_id).exists():
        raise OozieError(400, "E0605", action_id)
    runs = (
        WorkflowJob.objects.filter(coord_action_id=action_id).order_by("created_at", "run", "id")
        .values("id", "status", "started_at", "ended_at")
    )
    # Oozie writes these times in GMT whatever `timezone` says.
    return json_response({"workflows": [
        {"id": run["id"], "status": run["status"], "startTime": rfc822(run["started_at"]), "endTime": rfc822(run["ended_at"])}
        for run in runs
    ]})


# ---- the log ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Line:
    at: datetime
    level: str
    source: str
    action: str
    text: str


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def log_lines(workflow: WorkflowJob, nodes: Iterable[WorkflowNode]) -> list[_Line]:
    """The run's story from the database: its launch, every attempt of its nodes, the verbs on it, its end."""
    lines = [_Line(workflow.created_at, "INFO", "WorkflowJob", "",
                   f"run {workflow.run} of {workflow.coord_action_id or 'no parent'} started: {workflow.app_path}")]
    for node in nodes:
        for entry in node.history[-MAX_LOG_ROWS:]:
            if not isinstance(entry, dict):
                continue
            at = _parse_time(entry.get("ended")) or _parse_time(entry.get("started")) or workflow.created_at
            outcome = str(entry.get("outcome", ""))
            level = "ERROR" if outcome in ("ERROR", "FAILED", "LOST") else "WARN" if outcome == "RETRY" else "INFO"
            text = f"attempt {entry.get('attempt')} on {entry.get('worker') or '-'}: {outcome}"
            if entry.get("error"):
                text += f": {one_line(str(entry['error']))}"
            lines.append(_Line(at, level, "WorkflowNode", node.id, text))
        if node.status in (NodeStatus.PREP, NodeStatus.RUNNING):
            since = node.started_at if node.status == NodeStatus.RUNNING else node.dispatched_at
            where = f" on {node.worker}" if node.status == NodeStatus.RUNNING and node.worker else ""
            lines.append(_Line(since or workflow.created_at, "INFO", "WorkflowNode", node.id,
                               f"attempt {node.attempt} {node.status}{where} (task {node.task_id or '-'})"))
    commands = (
        Command.objects.filter(key=parent_key(workflow), params__workflow_id=workflow.id).order_by("-seq")
        .values("seq", "name", "status", "attempts", "enqueued_at", "finished_at", "last_error")[:MAX_LOG_ROWS]
    )
    for row in commands:
        detail = f"{str(row['status']).lower()} after {row['attempts']} attempt(s)"
        if row["last_error"]:
            detail += f": {one_line(row['last_error'])}"
        level = "ERROR" if row["status"] in ("FAILED", "PARKED") else "INFO"
        source = f"{str(row['name']).rsplit('.', 1)[-1]}:{row['seq']}"
        lines.append(_Line(row["finished_at"] or row["enqueued_at"], level, source, "", detail))
    if workflow.ended_at is not None:
        failed = workflow.status in (WorkflowStatus.FAILED, WorkflowStatus.KILLED)
        text = f"workflow {workflow.status}" + (f": {one_line(workflow.error_message)}" if workflow.error_message else "")
        lines.append(_Line(workflow.ended_at, "ERROR" if failed else "INFO", "WorkflowJob", "", text))
    return sorted(lines, key=lambda line: line.at)


def render(line: _Line, workflow: WorkflowJob) -> str:
    """Oozie's log4j line: `2026-11-23 10:00:00,123  INFO source - USER[ann] GROUP[-] TOKEN[-] APP[..] JOB[..] ACTION[..] text`."""
    stamp = line.at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S,") + f"{line.at.microsecond // 1000:03d}"
    user = workflow.owner.get_username() if workflow.owner is not None else "-"
    return (
        f"{stamp} {line.level:>5} {line.source} - USER[{user}] GROUP[-] TOKEN[-] APP[{workflow.app_name}] "
        f"JOB[{workflow.id}] ACTION[{line.action or '-'}] {line.text}"
    )


def log_response(workflow: WorkflowJob, nodes: list[WorkflowNode], params: Mapping[str, str], *, errors_only: bool) -> HttpResponse:
    """Text lines, oldest first unless order=desc; `logfilter` (loglevel, text, action=<node>, limit), offset and len."""
    options = parse_log_filter(params.get("logfilter") or params.get("filter") or "")
    order = params.get("order") or "asc"
    if order not in ("asc", "desc"):
        raise bad_parameter("order", order)
    levels = {"ERROR"} if errors_only else set(options.get("loglevel", "ERROR|WARN|INFO|DEBUG").upper().split("|"))
    text, action = options.get("text", ""), options.get("action", "")
    chosen = [
        line for line in log_lines(workflow, nodes)
        if line.level in levels and (not text or text in line.text) and (not action or line.action.endswith(f"@{action}"))
    ]
    if "limit" in options:
        chosen = chosen[-int(options["limit"]):] if int(options["limit"]) else []
    rendered = [render(line, workflow) for line in chosen]
    if order == "desc":
        rendered.reverse()
    offset = int_parameter(params, "offset", 1, minimum=1, maximum=2**31 - 1)
    length = int_parameter(params, "len", len(rendered), minimum=0, maximum=2**31 - 1)
    body = "\n".join(rendered[offset - 1:offset - 1 + length])
    return HttpResponse(body + ("\n" if body else ""), content_type="text/plain;charset=UTF-8")


# ---- verbs ------------------------------------------------------------------------------------


def put(caller: Any, job_id: str, params: Mapping[str, str]) -> HttpResponse:
    """PUT /job/<wf id>?action=kill|suspend|resume (200, empty body; a status the verb does not apply to changes nothing).

    `start` is answered the same way (runs start when launched); rerun, change and update are
    the coordinator's verbs here (E1008 naming the coordinator job); ignore is E0302, as in Oozie.
    """
    _check_id(job_id)
    verb = params.get("action")
    if not verb:
        raise OozieError(400, "E0305", "action")
    if "@" in job_id:
        raise bad_parameter("action", f"{verb} on a workflow action (use the workflow id)")
    workflow = WorkflowJob.objects.only("id", "coord_action_id", "owner_id", "status").get(pk=job_id)
    if verb == "ignore":
        raise OozieError(400, "E0302", "Workflow Ignore Not supported")  # V2JobServlet.ignoreJob's words
    if verb in NOT_SERVED_VERBS:
        hint = f"; use it on coordinator job {parent_key(workflow)} (action {workflow.coord_action_id})" if workflow.coord_action_id else ""
        raise OozieError(400, "E1008", f"{verb} of workflow {job_id}{hint}")
    if verb not in ("kill", "suspend", "resume", "start"):
        raise bad_parameter("action", verb)

    def may_modify(run: WorkflowJob) -> None:
        check_modify(caller, guard(run))

    if verb == "start":
        may_modify(workflow)  # launched runs are started already: nothing to do, as Oozie answers a non-PREP start
        return HttpResponse(status=200)
    who = caller.get_username() if caller is not None else "anonymous"
    try:
        request_control(job_id, verb, check=may_modify, reason=f"killed by {who} through the Oozie API")
    except VerbNotSupported as exc:
        raise OozieError(400, "E1008", str(exc)) from None
    return HttpResponse(status=200)

