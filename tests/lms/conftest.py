"""A real LTI 1.3 platform beside the portal, and the portal registered in it as the operator would."""

from urllib.parse import urlsplit

import pytest
from django.core.cache import caches
from lti_tool.models import Key

from lms.services import registration_save
from tests.lms.platform import CLIENT_ID, DEPLOYMENT_ID, ISSUER, NETID_CLAIM, Platform


@pytest.fixture
def platform(db):
    caches["lti"].clear()  # the Redis db of this test run: nonces, launches, access tokens of earlier tests
    Key.objects.generate()
    with Platform() as running:
        registration_save(
            name="Campus LMS",
            issuer=ISSUER,
            client_id=CLIENT_ID,
            deployment_ids=[DEPLOYMENT_ID],
            keyset_url=f"{running.base}/jwks",
            auth_url=f"{running.base}/auth",
            token_url=f"{running.base}/token",
            identity_claim=NETID_CLAIM,
        )
        yield running


def path_of(url: str) -> str:
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


def start_launch(client, platform: Platform, login_hint: str = "lms-user-1") -> str:
    """OIDC login initiation at the portal; the platform's authentication request URL it redirects to."""
    response = client.get(path_of(platform.login_initiation_url(login_hint)))
    assert response.status_code == 302, response.content
    assert response["Location"].startswith(f"{platform.base}/auth?")
    return response["Location"]


def launch(client, platform: Platform, **claims):
    """A whole launch: login initiation, the platform's id_token, the POST to the portal's launch URL."""
    redirect_uri, form = platform.authenticate(start_launch(client, platform), **claims)
    return client.post(path_of(redirect_uri), form), form
