"""The distcp action (distcp-action 1.0): copies between storage URIs with fsspec, checked, resumable.

file:// and memory:// stand for two clusters; every path lies under WORKFLOW_FS_ROOTS.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fsspec
import pytest

from kernel.models import TaskTry
from oozie.definitions import DefinitionError
from tests.support.workflow_apps import app, drive, submit
from workflows.actions import ActionContext, execute
from workflows.actions.distcp import STAGING, Command, DistcpArgsError, Stopped, copy, read_args
from workflows.choices import NodeStatus as N
from workflows.choices import WorkflowStatus as W
from workflows.models import WorkflowJob, WorkflowNode

DISTCP = 'xmlns="uri:oozie:distcp-action:1.0"'
CONTEXT = ActionContext(workflow_id="0000001-260101000000000-oozie-W", node_name="cp", configuration={}, user="ann")


@pytest.fixture
def roots(settings: Any, tmp_path: Path) -> Iterator[str]:
    """The tmp dir and a memory:// prefix of this test's own; the memory prefix."""
    settings.WORKFLOW_FS_ROOTS = [f"file://{tmp_path}", "memory://"]
    prefix = f"memory://distcp-{tmp_path.name}"
    yield prefix
    memory = fsspec.filesystem("memory")
    if memory.exists(prefix.removeprefix("memory://")):
        memory.rm(prefix.removeprefix("memory://"), recursive=True)


def tree(tmp_path: Path) -> Path:
    """A source directory: two files, a nested one, an empty directory."""
    source = tmp_path / "src"
    (source / "sub").mkdir(parents=True)
    (source / "empty").mkdir()
    (source / "a.txt").write_text("alpha\n")
    (source / "b.bin").write_bytes(bytes(range(256)) * 5000)  # over one chunk
    (source / "sub" / "c.txt").write_text("gamma\n")
    return source


def listing(url: str) -> dict[str, bytes | None]:
    """Relative path -> content (None for a directory) under a URL."""
    fs, root = fsspec.core.url_to_fs(url)
    root = root.rstrip("/")
    found: dict[str, bytes | None] = {}
    for path, info in fs.find(root, withdirs=True, detail=True).items():
        relative = str(path)[len(root) + 1:]
        if not relative:
            continue  # memory:// lists the root itself
        found[relative] = None if info["type"] == "directory" else fs.cat_file(path)
    return found


def distcp(name: str, *args: str, ok: str = "end") -> str:
    arguments = "".join(f"<arg>{arg}</arg>" for arg in args)
    return f'<action name="{name}"><distcp {DISTCP}>{arguments}</distcp><ok to="{ok}"/><error to="fail"/></action>'


