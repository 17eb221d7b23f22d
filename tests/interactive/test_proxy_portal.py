"""The shipped nginx template in front of the real portal (Django's live server): what a browser gets at a
session's address when the portal's auth check refuses it, and at the auth check itself. No cluster."""

import http.client
import uuid

import pytest

SECRET = "proxy-secret-of-this-test"


@pytest.fixture
def proxy(live_server, portal_proxy, settings) -> str:
    settings.LABQUEUE_INTERACTIVE_PROXY_SECRET = SECRET
    return portal_proxy(live_server.url.removeprefix("http://"), secret=SECRET).base_url.removeprefix("http://")


def fetch(host: str, path: str) -> tuple[int, str]:
    connection = http.client.HTTPConnection(host, timeout=30)
    connection.request("GET", path)
    response = connection.getresponse()
    answer = (response.status, response.read().decode())
    connection.close()
    return answer


@pytest.mark.django_db(transaction=True)
def test_a_session_the_portal_refuses_is_its_not_open_page_with_status_404(proxy):
    status, page = fetch(proxy, f"/interactive/{uuid.uuid4()}/lab")

    assert status == 404
    assert "This notebook session is not open" in page
    assert "You are not signed in" in page


@pytest.mark.django_db(transaction=True)
def test_a_browser_never_reaches_the_auth_check_through_the_proxy(proxy):
    status, page = fetch(proxy, "/interactive/auth/")

    assert status == 404
    assert "This notebook session is not open" not in page
