"""`manage.py job`: the `oozie job` command line for coordinators and bundles (DG_CommandLineTool).

Ids ending in `-B` are bundles, as Oozie's CLI routes them; a configuration naming
`oozie.bundle.application.path` submits (or dry-runs) a bundle. The CLI is an operator's tool
on the server: it reads any path its user can (`trusted`), and acts as `-user` under the same
permission rules as the APIs.
"""

from __future__ import annotations

import getpass
import json
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError, CommandParser
from django.db import DatabaseError
from django.db.models import QuerySet
from django.utils import timezone

from bundles.dryrun import as_text as bundle_text
from bundles.models import BundleJob
from bundles.services import (
    change_bundle,
    control_bundle,
    dryrun_bundle,
    read_bundle,
    rerun_bundle,
    start_bundle,
    submit_bundle,
)
from coordinators.choices import IllegalTransition
from coordinators.dryrun import as_text, dryrun, dumps, locate_application
from coordinators.models import CoordinatorAction, CoordinatorJob
from coordinators.services import (
    change_job,
    control,
    ignore_actions,
    ignore_job,
    kill_actions,
    rerun_job,
    start_job,
    submit_coordinator,
    update_job,
)
from datasets.timeline import format_datetime
from kernel.cli import ProductCommand, acting_user, add_user_option, one_line
from kernel.permissions import JobPermissionDenied, check_modify, check_read, submitter_properties
from kernel.secrets import Masker, masker_for
from kernel.storage import map_uri
from oozie.definitions import DefinitionError, load_configuration
from oozie.properties import (
    BUNDLE_APP_PATH,
    COORD_APP_PATH,
    WF_APP_PATH,
    WF_RERUN_FAIL_NODES,
    unresolved_references,
)
from oozieapi.cli_nodes import NODE_VERBS, check_options, run_node_verb
from oozieapi.errors import OozieError
from oozieapi.ids import is_bundle_id as is_bundle
from oozieapi.ids import is_workflow_id as is_workflow
from oozieapi.joblog import job_log, parse_log_filter
from oozieapi.workflows import guard
from workflows.models import WorkflowJob
from workflows.services import (
    VerbNotSupported,
    prepare_submission,
    request_control,
    request_rerun,
    submit_workflow,
)

VERBS = ("run", "submit", "start", "info", "kill", "suspend", "resume", "change", "rerun", "ignore", "update", "log",
         "dryrun", *NODE_VERBS)


def defines(values: list[str]) -> dict[str, str]:
    """The `-D name=value` options as properties (the last of a name wins); a ValueError names a malformed one."""
    result: dict[str, str] = {}
    for value in values:
        name, sep, text = value.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"-D {value!r}: write -D name=value")
        result[name.strip()] = text
    return result