@pytest.mark.parametrize(("args", "message"), [
    (["-update", "a", "b"], None),
    (["-m", "20", "-pugp", "-i", "a", "b", "c"], None),
    (["a"], "distcp needs at least one source and a target <arg>"),
    (["-delete", "a", "b"], "option -delete is not supported"),
    (["-update", "-overwrite", "a", "b"], "-update and -overwrite cannot be used together"),
    (["a", "b", "-m"], "option -m needs a value"),
], ids=["update", "ignored-options", "one-path", "delete", "both-modes", "value-missing"])
def test_read_args(args: list[str], message: str | None) -> None:
    """DistCp's command line: -update/-overwrite, ignored tuning options, the rest refused by name."""
    if message is None:
        command = read_args(args)
        assert command.target == args[-1] and command.sources[-1] == args[-2]
        return
    with pytest.raises(DistcpArgsError, match=message):
        read_args(args)


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("in_process_engine")
class TestThroughTheEngine:
    @pytest.mark.parametrize(("args", "named"), [
        (["-delete", "file:///a", "memory:///b"], "distcp: option -delete is not supported"),
        (["file:///a"], "distcp needs at least one source and a target"),
        (["-diff", "${src}", "${dst}"], "option -diff is not supported"),
    ], ids=["unsupported-option", "no-target", "option-beside-expressions"])
    def test_refused_at_submission(self, tmp_path: Path, args: list[str], named: str) -> None:
        """Options and the number of paths are checked at submission: one line, nothing stored."""
        with pytest.raises(DefinitionError) as raised:
            submit(app(tmp_path, distcp("cp", *args)), src="a", dst="b")
        assert named in str(raised.value) and "\n" not in str(raised.value)
        assert not WorkflowJob.objects.exists()

    def test_a_tree_is_copied_from_file_to_memory_and_verified(self, tmp_path: Path, roots: str) -> None:
        """A directory to a new memory:// target: every file and empty directory, equal; tuning options noted."""
        source = tree(tmp_path)
        workflow = submit(app(tmp_path, distcp("cp", "-m", "4", "${src}", "${dst}/copy")),
                          src=f"file://{source}", dst=roots)
        drive()
        workflow.refresh_from_db()
        assert workflow.status == W.SUCCEEDED, workflow.error_message
        assert listing(f"{roots}/copy") == listing(f"file://{source}")
        node = WorkflowNode.objects.get(workflow=workflow, name="cp")
        assert node.type == "distcp"
        (kept,) = TaskTry.objects.filter(object_id=node.id)
        assert "distcp option -m 4 ignored" in kept.log and "3 files copied" in kept.log
        assert not fsspec.filesystem("memory").exists(f"{roots.removeprefix('memory://')}/copy{STAGING}")

    def test_a_relaunched_node_goes_on_from_what_its_lost_try_left(self, tmp_path: Path, roots: str) -> None:
        """A lost try left one whole file and one partial temporary file in the staging path: the node's next
        run keeps the whole one, rewrites the partial one, and renames the staging path to the target."""
        source = tree(tmp_path)
        memory = fsspec.filesystem("memory")
        staging = f"{roots.removeprefix('memory://')}/copy{STAGING}"
        memory.pipe_file(f"{staging}/a.txt", b"alpha\n")
        memory.pipe_file(f"{staging}/sub/.c.txt{STAGING}", b"gam")  # cut off mid-write
        workflow = submit(app(tmp_path, distcp("cp", f"file://{source}", f"{roots}/copy")))
        drive()
        workflow.refresh_from_db()
        assert workflow.status == W.SUCCEEDED, workflow.error_message
        assert listing(f"{roots}/copy") == listing(f"file://{source}")
        assert not memory.exists(staging)
        (kept,) = TaskTry.objects.filter(object_id=f"{workflow.id}@cp")
        assert "2 files copied" in kept.log and "1 skipped" in kept.log

    def test_a_path_outside_the_roots_is_an_error(self, tmp_path: Path, roots: str, settings: Any) -> None:
        """Sources and targets are checked like the fs action's paths (FS014); nothing is written."""
        source = tree(tmp_path)
        settings.WORKFLOW_FS_ROOTS = [f"file://{source}"]
        workflow = submit(app(tmp_path, distcp("cp", f"file://{source}", f"file://{tmp_path}/elsewhere")))
        drive()
        node = WorkflowNode.objects.get(workflow=workflow, name="cp")
        assert (node.status, node.error_code) == (N.ERROR, "FS014")
        assert not (tmp_path / "elsewhere").exists()

    def test_a_missing_source_is_an_error(self, tmp_path: Path, roots: str) -> None:
        """A source that does not exist: ERROR DISTCP_SOURCE naming it."""
        workflow = submit(app(tmp_path, distcp("cp", f"file://{tmp_path}/nothing", f"{roots}/t")))
        drive()
        node = WorkflowNode.objects.get(workflow=workflow, name="cp")
        assert (node.status, node.error_code) == (N.ERROR, "DISTCP_SOURCE")
        assert f"file://{tmp_path}/nothing" in node.error_message


def _run(args: list[str], stop: threading.Event | None = None) -> Any:
    return copy(read_args(args), stop or threading.Event())


