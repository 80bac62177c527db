"""Secret job properties are masked for every reader but the job's owner and job admins (security issue, item 6).

The rules (kernel.secrets):

1. A property whose name matches SECRET_PROPERTY_PATTERNS (glob, any case; default `*password*`,
   `*secret*`, `*token*`, `*.key`) is shown as `********`.
2. Its value, when at least 4 characters long, is masked wherever it appears in text: under
   another property's name (`path=/data/${db.password}` resolved), in a resolved action
   configuration, an error message, a log line. Shorter values are masked under their name only.
3. The owner and job admins (superusers and holders of coordinators.change_coordinatorjob) see
   the real values; another user, and staff who are neither, see masks: in the native API,
   the Oozie API (`show=info`, `show=log`, an action's and a workflow's info), the CLI
   (`job -info`, `-log`, as `-user`) and the admin pages.
4. Server log lines and what Flower shows of a Celery message are masked for everyone.
5. What is stored never changes: the owner reruns and edits with the real values.

Jobs are real submissions run in process (the command engine, the workflow runner), with
secret properties `db.password`, `api.token`, `my.secret`, `ssl.key`, a non-secret
`queueName`, and `path`, which holds `${db.password}` so the value appears under a name that is
not secret.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from django.contrib.admin.utils import quote
from django.contrib.auth.models import AnonymousUser, Permission, User
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from bundles import services as bundle_services
from bundles.models import BundleJob
from coordinators.models import CoordinatorAction, CoordinatorJob
from coordinators.services import submit_coordinator, submit_from_properties
from kernel import secrets
from kernel.permissions import ADMIN_PERMISSION, check_modify
from kernel.secrets import MASK, mask_properties, mask_text, may_see_secrets
from project.celery import app
from statusservice.tasks import input_checks
from tests.bundles.api.factories import bundle_app
from tests.bundles.factories import window as bundle_window
from tests.coordinators.api.factories import api, user
from tests.coordinators.api.factories import coordinator_xml as api_coordinator_xml
from tests.coordinators.api.factories import window as api_window
from tests.oozieapi.client import Oozie
from tests.support.bundles import settle
from tests.support.coordinator_apps import coordinator_xml, prop
from tests.support.engine import run_pending_commands
from tests.workflows.api.factories import APP_PATH, celery, drive, write_app
from workflows.api.access import guard
from workflows.models import WorkflowJob
from workflows.services import request_rerun
from xcommands.keyed import enqueue_job
from xcommands.models import Command

SECRETS = {
    "db.password": "hunter2-db-pw",
    "api.token": "tok-0123456789",
    "my.secret": "shh-quiet-secret",
    "ssl.key": "KEYDATA-4242",
}
PROPERTIES = {**SECRETS, "queueName": "default", "jdbc.url": "jdbc:postgresql://db/app?password=${db.password}"}
#: reader id -> (username, whether the reader sees the real values)
READERS = {
    "another-user": ("bob", False),
    "view-only-staff": ("viewer", False),
    "owner": ("ann", True),
    "job-admin": ("ops", True),
    "superuser": ("root", True),
}
ADMIN_READERS = ["view-only-staff", "superuser"]
COORD_APP_PATH = "oozie.coord.application.path"


def leaked(text: str) -> list[str]:
    """The secret values that appear in the text."""
    return [value for value in SECRETS.values() if value in text]


def check_shown(text: str, sees: bool) -> None:
    """The owner and job admins see every value the text carries; anyone else sees masks and no value."""
    if sees:
        assert "hunter2-db-pw" in text and MASK not in text
    else:
        assert leaked(text) == [] and MASK in text


# ---- fixtures -------------------------------------------------------------------------------


@pytest.fixture
def people(db: None) -> dict[str, User]:
    """The owner, another user, staff who may only view, a job admin (staff with the permission) and a superuser."""
    accounts = {name: user(name) for name in ("ann", "bob", "viewer", "root")}
    accounts["ops"] = user("ops", staff=True)  # a job admin: coordinators.change_coordinatorjob
    viewer = accounts["viewer"]
    viewer.is_staff = True
    viewer.save()
    viewer.user_permissions.add(*Permission.objects.filter(codename__in=[
        "view_coordinatorjob", "view_coordinatoraction", "view_workflowjob", "view_bundlejob",
    ]))
    root = accounts["root"]
    root.is_staff = root.is_superuser = True
    root.save()
    return accounts


@pytest.fixture
def failed_job(people: dict[str, User], in_process_engine: None, tmp_path: Path) -> CoordinatorJob:
    """Ann's coordinator whose action read `path` (holding ${db.password}) and FAILED naming it."""
    xml = coordinator_xml("examples.require", properties=prop("path", f"{tmp_path}/missing-${{db.password}}"))
    job = submit_coordinator(xml, dict(PROPERTIES), owner=people["ann"])
    run_pending_commands()
    input_checks()
    run_pending_commands()
    drive()
    job = CoordinatorJob.objects.get(pk=job.pk)
    action = job.actions.get(number=1)
    assert action.status == "FAILED" and "hunter2-db-pw" in action.error_message  # the value is in free text
    return job


