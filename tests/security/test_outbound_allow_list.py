"""Outbound requests at a user's word go only to hosts OUTBOUND_ALLOWED_HOSTS lists (kernel.outbound).

The rules these tests hold the code to:

1. Only http and https, no `user:pass@`, a host name or a canonical IP address (`127.1`,
   `0x7f000001`, `2130706433` are refused outright).
2. The host matches an entry: an exact name, a `*.domain` (subdomains only), an IP address or
   network, each optionally with a port (none: any port). Empty (the default): nothing.
3. Loopback, link-local (169.254.169.254 included), unspecified, multicast and their
   IPv4-mapped forms are refused unless an IP entry inside that range covers the address; a
   broad `0.0.0.0/0` does not.
4. When sending, every address the name resolves to is checked by rule 3 (a host name entry
   never lets a loopback answer through: DNS rebinding), the connection goes to the checked
   address (one resolution, the Host header keeps the name) and redirects are not followed.
5. Submissions naming a notification URL (workflow, coordinator, bundle; native API, Oozie
   API, CLI) or an http(s) batch payload the rules refuse are 400s naming the property or
   setting, and store nothing; at send time a refused URL is logged once and not retried.
"""

from __future__ import annotations

import io
import ipaddress
import logging
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import ImproperlyConfigured
from django.core.management import CommandError, call_command

from batches.definitions import ObjectSpec, write_batch_manifest
from batches.models import Batch, BatchJob, Collection, Profile
from batches.sources import PayloadRefused, check_payload_url, read_bytes, size_of
from bundles.models import BundleJob
from bundles.services import submit_bundle
from coordinators.models import CoordinatorAction, CoordinatorJob
from kernel import outbound
from oozie.definitions import DefinitionError
from oozie.properties import ACTION_NOTIFICATION_URL as NODE_URL
from oozie.properties import WF_NOTIFICATION_URL as JOB_URL
from tests.bundles.factories import bundle_xml, write_coordinator
from tests.bundles.factories import window as bundle_window
from tests.coordinators.api.factories import api, coordinator_xml, user, window
from tests.oozieapi.client import Oozie, error_of
from tests.workflows.api.factories import APP_PATH, drive
from workflows import notifications
from workflows.models import WorkflowJob, WorkflowNode
from workflows.services import request_control, request_rerun, submit_workflow
from workflows.tasks import notify
from xcommands.models import Command

# ---- a local receiver -------------------------------------------------------------------------


@dataclass
class Receiver:
    """A real HTTP server on 127.0.0.1: what reached it (path and Host header of each request)."""

    server: HTTPServer
    seen: list[tuple[str, str, str]] = field(default_factory=list)  # (method, path, Host)

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"


def start_receiver(answer: Callable[[BaseHTTPRequestHandler], None] | None = None) -> Receiver:
    """Serve in a thread; each request is recorded, then answered 200 'ok' (or by `answer`)."""
    receiver: Receiver

    class Handler(BaseHTTPRequestHandler):
        def _any(self) -> None:
            receiver.seen.append((self.command, self.path, self.headers.get("Host", "")))
            if answer is not None:
                answer(self)
                return
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(b"ok")

        do_GET = do_HEAD = _any  # noqa: N815 - the http.server API

        def log_message(self, *args: Any) -> None:
            return

    receiver = Receiver(HTTPServer(("127.0.0.1", 0), Handler))
    threading.Thread(target=receiver.server.serve_forever, daemon=True).start()
    return receiver


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """A local HTTP server, shut down after the test."""
    started = start_receiver()
    yield started
    started.server.shutdown()
    started.server.server_close()


def fake_dns(monkeypatch: pytest.MonkeyPatch, answers: dict[str, list[str]]) -> list[str]:
    """Make `socket.getaddrinfo` answer these names with these addresses; the names asked, in order."""
    asked: list[str] = []

    def getaddrinfo(host: str, port: Any, *args: Any, **kwargs: Any) -> list[Any]:
        asked.append(host)
        if host not in answers:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [
            (socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "",
             (a, int(port), 0, 0) if ":" in a else (a, int(port)))
            for a in answers[host]
        ]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)  # the module kernel.outbound resolves with
    return asked


