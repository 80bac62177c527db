"""What every `manage.py` verb of the project shares: who it acts as, and how it prints rows and errors.

The job, jobs and batch commands act as `-user` (default: the login name) under the same
permission rules as the APIs; their tables keep long names and errors whole, and an error
is one line (exit status 1, Django's CommandError). Every product command is a `ProductCommand`:
run before `migrate`, a verb that needs the database says so in one line instead of a traceback.
"""

from __future__ import annotations

import getpass
import re
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection
from django.db.utils import OperationalError, ProgrammingError

USER_HELP = "act as this user (default: your login name)"
NOT_MIGRATED = "the database is not migrated ({reason}): run `python manage.py migrate` first"
#: A missing table as SQLite, PostgreSQL and MySQL name it.
_MISSING_TABLE = re.compile(r"no such table|relation .* does not exist|table .* doesn't exist", re.IGNORECASE)


def not_migrated(exc: Exception) -> bool:
    """Whether a database error means the tables are not there yet (else it is some other failure)."""
    if _MISSING_TABLE.search(str(exc)):
        return True
    try:
        return "django_migrations" not in connection.introspection.table_names()
    except (OperationalError, ProgrammingError):
        return False  # the database cannot be reached at all: not a migration matter


class ProductCommand(BaseCommand):
    """A product command: a verb run before `migrate` ends with one line naming `migrate`, exit 1, no traceback.

    Verbs that need no database (a coordinator or bundle dry-run) never reach it and keep working.
    """

    def execute(self, *args: Any, **options: Any) -> Any:
        """BaseCommand.execute, a missing table turned into a CommandError."""
        try:
            return super().execute(*args, **options)
        except (OperationalError, ProgrammingError) as exc:
            if not not_migrated(exc):
                raise
            raise CommandError(NOT_MIGRATED.format(reason=one_line(str(exc)))) from None


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
