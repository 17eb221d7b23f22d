"""Register the portal as a confidential OIDC client (consent skipped), from the environment."""

import os

from allauth.idp.oidc.models import Client


def register_portal() -> None:
    client, _ = Client.objects.get_or_create(id=os.environ["IDP_OIDC_CLIENT_ID"], defaults={"name": "LabQueue"})
    client.set_secret(os.environ["IDP_OIDC_CLIENT_SECRET"])
    client.type = Client.Type.CONFIDENTIAL
    client.skip_consent = True
    client.set_redirect_uris(os.environ["IDP_OIDC_REDIRECT_URIS"].split())
    client.set_scopes(["openid", "profile", "email"])
    client.set_default_scopes(["openid", "profile", "email"])
    client.set_grant_types(["authorization_code"])
    client.set_response_types(["code"])
    client.save()