# ---- the matcher (no DNS) -----------------------------------------------------------------------

STATIC = [
    # (entries, url, allowed)
    pytest.param([], "https://hooks.example.com/x", False, id="empty-list-allows-nothing"),
    pytest.param(["hooks.example.com"], "https://hooks.example.com/x?a=1", True, id="exact-name"),
    pytest.param(["hooks.example.com"], "HTTPS://Hooks.Example.COM./x", True, id="exact-name-any-case-trailing-dot"),
    pytest.param(["hooks.example.com"], "https://evil.example.com/x", False, id="exact-name-other-host"),
    pytest.param(["hooks.example.com"], "https://a.hooks.example.com/x", False, id="exact-name-not-its-subdomains"),
    pytest.param(["hooks.example.com"], "https://hooks.example.com.evil.net/", False, id="exact-name-not-a-prefix"),
    pytest.param(["*.example.com"], "https://a.example.com/", True, id="wildcard-subdomain"),
    pytest.param(["*.example.com"], "https://a.b.example.com/", True, id="wildcard-deeper-subdomain"),
    pytest.param(["*.example.com"], "https://example.com/", False, id="wildcard-not-the-domain-itself"),
    pytest.param(["*.example.com"], "https://badexample.com/", False, id="wildcard-not-a-suffix-of-a-label"),
    pytest.param(["10.0.0.0/8"], "http://10.1.2.3/", True, id="cidr-inside"),
    pytest.param(["10.0.0.0/8"], "http://11.1.2.3/", False, id="cidr-outside"),
    pytest.param(["10.0.0.0/8"], "http://ten.example.com/", False, id="cidr-does-not-match-names"),
    pytest.param(["hooks.example.com"], "http://93.184.216.34/", False, id="name-entry-does-not-match-ips"),
    pytest.param(["2001:db8::/32"], "http://[2001:db8::5]/", True, id="ipv6-cidr"),
    pytest.param(["hooks.example.com:8443"], "https://hooks.example.com:8443/", True, id="port-matches"),
    pytest.param(["hooks.example.com:8443"], "https://hooks.example.com/", False, id="port-differs-from-default"),
    pytest.param(["hooks.example.com:443"], "https://hooks.example.com/", True, id="port-is-the-scheme-default"),
    pytest.param(["hooks.example.com"], "http://hooks.example.com:9999/", True, id="no-port-any-port"),
    pytest.param(["[2001:db8::5]:8080"], "http://[2001:db8::5]:8080/", True, id="bracketed-ipv6-with-port"),
    pytest.param(["hooks.example.com"], "https://user:pw@hooks.example.com/", False, id="userinfo-refused"),
    pytest.param(["hooks.example.com"], "https://user@hooks.example.com/", False, id="user-only-refused"),
    pytest.param(["hooks.example.com"], "ftp://hooks.example.com/", False, id="scheme-ftp-refused"),
    pytest.param(["hooks.example.com"], "file:///etc/passwd", False, id="scheme-file-refused"),
    pytest.param(["hooks.example.com"], "gopher://hooks.example.com/", False, id="scheme-gopher-refused"),
    pytest.param(["hooks.example.com"], "//hooks.example.com/", False, id="no-scheme-refused"),
    pytest.param(["hooks.example.com"], "http://hooks.example.com\\@evil.net/", False, id="backslash-refused"),
    pytest.param(["hooks.example.com"], "http://hooks.example.com /", False, id="space-refused"),
    pytest.param(["127.0.0.1"], "http://127.1/", False, id="short-ipv4-refused"),
    pytest.param(["127.0.0.1"], "http://0x7f000001/", False, id="hex-ipv4-refused"),
    pytest.param(["127.0.0.1"], "http://2130706433/", False, id="decimal-ipv4-refused"),
    pytest.param(["127.0.0.1"], "http://0177.0.0.1/", False, id="octal-ipv4-refused"),
    pytest.param([], "http://127.0.0.1/", False, id="loopback-not-listed"),
    pytest.param(["0.0.0.0/0"], "http://127.0.0.1/", False, id="loopback-not-by-a-broad-cidr"),
    pytest.param(["127.0.0.1"], "http://127.0.0.1:8080/", True, id="loopback-listed"),
    pytest.param(["127.0.0.1:8080"], "http://127.0.0.1:9090/", False, id="loopback-listed-other-port"),
    pytest.param(["0.0.0.0/0", "::/0"], "http://[::1]/", False, id="ipv6-loopback-not-by-a-broad-cidr"),
    pytest.param(["::1"], "http://[::1]/", True, id="ipv6-loopback-listed"),
    pytest.param(["0.0.0.0/0"], "http://169.254.169.254/latest/meta-data/", False, id="cloud-metadata-refused"),
    pytest.param(["169.254.169.254"], "http://169.254.169.254/", True, id="cloud-metadata-listed"),
    pytest.param(["::/0"], "http://[fe80::1]/", False, id="ipv6-link-local-refused"),
    pytest.param(["::/0"], "http://[fe80::1%25eth0]/", False, id="ipv6-zone-id-refused"),
    pytest.param(["0.0.0.0/0"], "http://0.0.0.0/", False, id="unspecified-refused"),
    pytest.param(["0.0.0.0/0"], "http://224.0.0.1/", False, id="multicast-refused"),
    pytest.param(["0.0.0.0/0", "::/0"], "http://[::ffff:127.0.0.1]/", False, id="ipv4-mapped-loopback-refused"),
    pytest.param(["::/0"], "http://[::ffff:a9fe:a9fe]/", False, id="ipv4-mapped-metadata-hex-refused"),
    pytest.param(["127.0.0.1"], "http://[::ffff:127.0.0.1]/", True, id="ipv4-mapped-of-a-listed-address"),
    pytest.param(["::ffff:10.0.0.0/104"], "http://10.2.3.4/", True, id="ipv4-mapped-entry-reads-as-ipv4"),
]


