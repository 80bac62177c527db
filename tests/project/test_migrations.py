"""Models and migrations agree: a model change without its migration fails here, not on a production deploy."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command


@pytest.mark.django_db
def test_no_model_change_lacks_a_migration() -> None:
    out = io.StringIO()
    try:
        call_command("makemigrations", "--check", "--dry-run", stdout=out, stderr=out)
    except SystemExit as exc:
        pytest.fail(f"models changed without a migration (run manage.py makemigrations):\n{out.getvalue()}")
        raise AssertionError from exc
