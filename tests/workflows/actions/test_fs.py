"""The fs action and prepare on real local files: Oozie's semantics and FS0xx error codes."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import fsspec
import pytest

from workflows.actions import ActionContext, ActionResult, execute
from workflows.actions.fs import permission_bits
from workflows.actions.storage import StorageError

CONTEXT = ActionContext(workflow_id="0000001-260101000000000-oozie-W", node_name="files", configuration={}, user="ann")


@pytest.fixture
def root(tmp_path: Path, settings: Any) -> Path:
    """The only directory the workflow may touch."""
    base = tmp_path / "root"
    base.mkdir()
    settings.WORKFLOW_FS_ROOTS = [f"file://{base}"]
    return base


def url(path: Path) -> str:
    return f"file://{path}"


def fs(*operations: dict[str, Any], prepare: list[dict[str, str]] | None = None) -> ActionResult:
    spec: dict[str, Any] = {"operations": list(operations)}
    if prepare is not None:
        spec["prepare"] = prepare
    return execute("fs", spec, CONTEXT)


def test_mkdir_makes_parents_and_is_idempotent(root: Path) -> None:
    """mkdir creates missing parents; an existing directory is a no-op."""
    target = root / "a" / "b" / "c"
    assert fs({"op": "mkdir", "path": url(target)}).status == "OK"
    assert target.is_dir()
    result = fs({"op": "mkdir", "path": url(target)})
    assert (result.status, result.external_status) == ("OK", "OK")


def test_delete_is_recursive_and_missing_is_fine(root: Path) -> None:
    """delete removes a tree; deleting what is not there succeeds."""
    (root / "tree" / "sub").mkdir(parents=True)
    (root / "tree" / "sub" / "f").write_text("x")
    assert fs({"op": "delete", "path": url(root / "tree")}).status == "OK"
    assert not (root / "tree").exists()
    assert fs({"op": "delete", "path": url(root / "never-there")}).status == "OK"


def test_delete_glob(root: Path) -> None:
    """delete takes a glob: every match goes, the rest stays."""
    for name in ("part-0", "part-1", "keep"):
        (root / name).write_text(name)
    assert fs({"op": "delete", "path": url(root / "part-*")}).status == "OK"
    assert sorted(p.name for p in root.iterdir()) == ["keep"]


def test_move_renames_a_file(root: Path) -> None:
    """move to a path that does not exist renames; a target without file system is on the source's."""
    (root / "in.txt").write_text("data")
    assert fs({"op": "move", "source": url(root / "in.txt"), "target": str(root / "out.txt")}).status == "OK"
    assert (root / "out.txt").read_text() == "data"
    assert not (root / "in.txt").exists()


def test_move_into_an_existing_directory(root: Path) -> None:
    """move to an existing directory puts the source inside it (spec 3.2.4)."""
    (root / "in").mkdir()
    (root / "in" / "f").write_text("x")
    (root / "archive").mkdir()
    assert fs({"op": "move", "source": url(root / "in"), "target": url(root / "archive")}).status == "OK"
    assert (root / "archive" / "in" / "f").read_text() == "x"


def test_move_glob_into_directory(root: Path) -> None:
    """Several glob matches move into an existing target directory."""
    (root / "dest").mkdir()
    for name in ("a.csv", "b.csv"):
        (root / name).write_text(name)
    assert fs({"op": "move", "source": url(root / "*.csv"), "target": str(root / "dest")}).status == "OK"
    assert sorted(p.name for p in (root / "dest").iterdir()) == ["a.csv", "b.csv"]


@pytest.mark.parametrize(
    ("setup", "source", "target", "code"),
    [
        pytest.param([], "missing", "ROOT/t", "FS006", id="source-missing"),
        pytest.param(["a.csv", "b.csv"], "*.csv", "ROOT/one", "FS012", id="many-sources-one-name"),
        pytest.param(["a", "b"], "a", "ROOT/b", "FS008", id="target-file-exists"),
        pytest.param(["a"], "a", "ROOT/no/such/parent", "FS008", id="target-parent-missing"),
        pytest.param(["a"], "a", "relative/path", "FS011", id="relative-target"),
        pytest.param(["a"], "a", "memory:///elsewhere", "FS007", id="target-on-other-file-system"),
    ],
)
def test_move_errors(root: Path, setup: list[str], source: str, target: str, code: str) -> None:
    """move refuses what Hadoop's rename refuses, with Oozie's code; nothing moves."""
    for name in setup:
        (root / name).write_text(name)
    before = sorted(p.name for p in root.iterdir())
    result = fs({"op": "move", "source": url(root / source), "target": target.replace("ROOT", str(root))})
    assert (result.status, result.error_code) == ("ERROR", code), result
    assert sorted(p.name for p in root.iterdir()) == before


