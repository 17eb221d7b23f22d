"""The test IdPs' people: a JSON file {username: {password, eppn, mail, givenName, sn, affiliation, groups}}.

Optional: scoped_affiliation (eduPersonScopedAffiliation values, e.g. "staff@example.edu"), entitlement
(eduPersonEntitlement values) and, for the OIDC IdP, email_verified (true unless set)."""

import json
import os


def people() -> dict[str, dict]:
    with open(os.environ["IDP_DIRECTORY"]) as handle:
        return json.load(handle)


def person(username: str) -> dict:
    return people().get(username, {})
