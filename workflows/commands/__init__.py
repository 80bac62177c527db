"""Workflow verbs as commands (Oozie's KillXCommand, SuspendXCommand, ResumeXCommand), on the parent's key.

A workflow launched by a coordinator action is changed under its coordinator job's key, so a
verb and the job's own commands on that action (status reports, kill, rerun) never overlap
and run in the order they were asked. A status the verb no longer applies to (the run ended
meanwhile) skips the command, as Oozie's preconditions do.
"""

from __future__ import annotations

from workflows.commands.base import WorkflowCommand
from workflows.commands.control import WfKillXCommand, WfResumeXCommand, WfSuspendXCommand
from workflows.commands.lifecycle import WfRerunXCommand, WfStartXCommand
from workflows.commands.nodes import WfNodeClearXCommand, WfNodeMarkXCommand

__all__ = [
    "WfKillXCommand",
    "WfNodeClearXCommand",
    "WfNodeMarkXCommand",
    "WfRerunXCommand",
    "WfResumeXCommand",
    "WfStartXCommand",
    "WfSuspendXCommand",
    "WorkflowCommand",
]