def test_update_copies_only_what_differs_and_overwrite_copies_all(tmp_path: Path, roots: str) -> None:
    """-update: a directory's contents into the target, equal files skipped; -overwrite copies every file."""
    source = tree(tmp_path)
    target = f"{roots}/t"
    first = _run(["-update", f"file://{source}", target])
    assert (first.copied, first.skipped) == (3, 0)
    assert listing(target) == listing(f"file://{source}")
    (source / "a.txt").write_text("alpha, changed\n")
    again = _run(["-update", f"file://{source}", target])
    assert (again.copied, again.skipped) == (1, 2)
    assert listing(target)["a.txt"] == b"alpha, changed\n"
    forced = _run(["-overwrite", f"file://{source}", target])
    assert (forced.copied, forced.skipped) == (3, 0)


def test_without_options_a_source_goes_inside_an_existing_directory(tmp_path: Path, roots: str) -> None:
    """Hadoop's rule: an existing target directory receives the source by name; existing files are kept."""
    source = tree(tmp_path)
    fsspec.filesystem("memory").makedirs(f"{roots.removeprefix('memory://')}/t", exist_ok=True)
    _run([f"file://{source}", f"{roots}/t"])
    assert listing(f"{roots}/t/src") == listing(f"file://{source}")
    (source / "a.txt").write_text("changed\n")
    kept = _run([f"file://{source}", f"{roots}/t"])
    assert (kept.copied, kept.skipped) == (0, 3)
    assert listing(f"{roots}/t/src")["a.txt"] == b"alpha\n"


def test_a_glob_of_sources_and_a_single_file(tmp_path: Path, roots: str) -> None:
    """`dir/*.*` copies each match into the target directory; a file to a new path becomes that file."""
    source = tree(tmp_path)
    _run(["-update", f"file://{source}/*.*", f"{roots}/g"])
    assert listing(f"{roots}/g") == {"a.txt": b"alpha\n", "b.bin": (source / "b.bin").read_bytes()}
    _run([f"file://{source}/sub/c.txt", f"{roots}/single.txt"])
    assert listing(roots)["single.txt"] == b"gamma\n"


def test_a_target_inside_its_source_is_refused(tmp_path: Path, roots: str) -> None:
    """Copying a directory into itself is refused (DISTCP_TARGET) before anything is written."""
    source = tree(tmp_path)
    result = execute("distcp", {"args": [f"file://{source}", f"file://{source}/sub/inner"]}, CONTEXT)
    assert (result.status, result.error_code) == ("ERROR", "DISTCP_TARGET")


class _StopAfter(threading.Event):
    """A kill that arrives after `n` checks (mid-copy)."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.left = n

    def is_set(self) -> bool:
        self.left -= 1
        return self.left < 0


def test_a_relaunched_try_resumes_skipping_whole_files(tmp_path: Path, roots: str) -> None:
    """Killed mid-copy (a lost worker): only whole files exist, in the staging path; the next try copies the rest."""
    source = tree(tmp_path)
    target = f"{roots}/resumed"
    with pytest.raises(Stopped):
        _run([f"file://{source}", target], _StopAfter(8))
    memory = fsspec.filesystem("memory")
    staging = f"{target.removeprefix('memory://')}{STAGING}"
    assert not memory.exists(target.removeprefix("memory://")) and memory.exists(staging)
    done = {path: content for path, content in listing(f"memory://{staging}").items() if content is not None}
    assert 0 < len([p for p in done if not p.split("/")[-1].startswith(".")]) < 3  # some files whole, not all
    second = _run([f"file://{source}", target])
    assert second.copied + second.skipped == 3 and second.skipped >= 1
    assert listing(target) == listing(f"file://{source}")
    assert not memory.exists(staging)


def test_the_command_dataclass_reads_checksum_choice() -> None:
    """-skipcrccheck compares sizes only."""
    assert read_args(["-skipcrccheck", "a", "b"]) == Command("", ("a",), "b", ("-skipcrccheck",), False)
