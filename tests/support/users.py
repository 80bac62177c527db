"""Test users: the API's `ann`, `bob`, `carol` and `admin` (fixtures), and staff clients with chosen permissions.

A plugin (tests/conftest.py `pytest_plugins`): every test may ask for the users. A directory
whose tests need other users of the same name overrides them in its conftest (tests/batches/api:
`ann` is the ingest's owner).
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client

from tests.coordinators.api.factories import user


@pytest.fixture
def ann(db: None) -> User:
    """A submitter."""
    return user("ann")


@pytest.fixture
def bob(db: None) -> User:
    """Another submitter, who has no rights on ann's jobs."""
    return user("bob")


@pytest.fixture
def carol(db: None) -> User:
    """A member of the `ops` group (named in ACLs)."""
    return user("carol", groups=("ops",))


@pytest.fixture
def admin(db: None) -> User:
    """A staff user, a job admin (coordinators.change_coordinatorjob), not a superuser: may act on every job."""
    return user("root", staff=True)


def staff(username: str, *codenames: str) -> Client:
    """A client logged in as a staff user holding these permissions (app_label.codename)."""
    account = User.objects.create_user(username, is_staff=True)
    for name in codenames:
        app_label, codename = name.split(".")
        account.user_permissions.add(Permission.objects.get(content_type__app_label=app_label, codename=codename))
    browser = Client()
    browser.force_login(account)
    return browser
