"""`manage.py user`: create API users and print their tokens, so the README's token steps work as written.

`user add NAME [--admin] [--token] [--password-stdin]` creates the user: a job admin with
`--admin` (superuser and staff: acts on every job, opens the admin site; see
kernel.permissions.is_admin), otherwise a plain submitter who owns their own jobs.
Without `--password-stdin` the account has no password (tokens only). `--token` prints its
REST framework token, the key `Authorization: Token <key>` takes. `user token NAME` prints
(creating it if needed) the token of an existing user. An existing name is refused, nothing changes.
"""

from __future__ import annotations

import sys
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import CommandError, CommandParser
from django.db import transaction
from rest_framework.authtoken.models import Token

from kernel.cli import ProductCommand


def api_token(user: Any) -> str:
    """The user's DRF token key, created on first ask (one token per user, as authtoken keeps it)."""
    token, _ = Token.objects.get_or_create(user=user)
    return str(token.key)


class Command(ProductCommand):
    """Create users (optionally job admins) and print their API tokens."""

    help = "user add NAME [--admin] [--token] [--password-stdin] [--email E]; user token NAME"

    def add_arguments(self, parser: CommandParser) -> None:
        """Subcommands add and token."""
        sub = parser.add_subparsers(dest="verb", required=True)
        add = sub.add_parser("add", help="create a user")
        add.add_argument("name", help="the user name (the owner of the jobs it submits)")
        add.add_argument("--admin", action="store_true",
                         help="a job admin: superuser and staff (acts on every job, opens the admin site)")
        add.add_argument("--token", action="store_true", help="print the user's API token (Authorization: Token <key>)")
        add.add_argument("--password-stdin", action="store_true",
                         help="read the password from the first line of standard input (else: no password, tokens only)")
        add.add_argument("--email", default="", help="e-mail address (SLA alerts may go there)")
        token = sub.add_parser("token", help="print (creating it if needed) an existing user's API token")
        token.add_argument("name")

    def handle(self, *args: Any, **options: Any) -> None:
        """Run the subcommand; a refusal is one line and exit 1."""
        model = get_user_model()
        name = str(options["name"]).strip()
        if options["verb"] == "token":
            user = model.objects.filter(username=name).first()
            if user is None:
                raise CommandError(f"no user {name!r}; create it with: manage.py user add {name} --token")
            self.stdout.write(api_token(user))
            return
        self._add(model, name, options)

    def _add(self, model: Any, name: str, options: dict[str, Any]) -> None:
        if not name:
            raise CommandError("the user name is empty")
        field = model._meta.get_field(model.USERNAME_FIELD)
        try:
            field.clean(name, None)
        except ValidationError as exc:
            raise CommandError(f"user name {name!r}: {' '.join(exc.messages)}") from None
        if model.objects.filter(username=name).exists():
            raise CommandError(f"user {name!r} exists already; nothing changed (its token: manage.py user token {name})")
        password = None
        if options["password_stdin"]:
            password = sys.stdin.readline().rstrip("\r\n")
            if not password:
                raise CommandError("--password-stdin: standard input gave an empty password")
            try:
                validate_password(password, model(username=name))
            except ValidationError as exc:
                raise CommandError(f"password refused: {' '.join(exc.messages)}") from None
        with transaction.atomic():
            user = model(username=name, email=options["email"], is_staff=options["admin"],
                         is_superuser=options["admin"])
            if password is None:
                user.set_unusable_password()
            else:
                user.set_password(password)
            user.save()
            key = api_token(user) if options["token"] else None
        role = "job admin (superuser)" if options["admin"] else "user"
        message = f"created {role} {name!r}" + ("" if password else " without a password (tokens only)")
        if key is None:
            self.stdout.write(message)
            return
        # Only the key on standard output, so TOKEN=$(manage.py user add ann --token) works.
        self.stderr.write(message, style_func=self.style.SUCCESS)
        self.stdout.write(key)
