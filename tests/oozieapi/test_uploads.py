"""POST /oozie/v2/upload: an application sent as a tar.gz lands under the caller's directory of the upload root, or nothing does.

The rules (ADR 0036): credentials required; `application/gzip` only; a Content-Length within
OOZIE_UPLOAD_MAX_BYTES (413 before a byte is read); a clean archive (E0330 otherwise) unpacked
in one rename under OOZIE_UPLOAD_ROOT/<user>/, which must lie under the application roots; the
answer's path is submitted like any other application path.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from tests.coordinators.api.factories import user
from tests.oozieapi.client import Oozie, error_of
from tests.support.archives import HOSTILE, WORKFLOW, application, entry, tar_gz
from workflows.models import WorkflowJob

pytestmark = [pytest.mark.django_db]


@pytest.fixture
def root(tmp_path: Path, settings: Any) -> Path:
    """The upload root, in this test's temporary directory (the suite adds the temporary directory to the roots)."""
    settings.OOZIE_UPLOAD_ROOT = str(tmp_path / "apps" / "uploads")
    return tmp_path / "apps" / "uploads"


def upload(oozie: Oozie, body: bytes, name: str | None = "wf", content_type: str = "application/gzip") -> Any:
    """POST the body as an upload."""
    query = f"?name={name}" if name is not None else ""
    return oozie.client.post(f"/oozie/{oozie.version}/upload{query}", body, content_type=content_type,
                             headers=oozie.headers)


def written(root: Path) -> list[Path]:
    """What an upload left under the root, the (empty) work directory aside."""
    return sorted(p for p in root.rglob("*") if p != root / ".incoming")


def test_an_application_is_unpacked_for_its_user_and_runs(ann: User, root: Path) -> None:
    """201 with a file:// path under root/ann/; the files are there; submitting that path runs the workflow."""
    response = upload(Oozie(ann), application())
    assert response.status_code == 201, response.content
    answer = response.json()
    path = Path(answer["path"].removeprefix("file://"))
    assert answer["path"].startswith("file:///") and path.parent == root.resolve() / "ann"
    assert path.name.startswith("wf-") and (answer["files"], answer["bytes"]) == (2, len(WORKFLOW) + 18)
    assert (path / "workflow.xml").read_bytes() == WORKFLOW and (path / "lib" / "run.sh").is_file()
    assert written(root) == sorted([root / "ann", path, path / "workflow.xml", path / "lib", path / "lib" / "run.sh"])

    submitted = Oozie(ann).submit({"user.name": "ann", "oozie.wf.application.path": answer["path"]}, action="start")
    assert submitted.status_code == 201, submitted.content
    workflow = WorkflowJob.objects.get(pk=submitted.json()["id"])
    assert workflow.app_path == answer["path"] and workflow.app_name == "uploaded-wf"


def test_each_upload_gets_its_own_directory_and_users_are_apart(ann: User, bob: User, root: Path) -> None:
    """The same archive twice: two directories; bob's goes under bob/."""
    first, second = (upload(Oozie(ann), application()).json()["path"] for _ in range(2))
    theirs = upload(Oozie(bob), application()).json()["path"]
    assert first != second
    assert Path(theirs.removeprefix("file://")).parent == root.resolve() / "bob"


def test_a_username_that_is_no_plain_file_name_gets_its_id(root: Path) -> None:
    """`..` (Django allows dots) does not name the parent: the directory is `~<id>`."""
    dots = user("..")
    answer = upload(Oozie(dots), application()).json()
    assert Path(answer["path"].removeprefix("file://")).parent == root.resolve() / f"~{dots.pk}"


def test_the_limits_are_served(ann: User, root: Path, settings: Any) -> None:
    """GET answers maxBytes, maxUnpackedBytes and maxEntries, as set."""
    settings.OOZIE_UPLOAD_MAX_BYTES, settings.OOZIE_UPLOAD_MAX_UNPACKED_BYTES, settings.OOZIE_UPLOAD_MAX_ENTRIES = 10, 20, 30
    assert Oozie(ann).get("upload").json() == {"maxBytes": 10, "maxUnpackedBytes": 20, "maxEntries": 30}


@pytest.mark.parametrize("kind", sorted(HOSTILE), ids=sorted(HOSTILE))
def test_hostile_archives_are_400_and_leave_nothing(ann: User, root: Path, kind: str) -> None:
    """Links, devices, `..`, absolute paths, duplicates, no files, not an archive: 400 E0330 naming why; nothing on disk."""
    status, code, message = error_of(upload(Oozie(ann), HOSTILE[kind]()))
    assert (status, code) == (400, "E0330"), message
    assert message.startswith("E0330: Invalid application archive, ")
    assert written(root) == []
    assert not (root.parent / "escaped.txt").exists()


