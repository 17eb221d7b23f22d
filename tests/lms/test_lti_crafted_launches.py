"""What a forged or odd LTI 1.3 launch, an LMS-wide launch, a switched-off deployment and a course linked to two LMS
sections must not achieve: a 500 instead of a page, a course standing for everyone of the LMS, roster changes or
scores from an LMS an operator switched off, a score in the gradebook of a section the student is not in."""

import base64
import json
from decimal import Decimal
from urllib.parse import parse_qsl, urlsplit

import jwt
import pytest
from lti_tool.models import LtiContext, LtiDeployment

from courses.models import Enrollment
from jobs.models import CheckRun, CheckStatus, Status
from lms.models import CourseLink, ScorePost, ScoreStatus
from lms.tasks import roster_sync_scheduled
from tests.conftest import job_row
from tests.lms.conftest import launch, path_of, start_launch
from tests.lms.platform import ISSUER
from tests.lms.test_grades import finished
from tests.lms.test_launch import link_course
from tests.lms.test_roster_sync import member, roles

CONTEXT = "https://purl.imsglobal.org/spec/lti/claim/context"
DEEP_LINKING = "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"


def _b64(value: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()


def forged(header: object, body: object) -> str:
    """An id_token anyone can make: any header and body, a signature that is not one."""
    return f"{_b64(header)}.{_b64(body)}.c2lnbmF0dXJl"


def issued(auth_request_url: str) -> dict:
    """The state and nonce the portal put in its authentication request (visible to whoever started it)."""
    return dict(parse_qsl(urlsplit(auth_request_url).query))


def resigned_without(platform, id_token: str, *claims: str) -> str:
    body = jwt.decode(id_token, options={"verify_signature": False})
    for claim in claims:
        body.pop(claim, None)
    return jwt.encode(body, platform.private_key, algorithm="RS256", headers={"kid": platform.registration.get_kid()})


# Crafted launches: a page (4xx), never a 500 ------------------------------------------------------------------


def test_a_launch_over_https_without_the_lti_session_cookie_is_a_page_not_a_500(client, platform, student):
    client.raise_request_exception = False
    started = client.get(path_of(platform.login_initiation_url("lms-user-1")), secure=True)
    redirect_uri, form = platform.authenticate(started["Location"], netid="student1", roles=["Learner"])
    client.cookies.clear()  # Safari in an iframe, or a browser that blocks third-party cookies
    response = client.post(path_of(redirect_uri), form, secure=True)
    assert response.status_code == 400


@pytest.mark.parametrize(
    ("header", "body"),
    [
        ({"alg": "RS256", "kid": "x"}, []),
        ({"alg": "RS256", "kid": "x"}, {"nonce": 1}),
        ({"alg": "RS256", "kid": "x"}, {"nonce": ["a"]}),
    ],
    ids=["body-not-an-object", "nonce-a-number", "nonce-a-list"],
)
def test_an_unsigned_forged_id_token_of_odd_shape_is_refused_with_a_page(client, platform, header, body):
    """Nobody needs the LMS for this: the state cookie is only compared with the state parameter."""
    client.raise_request_exception = False
    client.cookies["lti1p3-state-forged"] = "state-forged"
    response = client.post("/lms/launch/", {"state": "state-forged", "id_token": forged(header, body)})
    assert response.status_code in (400, 403)


def test_a_forged_id_token_with_an_empty_audience_is_refused_with_a_page(client, platform):
    """The audience is read (before any signature check) as aud[0]."""
    client.raise_request_exception = False
    params = issued(start_launch(client, platform))  # the nonce and state of the attacker's own login
    body = {"nonce": params["nonce"], "iss": ISSUER, "aud": []}
    response = client.post("/lms/launch/", {"state": params["state"], "id_token": forged({"alg": "RS256"}, body)})
    assert response.status_code in (400, 403)


@pytest.mark.parametrize(
    "claims",
    [
        {"https://purl.imsglobal.org/spec/lti/claim/roles": [5]},
        {CONTEXT: "lms-course-1"},
        {CONTEXT: {"id": "c" * 300}},
        {"sub": "u" * 300},
    ],
    ids=["role-not-a-string", "context-not-an-object", "context-id-too-long", "sub-too-long"],
)
def test_a_signed_launch_with_odd_claims_is_refused_with_a_page(client, platform, student, claims):
    from tests.lms.platform import resigned

    client.raise_request_exception = False
    redirect_uri, form = platform.authenticate(start_launch(client, platform), netid="student1", roles=["Learner"])
    form["id_token"] = resigned(platform, form["id_token"], **claims)
    response = client.post(path_of(redirect_uri), form)
    assert response.status_code in (400, 403)


def test_a_deep_linking_launch_without_a_return_address_is_refused_with_a_page(client, platform, course, instructor):
    from tests.lms.platform import resigned

    client.raise_request_exception = False
    link_course(client, platform, course)
    redirect_uri, form = platform.authenticate(
        start_launch(client, platform), netid="instructor1", roles=["Instructor"], deep_linking=True
    )
    body = jwt.decode(form["id_token"], options={"verify_signature": False})
    settings_claim = {k: v for k, v in body[DEEP_LINKING].items() if k != "deep_link_return_url"}
    form["id_token"] = resigned(platform, form["id_token"], **{DEEP_LINKING: settings_claim})
    response = client.post(path_of(redirect_uri), form)
    if response.status_code == 302:
        assignment = course.assignments.create(slug="lab", title="Lab", script_template="echo")
        response = client.post(response["Location"], {"assignment": str(assignment.uuid)})
    assert response.status_code in (400, 403)


# A launch without a course context ---------------------------------------------------------------------------


def contextless_launch(client, platform, netid: str, role: str):
    redirect_uri, form = platform.authenticate(
        start_launch(client, platform, login_hint=netid), netid=netid, roles=[role]
    )
    form["id_token"] = resigned_without(platform, form["id_token"], CONTEXT)
    return client.post(path_of(redirect_uri), form)


def test_a_launch_without_a_course_context_neither_links_a_course_nor_enrols_anyone_in_one(
    client, platform, course, instructor, outsider
):
    """LTI makes the context claim optional (a launch from an LMS-wide menu). django-lti files every such launch of
    a deployment under one context with an empty id: linked once, it would stand for every person of the LMS."""
    contextless_launch(client, platform, "instructor1", "Instructor")
    client.post("/lms/link-course/", {"course": course.slug})
    client.logout()
    contextless_launch(client, platform, outsider.netid, "Learner")
    assert not CourseLink.objects.filter(context__id_on_platform="").exists()
    assert not Enrollment.objects.filter(user=outsider, course=course).exists()


# A deployment switched off by an operator ---------------------------------------------------------------------


@pytest.fixture
def scheduled_course(client, platform, course, instructor, student, classmate):
    link_course(client, platform, course)
    platform.trust_tool(client.get("/lms/jwks.json").json())
    platform.members = [
        member("u-instructor", "Instructor", "instructor1"),
        member("u-new", "Learner", "newstudent3", email="new3@example.edu"),
    ]
    assert client.post("/lms/courses/cs101/roster/schedule/", {"scheduled": "on"}).status_code == 302
    return course


def test_a_switched_off_deployment_no_longer_changes_the_roster_on_the_schedule(client, platform, scheduled_course):
    LtiDeployment.objects.update(is_active=False)  # the operator stops this LMS acting in LabQueue
    before = roles(scheduled_course)
    roster_sync_scheduled.apply()
    assert roles(scheduled_course) == before  # nobody added, nobody dropped
    assert not platform.requests  # and the LMS was not even asked


def test_a_switched_off_deployment_offers_no_roster_on_the_page(client, platform, scheduled_course):
    LtiDeployment.objects.update(is_active=False)
    response = client.get("/lms/courses/cs101/roster/")
    assert response.status_code != 200 or b'name="digest"' not in response.content
    assert not platform.requests


def checked(student, assignment) -> CheckRun:
    """A completed job of the student's whose check gave 7 of 10."""
    job = job_row(student, assignment, status=Status.COMPLETED)
    return CheckRun.objects.create(job=job, status=CheckStatus.DONE, score=Decimal(7), max_score=Decimal(10))


def test_a_switched_off_deployment_gets_no_scores(
    client, platform, course, instructor, student, assignment, django_capture_on_commit_callbacks
):
    link_course(client, platform, course)
    platform.trust_tool(client.get("/lms/jwks.json").json())
    client.logout()
    launch(client, platform, netid="student1", roles=["Learner"])
    LtiDeployment.objects.update(is_active=False)
    finished(checked(student, assignment), django_capture_on_commit_callbacks)
    assert platform.scores == []


# Grades of a course linked to two LMS courses -----------------------------------------------------------------


def test_a_score_goes_only_to_the_lms_courses_the_student_is_in(
    client, platform, course, instructor, student, assignment, django_capture_on_commit_callbacks
):
    """Two LMS courses (sections) linked to one LabQueue course: a student who is only in section 1 gets no score
    posted into section 2's gradebook. (Section 1 takes no scores here, so that only section 2 is offered one: the
    test platform serves one gradebook for every context.)"""
    link_course(client, platform, course)
    launch(client, platform, netid="instructor1", roles=["Instructor"], context_id="lms-section-2")
    assert client.post("/lms/link-course/", {"course": course.slug}).status_code == 302
    assert CourseLink.objects.count() == 2
    platform.trust_tool(client.get("/lms/jwks.json").json())
    client.logout()
    redirect_uri, form = platform.authenticate(
        start_launch(client, platform, login_hint="lms-student-1"), netid="student1", roles=["Learner"]
    )
    client.post(path_of(redirect_uri), form)  # from section 1 (lms-course-1) only
    LtiContext.objects.filter(id_on_platform="lms-course-1").update(lineitems_url="")
    finished(checked(student, assignment), django_capture_on_commit_callbacks)
    section_2 = LtiContext.objects.get(id_on_platform="lms-section-2")
    assert not ScorePost.objects.filter(context=section_2, status=ScoreStatus.SENT).exists()
    assert platform.scores == []
