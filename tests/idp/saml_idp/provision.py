"""Register the portal as a service provider from its SP metadata (a file the tests fetched from it)."""

import json
import os
from datetime import timedelta

from django.utils import timezone
from djangosaml2idp.models import ServiceProvider


def register_portal() -> None:
    with open(os.environ["IDP_SAML_SP_METADATA_FILE"]) as handle:
        metadata = handle.read()
    ServiceProvider.objects.update_or_create(
        entity_id=os.environ["IDP_SAML_SP_ENTITY_ID"],
        defaults={
            "pretty_name": "LabQueue",
            "local_metadata": metadata,
            "metadata_expiration_dt": timezone.now() + timedelta(days=1),
            "_processor": "saml_idp.processor.DirectoryProcessor",
            "_attribute_mapping": json.dumps({}),
            "_nameid_field": "username",
            "_sign_response": True,
            "_sign_assertion": True,
        },
    )
