"""Attributes like a campus IdP's: eduPerson values from the test directory, read on every login."""

import directory
from djangosaml2idp.processors import BaseProcessor


class DirectoryProcessor(BaseProcessor):
    def create_identity(self, user, sp_attribute_mapping):
        person = directory.person(user.username)
        identity = {
            "eduPersonPrincipalName": person.get("eppn"),
            "mail": person.get("mail"),
            "givenName": person.get("givenName"),
            "sn": person.get("sn"),
            "eduPersonAffiliation": person.get("affiliation") or None,
            "eduPersonScopedAffiliation": person.get("scoped_affiliation") or None,
            "isMemberOf": person.get("groups") or None,
            "eduPersonEntitlement": person.get("entitlement") or None,
        }
        return {name: value for name, value in identity.items() if value}
