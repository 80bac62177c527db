"""Workflow jobs (`...-W`) on the Oozie Web Services API: submit, info, definition, graph, log, lists, verbs, runs.

Every launch of a coordinator action is a workflow job (`workflows.models`), and so is a
workflow application (workflow.xml) submitted on its own (`POST /jobs` naming
`oozie.wf.application.path`); the job view hands over `-W` ids (and `<wf id>@<node>`),
`jobtype=wf` lists, and `show=allruns` of a coordinator action. Who may read or act on a
workflow is who may read or act on its parent coordinator job (kernel.permissions); a
workflow without one (a sub-workflow: its root's) answers to its owner and admins. Formats
follow Oozie's WorkflowJobBean and WorkflowActionBean `toJSONObject`; decisions are in
docs/adr/0012-workflow-jobs-api.md and docs/adr/0023-workflow-application-interfaces.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from typing import Any

from django.db.models import F, QuerySet
from django.http import HttpResponse
from django.utils import timezone
from lxml import etree

from coordinators.models import CoordinatorAction, CoordinatorJob
from kernel.permissions import OwnedJob, check_modify, check_read
from oozie.definitions import (
    ApplicationNotFoundError,
    DefinitionError,
    MissingParameterError,
    parse_hadoop_configuration,
)
from oozie.definitions.xmlsafe import local_name, parse_xml
from oozie.properties import USER_NAME, WF_APP_PATH, WF_RERUN_FAIL_NODES, WF_RERUN_SKIP_NODES
from oozieapi import trylog
from oozieapi.errors import OozieError, application_error, bad_parameter, document_error, one_line
from oozieapi.filters import filter_jobs, int_parameter
from oozieapi.formats import configuration_xml, display_timezone, json_response, rfc822
from oozieapi.joblog import parse_log_filter
from workflows import graph
from workflows.api.access import guard, readable_workflows
from workflows.choices import WORKFLOW_TERMINAL, NodeStatus, WorkflowStatus
from workflows.definitions import UnsupportedActionError, WorkflowELError
from workflows.engine import WorkflowError
from workflows.models import WorkflowJob, WorkflowNode
from workflows.services import (
    VerbNotSupported,
    parent_key,
    request_control,
    request_rerun,
    submit_workflow,
)
from xcommands.models import Command

_WORKFLOW_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,80}-W(@[A-Za-z0-9_.:-]{1,100})?$")
WORKFLOW_STATUSES = tuple(WorkflowStatus.values)
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
GRAPH_FORMATS = {"svg": "image/svg+xml", "dot": "text/plain;charset=UTF-8"}


def _check_id(job_id: str) -> None:
    """Ids that cannot exist are answered without asking the database."""
    if not _WORKFLOW_ID.match(job_id):
        raise OozieError(400, "E0605" if "@" in job_id else "E0604", job_id)


# ---- who may read and act: the parent coordinator job's rules -------------------------------


def _load(caller: Any, workflow_id: str) -> tuple[WorkflowJob, OwnedJob]:
    workflow = WorkflowJob.objects.select_related("owner").get(pk=workflow_id)
    job = guard(workflow)
    check_read(caller, job)
    return workflow, job


# ---- Oozie's JSON -----------------------------------------------------------------------------


def _conf(workflow: WorkflowJob) -> str | None:
    """The run's configuration as Hadoop XML, with the properties an Oozie workflow's conf always has."""
    values: dict[str, Any] = dict(workflow.configuration)
    values.setdefault(WF_APP_PATH, workflow.app_path)
    if workflow.owner is not None:
        values.setdefault(USER_NAME, workflow.owner.get_username())
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


def application_elements(workflow: WorkflowJob) -> dict[str, str]:
    """Each named node's element of an application's workflow.xml, as XML text (Oozie's action `conf`)."""
    if not workflow.app_xml:
        return {}
    try:
        root = parse_xml(workflow.app_xml, "workflow.xml")
    except DefinitionError:  # stored at submission after the same parse: cannot happen, but no 500 for it
        return {}
    elements: dict[str, str] = {}
    for element in root.iter():
        if isinstance(element.tag, str) and element.get("name") and local_name(element) != "workflow-app":
            if local_name(element) in ("action", "decision", "fork", "join", "kill", "end"):
                elements.setdefault(element.get("name", ""), etree.tostring(element, encoding="unicode", with_tail=False))
    return elements


def _action_data(data: Mapping[str, Any] | None) -> str | None:
    """Captured output as Oozie returns `data`: Java properties text, one `key=value` a line."""
    if not data:
        return None
    return "".join(f"{key}={value}\n" for key, value in sorted(data.items()))


def application_node_json(node: WorkflowNode, workflow: WorkflowJob, elements: Mapping[str, str],
                          zone: tzinfo = UTC) -> dict[str, Any]:
    """A node of a workflow application as WorkflowActionBean.toJSONObject writes it (control nodes included)."""
    spec: Mapping[str, Any] = next((item for item in (workflow.definition or {}).get("nodes", ()) if item.get("name") == node.name), {})
    control = node.type.startswith(":") or node.type == "switch"
    external = node.external_id or (None if control else node.task_id or None)
    return {
        "id": node.id,
        "name": node.name,
        "cred": None,
        "type": node.type,
        "conf": elements.get(node.name),
        "status": node.status,
        "retries": max(0, node.attempt - 1),
        "startTime": rfc822(node.started_at, zone),
        "endTime": rfc822(node.ended_at, zone),
        "transition": node.transition or None,
        "data": _action_data(node.data),
        "stats": None,
        "externalChildIDs": None,
        "externalId": external,
        "externalStatus": node.external_status or (EXTERNAL_STATUS.get(node.status) if external and not control else None),
        "trackerUri": node.worker or None,
        "consoleUrl": None,
        "errorCode": node.error_code or None,
        "errorMessage": node.error_message or None,
        "toString": f"Action name[{node.name}] status[{node.status}]",
        "userRetryInterval": int(spec.get("retry_interval", USER_RETRY_INTERVAL)),
        "userRetryCount": node.user_retries,
        "userRetryMax": int(spec.get("retry_max", 0)),
    }


def node_json(node: WorkflowNode, zone: tzinfo = UTC) -> dict[str, Any]:
    """A node as WorkflowActionBean.toJSONObject writes it: externalId is the Celery task id (or `batch:<id>`)."""
    workflow = node.workflow
    if workflow.definition:
        return application_node_json(node, workflow, application_elements(workflow), zone)
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
    nodes = list(nodes)
    if workflow.definition:  # an application: its nodes as Oozie lists them, in the order they ran
        elements = application_elements(workflow) if nodes else {}
        actions = [application_node_json(node, workflow, elements, zone) for node in _run_order(nodes)]
    else:
        actions = [node_json(node, zone) for node in nodes]
    return {
        "appPath": workflow.app_path,
        "appName": workflow.app_name,
        "id": workflow.id,
        "externalId": None,
        "parentId": workflow.coord_action_id or workflow.parent_workflow_id,
        "conf": _conf(workflow) if with_conf else None,
        "status": workflow.status,
        "lastModTime": rfc822(workflow.last_modified, zone),
        "createdTime": rfc822(workflow.created_at, zone),
        "startTime": rfc822(workflow.started_at, zone),
        "endTime": rfc822(workflow.ended_at, zone),
        "user": owner,
        "group": workflow.group or acl or None,
        "acl": acl or None,
        "run": workflow.run,
        "consoleUrl": None,
        "actions": actions,
        "toString": f"Workflow id[{workflow.id}] status[{workflow.status}]",
    }


def _run_order(nodes: Iterable[WorkflowNode]) -> list[WorkflowNode]:
    """Nodes in the order they were entered (start first), as Oozie lists a job's actions."""
    far = datetime.max.replace(tzinfo=UTC)
    return sorted(nodes, key=lambda n: (n.name != ":start:", n.started_at or n.dispatched_at or far, n.id))


def graph_response(workflow: WorkflowJob, nodes: list[WorkflowNode], params: Mapping[str, str]) -> HttpResponse:
    """`show=graph&format=svg|dot[&show-kill=true]`: the DAG coloured by node status; png is refused (no renderer here)."""
    if not workflow.definition:
        raise bad_parameter("show", f"graph (workflow {workflow.id} runs {workflow.app_path}, not a workflow.xml)")
    fmt = (params.get("format") or "").strip().lower()
    if fmt not in GRAPH_FORMATS:
        shown = fmt or "png (the default)"
        raise OozieError(400, "E0303", "format", f"{shown}; this service draws format=svg or format=dot, not png")
    show_kill = (params.get("show-kill") or "").strip().lower() in ("1", "yes", "true")
    statuses = {node.name: node.status for node in nodes}
    if fmt == "dot":
        return HttpResponse(graph.dot(workflow.definition, statuses, show_kill=show_kill), content_type=GRAPH_FORMATS[fmt])
    transitions = {node.name: node.transition for node in nodes if node.transition}
    body = graph.svg(workflow.definition, statuses, transitions=transitions, show_kill=show_kill,
                     title=f"{workflow.app_name} ({workflow.id}) {workflow.status}")
    return HttpResponse(body, content_type=GRAPH_FORMATS[fmt])


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
        node.workflow = workflow
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
        text = workflow.app_xml or definition_xml(workflow, nodes)
        return HttpResponse(text, content_type="application/xml;charset=UTF-8")
    if what == "graph":
        return graph_response(workflow, nodes, params)
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
    kept = trylog.of_workflow(workflow.id)
    lines += [_Line(line.at, line.level, line.source, line.action, line.text) for line in trylog.lines_of(kept, by_action=False)]
    for node in nodes:
        # Each attempt's end is a try (above); runs from before tries were kept have only the node's history.
        for entry in ([] if kept else node.history[-MAX_LOG_ROWS:]):
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


def put(caller: Any, job_id: str, params: Mapping[str, str], body: bytes = b"", content_type: str = "") -> HttpResponse:
    """PUT /job/<wf id>?action=kill|suspend|resume|start|rerun (200, empty body; a status the verb does not apply to changes nothing).

    `start` runs a PREP application (submitted without `action=start`); a launched run is
    started already, so it is answered the same way and nothing happens. `rerun` of an ended
    application takes a configuration body (oozie.wf.rerun.skip.nodes or
    oozie.wf.rerun.failnodes=true); of a coordinator's one-task run it is the coordinator's verb
    (E1008 naming the coordinator job), as are change and update; ignore is E0302, as in Oozie.
    """
    _check_id(job_id)
    verb = params.get("action")
    if not verb:
        raise OozieError(400, "E0305", "action")
    if "@" in job_id:
        raise bad_parameter("action", f"{verb} on a workflow action (use the workflow id)")
    workflow = WorkflowJob.objects.only(
        "id", "coord_action_id", "owner_id", "status", "parent_workflow_id", "definition").get(pk=job_id)
    if verb == "ignore":
        raise OozieError(400, "E0302", "Workflow Ignore Not supported")  # V2JobServlet.ignoreJob's words
    if verb == "rerun" and workflow.definition:
        return _rerun(caller, workflow, body, content_type)
    if verb in NOT_SERVED_VERBS:
        hint = f"; use it on coordinator job {parent_key(workflow)} (action {workflow.coord_action_id})" if workflow.coord_action_id else ""
        raise OozieError(400, "E1008", f"{verb} of workflow {job_id}{hint}")
    if verb not in ("kill", "suspend", "resume", "start"):
        raise bad_parameter("action", verb)

    def may_modify(run: WorkflowJob) -> None:
        check_modify(caller, guard(run))

    if verb == "start" and not workflow.definition:
        may_modify(workflow)  # launched runs are started already: nothing to do, as Oozie answers a non-PREP start
        return HttpResponse(status=200)
    who = caller.get_username() if caller is not None else "anonymous"
    try:
        request_control(job_id, verb, check=may_modify, reason=f"killed by {who} through the Oozie API")
    except VerbNotSupported as exc:
        raise OozieError(400, "E1008", str(exc)) from None
    return HttpResponse(status=200)



def _rerun(caller: Any, workflow: WorkflowJob, body: bytes, content_type: str) -> HttpResponse:
    """Rerun an ended application (Oozie's ReRunXCommand): skip-nodes, or failnodes, from the configuration body.

    Refusals name Oozie's codes: both properties E0404, a job not ended E0805, a sub-workflow
    E0755 (rerun its parent), skip-nodes that did not succeed E0807; nothing is queued then.
    """
    properties: dict[str, str] = {}
    if body.strip():
        if content_type.split(";")[0].strip().lower() not in ("application/xml", "text/xml"):
            raise OozieError(400, "E0300", content_type or "(none)")
        properties = dict(parse_hadoop_configuration(body, "rerun configuration"))
    fail_nodes = properties.get(WF_RERUN_FAIL_NODES, "").strip().lower()
    if fail_nodes not in ("", "true", "false"):
        raise bad_parameter(WF_RERUN_FAIL_NODES, fail_nodes)
    if fail_nodes == "true" and WF_RERUN_SKIP_NODES in properties:
        raise OozieError(400, "E0404", f"{WF_RERUN_SKIP_NODES} OR {WF_RERUN_FAIL_NODES}")

    def may_modify(run: WorkflowJob) -> None:
        check_modify(caller, guard(run))
        if run.parent_workflow_id:
            raise OozieError(400, "E0755", f"rerun is not allowed through child workflow {run.id}; rerun {run.parent_workflow_id}")
        if run.status not in WORKFLOW_TERMINAL:
            raise OozieError(400, "E0805", run.status)

    try:
        request_rerun(workflow.id, properties, check=may_modify)
    except WorkflowError as exc:
        raise OozieError(400, "E0807", str(exc)) from None
    return HttpResponse(status=200)


def submit(caller: Any, properties: Mapping[str, str], action: str) -> HttpResponse:
    """POST /jobs naming `oozie.wf.application.path`: 201 {"id": "<wf id>"}; `action=start` runs it, else it is PREP.

    The application is read and validated first: a refusal (no such directory, malformed or
    hostile XML, an unsupported action, an unresolved variable) is a 400 with Oozie's code and
    one line, and nothing is stored.
    """
    if action == "dryrun":
        raise OozieError(400, "E1008", "dryrun of a workflow application")
    try:
        workflow = submit_workflow(properties, owner=caller, trusted=False, start=action == "start")
    except DefinitionError as exc:
        raise submission_error(exc) from None
    return json_response({"id": workflow.id}, status=201)


def submission_error(exc: DefinitionError) -> OozieError:
    """A refused workflow application in Oozie's words: its code for the kind of refusal, our one-line reason."""
    if isinstance(exc, (ApplicationNotFoundError, MissingParameterError)):
        return application_error(exc)
    if (document := document_error(exc)) is not None:
        return document
    if isinstance(exc, UnsupportedActionError):
        return OozieError(400, "E0802", str(exc))
    if isinstance(exc, WorkflowELError):
        return OozieError(400, "E1004", str(exc))
    return OozieError(400, "E0710", str(exc))  # graph errors, unreadable application, too many nodes ...
