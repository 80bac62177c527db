"""Oozie's error answers: an HTTP status plus `oozie-error-code` and `oozie-error-message` headers.

Oozie clients read only those two headers (OozieClient.handleError), so every refusal, from
a bad parameter to an illegal transition, carries an Oozie error code and a message that
names the problem, formatted as Oozie formats it (`E0604: Job does not exist [...]`).
"""

from __future__ import annotations

import json
import re

from django.core.exceptions import ObjectDoesNotExist, RequestDataTooBig
from django.http import HttpResponse

from coordinators.choices import IllegalTransition
from kernel.permissions import JobPermissionDenied
from oozie.definitions import (
    ApplicationNotFoundError,
    ApplicationUnreadableError,
    DocumentTooLargeError,
    IncludeError,
    MalformedXMLError,
    MissingParameterError,
    SchemaValidationError,
    UnsafeXMLError,
    UnsupportedNamespaceError,
)

# The subset of Oozie's ErrorCode templates this service answers with (same codes, same text).
TEMPLATES = {
    "E0300": "Invalid content-type [{0}]",
    "E0301": "Invalid resource [{0}]",
    "E0302": "Invalid parameter [{0}]",
    "E0303": "Invalid parameter value, [{0}] = [{1}]",
    "E0305": "Missing parameter [{0}]",
    # E0330-E0332 are this service's own (Oozie has no upload): `oozie job -upload`, ADR 0036.
    "E0330": "Invalid application archive, {0}",
    "E0331": "Application archive too large, {0}",
    "E0332": "Application uploads are not available, {0}",
    "E0404": "Only one of the properties are allowed [{0}]",
    "E0405": "Submission request doesn't have any application or lib path",
    "E0420": "Invalid jobs filter [{0}], {1}",
    "E0421": "Invalid job filter [{0}], {1}",
    "E0500": "Not authorized, {0}",
    "E0501": "Could not perform authorization operation, {0}",
    "E0504": "App directory [{0}] does not exist",
    "E0505": "App definition [{0}] does not exist",
    "E0509": "User [{0}] not authorized for Coord job [{1}]",
    "E0603": "SQL error in operation, {0}",
    "E0604": "Job does not exist [{0}]",
    "E0605": "Action does not exist [{0}]",
    "E0607": "Other error in operation [{0}], {1}",
    "E0700": "XML error, {0}",
    "E0701": "XML schema error, {0}",
    "E0710": "Could not read the workflow definition, {0}",
    "E0738": "The following {0} parameters are required but were not defined and no default values are available: {1}",
    "E0755": "Workflow Job Rerun Error: {0}",
    "E0802": "Invalid action type [{0}]",
    "E0805": "Workflow job not completed, status [{0}]",
    "E0807": "Some skip actions were not executed [{0}]",
    "E1001": "Could not read the coordinator job definition, {0}",
    "E1003": "Invalid coordinator application attributes, {0}",
    "E1004": "Expression language evaluation error, {0}",
    "E1008": "Not implemented. [{0}]",
    "E1015": "Invalid coordinator job change value {0}, {1}",
    "E1016": "Cannot change a killed coordinator job",
    "E1018": "Coord Job Rerun Error: {0}",
    "E1020": "Could not kill coord job, this job either finished successfully or does not exist , [{0}]",
    "E1023": "Coord Job update Error: [{0}]",
    "E1024": "Cannot run ignore command: [{0}]",
    "E1025": "Coord status transit error: [{0}]",
    "E1100": "Command precondition does not hold before execution, [{0}]",
    "E1301": "Could not read the bundle job definition, [{0}]",
    "E1304": "Duplicate bundle application coordinator name [{0}]",
    "E1310": "Bundle Job submission Error: [{0}]",
    "E1312": "Bundle Job can not be suspended as job finished or failed or killed, id : {0}, status : {1}",
    "E1313": "Bundle Job can not be changed as job finished, {0}, Status: {1}",
    "E1317": "Invalid bundle job change value {0}, {1}",
    "E1323": "Could not kill bundle job, this job either finished successfully or does not exist , [{0}]",
}
# Verbs Oozie answers 200 without changing anything: the command's precondition fails and
# XCommand.call swallows the PreconditionException (CoordResumeXCommand, CoordKillXCommand,
# BundleStartXCommand, BundleJobResumeXCommand, BundleKillXCommand, and the suspend commands for
# ended jobs), or a suspend finds nothing to move (SuspendTransitionXCommand.transitToNext leaves
# suspended and DONEWITHERROR jobs as they are). Keyed by (job kind, verb): the statuses for which
# the verb is such a no-op here; other refusals keep their codes. ADR 0013.
_SUSPENDED = frozenset({"SUSPENDED", "SUSPENDEDWITHERROR", "PREPSUSPENDED"})
_ENDED = frozenset({"SUCCEEDED", "FAILED", "KILLED", "DONEWITHERROR", "IGNORED"})
NO_OP_UNLESS = {("coordinator", "resume"): _SUSPENDED, ("bundle", "resume"): _SUSPENDED, ("bundle", "start"): frozenset({"PREP"})}
NO_OP_WHEN = {
    ("coordinator", "suspend"): _ENDED | _SUSPENDED,
    ("coordinator", "kill"): _ENDED,
    ("bundle", "suspend"): _ENDED | _SUSPENDED,
    ("bundle", "kill"): _ENDED,
}
MAX_MESSAGE = 1000
_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")


