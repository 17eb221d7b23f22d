"""The tool's calls to an LMS's services (roster, grades): pylti1p3's service connector with its access tokens kept
in the shared "lti" cache, keyed on the issuer *and* the client id (pylti1p3's own Django connector keys them on
the issuer alone, so two registrations on one issuer, as every hosted Canvas is, would share a token)."""

from __future__ import annotations

from math import floor

from django.core.cache import caches
from pylti1p3.service_connector import ServiceConnector

from lms.launches import CACHE


class LmsServiceConnector(ServiceConnector):
    def _key(self, scope_key: str) -> str:
        return f"access-token:{self._registration.get_client_id()}:{scope_key}"

    def _get_cached_access_token(self, scope_key: str) -> str | None:
        return caches[CACHE].get(self._key(scope_key))

    def _cache_access_token(self, scope_key: str, access_token: str, expires_in: float) -> None:
        caches[CACHE].set(self._key(scope_key), access_token, floor(max(1, expires_in - 10)))