@pytest.fixture
def workflow_app(people: dict[str, User], in_process_engine: None, tmp_path: Path) -> str:
    """Ann's workflow application (native API) whose celery action's argument holds ${db.password}; it FAILED."""
    directory = write_app(tmp_path / "app", (
        '<workflow-app name="wf-secrets" xmlns="uri:oozie:workflow:1.0"><start to="a"/>'
        + celery("a", "examples.fail_unless", f"{tmp_path}/missing-${{db.password}}", ok="end")
        + '<kill name="fail"><message>failed</message></kill><end name="end"/></workflow-app>'
    ))
    response = api(people["ann"]).post(
        "/api/v1/workflows/", {"properties": {**PROPERTIES, APP_PATH: str(directory)}}, format="json")
    assert response.status_code == 201, response.json()
    drive()
    workflow = WorkflowJob.objects.get(pk=response.json()["id"])
    assert workflow.status == "KILLED" and "hunter2-db-pw" in workflow.nodes.get(name="a").error_message
    return workflow.pk


@pytest.fixture
def bundle(people: dict[str, User], in_process_engine: None, tmp_path: Path) -> BundleJob:
    """Ann's started bundle of two coordinators, submitted with the secret properties."""
    xml = bundle_app(tmp_path)
    submitted = bundle_services.submit_bundle(
        xml.read_text(), {**bundle_window(3, 60), **PROPERTIES}, owner=people["ann"], app_path=str(xml))
    settle()
    return BundleJob.objects.get(pk=submitted.pk)


# ---- kernel.secrets ---------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "secret"), [
    pytest.param("db.password", True, id="password"),
    pytest.param("DB.PassWord", True, id="password-any-case"),
    pytest.param("api.token", True, id="token"),
    pytest.param("my.secret", True, id="secret"),
    pytest.param("ssl.key", True, id="dot-key"),
    pytest.param("SSL.KEY", True, id="dot-key-upper-case"),
    pytest.param("keyboard", False, id="keyboard-is-no-key"),
    pytest.param("monkey", False, id="no-dot-before-key"),
    pytest.param("queueName", False, id="queue-name"),
    pytest.param("oozie.wf.application.path", False, id="app-path"),
])
def test_names_matching_a_pattern_are_secret_in_any_case(name: str, secret: bool) -> None:
    """SECRET_PROPERTY_PATTERNS are case-insensitive globs on the whole name: `*.key` is ssl.key, not keyboard."""
    assert secrets.is_secret(name) is secret


def test_the_patterns_come_from_the_setting(settings: Any) -> None:
    """SECRET_PROPERTY_PATTERNS replaces the defaults: only what it lists is secret."""
    settings.SECRET_PROPERTY_PATTERNS = ["*.pin"]
    assert secrets.is_secret("atm.PIN") and not secrets.is_secret("db.password")