class OozieError(Exception):
    """A refusal as Oozie words it: HTTP status, error code, formatted message."""

    def __init__(self, http_status: int, code: str, *args: object, retry_after: int | None = None) -> None:
        self.http_status = http_status
        self.code = code
        self.retry_after = retry_after  # seconds, sent as Retry-After (a 429: the client is locked out)
        self.message = f"{code}: {TEMPLATES[code].format(*(one_line(str(a)) for a in args))}"
        super().__init__(self.message)


def one_line(text: str) -> str:
    """A header-safe message: no line breaks or control characters, bounded length."""
    return " ".join(_CONTROL.sub(" ", text).split())[:MAX_MESSAGE]


def is_no_op(kind: str, verb: str, status: str) -> bool:
    """Whether Oozie answers this verb on a job of this kind and status with 200 and does nothing."""
    if (kind, verb) in NO_OP_UNLESS:
        return status not in NO_OP_UNLESS[kind, verb]
    return status in NO_OP_WHEN.get((kind, verb), frozenset())


def bad_parameter(name: str, value: object) -> OozieError:
    """E0303 for a parameter whose value is not accepted."""
    return OozieError(400, "E0303", name, value)


def application_error(exc: ApplicationNotFoundError | MissingParameterError) -> OozieError:
    """A submission naming no application (E0504 no directory, E0505 no definition file in it) or missing parameters (E0738).

    Oozie's AuthorizationService answers the first two with 401; 400 here, as a 401 makes clients
    retry their authentication (ADR 0013).
    """
    if isinstance(exc, MissingParameterError):
        return OozieError(400, "E0738", len(exc.missing), ", ".join(exc.missing))
    return OozieError(400, "E0505" if exc.directory_exists else "E0504", exc.app_path)


def document_error(exc: Exception) -> OozieError | None:
    """A refused XML document in Oozie's words: E0700 (not well-formed, unsafe, too large), E0701 (not
    valid against its schema); None for any other refusal."""
    if isinstance(exc, (MalformedXMLError, UnsafeXMLError, DocumentTooLargeError)):
        return OozieError(400, "E0700", str(exc))
    if isinstance(exc, (SchemaValidationError, UnsupportedNamespaceError)):
        return OozieError(400, "E0701", str(exc))
    return None


def change_error(exc: ValueError, value: str) -> OozieError:
    """A refused `change`: E1016 for a KILLED or IGNORED job asked for anything but status, else E1015 naming the value.

    Oozie's first placeholder is the change value (CoordChangeXCommand); the second says why.
    """
    if isinstance(exc, IllegalTransition) and "status" not in value.lower():
        return OozieError(400, "E1016", str(exc))
    return OozieError(400, "E1015", value, str(exc))


def from_exception(
    exc: Exception, *, job_id: str = "", verb: str = "", user: str = "", value: str = "",
) -> OozieError | None:
    """The Oozie error answering a domain error; None for anything unexpected (a real bug).

    `value` is the `change` verb's value, named in E1015 as Oozie names it.
    """
    if isinstance(exc, OozieError):
        return exc
    if isinstance(exc, RequestDataTooBig):
        return OozieError(400, "E0700", "the request body is too large")
    if isinstance(exc, ObjectDoesNotExist):
        return OozieError(400, "E0605" if "@" in job_id else "E0604", job_id or str(exc))
    if isinstance(exc, JobPermissionDenied):
        # Oozie answers 401 here; 403 says "authenticated, not allowed" and keeps clients from
        # retrying the authentication handshake.
        if job_id:
            return OozieError(403, "E0509", user, job_id)
        return OozieError(403, "E0500", str(exc))
    if verb == "change" and isinstance(exc, ValueError):
        return change_error(exc, value)
    if verb == "rerun" and isinstance(exc, ValueError):
        return OozieError(400, "E1018", str(exc))
    if isinstance(exc, IllegalTransition):
        return OozieError(400, "E1025", str(exc))
    if (document := document_error(exc)) is not None:
        return document
    if isinstance(exc, (IncludeError, ApplicationUnreadableError)):
        return OozieError(400, "E1001", str(exc))
    if isinstance(exc, (ApplicationNotFoundError, MissingParameterError)):
        return application_error(exc)
    if isinstance(exc, ValueError):
        text = str(exc)
        if "unresolved variable" in text or "cannot be resolved" in text:
            return OozieError(400, "E1004", text)
        return OozieError(400, "E1003", text)
    return None


def error_response(error: OozieError) -> HttpResponse:
    """The answer Oozie gives: status, the two headers (a JSON body too, for people using curl)."""
    body = json.dumps({"error": {"code": error.code, "message": error.message}})
    response = HttpResponse(body, status=error.http_status, content_type="application/json;charset=UTF-8")
    response["oozie-error-code"] = error.code
    # Java clients read headers as ISO-8859-1: keep them ASCII (`\u0100` escapes); the body has the text.
    response["oozie-error-message"] = error.message.encode("ascii", "backslashreplace").decode("ascii")
    if error.http_status == 401:
        response["WWW-Authenticate"] = 'Basic realm="oozie", charset="UTF-8"'
    if error.retry_after is not None:
        response["Retry-After"] = str(error.retry_after)
    return response