def test_too_many_entries_and_too_much_content_are_400(ann: User, root: Path, settings: Any) -> None:
    """Over OOZIE_UPLOAD_MAX_ENTRIES or OOZIE_UPLOAD_MAX_UNPACKED_BYTES: E0330 saying which; nothing on disk."""
    settings.OOZIE_UPLOAD_MAX_ENTRIES = 3
    status, code, message = error_of(upload(Oozie(ann), tar_gz(*(entry(f"f{n}.xml", b"x") for n in range(4)))))
    assert (status, code) == (400, "E0330") and "more than 3 entries" in message
    settings.OOZIE_UPLOAD_MAX_ENTRIES, settings.OOZIE_UPLOAD_MAX_UNPACKED_BYTES = 100, 1000
    status, code, message = error_of(upload(Oozie(ann), tar_gz(entry("big.bin", b"x" * 1001))))
    assert (status, code) == (400, "E0330") and "more than 1000 bytes" in message
    assert written(root) == []


def test_a_body_larger_than_djangos_memory_limit_is_streamed(ann: User, root: Path, settings: Any) -> None:
    """Bodies are read in chunks, never as request.body: 3 MB passes with DATA_UPLOAD_MAX_MEMORY_SIZE at 1 MB."""
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1_000_000
    noise = os.urandom(3_000_000)  # incompressible: the body is as large
    response = upload(Oozie(ann), application(entry("lib/data.bin", noise)))
    assert response.status_code == 201, response.content
    assert (Path(response.json()["path"].removeprefix("file://")) / "lib" / "data.bin").read_bytes() == noise


def test_a_body_over_the_limit_is_413(ann: User, root: Path, settings: Any) -> None:
    """Content-Length over OOZIE_UPLOAD_MAX_BYTES: 413 E0331 naming the limit; the limit itself passes."""
    body = application()
    settings.OOZIE_UPLOAD_MAX_BYTES = len(body) - 1
    status, code, message = error_of(upload(Oozie(ann), body))
    assert (status, code) == (413, "E0331") and f"at most {len(body) - 1}" in message
    assert written(root) == []
    settings.OOZIE_UPLOAD_MAX_BYTES = len(body)
    assert upload(Oozie(ann), body).status_code == 201


def test_without_credentials_nothing_is_taken(root: Path) -> None:
    """No Authorization: 401 E0500 for POST and GET; nothing on disk."""
    assert error_of(upload(Oozie(None), application()))[:2] == (401, "E0500")
    assert error_of(Oozie(None).get("upload"))[:2] == (401, "E0500")
    assert written(root) == []


@pytest.mark.parametrize(
    ("name", "content_type", "expected"),
    [("wf", "application/x-www-form-urlencoded", (400, "E0300")), ("wf", "text/plain", (400, "E0300")),
     ("../up", "application/gzip", (400, "E0303")), (".hidden", "application/gzip", (400, "E0303")),
     ("a" * 65, "application/gzip", (400, "E0303"))],
    ids=["form-type", "text-type", "dot-dot-name", "hidden-name", "long-name"],
)
def test_other_content_types_and_names_are_refused(ann: User, root: Path, name: str, content_type: str,
                                                   expected: tuple[int, str]) -> None:
    """Only application/gzip (a browser cannot send it without a preflight); names are plain file names."""
    assert error_of(upload(Oozie(ann), application(), name=name, content_type=content_type))[:2] == expected
    assert written(root) == []


def test_uploads_off_or_a_root_outside_the_application_roots(ann: User, root: Path, settings: Any) -> None:
    """OOZIE_UPLOAD_MAX_BYTES=0: 403 E0332; a root outside COORD_APPLICATION_ROOTS: 503 E0332 (nothing would be readable)."""
    settings.OOZIE_UPLOAD_MAX_BYTES = 0
    assert error_of(upload(Oozie(ann), application()))[:2] == (403, "E0332")
    assert error_of(Oozie(ann).get("upload"))[:2] == (403, "E0332")
    settings.OOZIE_UPLOAD_MAX_BYTES = 1_000_000
    settings.COORD_APPLICATION_ROOTS = ["file:///srv/oozie-apps"]
    status, code, message = error_of(upload(Oozie(ann), application()))
    assert (status, code) == (503, "E0332") and "COORD_APPLICATION_ROOTS" in message
    assert not root.exists()


def test_refusals_carry_a_json_body(ann: User, root: Path) -> None:
    """curl users read the body: {"error": {"code", "message"}}."""
    response = upload(Oozie(ann), HOSTILE["symlink"]())
    assert json.loads(response.content)["error"]["code"] == "E0330"