def test_mask_properties_masks_secret_names_and_their_values_under_other_names() -> None:
    """Secret properties become `********` (even short or empty ones); other values keep all but the secret values."""
    shown = mask_properties({**PROPERTIES, "ssl.key": "k1", "empty.token": "", "path": "/data/hunter2-db-pw/x"})
    assert shown["db.password"] == shown["api.token"] == shown["ssl.key"] == shown["empty.token"] == MASK
    assert shown["queueName"] == "default" and shown["path"] == f"/data/{MASK}/x"
    assert shown["jdbc.url"] == "jdbc:postgresql://db/app?password=${db.password}"  # a reference is no value


@pytest.mark.parametrize(("text", "expected"), [
    pytest.param("open /data/hunter2-db-pw failed", f"open /data/{MASK} failed", id="value-in-an-error"),
    pytest.param("<name>x.password</name><value>literal</value>", f"<name>x.password</name><value>{MASK}</value>",
                 id="xml-property-by-name"),
    pytest.param("GET http://h/n?id=1&token=abc&s=OK", f"GET http://h/n?id=1&token={MASK}&s=OK", id="url-query-by-name"),
    pytest.param("api.token=abc def\nqueueName=default", f"api.token={MASK}\nqueueName=default",
                 id="properties-line-by-name"),
    pytest.param('{"my.secret": "x\\"y", "a": "b"}', f'{{"my.secret": "{MASK}", "a": "b"}}', id="json-by-name"),
    pytest.param("jdbc.url=x?password=${db.password}", "jdbc.url=x?password=${db.password}", id="reference-kept"),
    pytest.param("p&amp;ss-w0rd in XML", f"{MASK} in XML", id="xml-escaped-value"),
])
def test_mask_text_replaces_secret_values_and_named_values(text: str, expected: str) -> None:
    """Free text loses every secret value (also XML-escaped) and every value written next to a secret name."""
    assert mask_text(text, {**SECRETS, "other.password": "p&ss-w0rd"}) == expected


def test_short_values_are_masked_under_their_name_only() -> None:
    """A value under 4 characters is not searched for in text (it would garble it and tell the value)."""
    properties = {"ssl.key": "abc", "db.password": "hunter2-db-pw"}
    assert mask_text("abc abcdef hunter2-db-pw", properties) == f"abc abcdef {MASK}"
    assert mask_properties(properties)["ssl.key"] == MASK


def test_owner_and_job_admins_may_see_secrets_staff_alone_may_not(people: dict[str, User]) -> None:
    """may_see_secrets: the owner, superusers and job admins; not another user, view-only staff, anonymous or inactive."""
    owner_id = people["ann"].pk
    seen = {name: may_see_secrets(account, owner_id) for name, account in people.items()}
    assert seen == {"ann": True, "bob": False, "viewer": False, "root": True, "ops": True}
    assert not may_see_secrets(AnonymousUser(), owner_id) and not may_see_secrets(None, owner_id)
    people["ann"].is_active = False
    assert not may_see_secrets(people["ann"], owner_id)
    assert secrets.JOB_ADMIN_PERMISSION == ADMIN_PERMISSION  # the kernel names coordinators' permission as a string


# ---- what readers are shown -----------------------------------------------------------------


@pytest.mark.parametrize("reader", list(READERS))
def test_native_api_shows_secrets_to_owner_and_admins_only(reader: str, people: dict[str, User],
                                                           failed_job: CoordinatorJob) -> None:
    """Job detail, its actions, an action with its runs, the actions list and an action's history (rule 3)."""
    name, sees = READERS[reader]
    client = api(people[name])
    action_id = f"{failed_job.pk}@1"
    paths = [
        f"/api/v1/coordinator-jobs/{failed_job.pk}/", f"/api/v1/coordinator-jobs/{failed_job.pk}/actions/",
        f"/api/v1/coordinator-actions/{action_id}/", "/api/v1/coordinator-actions/",
        f"/api/v1/coordinator-actions/{action_id}/history/",
    ]
    responses = [client.get(path) for path in paths]
    assert [r.status_code for r in responses] == [200] * len(paths)
    check_shown("".join(r.content.decode() for r in responses), sees)
    configuration = responses[0].json()["configuration"]
    assert configuration == (PROPERTIES if sees else {**dict.fromkeys(SECRETS, MASK), "queueName": "default",
                                                      "jdbc.url": PROPERTIES["jdbc.url"]})
    run_conf = responses[2].json()["run_conf"]
    assert ("hunter2-db-pw" in run_conf["path"]) is sees and (MASK in run_conf["path"]) is not sees


