# The real test IdPs and the portal configured for them (tests/portal/sso/conftest.py), for the identity tests here.
from tests.portal.sso.conftest import idp, idps, sso  # noqa: F401
