"""Small builders of workflow.xml documents for the definition tests."""

from __future__ import annotations

WF_1_0 = "uri:oozie:workflow:1.0"
SHELL_1_0 = "uri:oozie:shell-action:1.0"
CELERY = "uri:oozie:celery-action:0.1"


def workflow(body: str, *, ns: str = WF_1_0, name: str = "wf", head: str = "", start: str = "a", end: str = "end") -> str:
    """A workflow-app: head (parameters/global), start, body nodes, end."""
    return (
        f'<workflow-app name="{name}" xmlns="{ns}">{head}<start to="{start}"/>'
        f'{body}<kill name="fail"><message>failed</message></kill><end name="{end}"/></workflow-app>'
    )


def fs_action(name: str, ok: str = "end", error: str = "fail", ops: str = '<mkdir path="/tmp/x"/>', attrs: str = "") -> str:
    """An fs action node."""
    return f'<action name="{name}"{attrs}><fs>{ops}</fs><ok to="{ok}"/><error to="{error}"/></action>'


def celery_action(name: str, ok: str = "end", error: str = "fail", task: str = "tasks.noop", inner: str = "") -> str:
    """A celery action node."""
    return (
        f'<action name="{name}"><celery xmlns="{CELERY}"><task>{task}</task>{inner}</celery>'
        f'<ok to="{ok}"/><error to="{error}"/></action>'
    )


def fork_join(paths: list[str], fork: str = "f", join: str = "j", to: str = "end") -> str:
    """A fork of fs actions (one per path) meeting at a join."""
    return (
        f'<fork name="{fork}">' + "".join(f'<path start="{p}"/>' for p in paths) + "</fork>"
        + "".join(fs_action(p, ok=join) for p in paths)
        + f'<join name="{join}" to="{to}"/>'
    )
