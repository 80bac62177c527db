"""Job properties as Oozie reads them: `${other}` references in values expanded, as a Hadoop Configuration does.

Shared by coordinator, bundle and workflow submissions (and the dry-runs): pure, no Django.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from oozie.definitions import DefinitionError

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
    lookup = {"user.name": user, **properties}

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