@pytest.mark.parametrize(("entries", "url", "allowed"), STATIC)
def test_check_url_allows_only_what_the_list_names(settings: Any, entries: list[str], url: str, allowed: bool) -> None:
    """Rules 1-3 (no DNS): each URL is allowed exactly when its scheme, host and port pass the list."""
    settings.OUTBOUND_ALLOWED_HOSTS = entries
    if allowed:
        outbound.check_url(url)
    else:
        with pytest.raises(outbound.OutboundRefused):
            outbound.check_url(url)


def test_a_refusal_names_the_host_and_the_setting(settings: Any) -> None:
    """The message says which host was refused and which setting would allow it (not the whole URL: it may hold secrets)."""
    settings.OUTBOUND_ALLOWED_HOSTS = ["hooks.example.com"]
    with pytest.raises(outbound.OutboundRefused) as refused:
        outbound.check_url("https://evil.example.net:8443/x?token=secret")
    assert "evil.example.net:8443" in str(refused.value) and "OUTBOUND_ALLOWED_HOSTS" in str(refused.value)
    assert "secret" not in str(refused.value)


@pytest.mark.parametrize("entry", [
    pytest.param("*", id="bare-star"),
    pytest.param("http://hooks.example.com", id="a-url"),
    pytest.param("hooks.example.com:99999", id="port-out-of-range"),
    pytest.param("[::1", id="unclosed-bracket"),
    pytest.param("127.1", id="short-ipv4"),
    pytest.param("a.*.example.com", id="inner-wildcard"),
])
def test_an_unreadable_entry_is_a_configuration_error(settings: Any, entry: str) -> None:
    """An entry the matcher cannot read fails loudly (ImproperlyConfigured naming it), never silently matches."""
    settings.OUTBOUND_ALLOWED_HOSTS = [entry]
    with pytest.raises(ImproperlyConfigured, match="OUTBOUND_ALLOWED_HOSTS"):
        outbound.check_url("https://hooks.example.com/")


