"""Fixtures the security tests share with the job tests."""

from tests.jobs.conftest import finished_job

__all__ = ["finished_job"]
