"""The API's OpenAPI schema is a valid OpenAPI 3.1 document, and requests generated from it (schemathesis,
through the WSGI app, with a valid token) meet no server error and no answer the schema does not describe."""

import json

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from openapi_spec_validator import validate
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.conftest import job_row

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


def test_the_schema_is_valid_openapi_3_1(client):
    response = client.get("/api/v1/openapi.json")

    schema = json.loads(response.content)
    assert schema["openapi"].startswith("3.1")
    validate(schema)


def test_the_docs_page_is_served_with_its_own_files(client, student):
    client.force_login(student)
    response = client.get("/api/v1/docs")

    assert response.status_code == 200
    assert "/static/ninja/swagger-ui-bundle.js" in response.content.decode()


@pytest.fixture
def wsgi_app():
    """The portal's WSGI app, called in this test's transaction: as Django's test client does, requests do not
    close the database connection (the test's data would go with it). Django's test client connects the
    closing again after each of its requests: a test using this one makes no request through the client."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield get_wsgi_application()
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


def test_generated_requests_meet_no_server_error_and_no_answer_outside_the_schema(
    settings, wsgi_app, instructor, student, assignment, token_for
):
    settings.LABQUEUE_API_REQUESTS_PER_MINUTE = 100_000
    job_row(student, assignment)
    headers = {"Authorization": f"Bearer {token_for(instructor)}"}
    schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", wsgi_app)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) == 13

    for operation in operations:

        @given(case=operation.as_strategy())
        @hypothesis_settings(max_examples=8, deadline=None, database=None, suppress_health_check=list(HealthCheck))
        def answers_within_the_schema(case):
            case.call_and_validate(headers=headers, checks=CHECKS)

        answers_within_the_schema()


def test_an_address_no_operation_has_is_a_problem_document(client):
    response = client.get("/api/v1/jobs/00000000-0000-0000-0000-000000000000/files/a%0Ab")

    assert response.status_code == 404
    assert response["Content-Type"] == "application/problem+json"