# ---- resolution: every address checked, the connection pinned -----------------------------------

RESOLVED = [
    # (entries, addresses the name resolves to, allowed)
    pytest.param(["hooks.test"], ["93.184.216.34"], True, id="public-address"),
    pytest.param(["hooks.test"], ["10.1.2.3"], True, id="private-address-by-a-listed-name"),
    pytest.param(["hooks.test"], ["127.0.0.1"], False, id="name-to-loopback-refused"),
    pytest.param(["hooks.test", "127.0.0.1"], ["127.0.0.1"], True, id="name-to-loopback-listed-by-ip"),
    pytest.param(["hooks.test", "0.0.0.0/0"], ["127.0.0.1"], False, id="name-to-loopback-not-by-a-broad-cidr"),
    pytest.param(["hooks.test"], ["93.184.216.34", "169.254.169.254"], False, id="one-metadata-answer-among-several"),
    pytest.param(["hooks.test"], ["::1"], False, id="name-to-ipv6-loopback-refused"),
    pytest.param(["hooks.test"], ["::ffff:127.0.0.1"], False, id="name-to-ipv4-mapped-loopback-refused"),
    pytest.param(["hooks.test"], ["0.0.0.0"], False, id="name-to-unspecified-refused"),  # noqa: S104 - an answer, not a bind
]


@pytest.mark.parametrize(("entries", "addresses", "allowed"), RESOLVED)
def test_every_resolved_address_is_checked(settings: Any, monkeypatch: pytest.MonkeyPatch, entries: list[str],
                                           addresses: list[str], allowed: bool) -> None:
    """Rule 4: a listed name passes only when every address it resolves to does (a name entry never allows loopback)."""
    settings.OUTBOUND_ALLOWED_HOSTS = entries
    fake_dns(monkeypatch, {"hooks.test": addresses})
    outbound.check_url("http://hooks.test/")  # the static check cannot know
    if allowed:
        destination = outbound.resolve("http://hooks.test/")
        assert [str(a) for a in destination.addresses] == [str(outbound.plain(ipaddress.ip_address(a)))
                                                            for a in addresses]
    else:
        with pytest.raises(outbound.OutboundRefused, match="resolves to"):
            outbound.resolve("http://hooks.test/")


def test_localhost_by_name_is_refused_unless_its_address_is_listed(settings: Any) -> None:
    """The real resolver: `localhost` is a loopback answer, refused for a name entry alone."""
    settings.OUTBOUND_ALLOWED_HOSTS = ["localhost"]
    with pytest.raises(outbound.OutboundRefused, match="loopback"):
        outbound.resolve("http://localhost/")
    settings.OUTBOUND_ALLOWED_HOSTS = ["localhost", "127.0.0.0/8", "::1"]
    assert outbound.resolve("http://localhost/").addresses


def test_the_connection_goes_to_the_checked_address_with_the_name_in_the_host_header(
        settings: Any, monkeypatch: pytest.MonkeyPatch, receiver: Receiver) -> None:
    """Rule 4: one resolution, then a connection to that address; the request still names the host."""
    settings.OUTBOUND_ALLOWED_HOSTS = ["hooks.test", f"127.0.0.1:{receiver.port}"]
    asked = fake_dns(monkeypatch, {"hooks.test": ["127.0.0.1"]})
    reply = outbound.request(f"http://hooks.test:{receiver.port}/ping?x=1")
    assert (reply.status, reply.body) == (200, b"ok")
    assert receiver.seen == [("GET", "/ping?x=1", f"hooks.test:{receiver.port}")]
    assert asked == ["hooks.test"]  # nothing resolved the name a second time