class Command(ProductCommand):
    """Submit and control coordinator and bundle jobs as `oozie job` does."""

    help = (
        "oozie job for coordinators and bundles: -run|-submit|-dryrun -config F [--format text|json]; "
        "-start|-info|-kill|-suspend|-resume ID; -kill COORD_ID -action 1,3-4 | -date A::B; -change ID -value endtime=..;concurrency=..;pausetime=..; "
        "-rerun COORD_ID -action 1,3-4 | -date A::B [-refresh] [-nocleanup] [-failed]; "
        "-rerun BUNDLE_ID -coordinator c1,c2 and/or -date A::B [-refresh] [-nocleanup]; "
        "-ignore COORD_ID [-action 1,3-4 | -date A::B]; -update COORD_ID [-config F] [-dryrun]; "
        "workflow nodes: -clear WF_ID@NODE [-downstream]; -mark WF_ID@NODE -status OK|ERROR"
    )

    def add_arguments(self, parser: CommandParser) -> None:
        """Oozie's single-dash options."""
        # Not required here: -dryrun is a verb of its own, or the dry-run flag of -update (checked in handle).
        group = parser.add_mutually_exclusive_group()
        for verb in ("run", "submit"):
            group.add_argument(f"-{verb}", dest="verb", action="store_const", const=verb)
        for verb in ("start", "info", "kill", "suspend", "resume", "change", "rerun", "ignore", "update", "log"):
            group.add_argument(f"-{verb}", dest=verb, metavar="JOB_ID")
        for verb in NODE_VERBS:
            group.add_argument(f"-{verb}", dest=verb, metavar="WF_ID@NODE")
        parser.add_argument("-dryrun", action="store_true", help="with -config: plan a submission; with -update: show the diff only")
        parser.add_argument("-config", help="job .properties or Hadoop XML configuration file")
        parser.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME=VALUE",
                            help="a job property, over the -config file's (repeatable); ${name} references expanded")
        add_user_option(parser)
        parser.add_argument("-value", default=None, help="-change: endtime=...;concurrency=...;pausetime=...;status=RUNNING "
                            "(bundles: endtime and pausetime)")
        parser.add_argument("-action", default=None, help="-rerun, -ignore, -kill of a coordinator: action numbers and ranges, e.g. 1,3-4,7-40")
        parser.add_argument("-date", default=None,
                            help="-rerun, -ignore, -kill of a coordinator: nominal times and ranges (UTC), e.g. 2009-01-01T01:00Z::2009-01-31T23:59Z")
        parser.add_argument("-coordinator", default=None, help="-rerun of a bundle: coordinator names, e.g. c1,c3")
        parser.add_argument("-format", "--format", dest="format", choices=("text", "json"), default="text",
                            help="-dryrun: a readable summary (default) or the dry-run JSON")
        parser.add_argument("-refresh", action="store_true", help="-rerun: re-resolve and re-check every input")
        parser.add_argument("-nocleanup", action="store_true", help="-rerun: keep the output instances")
        parser.add_argument("-failed", action="store_true", help="-rerun: only the actions that did not succeed")
        parser.add_argument("-len", type=int, default=50, help="-info: actions per page; -dryrun: actions planned (per coordinator)")
        parser.add_argument("-offset", type=int, default=1, help="-info: first action (1-based)")
        parser.add_argument("-filter", default="", help="-info: status=RUNNING;status=WAITING ...")
        parser.add_argument("-logfilter", default="", help="-log: loglevel=ERROR|WARN|INFO;text=...;action=3;limit=100")
        parser.add_argument("-order", choices=("asc", "desc"), default="asc", help="-info: action order")
        parser.add_argument("-downstream", action="store_true", help="-clear: every node after it runs again too")
        parser.add_argument("-status", default=None, help="-mark: OK or ERROR, the node's end")

    def handle(self, *args: Any, **options: Any) -> None:
        """Dispatch the verb; user errors are one line, exit 1."""
        verb = options.get("verb") or next((v for v in VERBS if v != "dryrun" and options.get(v)), None)
        if options.get("dryrun") and verb is None:
            verb = "dryrun"
        elif options.get("dryrun") and verb != "update":
            raise CommandError(f"-dryrun goes with -config alone, or with -update; not with -{verb}")
        if verb is None:
            raise CommandError(f"give one of {', '.join('-' + v for v in VERBS)}")
        check_options(verb, options)
        if options["defines"] and verb not in ("run", "submit", "dryrun", "rerun", "update"):
            raise CommandError(f"-D goes with -run, -submit, -dryrun, -rerun or -update; not with -{verb}")
        try:
            job_id = options.get(verb) if verb not in ("run", "submit", "dryrun") else None
            if verb == "kill" and (options["action"] is not None or options["date"] is not None):
                self._kill_actions(options["kill"], options)
            elif isinstance(job_id, str) and is_workflow(job_id) and verb in ("info", "start", "kill", "suspend", "resume", "rerun"):
                self._workflow(verb, job_id, options)
            elif verb in ("run", "submit", "dryrun"):
                self._submit(verb, options)
            elif verb == "info":
                self._info(options["info"], options)
            elif verb == "change":
                self._change(options["change"], options)
            elif verb == "rerun":
                self._rerun(options["rerun"], options)
            elif verb == "ignore":
                self._ignore(options["ignore"], options)
            elif verb == "update":
                self._update(options["update"], options)
            elif verb == "log":
                self._log(options["log"], options)
            elif verb in NODE_VERBS:
                self.stdout.write("\n".join(run_node_verb(verb, options[verb], self._user(options), options)))
            elif verb is not None:
                self._control(verb, options[verb], options)
        except (DefinitionError, IllegalTransition, JobPermissionDenied, ValueError) as exc:
            raise CommandError(" ".join(str(exc).split())) from None
        except CoordinatorJob.DoesNotExist:
            raise CommandError(f"no coordinator job {options.get(verb or '')!r}") from None
        except BundleJob.DoesNotExist:
            raise CommandError(f"no bundle job {options.get(verb or '')!r}") from None

    def _user(self, options: dict[str, Any]) -> Any:
        return acting_user(options["user"])

    def _shown(self, options: dict[str, Any], owner_id: Any, *sources: Any) -> Masker:
        """What the -user (or login) account is shown of a job: secret properties masked unless it owns it or is a job admin.

        Reads (-info) do not require the account to exist; an unknown one is nobody in particular: masked.
        """
        reader = get_user_model().objects.filter(username=options["user"] or getpass.getuser()).first()
        return masker_for(reader, owner_id, *sources)

    def _submit(self, verb: str, options: dict[str, Any]) -> None:
        if not options["config"]:
            raise CommandError(f"-{verb} needs -config JOB.properties")
        config = Path(options["config"])
        try:
            properties = load_configuration(config.read_bytes(), str(config))
        except OSError as exc:
            raise CommandError(f"cannot read {config}: {exc.strerror or exc}") from None
        properties.update(defines(options["defines"]))
        # As Oozie reads a job.properties: user.name is the -user (another name only for an admin), and
        # ${nameNode}/user/${user.name}/... references to other properties are expanded.
        submitter = self._dryrun_user(options) if verb == "dryrun" else self._user(options)
        properties = submitter_properties(properties, submitter)
        named = [p for p in (COORD_APP_PATH, BUNDLE_APP_PATH, WF_APP_PATH) if p in properties]
        for name in named:
            for missing in unresolved_references(properties[name]):
                raise CommandError(f"{name}={properties[name]}: ${{{missing}}} names no property "
                                   f"(set it in {config} or with -D {missing}=...)")
        if len(named) > 1:
            raise CommandError(f"{config}: set only one of {', '.join(named)}, not both")
        if WF_APP_PATH in properties:
            self._submit_workflow(verb, config, properties, options)
            return
        if BUNDLE_APP_PATH in properties:
            self._submit_bundle(verb, config, properties, options)
            return
        if verb == "dryrun":
            result = dryrun(config, now=timezone.now(), max_actions=options["len"] or 1000, properties=properties)
            self.stdout.write(dumps(result) if options["format"] == "json" else as_text(result))
            return
        if COORD_APP_PATH not in properties:
            raise CommandError(f"{config}: {COORD_APP_PATH} (or {BUNDLE_APP_PATH}) is not set")
        # Stored absolute (the job's coordJobPath and app path): a relative application path is
        # relative to the properties file, itself relative to the current directory. The APIs
        # keep their own rules (COORD_APPLICATION_ROOTS); this only concerns the CLI.
        config = config.resolve()
        path = properties[COORD_APP_PATH].strip()
        if path and "://" not in path and not Path(path).is_absolute():
            properties[COORD_APP_PATH] = str((config.parent / path).resolve())
        xml_path = locate_application(config, properties[COORD_APP_PATH])
        try:
            xml = xml_path.read_text()
        except OSError as exc:
            raise CommandError(f"cannot read {xml_path}: {exc.strerror or exc}") from None
        job = submit_coordinator(
            xml, properties, owner=self._user(options), app_dir=str(xml_path.parent), start=(verb == "run"),
            trusted=True,  # an operator on the server: reads what its user can read
        )
        self.stdout.write(f"job: {job.id}")

    def _submit_bundle(self, verb: str, config: Path, properties: dict[str, str], options: dict[str, Any]) -> None:
        """Submit, run or dry-run the bundle named by oozie.bundle.application.path (relative: to the properties file)."""
        path = properties[BUNDLE_APP_PATH].strip()
        if path and "://" not in path and not Path(path).is_absolute():
            properties[BUNDLE_APP_PATH] = str((config.parent / path).resolve())
        if verb == "dryrun":
            owner = self._dryrun_user(options)
            result = dryrun_bundle(None, properties, owner=owner, now=timezone.now(), max_actions=options["len"] or 10,
                                   trusted=True)
            self.stdout.write(json.dumps(result, indent=2) if options["format"] == "json" else bundle_text(result))
            return
        owner = self._user(options)
        text, app_path = read_bundle(properties, trusted=True)
        bundle = submit_bundle(text, properties, owner=owner, app_path=app_path, start=(verb == "run"), trusted=True)
        self.stdout.write(f"job: {bundle.id}")

    def _submit_workflow(self, verb: str, config: Path, properties: dict[str, str], options: dict[str, Any]) -> None:
        """Submit, run or dry-run the workflow application named by oozie.wf.application.path (relative: to the file)."""
        path = properties[WF_APP_PATH].strip()
        if path and "://" not in path and not Path(path).is_absolute():
            properties[WF_APP_PATH] = str((config.resolve().parent / path).resolve())
        if verb == "dryrun":
            prepared = prepare_submission(properties, trusted=True)
            definition = prepared.definition
            if options["format"] == "json":
                self.stdout.write(json.dumps({
                    "name": definition.name, "app_path": map_uri(prepared.app_path),
                    "configuration": dict(prepared.configuration), "definition": definition.to_json(),
                }, indent=2))
                return
            lines = [f"workflow {definition.name} ({definition.schema}): valid, {len(definition.nodes)} nodes",
                     f"app {map_uri(prepared.app_path)}", f"start -> {definition.start}"]
            for node in definition.nodes.values():
                kind = node.action_type or node.kind
                lines.append(f"  {node.name:<30} {kind:<12} -> {', '.join(node.transitions()) or '-'}")
            self.stdout.write("\n".join(lines))
            return
        owner = self._user(options)
        workflow = submit_workflow(properties, owner=owner, trusted=True, start=(verb == "run"))
        self.stdout.write(f"job: {workflow.id}")

    def _workflow(self, verb: str, job_id: str, options: dict[str, Any]) -> None:
        """-info, -start, -kill, -suspend, -resume, -rerun of a workflow job (-W), under the parent's permission rules."""
        try:
            workflow = WorkflowJob.objects.select_related("owner").get(pk=job_id)
        except WorkflowJob.DoesNotExist:
            raise CommandError(f"no workflow job {job_id!r}") from None
        actor = self._user(options)
        if verb == "info":
            check_read(actor, guard(workflow))
            self._workflow_info(workflow, masker_for(actor, workflow.owner_id, *workflow.secret_sources()))
            return

        def may_modify(run: WorkflowJob) -> None:
            check_modify(actor, guard(run))

        try:
            if verb == "rerun":
                properties: dict[str, str] = {}
                if options["config"]:
                    config = Path(options["config"])
                    try:
                        properties = load_configuration(config.read_bytes(), str(config))
                    except OSError as exc:
                        raise CommandError(f"cannot read {config}: {exc.strerror or exc}") from None
                properties.update(defines(options["defines"]))
                if options["failed"]:
                    properties[WF_RERUN_FAIL_NODES] = "true"
                request_rerun(job_id, properties, check=may_modify)
                self.stdout.write(f"rerun: {job_id} queued")
                return
            queued = request_control(job_id, verb, check=may_modify, reason=f"killed by {actor.get_username()} (CLI)")
        except VerbNotSupported as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"{verb}: {job_id} {'queued' if queued else f'ignored (it is {workflow.status})'}")

    def _workflow_info(self, workflow: Any, shown: Masker) -> None:
        lines = [
            f"Job ID : {workflow.id}",
            "-" * 80,
            f"Workflow Name : {workflow.app_name}",
            f"App Path      : {workflow.app_path}",
            f"Status        : {workflow.status}",
            f"Run           : {workflow.run}",
            f"User          : {workflow.owner.get_username() if workflow.owner else '-'}",
            f"Group         : {workflow.group or '-'}",
            f"Created       : {format_datetime(workflow.created_at)}",
            f"Started       : {format_datetime(workflow.started_at)}",
            f"Last Modified : {format_datetime(workflow.last_modified)}",
            f"Ended         : {format_datetime(workflow.ended_at)}",
            f"CoordAction ID: {workflow.coord_action_id or '-'}",
        ]
        if workflow.error_message:
            lines.append(f"Error         : {one_line(workflow.error_message)}")
        lines += ["", "Actions", "-" * 80,
                  f"{'ID':<60} {'Status':<10} {'Ext ID':<28} {'Ext Status':<10} Err Code"]
        lines.append("-" * 80)
        for node in workflow.nodes.order_by("started_at", "id"):
            lines.append(f"{node.id:<60} {node.status:<10} {node.external_id or '-':<28} "
                         f"{node.external_status or '-':<10} {node.error_code or '-'}")
        self.stdout.write(shown.text("\n".join(lines)))

    def _dryrun_user(self, options: dict[str, Any]) -> Any:
        """The -user (or login) account; a dry-run stores nothing, so an unknown name is only a name.

        A dry-run needs no database: before `migrate` (no user table yet) the name is all it has.
        """
        name = options["user"] or getpass.getuser()
        model = get_user_model()
        try:
            return model.objects.filter(username=name).first() or model(username=name)
        except DatabaseError:
            return model(username=name)

    def _existing(self, job_id: str) -> None:
        if is_bundle(job_id):
            if not BundleJob.objects.filter(pk=job_id).exists():
                raise BundleJob.DoesNotExist(job_id)
        elif not CoordinatorJob.objects.filter(pk=job_id).exists():
            raise CoordinatorJob.DoesNotExist(job_id)

    def _change(self, job_id: str, options: dict[str, Any]) -> None:
        if options["value"] is None:
            raise CommandError("-change needs -value, e.g. -value 'endtime=2026-12-01T00:00Z;concurrency=2'")
        self._existing(job_id)
        (change_bundle if is_bundle(job_id) else change_job)(job_id, options["value"], actor=self._user(options))
        self.stdout.write(f"change: {job_id} queued ({options['value']})")

    def _rerun(self, job_id: str, options: dict[str, Any]) -> None:
        if is_bundle(job_id):
            self._rerun_bundle(job_id, options)
            return
        if options["coordinator"]:
            raise CommandError("-coordinator is for bundle reruns; a coordinator rerun takes -action or -date")
        if bool(options["action"]) == bool(options["date"]):
            raise CommandError("-rerun needs exactly one of -action or -date")
        self._existing(job_id)
        rerun_type, scope = ("action", options["action"]) if options["action"] else ("date", options["date"])
        actions = rerun_job(
            job_id, actor=self._user(options), rerun_type=rerun_type, scope=scope,
            refresh=options["refresh"], nocleanup=options["nocleanup"], failed=options["failed"],
        )
        lines = [f"{'ID':<45} Nominal Time", "-" * 64]
        lines += [f"{action.id:<45} {format_datetime(action.nominal_time)}" for action in actions]
        lines.append(f"rerun: {len(actions)} action(s) of {job_id} queued")
        self.stdout.write("\n".join(lines))

    def _ignore(self, job_id: str, options: dict[str, Any]) -> None:
        """-ignore ID: the (FAILED or KILLED) job; with -action or -date: those (FAILED, KILLED, TIMEDOUT) actions."""
        if is_bundle(job_id) or is_workflow(job_id):
            raise CommandError(f"{'Bundle' if is_bundle(job_id) else 'Workflow'} ignore is not supported: only coordinators")
        if options["action"] is not None and options["date"] is not None:
            raise CommandError("-ignore takes -action or -date, not both")
        self._existing(job_id)
        actor = self._user(options)
        if options["action"] is None and options["date"] is None:
            ignore_job(job_id, actor=actor)
            self.stdout.write(f"ignore: {job_id} queued (the job becomes IGNORED)")
            return
        ignore_type, scope = ("action", options["action"]) if options["action"] is not None else ("date", options["date"])
        if not scope.strip():
            raise CommandError(f"-{ignore_type} is empty")
        actions = ignore_actions(job_id, actor=actor, ignore_type=ignore_type, scope=scope)
        lines = [f"{'ID':<45} {'Status':<10} Nominal Time", "-" * 75]
        lines += [f"{action.id:<45} {action.status:<10} {format_datetime(action.nominal_time)}" for action in actions]
        lines.append(f"ignore: {len(actions)} action(s) of {job_id} queued (they become IGNORED)")
        self.stdout.write("\n".join(lines))

    def _kill_actions(self, job_id: str, options: dict[str, Any]) -> None:
        """-kill COORD_ID -action 1,3-4 | -date A::B: the live actions of the scope become KILLED; the job goes on."""
        if is_bundle(job_id) or is_workflow(job_id):
            raise CommandError(f"-kill takes -action or -date only for a coordinator job, not a {'bundle' if is_bundle(job_id) else 'workflow'}")
        if options["action"] is not None and options["date"] is not None:
            raise CommandError("-kill takes -action or -date, not both")
        kill_type, scope = ("action", options["action"]) if options["action"] is not None else ("date", options["date"])
        if not scope.strip():
            raise CommandError(f"-{kill_type} is empty")
        self._existing(job_id)
        actions = kill_actions(job_id, actor=self._user(options), kill_type=kill_type, scope=scope)
        lines = [f"{'ID':<45} {'Status':<10} Nominal Time", "-" * 75]
        lines += [f"{action.id:<45} {action.status:<10} {format_datetime(action.nominal_time)}" for action in actions]
        lines.append(f"kill: {len(actions)} action(s) of {job_id} queued (they become KILLED)")
        self.stdout.write("\n".join(lines))

    def _update(self, job_id: str, options: dict[str, Any]) -> None:
        """-update ID [-config F] [-dryrun]: Oozie's diff of definition and configuration; queued unless -dryrun."""
        if is_bundle(job_id):
            raise CommandError("-update is for coordinator jobs")
        configuration = None
        if options["config"]:
            config = Path(options["config"])
            try:
                configuration = load_configuration(config.read_bytes(), str(config))
            except OSError as exc:
                raise CommandError(f"cannot read {config}: {exc.strerror or exc}") from None
            configuration.update(defines(options["defines"]))
            path = configuration.get(COORD_APP_PATH, "").strip()
            if path and "://" not in path and not Path(path).is_absolute():
                # As for -submit: a relative application path is relative to the properties file.
                configuration[COORD_APP_PATH] = str((config.parent / path).resolve())
        elif options["defines"]:
            raise CommandError("-update takes -D only with -config (the new configuration, -D over it)")
        self._existing(job_id)
        actor = self._user(options)
        # An ACL member may update another's job: the diff shows both configurations, secrets masked for them.
        owner_id, before = CoordinatorJob.objects.filter(pk=job_id).values_list("owner_id", "configuration").get()
        plan = update_job(job_id, actor=actor, configuration=configuration, dryrun=options["dryrun"], trusted=True)
        self.stdout.write(masker_for(actor, owner_id, before, configuration or {}).text(plan.diff), ending="")
        self.stdout.write("update: dry run, nothing changed" if options["dryrun"] else f"update: {job_id} queued")

    def _rerun_bundle(self, job_id: str, options: dict[str, Any]) -> None:
        """-coordinator names and/or -date ranges (one at least); the actions that will run again, by coordinator."""
        for option in ("action", "failed"):
            if options[option]:
                raise CommandError(f"-{option} is not valid for a bundle rerun; use -coordinator and/or -date")
        if not (options["coordinator"] or options["date"]):
            raise CommandError("a bundle -rerun needs -coordinator c1,c2 or -date A::B (or both)")
        self._existing(job_id)
        planned = rerun_bundle(
            job_id, actor=self._user(options), coordinators=options["coordinator"], dates=options["date"],
            refresh=options["refresh"], nocleanup=options["nocleanup"],
        )
        lines = []
        for name, actions in planned.items():
            lines += [f"coordinator {name}: {len(actions)} action(s)", f"  {'ID':<45} Nominal Time"]
            lines += [f"  {action.id:<45} {format_datetime(action.nominal_time)}" for action in actions]
        total = sum(len(actions) for actions in planned.values())
        lines.append(f"rerun: {total} action(s) of {len(planned)} coordinator(s) of {job_id} queued")
        self.stdout.write("\n".join(lines))

    def _control(self, verb: str, job_id: str, options: dict[str, Any]) -> None:
        self._existing(job_id)
        actor = self._user(options)
        if is_bundle(job_id) and verb == "start":
            start_bundle(job_id, actor=actor)
        elif is_bundle(job_id):
            control_bundle(job_id, verb, actor=actor)
        elif verb == "start":
            start_job(job_id, actor=actor)
        else:
            control(job_id, verb, actor=actor)
        self.stdout.write(f"{verb}: {job_id} queued")

    def _log(self, job_id: str, options: dict[str, Any]) -> None:
        """-log ID [-logfilter ...]: the job's and its actions' story, as the Oozie API's show=log (oozieapi.joblog)."""
        job: CoordinatorJob | BundleJob = (
            BundleJob.objects.select_related("owner").get(pk=job_id) if is_bundle(job_id)
            else CoordinatorJob.objects.select_related("owner").get(pk=job_id)
        )
        reader = self._user(options)
        check_read(reader, job)
        try:
            lines = job_log(job, options=parse_log_filter(options["logfilter"]))
        except OozieError as exc:
            raise CommandError(f"-logfilter: {exc.message}") from None
        if lines:
            self.stdout.write(masker_for(reader, job.owner_id, job.configuration).text("\n".join(lines)))

    def _bundle_info(self, job_id: str, options: dict[str, Any]) -> None:
        """The bundle, then one line per coordinator: name, coordinator job id, status, critical, pending, error."""
        bundle = BundleJob.objects.select_related("owner").defer("applications").get(pk=job_id)
        lines = [
            f"Job ID : {bundle.id}",
            "-" * 80,
            f"Job Name    : {bundle.app_name}",
            f"App Path    : {bundle.app_path or '-'}",
            f"Status      : {bundle.status}",
            f"User        : {bundle.owner.get_username()}",
            f"Kickoff Time: {format_datetime(bundle.kick_off_time) if bundle.kick_off_time else '-'}",
            f"Pause Time  : {format_datetime(bundle.pause_time) if bundle.pause_time else '-'}",
            f"End Time    : {format_datetime(bundle.end_time) if bundle.end_time else '-'}",
            f"Created     : {format_datetime(bundle.created_at)}",
            "-" * 80,
            f"{'Coordinator':<24} {'Job ID':<36} {'Status':<18} {'Critical':<8} {'Pending':<7} Err",
        ]
        for action in bundle.actions.order_by("coord_name"):
            lines.append(
                f"{action.coord_name:<24} {action.coord_job_id or '-':<36} {action.status:<18} "
                f"{'yes' if action.critical else 'no':<8} {action.pending:<7} {one_line(action.error_message)}"
            )
        self.stdout.write(self._shown(options, bundle.owner_id, bundle.configuration).text("\n".join(lines)))

    def _info(self, job_id: str, options: dict[str, Any]) -> None:
        if is_bundle(job_id):
            self._bundle_info(job_id, options)
            return
        job = CoordinatorJob.objects.select_related("owner").get(pk=job_id)
        lines = [
            f"Job ID : {job.id}",
            "-" * 80,
            f"Job Name    : {job.app_name}",
            f"App Path    : {job.app_path}",
            f"Status      : {job.status}",
            f"User        : {job.owner.get_username()}",
            f"Start Time  : {format_datetime(job.start_time)}",
            f"End Time    : {format_datetime(job.end_time)}",
            f"Frequency   : {job.frequency} {job.time_unit}",
            f"Concurrency : {job.concurrency}  Execution: {job.execution}  Timeout: {job.timeout}  Throttle: {job.throttle}",
            "-" * 80,
            f"{'ID':<45} {'Status':<10} {'Ext ID':<36} {'Nominal Time':<18} Err",
        ]
        actions: QuerySet[CoordinatorAction] = job.actions.all()
        statuses = [p.split("=", 1)[1].upper() for p in options["filter"].split(";") if p.startswith("status=")]
        if statuses:
            actions = actions.filter(status__in=statuses)
        actions = actions.order_by("number" if options["order"] == "asc" else "-number")
        start = max(0, options["offset"] - 1)
        for action in actions[start:start + max(1, options["len"])]:
            lines.append(
                f"{action.id:<45} {action.status:<10} {action.external_id or '-':<36} "
                f"{format_datetime(action.nominal_time):<18} {one_line(action.error_message)}"
            )
            if action.status == "WAITING":  # what it waits for, on a line of its own (not cut)
                lines.append(f"    waiting: {action.waiting_text()}")
        self.stdout.write(self._shown(options, job.owner_id, job.configuration).text("\n".join(lines)))
