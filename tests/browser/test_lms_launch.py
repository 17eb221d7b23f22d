"""Launches from an LMS in Chromium: the real portal (gunicorn, two workers sharing the LTI cache in Redis) and a
real LTI 1.3 platform (tests/lms/platform.py) on loopback HTTP. The instructor opens LabQueue from an unlinked LMS
course, previews and links it; a student then follows an assignment link and lands on the assignment signed in as
their netid. Each opens the LMS link in a new window, as the README tells LMSs to."""

import pytest
from django.core.cache import caches
from lti_tool.models import Key
from playwright.sync_api import expect

from lms.services import registration_save
from tests.lms.platform import CLIENT_ID, DEPLOYMENT_ID, ISSUER, NETID_CLAIM, Platform

pytestmark = [pytest.mark.timeout(120)]


def test_an_instructor_links_the_course_and_a_student_lands_on_the_linked_assignment(
    browser, portal, course, instructor, student, assignment
):
    caches["lti"].clear()
    Key.objects.generate()
    with Platform(portal_base=portal.base) as platform:
        registration_save(
            name="Campus LMS",
            issuer=ISSUER,
            client_id=CLIENT_ID,
            deployment_ids=[DEPLOYMENT_ID],
            keyset_url=f"{platform.base}/jwks",
            auth_url=f"{platform.base}/auth",
            token_url=f"{platform.base}/token",
            identity_claim=NETID_CLAIM,
        )
        teacher = browser.new_context().new_page()
        platform.next_launch = {"netid": "instructor1", "roles": ["Instructor"]}
        teacher.goto(platform.login_initiation_url("lms-teacher"))
        expect(teacher.get_by_role("heading", name="Link “Course lms-course-1” to a LabQueue course")).to_be_visible()
        teacher.get_by_label("LabQueue course").select_option(course.slug)
        teacher.get_by_role("button", name="Preview").click()
        teacher.get_by_role("button", name=f"Link to {course}").click()
        expect(teacher.get_by_text("is now linked to")).to_be_visible()

        learner = browser.new_context().new_page()
        platform.next_launch = {
            "netid": "student1",
            "roles": ["Learner"],
            "custom": {"labqueue_assignment": str(assignment.uuid)},
        }
        learner.goto(platform.login_initiation_url("lms-student"))
        learner.wait_for_url(f"{portal.base}/courses/{course.slug}/assignments/{assignment.slug}/")
        expect(learner.get_by_role("heading", name=assignment.title)).to_be_visible()
        expect(learner.get_by_text(f"({student.netid})")).to_be_visible()  # signed in as their netid
