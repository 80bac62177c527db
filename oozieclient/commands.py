"""The sub-commands: `job`, `jobs`, `admin`, `validate`, `info`; each takes parsed options and prints Oozie's output.

Each follows OozieCLI's command of the same name: which option wins when several are given,
which request it sends, what it prints (oozieclient.render), and which refusals it raises
before anything is sent. The job's configuration comes from oozieclient.configuration.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Mapping
from datetime import tzinfo
from pathlib import Path
from typing import Any, TextIO

from oozieclient import render
from oozieclient.configuration import (
    UNREADABLE_APPLICATION,
    UsageError,
    default_user,
    job_configuration,
    local_application_hint,
    time_zone,
)
from oozieclient.http import XML_CONTENT_TYPE, OozieClient, OozieClientError
from oozieclient.properties import ConfigurationError, check_well_formed, configuration_xml
from oozieclient.upload import upload_application

Printer = Callable[[str], None]


def _say(out: TextIO) -> Printer:
    def say(line: str) -> None:
        print(line, file=out)
    return say


def _scope(options: argparse.Namespace, verb: str) -> tuple[str, str]:
    """(type, scope) of `-action` or `-date` for a coordinator verb; both or neither refused as Oozie refuses them."""
    if options.action is not None and options.date is not None:
        raise OozieClientError(
            "E0000", f"Invalid options provided for {verb}: either date or action expected. Don't use both at the same time.",
        )
    if options.date is not None:
        return "date", options.date
    if options.action is not None:
        return "action", options.action
    raise OozieClientError("E0000", f"Invalid options provided for {verb}: date or action expected.")


# ---- job ----------------------------------------------------------------------------------------

JOB_VERBS = ("submit", "start", "dryrun", "suspend", "resume", "ignore", "kill", "change", "run", "rerun", "info",
             "log", "errorlog", "auditlog", "definition", "configcontent", "update", "poll")


def job(client: OozieClient, options: argparse.Namespace, environ: Mapping[str, str], out: TextIO, err: TextIO) -> int:
    """`oozie job`: the one verb given (Oozie's option group), in OozieCLI.jobCommand's order of precedence."""
    say = _say(out)
    given = [verb for verb in JOB_VERBS if getattr(options, verb) not in (None, False)]
    if options.dryrun and options.update is not None:
        given.remove("dryrun")  # -update -dryrun: a dry run of the update
    if not given:
        raise UsageError("job needs one of -" + " -".join(JOB_VERBS))
    if len(given) > 1:
        raise UsageError(f"-{given[0]} and -{given[1]} cannot be used together")
    verb = given[0]
    if options.upload and verb not in ("submit", "run", "dryrun"):
        raise UsageError("-upload goes with -run, -submit or -dryrun")
    zone = time_zone(options, environ)
    if verb in ("submit", "run", "dryrun"):
        return _submit(client, options, environ, say, err, verb)
    job_id = str(getattr(options, verb))
    if verb in ("start", "suspend", "resume"):
        client.request("PUT", f"job/{job_id}", {"action": verb})
    elif verb == "kill":
        if "-C" in job_id and (options.action is not None or options.date is not None):
            # A coordinator's actions by number or date (OozieCLI.jobCommand): the ones to be killed, as rerun prints them.
            kill_type, scope = _scope(options, "kill")
            params = {"action": "kill", "type": kill_type, "scope": scope}
            answer = client.request("PUT", f"job/{job_id}", params).json() or {}
            for line in render.coordinator_actions(answer.get("actions") or []):
                say(line)
        else:
            client.request("PUT", f"job/{job_id}", {"action": "kill"})
    elif verb == "change":
        if options.value is None:
            raise OozieClientError("E0000", "-value option needs to be specified for -change option")
        client.request("PUT", f"job/{job_id}", {"action": "change", "value": options.value})
    elif verb == "ignore":
        params = {"action": "ignore"}
        if options.action is not None:
            if not options.action.strip():
                raise OozieClientError("E0000", "-action is empty")
            params.update(type="action", scope=options.action)
        answer = client.request("PUT", f"job/{job_id}", params).json() or {}
        for line in render.coordinator_actions(answer.get("actions") or [], with_status=True):
            say(line)
    elif verb == "rerun":
        _rerun(client, options, environ, say, job_id)
    elif verb == "info":
        _info(client, options, say, job_id, zone)
    elif verb in ("log", "errorlog", "auditlog"):
        params = {"show": verb}
        if verb == "log" and options.logfilter:
            params["logfilter"] = options.logfilter
        if verb == "log" and (options.action is not None or options.date is not None):
            if "-C" not in job_id:
                raise OozieClientError("E0000", "Invalid options provided for log retrieval. action and date are valid "
                                                "only for coordinator job log retrieval")
            params["type"], params["scope"] = _scope(options, "log retrieval")
        out.write(client.request("GET", f"job/{job_id}", params).text())
    elif verb == "definition":
        say(client.request("GET", f"job/{job_id}", {"show": "definition"}).text())
    elif verb == "configcontent":
        say(str((client.request("GET", f"job/{job_id}", {"show": "info"}).json() or {}).get("conf") or ""))
    elif verb == "update":
        _update(client, options, environ, say, job_id)
    elif verb == "poll":
        _poll(client, options, say, job_id)
    return 0


def _submit(client: OozieClient, options: argparse.Namespace, environ: Mapping[str, str], say: Printer, err: TextIO,
            verb: str) -> int:
    """POST /jobs with the configuration: `job: <id>`; a dry run prints the server's plan.

    With -upload the application on this machine is sent first (oozieclient.upload) and the
    configuration names the server's copy.
    """
    configuration = job_configuration(options, environ) or {}
    if options.upload:
        configuration = upload_application(client, configuration, err)
    params = {"action": "start"} if verb == "run" else {"action": "dryrun"} if verb == "dryrun" else {}
    try:
        answer = client.request("POST", "jobs", params, body=configuration_xml(configuration),
                                content_type=XML_CONTENT_TYPE).json() or {}
    except OozieClientError as error:
        if error.code in UNREADABLE_APPLICATION and not options.upload:
            error.hint = local_application_hint(configuration)
        elif error.code == "E0500" and "user.name" in error.message:
            error.hint = (
                f"this command sent user.name={configuration.get('user.name')}: give -D user.name=<your user on the "
                "server>, set OOZIE_USER, or authenticate with -username"
            )
        raise
    if verb == "dryrun":
        for line in render.dryrun(str(answer.get("id", ""))):
            say(line)
    else:
        say(f"job: {answer.get('id')}")
    return 0


def _rerun(client: OozieClient, options: argparse.Namespace, environ: Mapping[str, str], say: Printer, job_id: str) -> None:
    """A workflow (its configuration as body), a bundle (coord-scope/date-scope) or a coordinator (action or date scope)."""
    flags = {"refresh": str(bool(options.refresh)).lower(), "nocleanup": str(bool(options.nocleanup)).lower()}
    if "-W" in job_id:
        configuration = job_configuration(options, environ, required=False) or {}
        client.request("PUT", f"job/{job_id}", {"action": "rerun"}, body=configuration_xml(configuration),
                       content_type=XML_CONTENT_TYPE)
        return
    if job_id.endswith("-B"):
        if options.action is not None:
            raise OozieClientError("E0000", "Invalid options provided for bundle rerun. action is not valid for bundle rerun")
        params = {"action": "bundle-rerun", "coord-scope": options.coordinator, "date-scope": options.date, **flags}
        client.request("PUT", f"job/{job_id}", params)
        if options.coordinator:
            say(f"Coordinators [{options.coordinator}] of bundle {job_id} are scheduled to rerun on date ranges "
                f"[{options.date}].")
        else:
            say(f"All coordinators of bundle {job_id} are scheduled to rerun on the date ranges [{options.date}].")
        return
    rerun_type, scope = _scope(options, "rerun")
    params = {"action": "coord-rerun", "type": rerun_type, "scope": scope, **flags,
              "failed": str(bool(options.failed)).lower()}
    rerun_configuration = job_configuration(options, environ, required=False)
    body = configuration_xml(rerun_configuration) if rerun_configuration is not None else None
    answer = client.request("PUT", f"job/{job_id}", params, body=body,
                            content_type=XML_CONTENT_TYPE if body is not None else "").json() or {}
    for line in render.coordinator_actions(answer.get("actions") or []):
        say(line)


def _info(client: OozieClient, options: argparse.Namespace, say: Printer, job_id: str, zone: tzinfo | None) -> None:
    """The info block of a workflow, coordinator, bundle, coordinator action or workflow action."""
    verbose = bool(options.verbose)
    params: dict[str, Any] = {"show": "info", "offset": options.offset, "len": options.len}
    if "-C@" in job_id and options.allruns:
        answer = client.request("GET", f"job/{job_id}", {"show": "allruns"}).json() or {}
        lines = render.all_runs(answer.get("workflows") or [], zone)
    elif job_id.endswith("-B") or "-C@" in job_id or "-W@" in job_id:
        if options.filter is not None:
            raise OozieClientError("E0000", "Filter option is not supported for this job type (only coordinator jobs)")
        answer = client.request("GET", f"job/{job_id}", {"show": "info"}).json() or {}
        if job_id.endswith("-B"):
            lines = render.bundle_job(answer, zone, verbose)
        elif "-C@" in job_id:
            lines = render.coordinator_action(answer, zone)
        else:
            lines = render.workflow_action(answer, zone, verbose)
    elif job_id.endswith("-C"):
        # -len's default is every action (DG_CommandLineTool): ask for the most one page holds.
        params.update(filter=options.filter, order=options.order, len=options.len or 1000)
        lines = render.coordinator_job(client.request("GET", f"job/{job_id}", params).json() or {}, zone, verbose)
    else:
        if options.filter is not None:
            raise OozieClientError("E0000", "Filter option is currently not supported for a Workflow job")
        lines = render.workflow_job(client.request("GET", f"job/{job_id}", params).json() or {}, zone, verbose)
    for line in lines:
        say(line)


def _update(client: OozieClient, options: argparse.Namespace, environ: Mapping[str, str], say: Printer, job_id: str) -> None:
    """PUT action=update (with the configuration when -config is given); prints the diff the server answers."""
    params = {"action": "update", "dryrun": "true" if options.dryrun else None, "showdiff": options.diff}
    configuration = job_configuration(options, environ, required=False) if options.config else None
    body = configuration_xml(configuration) if configuration is not None else None
    answer = client.request("PUT", f"job/{job_id}", params, body=body,
                            content_type=XML_CONTENT_TYPE if body is not None else "").json() or {}
    update = answer.get("update") if isinstance(answer, dict) else None
    say(str((update or {}).get("diff") or ""))


def _poll(client: OozieClient, options: argparse.Namespace, say: Printer, job_id: str) -> None:
    """GET show=status every -interval minutes until a terminal status or -timeout minutes (negative: none).

    As OozieClient.pollJob, a timeout ends the command quietly (exit 0); -verbose prints every status.
    """
    interval = max(float(options.interval if options.interval is not None else 5), 0.0) * 60
    timeout = float(options.timeout if options.timeout is not None else 30) * 60
    terminal = render.ACTION_TERMINAL if "@" in job_id else render.JOB_TERMINAL
    deadline = time.monotonic() + timeout if timeout >= 0 else None
    while True:
        status = str((client.request("GET", f"job/{job_id}", {"show": "status"}).json() or {}).get("status"))
        if options.verbose:
            say(status)
        if status in terminal or (deadline is not None and time.monotonic() >= deadline):
            return
        time.sleep(interval if deadline is None else max(0.0, min(interval, deadline - time.monotonic())))


# ---- jobs, admin, info, validate -------------------------------------------------------------


def jobs(client: OozieClient, options: argparse.Namespace, environ: Mapping[str, str], out: TextIO, err: TextIO) -> int:
    """`oozie jobs`: the listing, or a bulk -kill/-suspend/-resume of the jobs the same options select (PUT /jobs)."""
    say = _say(out)
    zone = time_zone(options, environ)
    params = {"jobtype": options.jobtype, "filter": options.filter, "offset": options.offset, "len": options.len}
    verbs = [verb for verb in ("kill", "suspend", "resume") if getattr(options, verb)]
    if len(verbs) > 1:
        raise UsageError(f"-{verbs[0]} and -{verbs[1]} cannot be used together")
    if verbs:
        done = {"kill": "killed", "suspend": "suspended", "resume": "resumed"}[verbs[0]]
        answer = client.request("PUT", "jobs", {"action": verbs[0], **params}).json() or {}
        lines = render.bulk_modified(answer, zone, done)
    else:
        lines = render.jobs_listing(client.request("GET", "jobs", params).json() or {}, zone, bool(options.verbose))
    for line in lines:
        say(line)
    return 0


def admin(client: OozieClient, options: argparse.Namespace, environ: Mapping[str, str], out: TextIO, err: TextIO) -> int:
    """`oozie admin -status|-version|-queuedump|-servers|-timezones|-configuration`."""
    say = _say(out)
    given = [name for name in ("status", "version", "queuedump", "servers", "timezones", "configuration")
             if getattr(options, name)]
    if len(given) != 1:
        raise UsageError("admin needs exactly one of -status -version -queuedump -servers -timezones -configuration")
    what = given[0]
    if what == "status":
        mode = str((client.request("GET", "admin/status").json() or {}).get("systemMode"))
        # DG_CommandLineTool's example prints the safe mode; any other mode is named as it is.
        say({"NORMAL": "Safemode: OFF", "SAFEMODE": "Safemode: ON"}.get(mode, f"System mode: {mode}"))
    elif what == "version":
        say(f"Oozie server build version: {(client.request('GET', 'admin/build-version').json() or {}).get('buildVersion')}")
    elif what == "queuedump":
        for line in render.queue_dump(client.request("GET", "admin/queue-dump").json() or {}):
            say(line)
    elif what == "servers":
        for line in render.key_values(client.request("GET", "admin/available-oozie-servers").json() or {}):
            say(line)
    elif what == "configuration":
        for line in render.key_values(client.request("GET", "admin/configuration").json() or {}):
            say(line)
    else:
        for line in render.timezones(client.request("GET", "admin/available-timezones").json() or {}):
            say(line)
    return 0


def validate(client: OozieClient, options: argparse.Namespace, environ: Mapping[str, str], out: TextIO, err: TextIO) -> int:
    """POST /v2/validate?file=... (the file's text as the body when it is local); a server without it: a local check.

    Oozie's client falls back to checking on the client when the server answers 404
    ("Using client-side validation"); here that check is XML well-formedness only (no schemas
    ship with the client), and the output says so.
    """
    say = _say(out)
    if len(options.files) != 1:
        raise OozieClientError("E0000", "One file must be specified")
    name = options.files[0]
    local = Path(name[len("file://"):] if name.startswith("file://") else name)
    is_local = "://" not in name or name.startswith("file://")
    if is_local and not local.is_file():
        raise OozieClientError("E0000", f"file [{name}] does not exist")
    body = local.read_bytes() if is_local else b""
    params = {"file": str(local.resolve()) if is_local else name, "user": default_user(options, environ)}
    answer = client.request("POST", "validate", params, body=body, content_type=XML_CONTENT_TYPE, allow=(404, 405))
    if answer.status < 300:
        say(str((answer.json() or {}).get("validate", "")))
        return 0
    say("Using client-side validation. Check out Oozie server version.")
    if not is_local:
        raise OozieClientError("E0000", f"{name}: the server has no validate endpoint and the file is not on this machine")
    try:
        root = check_well_formed(body, local.name)
    except ConfigurationError as exc:
        raise OozieClientError("E0700", f"XML error, {exc}") from None
    say(f"Well-formed {root} (checked on this machine: XML syntax only; the server has no validate endpoint, "
        "so the schema is checked when the job is submitted)")
    return 0


def info(client: OozieClient, options: argparse.Namespace, environ: Mapping[str, str], out: TextIO, err: TextIO) -> int:
    """`oozie info -timezones`."""
    if not options.timezones:
        raise UsageError("info needs -timezones")
    for line in render.timezones(client.request("GET", "admin/available-timezones").json() or {}):
        _say(out)(line)
    return 0
