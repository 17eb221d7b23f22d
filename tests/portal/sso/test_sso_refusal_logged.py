"""A refused campus sign-in leaves one warning in the portal's log, naming the IdP and the reason, so
the help desk can answer "why can't I sign in?"."""

import logging

from .conftest import OIDC_ID, sso_login


def test_a_refused_sign_in_is_logged_with_the_idp_and_the_reason(live_server, sso, caplog):
    with caplog.at_level(logging.WARNING, logger="portal.auth"):
        response = sso_login(live_server.url, sso.oidc, "visitor")

    assert response.status_code == 403
    [record] = [record for record in caplog.records if record.name == "portal.auth"]
    assert record.levelno == logging.WARNING
    assert record.getMessage().startswith(f"SSO login refused ({OIDC_ID}): ")
    assert "not from a campus this portal serves" in record.getMessage()
