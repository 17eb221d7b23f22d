"""Helpers for the API tests: tokens made as the settings page makes them, and requests through Django's test
client with a bearer token (real HTTP handling, real PostgreSQL and Redis)."""

import json

import pytest

from api.models import Scope
from api.services import token_create
from tests.jobs.conftest import finished_job  # noqa: F401 (a fixture)

EVERY_SCOPE = [scope.value for scope in Scope]


@pytest.fixture
def token_for(db):
    """token_for(user, scopes=..., course=None) -> the token's text (what the page shows once)."""

    def make(user, scopes=EVERY_SCOPE, course=None, days: int = 30) -> str:
        return token_create(owner=user, name="script", scopes=list(scopes), course=course, days=days)[1]

    return make


def call(client, method: str, url: str, token: str = "", body: dict | None = None):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    send = getattr(client, method.lower())
    if body is None and method.lower() == "get":
        return send(url, headers=headers)
    return send(url, data=json.dumps(body or {}), content_type="application/json", headers=headers)


def problem(response) -> dict:
    """The problem document of an error answer (RFC 9457), checked for its media type and fields."""
    assert response["Content-Type"] == "application/problem+json", response.content[:500]
    document = response.json()
    assert {"type", "title", "status", "detail"} <= document.keys()
    assert document["status"] == response.status_code
    return document
