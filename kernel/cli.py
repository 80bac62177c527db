"""What every `manage.py` verb of the project shares: who it acts as, and how it prints rows and errors.

The job, jobs and batch commands act as `-user` (default: the login name) under the same
permission rules as the APIs; their tables keep long names and errors whole, and an error
is one line (exit status 1, Django's CommandError).
"""

from __future__ import annotations

import getpass
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError, CommandParser

USER_HELP = "act as this user (default: your login name)"


def add_user_option(parser: CommandParser, *names: str) -> None:
    """The `-user NAME` option (more spellings may be given, e.g. `--user`)."""
    parser.add_argument("-user", *names, dest="user", default=None, help=USER_HELP)


def acting_user(name: str | None) -> Any:
    """The user a command acts as: `name`, else the login name; a CommandError if there is no such user."""
    username = name or getpass.getuser()
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise CommandError(f"no user {username!r}; pass -user NAME of an existing user")
    return user


def one_line(text: str) -> str:
    """An error in full on one line (tables keep one row per item; nothing is cut)."""
    return " ".join(text.split())


def table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    """Left-aligned columns two spaces apart, each as wide as its widest cell: long names and errors stay whole."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows, strict=True)]

    def line(cells: tuple[str, ...]) -> str:
        return "  ".join(f"{cell:<{width}}" for cell, width in zip(cells, widths, strict=True)).rstrip()

    rendered = [line(header), "-" * len(line(header))]
    return rendered + [line(row) for row in rows]
