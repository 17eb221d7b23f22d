"""What the deployment tests share: the service account's media root (tests/service_account.py) and an empty
PostgreSQL database of a test's own."""

import uuid
from collections.abc import Iterator

import psycopg
import pytest
from django.db import connection

from tests.service_account import service_media  # noqa: F401 (a fixture)


@pytest.fixture
def empty_database() -> Iterator[str]:
    """A PostgreSQL database of this test's own with nothing in it, on the test run's server."""
    db = connection.settings_dict
    assert connection.vendor == "postgresql", "the deployment tests run on PostgreSQL"
    name = f"labqueue_deploy_{uuid.uuid4().hex[:12]}"
    server = f"postgresql://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT'] or 5432}"
    with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"{server}/{name}"
    finally:
        _drop(server, name)


def _drop(server: str, name: str) -> None:
    """A plain DROP DATABASE: PostgreSQL waits a few seconds for other sessions to end and stops an autovacuum
    worker analysing the freshly migrated tables itself, whereas WITH (FORCE) refuses to terminate that worker
    unless the role may signal any backend (pg_signal_backend)."""
    with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