@pytest.mark.parametrize("reader", list(READERS))
def test_oozie_api_shows_secrets_to_owner_and_admins_only(reader: str, people: dict[str, User],
                                                          failed_job: CoordinatorJob) -> None:
    """show=info (conf, createdConf, runConf, errors), show=log, an action's and its run's info and log (rule 3)."""
    name, sees = READERS[reader]
    oozie = Oozie(people[name])
    action = failed_job.actions.get(number=1)
    answers = [
        oozie.get(f"job/{failed_job.pk}", show="info", len=10), oozie.get(f"job/{failed_job.pk}", show="log"),
        oozie.get(f"job/{failed_job.pk}", show="errorlog"), oozie.get(f"job/{action.pk}"),
        oozie.get(f"job/{action.external_id}"), oozie.get(f"job/{action.external_id}", show="log"),
    ]
    assert [a.status_code for a in answers] == [200] * len(answers)
    check_shown("".join(a.content.decode() for a in answers), sees)
    if not sees:
        assert f"<name>db.password</name>\n    <value>{MASK}</value>" in answers[0].json()["conf"]


@pytest.mark.parametrize("reader", ["another-user", "owner", "superuser"])
def test_cli_shows_secrets_to_the_acting_user_only_if_owner_or_admin(reader: str, people: dict[str, User],
                                                                     failed_job: CoordinatorJob) -> None:
    """`job -info`, `-log` and a run's `-info`, as `-user`: masked unless that user owns the job or is a job admin."""
    name, sees = READERS[reader]
    run_id = failed_job.actions.get(number=1).external_id
    shown = ""
    for arguments in (["-info", failed_job.pk], ["-log", failed_job.pk], ["-info", run_id]):
        out = io.StringIO()
        call_command("job", *arguments, "-user", name, stdout=out)
        shown += out.getvalue()
    check_shown(shown, sees)


def test_cli_masks_for_an_unknown_login(people: dict[str, User], failed_job: CoordinatorJob) -> None:
    """`job -info` without -user acts as the login name: one that is no user here is nobody's owner: masked."""
    out = io.StringIO()
    with mock.patch("getpass.getuser", return_value="no-such-login"):
        call_command("job", "-info", failed_job.pk, stdout=out)
    check_shown(out.getvalue(), sees=False)


@pytest.mark.parametrize("reader", ADMIN_READERS)
def test_admin_pages_show_secrets_to_superusers_not_to_view_only_staff(reader: str, people: dict[str, User],
                                                                     failed_job: CoordinatorJob) -> None:
    """The job's and action's pages, the job's timeline, the action's history and its run's page (rule 3)."""
    name, sees = READERS[reader]
    client = Client()
    client.force_login(people[name])
    action = failed_job.actions.get(number=1)
    urls = [
        reverse("admin:coordinators_coordinatorjob_change", args=[quote(failed_job.pk)]),
        reverse("admin:coordinators_coordinatorjob_timeline", args=[quote(failed_job.pk)]),
        reverse("admin:coordinators_coordinatoraction_change", args=[quote(action.pk)]),
        reverse("admin:coordinators_coordinatoraction_history", args=[quote(action.pk)]),
        reverse("admin:workflows_workflowjob_change", args=[quote(action.external_id)]),
    ]
    pages = [client.get(url) for url in urls]
    assert [p.status_code for p in pages] == [200] * len(urls)
    check_shown("".join(p.content.decode() for p in pages), sees)


