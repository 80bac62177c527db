"""The email action (DG_EmailActionExtension) through Django's mail backend, with Oozie's EM00x codes.

The sender is DEFAULT_FROM_EMAIL (Oozie's oozie.email.from.address). Attachments are read
through fsspec under WORKFLOW_FS_ROOTS (an attachment mails a file out: the roots keep the
service's own files out of reach), MAX_ATTACHMENT_BYTES in all.
"""

from __future__ import annotations

import mimetypes
import posixpath
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.mail import BadHeaderError, EmailMessage
from django.core.validators import validate_email

from kernel.mail import EmailNotConfigured
from workflows.actions.base import OK, ActionContext, ActionResult, error, exception_text
from workflows.actions.storage import StorageError, locate
from workflows.settings import is_transient

MAX_ATTACHMENT_BYTES = 10 * 1024 * 1024


def _addresses(values: Any) -> list[str]:
    return [str(value).strip() for value in values or () if str(value).strip()]


def _attachments(urls: list[str]) -> list[tuple[str, bytes, str]] | ActionResult:
    """(file name, content, MIME type) of each attachment, or the EM008 result."""
    files: list[tuple[str, bytes, str]] = []
    total = 0
    for url in urls:
        try:
            location = locate(url)
            with location.fs.open(location.path, "rb") as handle:
                content = handle.read(MAX_ATTACHMENT_BYTES - total + 1)
        except StorageError as exc:
            return error("EM008", f"Encountered an error when attaching a file [{url}]: {exc.message}")
        except OSError as exc:
            return error("EM008", f"Encountered an error when attaching a file [{url}]: {exception_text(exc)}")
        total += len(content)
        if total > MAX_ATTACHMENT_BYTES:
            return error("EM008", f"Encountered an error when attaching a file [{url}]: "
                                  f"attachments exceed {MAX_ATTACHMENT_BYTES} bytes in all")
        name = posixpath.basename(location.path.rstrip("/")) or "attachment"
        files.append((name, content, mimetypes.guess_type(name)[0] or "application/octet-stream"))
    return files


def execute(spec: Mapping[str, Any], context: ActionContext) -> ActionResult:
    """Send the message: OK, or ERROR EM001 (no recipient), EM004 (bad address), EM006/EM007 (sending), EM008."""
    to, cc, bcc = _addresses(spec.get("to")), _addresses(spec.get("cc")), _addresses(spec.get("bcc"))
    if not to:
        return error("EM001", "No recipients were specified in the to-address field.")
    for address in (*to, *cc, *bcc):
        try:
            validate_email(address)
        except ValidationError:
            return error("EM004", f"Bad address format in <to> or <cc> or <bcc>: [{address}]")
    files = _attachments([url.strip() for url in spec.get("attachments", ()) if str(url).strip()])
    if isinstance(files, ActionResult):
        return files
    message = EmailMessage(
        subject=str(spec.get("subject", "")), body=str(spec.get("body", "")),
        from_email=settings.DEFAULT_FROM_EMAIL, to=to, cc=cc, bcc=bcc,
    )
    if str(spec.get("content_type", "")).strip().lower().startswith("text/html"):
        message.content_subtype = "html"
    for name, content, mimetype in files:
        message.attach(name, content, mimetype)
    try:
        message.send(fail_silently=False)
    except (BadHeaderError, ValueError) as exc:
        return error("EM005", f"An error occurred while adding recipients or headers: {exception_text(exc)}")
    except EmailNotConfigured as exc:
        return error("EM006", f"Could not find an SMTP transport provider to email: {exc}")
    except Exception as exc:  # SMTP refusals and lost connections: the backend's own errors
        return error("EM007", f"Encountered an error while sending the email message over SMTP: {exception_text(exc)}",
                     transient=is_transient(exc))
    return ActionResult(OK, external_status=OK)
