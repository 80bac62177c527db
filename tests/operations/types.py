"""Operation types for the tests (workers import this module through EXTRA_TASK_MODULES)."""

from __future__ import annotations

import os
import time
from typing import Any

from operations.registry import OperationType
from xcommands.errors import TransientError

#: What the completion logic saw, in this process (in-process tests read it).
COMPLETIONS: list[tuple[str, bool]] = []


class Steps(OperationType):
    """Each job walks `steps` steps, saving progress after each; `fail` names partitions that fail."""

    name = "test.steps"
    compatible_with = frozenset({"test.steps"})

    def start_or_resume_job(self, arg: Any, partition: str, context: Any) -> None:
        done = int(context.progress.get("done", 0))
        starts = [*context.progress.get("starts", []), done]  # where each attempt began
        for step in range(done, int(arg.get("steps", 1))):
            if partition in arg.get("crash_once", []) and step == 1 and context.attempt == 1:
                raise TransientError("the worker died here")  # retried: the next attempt resumes
            time.sleep(float(arg.get("seconds", 0)))
            context.save_progress(
                {"done": step + 1, "visits": [*context.progress.get("visits", []), step], "starts": starts}
            )
        if partition in arg.get("fail", []):
            context.mark_complete(False, f"{partition} is not valid")
        elif arg.get("outcome_log") and context.mark_complete(True):
            with open(arg["outcome_log"], "a") as handle:  # noqa: PTH123 - one line per outcome written
                handle.write(f"{partition}\n")

    def complete_operation(self, arg: Any, target: str, success: bool) -> Any:
        COMPLETIONS.append((target, success))
        marker = arg.get("completion_log")
        if marker:
            with open(marker, "a") as handle:  # noqa: PTH123 - a plain append from any process
                handle.write(f"{os.getpid()} {target} {success}\n")
        return {"target": target, "success": success}


class Volatile(Steps):
    """Like Steps, but a job starts over on each attempt."""

    name = "test.volatile"
    resumable = False


class Exclusive(OperationType):
    """Runs alone on its target."""

    name = "test.exclusive"

    def start_or_resume_job(self, arg: Any, partition: str, context: Any) -> None:
        return None
