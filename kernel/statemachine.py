"""Status tables shared by every entity: one exception, one check, one path finder.

Each app declares its statuses as a `TextChoices` and its transitions as
`dict[status, frozenset[status]]`; these helpers enforce and walk such a table.
"""

from __future__ import annotations


class IllegalTransition(ValueError):  # noqa: N818 - reads as the condition
    """A status change the transition table does not allow."""


def check_transition(table: dict[str, frozenset[str]], current: str, target: str, what: str) -> None:
    """Raise IllegalTransition unless the table allows current -> target."""
    if target not in table.get(current, frozenset()):
        allowed = ", ".join(sorted(table.get(current, frozenset()))) or "nothing"
        raise IllegalTransition(f"{what} cannot go from {current} to {target} (from {current}: {allowed})")


def transition_path(table: dict[str, frozenset[str]], current: str, target: str) -> list[str]:
    """The statuses to pass through from current to target: [target], or one step between, or []."""
    if target in table.get(current, frozenset()):
        return [target]
    for middle in sorted(table.get(current, frozenset())):
        if target in table.get(middle, frozenset()):
            return [middle, target]
    return []
