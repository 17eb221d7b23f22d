"""Fixtures the security tests share: the finished job of the job tests, and the real test IdPs with the
portal configured for them (tests/portal/sso/conftest.py) for the identity tests."""

from tests.jobs.conftest import finished_job
from tests.portal.sso.conftest import idp, idps, sso

__all__ = ["finished_job", "idp", "idps", "sso"]
