"""Claims like a campus IdP's: eduPerson values from the test directory, read on every login."""

import directory
from allauth.idp.oidc.adapter import DefaultOIDCAdapter


class CampusOIDCAdapter(DefaultOIDCAdapter):
    def get_claims(self, purpose, user, client, scopes, email=None, **kwargs):
        claims = super().get_claims(purpose, user, client, scopes, email=email, **kwargs)
        person = directory.person(user.username)
        if "profile" in scopes:
            claims.update(
                given_name=person.get("givenName", ""),
                family_name=person.get("sn", ""),
                eduperson_principal_name=person.get("eppn", ""),
                eduperson_affiliation=person.get("affiliation", []),
                eduperson_scoped_affiliation=person.get("scoped_affiliation", []),
                groups=person.get("groups", []),
                eduperson_entitlement=person.get("entitlement", []),
            )
        if "email" in scopes and person.get("mail"):
            claims.update(email=person["mail"], email_verified=person.get("email_verified", True))
        return claims
