"""The deployment tests: the service account's media root fixture, shared with tests/service_account.py."""

from tests.service_account import service_media  # noqa: F401 (a fixture)
