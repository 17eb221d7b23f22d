"""Roster from the LMS on a schedule: off until an instructor of the linked course turns it on; then beat's task
applies the LMS's member list as the page would (adds, role changes, drops; a drop keeps jobs), records and shows
what it did, and never drops or demotes the course's instructors."""

from courses.models import Role
from jobs.models import Job
from lms.models import CourseLink
from lms.tasks import roster_sync_scheduled
from tests.conftest import job_row
from tests.lms import test_roster_sync
from tests.lms.test_roster_sync import ROSTER, member, roles

synced_course = test_roster_sync.synced_course  # the fixture: a linked course and the LMS's member list

SCHEDULE = "/lms/courses/cs101/roster/schedule/"


def test_nothing_changes_on_the_schedule_until_an_instructor_turns_it_on(client, platform, synced_course):
    before = roles(synced_course)
    assert b'name="scheduled">' in client.get(ROSTER).content  # shown, unchecked
    roster_sync_scheduled.apply()
    assert roles(synced_course) == before
    assert CourseLink.objects.get().roster_synced_at is None


def test_once_turned_on_the_schedule_applies_adds_role_changes_and_drops_and_says_so(
    client, platform, synced_course, student, assignment
):
    kept = job_row(student, assignment)
    response = client.post(SCHEDULE, {"scheduled": "on"})
    assert response.status_code == 302 and CourseLink.objects.get().roster_sync_scheduled
    roster_sync_scheduled.apply()
    assert roles(synced_course) == {"instructor1": Role.INSTRUCTOR, "student2": Role.TA, "newstudent3": Role.STUDENT}
    assert Job.objects.filter(pk=kept.pk).exists()  # student1 was dropped; their job stays
    link = CourseLink.objects.get()
    assert link.roster_sync_outcome.startswith("Applied: 1 added, 1 role changes, 1 dropped")
    assert "Last scheduled sync" in client.get(ROSTER).content.decode()

    roster_sync_scheduled.apply()
    assert CourseLink.objects.get().roster_sync_outcome == "Nothing to change: the roster matched the LMS."


def test_an_lms_that_lowers_or_leaves_out_an_instructor_changes_nothing_on_the_schedule(
    client, platform, synced_course
):
    client.post(SCHEDULE, {"scheduled": "on"})
    platform.members[0] = member("u-instructor", "Learner", "instructor1")
    before = roles(synced_course)
    roster_sync_scheduled.apply()
    assert roles(synced_course) == before
    assert "Not applied: Line 2: this would change" in CourseLink.objects.get().roster_sync_outcome
    del platform.members[0]  # left out: kept, the others applied
    roster_sync_scheduled.apply()
    assert roles(synced_course) == {"instructor1": Role.INSTRUCTOR, "student2": Role.TA, "newstudent3": Role.STUDENT}


def test_turned_off_again_the_schedule_stops(client, platform, synced_course):
    client.post(SCHEDULE, {"scheduled": "on"})
    client.post(SCHEDULE, {})
    before = roles(synced_course)
    roster_sync_scheduled.apply()
    assert roles(synced_course) == before and not CourseLink.objects.get().roster_sync_scheduled


def test_an_lms_that_does_not_answer_on_the_schedule_changes_nothing_and_the_reason_is_kept(
    client, platform, synced_course
):
    from lti_tool.models import LtiRegistration

    client.post(SCHEDULE, {"scheduled": "on"})
    LtiRegistration.objects.update(token_url="http://127.0.0.1:1/token")
    before = roles(synced_course)
    roster_sync_scheduled.apply()
    assert roles(synced_course) == before
    assert CourseLink.objects.get().roster_sync_outcome.startswith("Not applied: The LMS did not give")


def test_only_the_courses_instructors_turn_the_schedule_on(client, platform, synced_course, student, outsider):
    client.force_login(student)
    assert client.post(SCHEDULE, {"scheduled": "on"}).status_code == 403
    client.force_login(outsider)
    assert client.post(SCHEDULE, {"scheduled": "on"}).status_code == 404
    client.logout()
    assert client.post(SCHEDULE, {"scheduled": "on"}).status_code == 302
    assert not CourseLink.objects.get().roster_sync_scheduled
    client.force_login(synced_course.enrollments.get(role=Role.INSTRUCTOR).user)
    assert client.get(SCHEDULE).status_code == 405