@pytest.mark.parametrize("reader", list(READERS))
def test_workflow_applications_show_secrets_to_owner_and_admins_only(reader: str, people: dict[str, User],
                                                                     workflow_app: str) -> None:
    """A workflow.xml run: configuration, node specs (resolved EL), errors, in the native and the Oozie API."""
    name, sees = READERS[reader]
    answers = [
        api(people[name]).get(f"/api/v1/workflows/{workflow_app}/"), api(people[name]).get("/api/v1/workflows/"),
        Oozie(people[name]).get(f"job/{workflow_app}"), Oozie(people[name]).get(f"job/{workflow_app}@a"),
    ]
    assert [a.status_code for a in answers] == [200] * len(answers)
    check_shown("".join(a.content.decode() for a in answers), sees)


@pytest.mark.parametrize("reader", list(READERS))
def test_bundles_show_secrets_to_owner_and_admins_only(reader: str, people: dict[str, User], bundle: BundleJob) -> None:
    """A bundle's detail (native API) and show=info with its coordinators' conf (Oozie API)."""
    name, sees = READERS[reader]
    answers = [api(people[name]).get(f"/api/v1/bundle-jobs/{bundle.pk}/"), Oozie(people[name]).get(f"job/{bundle.pk}")]
    assert [a.status_code for a in answers] == [200, 200]
    assert answers[1].json()["bundleCoordJobs"]  # its coordinators' configurations are shown too
    check_shown("".join(a.content.decode() for a in answers), sees)


@pytest.mark.parametrize("reader", ADMIN_READERS)
def test_bundle_admin_page_shows_secrets_to_superusers_only(reader: str, people: dict[str, User],
                                                            bundle: BundleJob) -> None:
    """The bundle's page (properties, definition, coordinators) in the admin (rule 3)."""
    name, sees = READERS[reader]
    client = Client()
    client.force_login(people[name])
    page = client.get(reverse("admin:bundles_bundlejob_change", args=[quote(bundle.pk)]))
    assert page.status_code == 200
    check_shown(page.content.decode(), sees)


def test_an_acl_members_update_diff_masks_both_configurations(people: dict[str, User], in_process_engine: None,
                                                             tmp_path: Path) -> None:
    """An ACL member may update another's job: the diff of old and new properties shows them masks, the owner values."""
    app = tmp_path / "app"
    app.mkdir()
    (app / "coordinator.xml").write_text(api_coordinator_xml(name="upd"))
    user("carol")
    properties = {COORD_APP_PATH: f"file://{app}", **api_window(), **PROPERTIES, "oozie.job.acl": "carol"}
    job = submit_from_properties(properties, owner=people["ann"])
    run_pending_commands()
    changed = {**properties, "db.password": "new-password-77"}
    for name, sees in (("carol", False), ("ann", True)):
        response = api(User.objects.get(username=name)).post(
            f"/api/v1/coordinator-jobs/{job.pk}/update/", {"configuration": changed, "dryrun": True}, format="json")
        assert response.status_code == 200, response.json()
        diff = response.json()["diff"]
        assert "<name>db.password</name>" in diff
        assert ("new-password-77" in diff and "hunter2-db-pw" in diff) is sees
        assert (leaked(diff) == [] and "new-password-77" not in diff and MASK in diff) is not sees


def test_stored_properties_are_never_changed(people: dict[str, User], failed_job: CoordinatorJob) -> None:
    """Masking is for display: after masked reads the job keeps the submitted values (rule 5)."""
    api(people["bob"]).get(f"/api/v1/coordinator-jobs/{failed_job.pk}/")
    Oozie(people["bob"]).get(f"job/{failed_job.pk}", show="info")
    assert CoordinatorJob.objects.get(pk=failed_job.pk).configuration == PROPERTIES
    assert "hunter2-db-pw" in CoordinatorAction.objects.get(pk=f"{failed_job.pk}@1").run_conf["path"]


# ---- logs and Flower: masked for everyone ---------------------------------------------------