@pytest.mark.parametrize("into_directory", [False, True], ids=["renamed", "into-a-directory"])
def test_a_move_run_again_after_it_happened_succeeds(root: Path, into_directory: bool) -> None:
    """A node relaunched after its worker was lost moves again: the source is gone, the target there: OK, nothing changes."""
    (root / "in").write_text("data")
    target = root / "archive" if into_directory else root / "out"
    if into_directory:
        target.mkdir()
    step = {"op": "move", "source": url(root / "in"), "target": url(target)}
    assert fs(step).status == "OK"
    moved = target / "in" if into_directory else target
    assert moved.read_text() == "data"
    assert fs(step).status == "OK"  # the re-run
    assert moved.read_text() == "data" and not (root / "in").exists()


@pytest.mark.parametrize(
    ("setup", "target", "words"),
    [
        pytest.param(["a", "b"], "ROOT/b", "/b] exists", id="target-exists"),
        pytest.param(["a"], "ROOT/no/such/parent", "/no/such] does not exist", id="parent-missing"),
        pytest.param([], "ROOT/t", "does not exist (nor does", id="source-and-target-missing"),
    ],
)
def test_move_errors_name_the_path_and_the_reason(root: Path, setup: list[str], target: str, words: str) -> None:
    """FS006/FS008 say which path is in the way and why, not only that the move failed."""
    for name in setup:
        (root / name).write_text(name)
    result = fs({"op": "move", "source": url(root / ("a" if setup else "missing")), "target": target.replace("ROOT", str(root))})
    assert result.status == "ERROR" and words in result.error_message, result.error_message


def test_chmod_octal_and_symbolic(root: Path) -> None:
    """chmod takes 750 or -rwxr-x---; on a directory it also sets its files (dir-files default)."""
    (root / "d").mkdir()
    (root / "d" / "f").write_text("x")
    (root / "d" / "sub").mkdir()
    (root / "d" / "sub" / "deep").write_text("y")
    (root / "d" / "sub" / "deep").chmod(0o644)
    assert fs({"op": "chmod", "path": url(root / "d"), "permissions": "750", "dir_files": True}).status == "OK"
    assert stat.S_IMODE((root / "d").stat().st_mode) == 0o750
    assert stat.S_IMODE((root / "d" / "f").stat().st_mode) == 0o750
    assert stat.S_IMODE((root / "d" / "sub" / "deep").stat().st_mode) == 0o644  # not recursive
    assert fs({"op": "chmod", "path": url(root / "d" / "f"), "permissions": "-rw-r-----"}).status == "OK"
    assert stat.S_IMODE((root / "d" / "f").stat().st_mode) == 0o640


def test_chmod_recursive_and_dir_only(root: Path) -> None:
    """recursive reaches every level; dir-files false touches the directory alone."""
    (root / "d" / "sub").mkdir(parents=True)
    (root / "d" / "sub" / "deep").write_text("y")
    op = {"op": "chmod", "path": url(root / "d"), "permissions": "700", "dir_files": True, "recursive": True}
    assert fs(op).status == "OK"
    assert stat.S_IMODE((root / "d" / "sub" / "deep").stat().st_mode) == 0o700
    op = {"op": "chmod", "path": url(root / "d"), "permissions": "755", "dir_files": False}
    assert fs(op).status == "OK"
    assert stat.S_IMODE((root / "d").stat().st_mode) == 0o755
    assert stat.S_IMODE((root / "d" / "sub").stat().st_mode) == 0o700


@pytest.mark.parametrize(
    ("permissions", "expected"),
    [("755", 0o755), ("000", 0), ("-rwxr-xr-x", 0o755), ("drwx------", 0o700), ("-rwxrwxrwt", 0o1777),
     ("-rw-rw-rwT", 0o1666)],
)
def test_permission_masks(permissions: str, expected: int) -> None:
    """Octal and Unix symbolic masks, sticky bit included, as Hadoop's FsPermission reads them."""
    assert permission_bits(permissions, "file:///x") == expected


@pytest.mark.parametrize("permissions", ["75", "789", "rwxr-xr-x", "-rwxr-xr-z", "u+x"])
def test_bad_permission_masks(permissions: str) -> None:
    """Anything else is FS010."""
    with pytest.raises(StorageError) as caught:
        permission_bits(permissions, "file:///x")
    assert caught.value.code == "FS010"


def test_chmod_errors(root: Path) -> None:
    """chmod of a missing path is FS009, a bad mask FS010, a non-local path FS015."""
    assert fs({"op": "chmod", "path": url(root / "missing"), "permissions": "755"}).error_code == "FS009"
    (root / "f").write_text("x")
    assert fs({"op": "chmod", "path": url(root / "f"), "permissions": "999"}).error_code == "FS010"


def test_chmod_is_local_only(settings: Any) -> None:
    """Other file systems have no Unix permissions to set: FS015, named as such."""
    settings.WORKFLOW_FS_ROOTS = ["memory://"]
    result = fs({"op": "chmod", "path": "memory:///x", "permissions": "755"})
    assert (result.status, result.error_code) == ("ERROR", "FS015")
    assert "local files" in result.error_message


