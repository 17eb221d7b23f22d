"""The association tests plan from each course's own numbers: the site sets no ceiling on jobs per student,
GPU-hours or course-wide GPUs here (how ceilings hold a plan down: tests/security/test_instructor_policy_*)."""

import pytest


@pytest.fixture(autouse=True)
def no_site_ceilings_on_course_limits(settings):
    settings.LABQUEUE_CEILING_JOBS_PER_STUDENT = 0
    settings.LABQUEUE_CEILING_GPU_HOURS_PER_STUDENT = 0
    settings.LABQUEUE_CEILING_GPUS_PER_COURSE = 0