def test_server_logs_mask_secret_values(people: dict[str, User], in_process_engine: None, tmp_path: Path,
                                        caplog: pytest.LogCaptureFixture) -> None:
    """A killed run's log line carries its kill message (holding ${db.password}) without the value (rule 4)."""
    caplog.set_level(logging.INFO)
    directory = write_app(tmp_path / "app", (
        '<workflow-app name="wf-logs" xmlns="uri:oozie:workflow:1.0"><start to="a"/>'
        + celery("a", "examples.fail_unless", f"{tmp_path}/missing", ok="end")
        + '<kill name="fail"><message>gave up, password ${db.password}</message></kill><end name="end"/></workflow-app>'
    ))
    response = api(people["ann"]).post(
        "/api/v1/workflows/", {"properties": {**PROPERTIES, APP_PATH: str(directory)}}, format="json")
    assert response.status_code == 201, response.json()
    drive()
    assert "hunter2-db-pw" in WorkflowJob.objects.get(pk=response.json()["id"]).error_message  # stored as it is
    assert f"gave up, password {MASK}" in caplog.text and leaked(caplog.text) == []


@pytest.fixture
def sent(in_process_engine: None) -> Iterator[list[dict[str, Any]]]:
    """Every Celery message sent, as Flower would show it: its args and kwargs (argsrepr, kwargsrepr when given)."""
    messages: list[dict[str, Any]] = []

    def record(name: str, args: Any = None, kwargs: Any = None, **options: Any) -> None:
        messages.append({"name": name, "args": args, "kwargs": kwargs, "shown": (
            options.get("argsrepr") or repr(args or ()), options.get("kwargsrepr") or repr(kwargs or {}))})

    with mock.patch.object(app, "send_task", side_effect=record):
        yield messages


@pytest.mark.django_db(transaction=True)  # messages are sent once their transaction commits
def test_flower_messages_carry_no_secret_value(people: dict[str, User], sent: list[dict[str, Any]],
                                               settings: Any, tmp_path: Path) -> None:
    """A notification URL with a token, a rerun's configuration, a keyed job's arguments: Flower shows masks (rule 4)."""
    settings.OUTBOUND_ALLOWED_HOSTS = ["hooks.example"]
    notify = "http://hooks.example/n?id=$jobId&s=$status&token=tok-0123456789&k=KEYDATA-4242"
    directory = write_app(tmp_path / "app", (
        '<workflow-app name="wf-notify" xmlns="uri:oozie:workflow:1.0"><start to="a"/>'
        + celery("a", "examples.noop_any", "${db.password}", ok="end")
        + '<kill name="fail"><message>failed</message></kill><end name="end"/></workflow-app>'
    ))
    response = api(people["ann"]).post("/api/v1/workflows/", {"properties": {
        **PROPERTIES, APP_PATH: str(directory), "oozie.wf.workflow.notification.url": notify}}, format="json")
    assert response.status_code == 201, response.json()
    drive()
    request_rerun(response.json()["id"], {"oozie.wf.rerun.failnodes": "false", "db.password": "hunter2-db-pw"},
                  check=lambda run: check_modify(people["ann"], guard(run)))
    enqueue_job("ann:keyed", "examples.noop_any", kwargs={"api_token": "tok-0123456789", "n": 1}, owner_id=people["ann"].pk)
    notifications = [m for m in sent if m["name"] == "workflows.notify"]
    assert notifications and all("tok-0123456789" in m["args"][0] for m in notifications)  # the worker gets the URL
    names = {m["name"] for m in sent}
    assert {"workflows.notify", "workflows.run", "workflows.WfRerunXCommand", "xcommands.KeyedJobXCommand"} <= names
    shown = " ".join(" ".join(m["shown"]) for m in sent)
    assert leaked(shown) == [] and MASK in shown
    operator = Client()
    operator.force_login(people["root"])  # the command queue's page shows the params as Flower does
    rerun = Command.objects.get(name="workflows.WfRerunXCommand")
    page = operator.get(reverse("admin:xcommands_command_change", args=[rerun.pk]))
    assert page.status_code == 200 and leaked(page.content.decode()) == [] and MASK in page.content.decode()
