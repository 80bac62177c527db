"""Job properties as Oozie reads them: `${other}` references in values expanded, as a Hadoop Configuration does.

Shared by coordinator, bundle and workflow submissions (and the dry-runs): pure, no Django.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from oozie.definitions import DefinitionError

# The job properties Oozie gives a meaning to, each named once (its specifications' spelling).
#: The application a submission runs: a coordinator, a bundle or a workflow.
COORD_APP_PATH = "oozie.coord.application.path"
BUNDLE_APP_PATH = "oozie.bundle.application.path"
WF_APP_PATH = "oozie.wf.application.path"
#: The bundle a coordinator job was submitted by (kept by an update), and a bundle's own id from outside.
BUNDLE_ID = "oozie.bundle.id"
BUNDLE_EXTERNAL_ID = "oozie.bundle.external.id"
#: The submitting user (a Java system property in Oozie).
USER_NAME = "user.name"
#: Workflow rerun: the nodes not run again, or "from the failed nodes".
WF_RERUN_SKIP_NODES = "oozie.wf.rerun.skip.nodes"
WF_RERUN_FAIL_NODES = "oozie.wf.rerun.failnodes"
#: Workflow debugging: suspend the job when it reaches one of these nodes.
SUSPEND_ON_NODES = "oozie.suspend.on.nodes"
#: Notification URLs: the job's status changes, and each action's.
WF_NOTIFICATION_URL = "oozie.wf.workflow.notification.url"
ACTION_NOTIFICATION_URL = "oozie.wf.action.notification.url"

#: What Hadoop's Configuration substitutes in a property value: `${name}`, name without '}', '$' or blanks.
_PROPERTY_REFERENCE = re.compile(r"\$\{([^}$\s]+)\}")
#: Hadoop's MAX_SUBST: more rounds means a property refers to itself.
MAX_SUBSTITUTIONS = 20
MAX_EXPANDED = 100_000


def expand_properties(properties: Mapping[str, str], *, user: str, source: str = "<inline>") -> dict[str, str]:
    """Job properties with `${other}` in their values replaced by that property's value, as Oozie's job
    configuration (a Hadoop Configuration) does when a value is read: `out=${nameNode}/out`.

    A reference to no property (`${coord:user()}`, `${b}` undefined) stays as text, and so
    does everything else in a value: a property value is data, never EL (issue 16).
    `${user.name}` falls back to the submitting user (a Java system property in Oozie).
    A cycle (`a=${b}`, `b=${a}`) is refused after 20 rounds, as Hadoop refuses it.
    """
    lookup = {USER_NAME: user, **properties}

    def expand(name: str, value: str) -> str:
        for _ in range(MAX_SUBSTITUTIONS):
            expanded = _PROPERTY_REFERENCE.sub(lambda m: lookup.get(m.group(1), m.group(0)), value)
            if expanded == value:
                return value
            if len(expanded) > MAX_EXPANDED:  # ${b}${b} in b's own references: a value that doubles each round
                raise DefinitionError(
                    f"property {name!r}: expands to more than {MAX_EXPANDED} characters", source=source, element="configuration"
                )
            value = expanded
        raise DefinitionError(
            f"property {name!r}: variable substitution depth too large ({MAX_SUBSTITUTIONS}): it refers to itself",
            source=source, element="configuration",
        )

    return {name: expand(name, value) if "${" in value else value for name, value in properties.items()}


def unresolved_references(value: str) -> list[str]:
    """The `${name}` references left in an expanded value: names no property defines (EL functions, `a:b(...)`, aside)."""
    return [name for name in _PROPERTY_REFERENCE.findall(value) if "(" not in name]
