"""Coordinator applications for runtime tests: minute coordinators whose actions are due now and run a task."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from datasets.timeline import format_datetime


def minute(offset: int) -> str:
    """The time `offset` minutes from now, to the minute (format_datetime)."""
    return format_datetime((timezone.now() + timedelta(minutes=offset)).replace(second=0, microsecond=0))


def coordinator_xml(task: str, *, actions: int = 1, properties: str = "", concurrency: int = 5) -> str:
    """A minute coordinator whose `actions` actions are all due now, running `task:<task>`."""
    configuration = f"<configuration>{properties}</configuration>" if properties else ""
    return f"""<coordinator-app name="wf" frequency="${{coord:minutes(1)}}" start="{minute(-actions - 1)}"
        end="{minute(-1)}" timezone="UTC" xmlns="uri:oozie:coordinator:0.4">
      <controls><concurrency>{concurrency}</concurrency></controls>
      <action><workflow><app-path>task:{task}</app-path>{configuration}</workflow></action>
    </coordinator-app>"""


def prop(name: str, value: str) -> str:
    """A configuration property element."""
    return f"<property><name>{name}</name><value>{value}</value></property>"