def test_touchz(root: Path) -> None:
    """touchz creates an empty file (with parents) and touches an empty one; refuses a non-empty file or a directory."""
    target = root / "flags" / "_SUCCESS"
    assert fs({"op": "touchz", "path": url(target)}).status == "OK"
    assert target.read_bytes() == b""
    assert fs({"op": "touchz", "path": url(target)}).status == "OK"
    (root / "full").write_text("data")
    result = fs({"op": "touchz", "path": url(root / "full")})
    assert (result.status, result.error_code) == ("ERROR", "Exception")
    assert "zero-length" in result.error_message
    assert (root / "full").read_text() == "data"
    assert "is a directory" in fs({"op": "touchz", "path": url(root / "flags")}).error_message


def test_operations_run_in_order(root: Path) -> None:
    """Operations run in document order: mkdir, touchz in it, move it, delete the rest."""
    result = fs(
        {"op": "mkdir", "path": url(root / "work")},
        {"op": "touchz", "path": url(root / "work" / "_SUCCESS")},
        {"op": "move", "source": url(root / "work" / "_SUCCESS"), "target": str(root / "done")},
        {"op": "delete", "path": url(root / "work")},
    )
    assert result.status == "OK"
    assert sorted(p.name for p in root.iterdir()) == ["done"]


def test_every_path_is_checked_before_any_operation(root: Path) -> None:
    """A refused path anywhere in the action stops it before the first operation (spec 3.2.4)."""
    result = fs({"op": "mkdir", "path": url(root / "made")}, {"op": "delete", "path": "file:///etc/hostname"})
    assert (result.status, result.error_code) == ("ERROR", "FS014")
    assert not (root / "made").exists()


@pytest.mark.parametrize(
    ("path", "code"),
    [
        pytest.param("/tmp/no-scheme", "FS001", id="missing-scheme"),
        pytest.param("file:///etc", "FS014", id="outside-roots"),
        pytest.param("file://ROOT/../escape", "FS014", id="dot-dot"),
        pytest.param("s3://bucket/x", "FS014", id="protocol-not-in-roots"),
    ],
)
def test_paths_outside_the_roots_are_refused(root: Path, path: str, code: str) -> None:
    """Paths need a file system and must lie under WORKFLOW_FS_ROOTS."""
    result = fs({"op": "delete", "path": path.replace("ROOT", str(root))})
    assert (result.status, result.error_code) == ("ERROR", code), result


def test_delete_through_a_symlink_out_of_the_roots_is_refused(root: Path, tmp_path: Path) -> None:
    """A link pointing out of the roots is judged by its target: the outside file survives."""
    outside = tmp_path / "precious"
    outside.mkdir()
    (outside / "keep").write_text("x")
    (root / "link").symlink_to(outside)
    assert fs({"op": "delete", "path": url(root / "link")}).error_code == "FS014"
    assert fs({"op": "delete", "path": url(root / "*")}).error_code == "FS014"
    assert (outside / "keep").exists()


def test_prepare_runs_before_the_action(root: Path) -> None:
    """prepare deletes and creates paths first, for every action type."""
    (root / "out").mkdir()
    (root / "out" / "stale").write_text("old")
    result = fs(
        {"op": "touchz", "path": url(root / "out" / "fresh")},
        prepare=[{"op": "delete", "path": url(root / "out")}, {"op": "mkdir", "path": url(root / "out")}],
    )
    assert result.status == "OK"
    assert sorted(p.name for p in (root / "out").iterdir()) == ["fresh"]


def test_failing_prepare_stops_the_action(root: Path) -> None:
    """A prepare path outside the roots fails the node before its action runs."""
    result = fs({"op": "mkdir", "path": url(root / "never")}, prepare=[{"op": "delete", "path": "file:///etc"}])
    assert (result.status, result.error_code) == ("ERROR", "FS014")
    assert not (root / "never").exists()


def test_fs_on_memory_storage(settings: Any) -> None:
    """Any fsspec URI under the roots: mkdir, touchz, move and delete on memory://."""
    settings.WORKFLOW_FS_ROOTS = ["memory:///wf-fs-test"]
    memory = fsspec.filesystem("memory")
    try:
        result = fs(
            {"op": "mkdir", "path": "memory:///wf-fs-test/a"},
            {"op": "touchz", "path": "memory:///wf-fs-test/a/_SUCCESS"},
            {"op": "move", "source": "memory:///wf-fs-test/a", "target": "/wf-fs-test/b"},
        )
        assert result.status == "OK", result
        assert memory.exists("/wf-fs-test/b/_SUCCESS")
        assert not memory.exists("/wf-fs-test/a")
        assert fs({"op": "delete", "path": "memory:///wf-fs-test/b"}).status == "OK"
        assert not memory.exists("/wf-fs-test/b")
    finally:
        if memory.exists("/wf-fs-test"):
            memory.rm("/wf-fs-test", recursive=True)
