"""The dispatcher: prepare first, then the executor of the type; it always answers, never raises."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from workflows.actions import EXECUTORS, ActionContext, execute
from workflows.actions.storage import StorageError, expand, locate
from workflows.definitions.model import ACTION_TYPES

CONTEXT = ActionContext(workflow_id="0000001-260101000000000-oozie-W", node_name="n", configuration={}, user="ann")


def test_every_action_type_but_sub_workflow_runs_on_workers() -> None:
    """Workers run fs, shell, email and celery; sub-workflow is the engine's."""
    assert set(EXECUTORS) == set(ACTION_TYPES) - {"sub-workflow"}


@pytest.mark.parametrize("action_type", ["sub-workflow", "map-reduce", ""])
def test_types_not_run_by_workers_fail(action_type: str) -> None:
    """Anything else is FAILED E0TYPE, naming the node."""
    result = execute(action_type, {}, CONTEXT)
    assert (result.status, result.error_code) == ("FAILED", "E0TYPE")
    assert "[n]" in result.error_message


def test_prepare_runs_for_every_type(settings: Any, tmp_path: Path) -> None:
    """prepare happens before the action whatever its type: even a refused celery action gets it."""
    settings.WORKFLOW_FS_ROOTS = [f"file://{tmp_path}"]
    result = execute("celery", {"task": "", "prepare": [{"op": "mkdir", "path": f"file://{tmp_path}/made"}]}, CONTEXT)
    assert result.status == "FAILED"
    assert (tmp_path / "made").is_dir()


def test_prepare_takes_delete_and_mkdir_only(settings: Any, tmp_path: Path) -> None:
    """Other operations in prepare are refused before anything runs."""
    settings.WORKFLOW_FS_ROOTS = [f"file://{tmp_path}"]
    spec = {"operations": [], "prepare": [{"op": "mkdir", "path": f"file://{tmp_path}/a"},
                                          {"op": "touchz", "path": f"file://{tmp_path}/b"}]}
    result = execute("fs", spec, CONTEXT)
    assert result.status == "ERROR"
    assert not (tmp_path / "a").exists()


def test_an_executor_bug_is_an_error_not_a_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    """An unexpected exception inside an executor becomes ERROR with its class name; the worker goes on."""

    def boom(spec: Any, context: Any) -> Any:
        raise KeyError("surprise")

    monkeypatch.setattr("workflows.actions.email.execute", boom)
    result = execute("email", {}, CONTEXT)
    assert (result.status, result.error_code) == ("ERROR", "KeyError")
    assert "surprise" in result.error_message


def test_glob_limit(settings: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A glob matching more than the limit is FS013 (Oozie's oozie.action.fs.glob.max)."""
    settings.WORKFLOW_FS_ROOTS = [f"file://{tmp_path}"]
    monkeypatch.setattr("workflows.actions.storage.GLOB_MAX", 3)
    for i in range(4):
        (tmp_path / f"f{i}").write_text("x")
    with pytest.raises(StorageError) as caught:
        expand(locate(f"file://{tmp_path}/f*"))
    assert caught.value.code == "FS013"
    result = execute("fs", {"operations": [{"op": "delete", "path": f"file://{tmp_path}/f*"}]}, CONTEXT)
    assert result.error_code == "FS013"
    assert len(list(tmp_path.iterdir())) == 4


def test_a_bare_protocol_root_allows_that_protocol_only(settings: Any) -> None:
    """A root such as memory:// allows every path of that protocol and nothing else."""
    settings.WORKFLOW_FS_ROOTS = ["memory://"]
    assert locate("memory:///anything/at/all").protocol == "memory"
    with pytest.raises(StorageError):
        locate("file:///tmp/x")
