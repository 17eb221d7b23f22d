"""An anonymous caller of /readyz learns whether each check passed, never the text of what failed."""

import logging

import pytest

from portal.celery import app

pytestmark = pytest.mark.django_db


@pytest.fixture
def broker_refusing(monkeypatch):
    """The broker the check connects to does not answer (a port nothing listens on). Only the check's own
    connection is redirected: the app's configuration and its connection pool stay as they are for the
    tests after this one."""
    connect = app.connection_for_write
    monkeypatch.setattr(app, "connection_for_write", lambda: connect(url="redis://:not-the-password@127.0.0.1:9/0"))


def test_an_anonymous_readyz_shows_no_error_text_which_goes_to_the_log(client, broker_refusing, caplog):
    with caplog.at_level(logging.WARNING, logger="ops.health"):
        response = client.get("/readyz")

    assert response.status_code == 503
    body = response.content.decode()
    assert response.json()["checks"]["broker"] == {"ok": False}
    assert "127.0.0.1" not in body and "Error" not in body and "detail" not in body
    assert any("the broker check failed" in message and "127.0.0.1" in message for message in caplog.messages)


def test_staff_see_what_the_failed_check_found(admin_client, broker_refusing):
    response = admin_client.get("/readyz")

    broker = response.json()["checks"]["broker"]
    assert broker["ok"] is False and "127.0.0.1" in broker["detail"]
