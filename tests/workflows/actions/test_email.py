"""The email action through Django's mail backend (locmem here): recipients, HTML, attachments, errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.core import mail

from workflows.actions import ActionContext, ActionResult, execute

CONTEXT = ActionContext(workflow_id="0000001-260101000000000-oozie-W", node_name="notify", configuration={}, user="ann")


@pytest.fixture
def outbox(settings: Any, tmp_path: Path) -> list[mail.EmailMessage]:
    """Django's in-memory backend; attachments may come from tmp_path."""
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    settings.DEFAULT_FROM_EMAIL = "scheduler@example.com"
    settings.WORKFLOW_FS_ROOTS = [f"file://{tmp_path}"]
    mail.outbox = []
    return mail.outbox  # type: ignore[no-any-return]


def email(**spec: Any) -> ActionResult:
    base: dict[str, Any] = {"to": ["ops@example.com"], "cc": [], "bcc": [], "subject": "s", "body": "b",
                            "content_type": "", "attachments": []}
    return execute("email", {**base, **spec}, CONTEXT)


def test_plain_message(outbox: list[mail.EmailMessage]) -> None:
    """to, cc, bcc, subject and body reach the backend; the sender is DEFAULT_FROM_EMAIL."""
    result = email(to=["a@example.com", "b@example.com"], cc=["c@example.com"], bcc=["d@example.com"],
                   subject="wf 0000001 done", body="All good.")
    assert (result.status, result.external_status) == ("OK", "OK")
    [message] = outbox
    assert message.to == ["a@example.com", "b@example.com"]
    assert message.cc == ["c@example.com"]
    assert message.bcc == ["d@example.com"]
    assert (message.subject, message.body, message.from_email) == ("wf 0000001 done", "All good.", "scheduler@example.com")
    assert message.content_subtype == "plain"


def test_html_content_type(outbox: list[mail.EmailMessage]) -> None:
    """content_type text/html sends an HTML body."""
    assert email(body="<b>done</b>", content_type="text/html; charset=utf-8").status == "OK"
    assert outbox[0].content_subtype == "html"
    assert "text/html" in outbox[0].message().get_content_type()


def test_attachments_from_storage(outbox: list[mail.EmailMessage], tmp_path: Path) -> None:
    """Attachments are read through fsspec under the roots, named after the file."""
    report = tmp_path / "report.csv"
    report.write_text("a,b\n1,2\n")
    assert email(attachments=[f"file://{report}"]).status == "OK"
    [(name, content, mimetype)] = outbox[0].attachments
    assert (name, content, mimetype) == ("report.csv", "a,b\n1,2\n", "text/csv")


@pytest.mark.parametrize(
    ("attachment", "message"),
    [
        pytest.param("file:///etc/passwd", "outside", id="outside-roots"),
        pytest.param("/etc/passwd", "Missing scheme", id="no-scheme"),
        pytest.param("file://TMP/missing.txt", "No such file", id="missing-file"),
    ],
)
def test_bad_attachments_send_nothing(outbox: list[mail.EmailMessage], tmp_path: Path, attachment: str,
                                      message: str) -> None:
    """An attachment that may not or cannot be read is EM008, and no mail leaves."""
    result = email(attachments=[attachment.replace("TMP", str(tmp_path))])
    assert (result.status, result.error_code) == ("ERROR", "EM008")
    assert message in result.error_message
    assert outbox == []


def test_attachments_are_limited(outbox: list[mail.EmailMessage], tmp_path: Path,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Attachments larger than MAX_ATTACHMENT_BYTES in all are refused."""
    monkeypatch.setattr("workflows.actions.email.MAX_ATTACHMENT_BYTES", 10)
    (tmp_path / "a").write_bytes(b"123456")
    (tmp_path / "b").write_bytes(b"123456")
    assert email(attachments=[f"file://{tmp_path}/a"]).status == "OK"
    result = email(attachments=[f"file://{tmp_path}/a", f"file://{tmp_path}/b"])
    assert (result.error_code, len(outbox)) == ("EM008", 1)


def test_no_recipient(outbox: list[mail.EmailMessage]) -> None:
    """Without a to address: EM001."""
    result = email(to=[], cc=["c@example.com"])
    assert (result.status, result.error_code) == ("ERROR", "EM001")
    assert outbox == []


@pytest.mark.parametrize("field", ["to", "cc", "bcc"])
def test_bad_address(outbox: list[mail.EmailMessage], field: str) -> None:
    """A malformed address anywhere is EM004, naming it."""
    result = email(**{field: ["not an address"]}) if field != "to" else email(to=["ops@example.com", "x@"])
    assert (result.status, result.error_code) == ("ERROR", "EM004")
    assert outbox == []


def test_header_injection_is_refused(outbox: list[mail.EmailMessage]) -> None:
    """A subject with a line break cannot add headers: ERROR, nothing sent."""
    result = email(subject="hi\nBcc: victim@example.com")
    assert result.status == "ERROR"
    assert outbox == []


def test_mail_not_configured(settings: Any) -> None:
    """Without a mail server the project's backend refuses: EM006, saying what to set."""
    settings.EMAIL_BACKEND = "kernel.mail.NotConfiguredBackend"
    result = email()
    assert (result.status, result.error_code) == ("ERROR", "EM006")
    assert "EMAIL_HOST" in result.error_message


def test_smtp_failure_is_em007(settings: Any) -> None:
    """A mail server that cannot be reached is EM007, transient (a connection error)."""
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = "127.0.0.1", 9, 2
    result = email()
    assert (result.status, result.error_code, result.transient) == ("ERROR", "EM007", True)