def test_a_rebinding_answer_reaches_nothing(settings: Any, monkeypatch: pytest.MonkeyPatch, receiver: Receiver) -> None:
    """Rule 4: a listed name that now resolves to loopback is refused before any connection is made."""
    settings.OUTBOUND_ALLOWED_HOSTS = ["hooks.test"]
    fake_dns(monkeypatch, {"hooks.test": ["127.0.0.1"]})
    with pytest.raises(outbound.OutboundRefused):
        outbound.request(f"http://hooks.test:{receiver.port}/")
    assert receiver.seen == []


def test_redirects_are_not_followed(settings: Any, receiver: Receiver) -> None:
    """Rule 4: a 3xx is the answer; where it points is not asked (open_url raises, request returns it)."""

    def redirect(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(302)
        handler.send_header("Location", receiver.url("/elsewhere"))
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    bouncer = start_receiver(redirect)
    try:
        settings.OUTBOUND_ALLOWED_HOSTS = [f"127.0.0.1:{bouncer.port}", f"127.0.0.1:{receiver.port}"]
        assert outbound.request(bouncer.url("/go")).status == 302
        with pytest.raises(outbound.OutboundHTTPError, match="redirects are not followed"), \
                outbound.open_url(bouncer.url("/go")):
            pass
        assert receiver.seen == [] and len(bouncer.seen) == 2
    finally:
        bouncer.server.shutdown()
        bouncer.server.server_close()


# ---- notifications: checked at submission, checked and pinned at send time ----------------------


@pytest.mark.parametrize(("properties", "refused"), [
    pytest.param({JOB_URL: "http://evil.example/j?id=$jobId"}, JOB_URL, id="job-url-host-not-listed"),
    pytest.param({NODE_URL: "http://169.254.169.254/?n=$nodeName"}, NODE_URL, id="node-url-metadata"),
    pytest.param({JOB_URL: "mailto:ops@example.com"}, JOB_URL, id="not-http"),
    pytest.param({JOB_URL: "http://hooks.example/j?id=$jobId&s=$status&p=$parentId"}, None, id="listed-with-tokens"),
    pytest.param({JOB_URL: "http://${notifyHost}/j"}, None, id="el-deferred-to-send-time"),
    pytest.param({"other.url": "http://evil.example/"}, None, id="other-properties-ignored"),
])
def test_check_notification_properties(settings: Any, properties: dict[str, str], refused: str | None) -> None:
    """Rule 5: a static notification URL must pass check_url; the refusal names the property; `${...}` waits."""
    settings.OUTBOUND_ALLOWED_HOSTS = ["hooks.example"]
    if refused is None:
        notifications.check_notification_properties(properties)
        return
    with pytest.raises(notifications.NotificationURLRefused) as error:
        notifications.check_notification_properties(properties)
    assert error.value.element == f"property {refused}" and refused in str(error.value)


def test_notify_reaches_a_listed_receiver_and_nothing_else(settings: Any, receiver: Receiver,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Rule 5: the notify task's GET reaches a listed local server; unlisted, nothing reaches it, one warning, no retry."""
    settings.WORKFLOW_NOTIFICATION_RETRIES = 3
    settings.WORKFLOW_NOTIFICATION_RETRY_SECONDS = 0
    settings.OUTBOUND_ALLOWED_HOSTS = [f"127.0.0.1:{receiver.port}"]
    assert notify.apply(args=(receiver.url("/job?id=1-W&s=SUCCEEDED"),)).get() == 200
    assert receiver.seen == [("GET", "/job?id=1-W&s=SUCCEEDED", f"127.0.0.1:{receiver.port}")]

    settings.OUTBOUND_ALLOWED_HOSTS = ["hooks.example"]
    warned: list[str] = []
    monkeypatch.setattr(logging.getLogger("workflows.tasks"), "warning", lambda *args: warned.append(args[0] % args[1:]))
    tries: list[str] = []
    real_deliver = notifications.deliver

    def counted(url: str) -> Any:
        tries.append(url)
        return real_deliver(url)

    monkeypatch.setattr(notifications, "deliver", counted)
    assert notify.apply(args=(receiver.url("/job?id=2-W"),)).get() == 0
    assert len(receiver.seen) == 1 and len(tries) == 1  # tried once: never retried
    assert len(warned) == 1 and "refused" in warned[0] and "OUTBOUND_ALLOWED_HOSTS" in warned[0]


WF_XML = (
    '<workflow-app name="notified" xmlns="uri:oozie:workflow:1.0"><start to="a"/>'
    '<action name="a"><celery xmlns="uri:oozie:celery-action:0.1"><task>examples.noop_any</task></celery>'
    '<ok to="end"/><error to="fail"/></action>'
    '<kill name="fail"><message>failed</message></kill><end name="end"/></workflow-app>'
)


def workflow_app(tmp_path: Path) -> Path:
    """A one-node workflow application directory."""
    directory = tmp_path / "notified"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "workflow.xml").write_text(WF_XML)
    return directory


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("in_process_engine")
def test_a_submitted_workflow_notifies_a_listed_receiver_end_to_end(
        settings: Any, tmp_path: Path, receiver: Receiver, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rule 5: submitted, run, each status change reaches the local server; de-listed meanwhile, nothing is even queued."""
    monkeypatch.setattr(notifications, "_send", lambda url, *_: notify.apply(args=(url,)))  # the worker, in process
    settings.OUTBOUND_ALLOWED_HOSTS = [f"127.0.0.1:{receiver.port}"]
    ann = user("ann")
    properties = {APP_PATH: str(workflow_app(tmp_path)), JOB_URL: receiver.url("/job?id=$jobId&s=$status")}
    workflow = submit_workflow(properties, owner=ann)
    drive()
    assert [path for _, path, _ in receiver.seen] == [f"/job?id={workflow.id}&s=RUNNING", f"/job?id={workflow.id}&s=SUCCEEDED"]

    receiver.seen.clear()
    second = submit_workflow(properties, owner=ann, start=False)
    settings.OUTBOUND_ALLOWED_HOSTS = []  # the operator takes the entry away before it runs
    request_control(second.id, "start", check=lambda _: None)
    warned: list[str] = []
    monkeypatch.setattr(notifications.log, "warning", lambda *args: warned.append(args[0] % args[1:]))
    drive()
    second.refresh_from_db()
    assert second.status == "SUCCEEDED" and receiver.seen == []
    assert len(warned) == 2 and all("OUTBOUND_ALLOWED_HOSTS" in text for text in warned)  # RUNNING, SUCCEEDED


# ---- submissions refused: native API, Oozie API, CLI ---------------------------------------------

EVIL = "http://evil.example/notify?id=$jobId"


@pytest.fixture
def ann(db: None) -> User:
    """A submitter with an API token and a password."""
    return user("ann")


def workflow_rows() -> tuple[int, int]:
    return WorkflowJob.objects.count(), WorkflowNode.objects.count()


def coordinator_rows() -> tuple[int, int, int]:
    return CoordinatorJob.objects.count(), CoordinatorAction.objects.count(), Command.objects.count()


@pytest.mark.django_db
@pytest.mark.parametrize("prop", [JOB_URL, NODE_URL])
def test_workflow_submission_refused_on_the_native_api(ann: User, tmp_path: Path, prop: str) -> None:
    """Rule 5: POST /api/v1/workflows/ with an unlisted notification host is a 400 naming the property; nothing stored."""
    before = workflow_rows()
    response = api(ann).post("/api/v1/workflows/", {
        "properties": {"oozie.wf.application.path": str(workflow_app(tmp_path)), prop: EVIL}}, format="json")
    assert response.status_code == 400, response.content
    assert prop in response.json()["detail"] and "evil.example" in response.json()["detail"]
    assert workflow_rows() == before


@pytest.mark.django_db
def test_workflow_submission_refused_on_the_oozie_api(ann: User, tmp_path: Path) -> None:
    """Rule 5: POST /oozie/v2/jobs (a workflow) with an unlisted notification host is a 400 naming the property."""
    before = workflow_rows()
    response = Oozie(ann).submit({"oozie.wf.application.path": str(workflow_app(tmp_path)), JOB_URL: EVIL}, action="start")
    status, _, message = error_of(response)
    assert status == 400 and JOB_URL in message and "OUTBOUND_ALLOWED_HOSTS" in message
    assert workflow_rows() == before


@pytest.mark.django_db
def test_workflow_rerun_with_an_unlisted_notification_is_refused(settings: Any, ann: User, tmp_path: Path) -> None:
    """Rule 5: rerun properties replace the stored ones, so they are checked too (nothing queued)."""
    workflow = submit_workflow({"oozie.wf.application.path": str(workflow_app(tmp_path))}, owner=ann, start=False)
    commands = Command.objects.count()
    with pytest.raises(notifications.NotificationURLRefused, match=JOB_URL):
        request_rerun(workflow.id, {JOB_URL: EVIL}, check=lambda _: None)
    assert Command.objects.count() == commands


COORD_NOTIFY_CONF = (
    f"<configuration><property><name>{JOB_URL}</name><value>http://169.254.169.254/latest</value></property>"
    "</configuration>"
)


@pytest.mark.django_db
@pytest.mark.parametrize(("properties", "extra", "named"), [
    pytest.param({JOB_URL: EVIL}, "", JOB_URL, id="job-property"),
    pytest.param({}, COORD_NOTIFY_CONF, JOB_URL, id="action-configuration"),
    pytest.param({"hook": "http://evil.example/x"}, COORD_NOTIFY_CONF.replace("http://169.254.169.254/latest", "${hook}"),
                 JOB_URL, id="action-configuration-from-a-job-property"),
])
def test_coordinator_submission_refused_on_the_native_api(ann: User, properties: dict[str, str], extra: str,
                                                          named: str) -> None:
    """Rule 5: POST /api/v1/coordinator-jobs/ is a 400 naming the property, from the job properties or the action's
    <configuration>; no job, action or command is stored."""
    before = coordinator_rows()
    response = api(ann).post("/api/v1/coordinator-jobs/", {
        "definition": coordinator_xml(extra=extra), "properties": {**window(), **properties}}, format="json")
    assert response.status_code == 400, response.content
    assert named in response.json()["detail"] and "OUTBOUND_ALLOWED_HOSTS" in response.json()["detail"]
    assert coordinator_rows() == before


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("in_process_engine")
def test_coordinator_submission_on_the_oozie_api_refused_then_allowed_once_listed(settings: Any, ann: User,
                                                                                    tmp_path: Path) -> None:
    """Rule 5: POST /oozie/v2/jobs (a coordinator) is a 400 naming the property; with the host listed, 201."""
    (tmp_path / "coordinator.xml").write_text(coordinator_xml())
    properties = {"oozie.coord.application.path": str(tmp_path / "coordinator.xml"), **window(), NODE_URL: EVIL}
    before = coordinator_rows()
    status, _, message = error_of(Oozie(ann).submit(properties))
    assert status == 400 and NODE_URL in message and "evil.example" in message
    assert coordinator_rows() == before
    settings.OUTBOUND_ALLOWED_HOSTS = ["evil.example"]
    assert Oozie(ann).submit(properties).status_code == 201


@pytest.mark.django_db
def test_cli_submission_refused_naming_the_property(ann: User, tmp_path: Path) -> None:
    """Rule 5: `manage.py job -run -config` fails with a one-line error naming the property; nothing stored."""
    config = tmp_path / "job.properties"
    config.write_text(f"oozie.wf.application.path={workflow_app(tmp_path)}\n{JOB_URL}={EVIL}\n")
    before = workflow_rows()
    with pytest.raises(CommandError, match=JOB_URL.replace(".", r"\.")):
        call_command("job", "-run", "-config", str(config), "-user", "ann", stdout=io.StringIO())
    assert workflow_rows() == before


@pytest.mark.django_db
def test_bundle_submission_refused_naming_the_property(ann: User, tmp_path: Path) -> None:
    """Rule 5: a bundle whose properties name an unlisted notification host is refused; no bundle stored."""
    hourly = write_coordinator(tmp_path, "hourly")
    with pytest.raises(DefinitionError, match=JOB_URL.replace(".", r"\.")):
        submit_bundle(bundle_xml([("hourly", hourly)]), {**bundle_window(), JOB_URL: EVIL}, owner=ann)
    assert BundleJob.objects.count() == 0


# ---- batch http payloads ---------------------------------------------------------------------------


@pytest.fixture
def batch_profile(db: None) -> Any:
    """A collection and profile `demo` to submit batches to."""
    collection = Collection.objects.create(name="demo")
    return Profile.objects.create(name="demo", collection=collection, task="tests.batches.flaky")


def batch_rows() -> tuple[int, int]:
    return Batch.objects.count(), BatchJob.objects.count()


@pytest.mark.django_db
@pytest.mark.usefixtures("batch_profile")
def test_a_batch_http_payload_from_an_unlisted_host_is_refused_at_submission(settings: Any, ann: User) -> None:
    """Rule 5: BATCH_ALLOW_HTTP on, host not in OUTBOUND_ALLOWED_HOSTS: a 400 naming both settings; nothing stored."""
    settings.BATCH_ALLOW_HTTP = True
    settings.OUTBOUND_ALLOWED_HOSTS = ["hooks.example.com"]
    before = batch_rows()
    response = api(ann).post("/api/v1/batches/", {
        "profile": "demo", "type": "file", "payload_url": "http://169.254.169.254/latest/meta-data/"}, format="json")
    assert response.status_code == 400, response.content
    detail = response.json()["detail"]
    assert "169.254.169.254" in detail and "OUTBOUND_ALLOWED_HOSTS" in detail and "BATCH_ALLOW_HTTP" in detail
    assert batch_rows() == before


@pytest.mark.django_db
@pytest.mark.usefixtures("batch_profile")
def test_a_manifest_listing_an_unlisted_http_url_is_refused(settings: Any, ann: User, tmp_path: Path) -> None:
    """Rule 5: the URLs a manifest lists are checked as the payload is: one pointing at the metadata service is a 400."""
    settings.BATCH_ALLOW_HTTP = True
    settings.OUTBOUND_ALLOWED_HOSTS = ["0.0.0.0/0"]
    settings.BATCH_PAYLOAD_ROOTS = [f"file://{tmp_path}"]
    manifest = tmp_path / "batch.checkm"
    manifest.write_text(write_batch_manifest([ObjectSpec(
        local_ids=("obj001",), primary_id="", files=(), manifest_url="http://169.254.169.254/obj001.checkm")]))
    before = batch_rows()
    response = api(ann).post("/api/v1/batches/", {
        "profile": "demo", "type": "manifest-of-manifests", "payload_url": f"file://{manifest}"}, format="json")
    assert response.status_code == 400, response.content
    assert "169.254.169.254" in response.json()["detail"] and "link-local" in response.json()["detail"]
    assert batch_rows() == before


def test_batch_http_reads_go_through_the_pinned_request(settings: Any, receiver: Receiver,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Rule 4 for payloads: a listed local server is read (GET and HEAD); a name resolving to loopback is refused."""
    settings.BATCH_ALLOW_HTTP = True
    settings.OUTBOUND_ALLOWED_HOSTS = [f"127.0.0.1:{receiver.port}"]
    url = check_payload_url(receiver.url("/payload.bin"))
    assert read_bytes(url, max_bytes=10) == b"ok" and size_of(url) == 2
    assert [method for method, _, _ in receiver.seen] == ["GET", "HEAD"]
    settings.OUTBOUND_ALLOWED_HOSTS = ["files.test"]  # the name alone: its loopback answer is not allowed
    fake_dns(monkeypatch, {"files.test": ["127.0.0.1"]})
    rebound = check_payload_url(f"http://files.test:{receiver.port}/payload.bin")  # statically fine
    with pytest.raises(PayloadRefused, match="loopback"):
        read_bytes(rebound, max_bytes=10)
    assert len(receiver.seen) == 2
