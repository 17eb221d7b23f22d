"""Fixtures the security tests share: the finished job of the job tests, and the real test IdPs with the
portal configured for them (tests/portal/sso/conftest.py) for the identity tests."""

from tests.jobs.conftest import finished_job
from tests.portal.sso.conftest import idp, idps, sso

__all__ = ["finished_job", "idp", "idps", "sso"]


def site_ceilings_set(settings, *, allowed_qos: list[str]) -> None:
    """The site-wide ceilings operations staff set in these tests (portal/settings.py LABQUEUE_CEILING_*)."""
    settings.LABQUEUE_CEILING_GPUS_PER_JOB = 4
    settings.LABQUEUE_CEILING_CPUS_PER_JOB = 32
    settings.LABQUEUE_CEILING_MEM_MB_PER_JOB = 128000
    settings.LABQUEUE_CEILING_MINUTES_PER_JOB = 1440
    settings.LABQUEUE_CEILING_JOBS_PER_STUDENT = 20
    settings.LABQUEUE_CEILING_GPU_HOURS_PER_STUDENT = 100
    settings.LABQUEUE_CEILING_GPUS_PER_COURSE = 8
    settings.LABQUEUE_ALLOWED_QOS = allowed_qos
