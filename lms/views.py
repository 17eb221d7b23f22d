"""The LMS's pages (web side): login initiation, the launch, linking an LMS course, deep linking, the setup page.

A launch is a cross-site POST from the LMS, opened in a new window: the portal's session cookie (SameSite=Lax),
CSP frame-ancestors 'none' and X-Frame-Options stay as they are.
"""

from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods, require_POST
from lti_tool.models import Key, LtiContext, LtiLaunch, LtiRegistration
from lti_tool.utils import DjangoToolConfig
from pylti1p3.contrib.django import DjangoMessageLaunch
from pylti1p3.deep_link_resource import DeepLinkResource
from pylti1p3.exception import LtiException

from courses.models import STAFF_ROLES, Role
from courses.roster import roster_plan
from courses.selectors import course_get_for_user, roster_current
from courses.services import roster_confirm
from lms import launches, roster, selectors, services

SESSION_LINK = "lms_link_context"
SESSION_DEEP_LINK = "lms_deep_link_launch"
ASSIGNMENT_CLAIM = "labqueue_assignment"
CUSTOM = "https://purl.imsglobal.org/spec/lti/claim/custom"
SIGN_IN_BACKEND = "allauth.account.auth_backends.AuthenticationBackend"  # as a campus (SSO) sign-in


def _refused(request: HttpRequest, refused: launches.LaunchRefused) -> HttpResponse:
    return render(request, "lms/launch_refused.html", {"refused": refused}, status=refused.status)


@csrf_exempt
@require_http_methods(["GET", "POST"])
def login_initiation(request: HttpRequest, registration_uuid=None) -> HttpResponse:
    """OIDC login initiation; with a registration's UUID in the address for an LMS that sends no client_id."""
    try:
        return launches.login_redirect(request, registration_uuid)
    except launches.LaunchRefused as refused:
        return _refused(request, refused)


@csrf_exempt
@require_POST
def launch(request: HttpRequest) -> HttpResponse:
    try:
        lti_launch = launches.launch_validate(request)
        person = services.person_for_netid(netid=launches.campus_identity(lti_launch))
    except launches.LaunchRefused as refused:
        return _refused(request, refused)
    except PermissionDenied as denied:
        return _refused(request, launches.LaunchRefused(403, str(denied)))
    login(request, person, backend=SIGN_IN_BACKEND)
    services.lti_user_link(lti_user=lti_launch.user, person=person)
    role = launches.course_role(lti_launch.roles_claim)
    course = selectors.course_linked(context=lti_launch.context)
    if course is None:
        if role == Role.INSTRUCTOR:
            request.session[SESSION_LINK] = lti_launch.context.pk
            return redirect("lms:course-link")
        return render(request, "lms/course_not_linked.html", {"context": lti_launch.context})
    if role:
        services.lms_enrollment_grant(user=person, course=course, role=role)
    if lti_launch.is_deep_link_launch:
        if role not in STAFF_ROLES:
            return _refused(request, launches.LaunchRefused(403, "Only the course's staff can add LabQueue links."))
        request.session[SESSION_DEEP_LINK] = lti_launch.get_launch_id()
        return redirect("lms:deep-link")
    custom = lti_launch.get_claim(CUSTOM) or {}
    assignment = selectors.assignment_for_link(course=course, assignment_uuid=custom.get(ASSIGNMENT_CLAIM, ""))
    if assignment is not None:
        return redirect("jobs:assignment-detail", slug=course.slug, assignment_slug=assignment.slug)
    return redirect("courses:course-detail", slug=course.slug)


@login_required
@require_http_methods(["GET", "POST"])
def course_link(request: HttpRequest) -> HttpResponse:
    """An instructor's launch from an LMS course not linked yet: pick the LabQueue course (a preview, then POST)."""
    context = get_object_or_404(LtiContext, pk=request.session.get(SESSION_LINK, 0))
    courses = selectors.course_list_linkable(user=request.user)
    chosen = courses.filter(slug=request.POST.get("course") or request.GET.get("course", "")).first()
    if request.method == "POST" and chosen is not None:
        try:
            services.course_link_create(context=context, course=chosen, actor=request.user)
        except ValidationError as error:
            messages.error(request, error.messages[0])
            return redirect("courses:course-detail", slug=chosen.slug)
        request.session.pop(SESSION_LINK, None)
        messages.success(request, f"“{context}” in the LMS is now linked to {chosen}.")
        return redirect("courses:course-detail", slug=chosen.slug)
    return render(request, "lms/course_link.html", {"context": context, "courses": courses, "chosen": chosen})


def _deep_link_launch(request: HttpRequest) -> DjangoMessageLaunch | None:
    """The deep-linking launch this session came from (kept in the shared cache by pylti1p3), or None."""
    try:
        message_launch = DjangoMessageLaunch.from_cache(
            request.session.get(SESSION_DEEP_LINK, ""),
            request,
            DjangoToolConfig(),
            launch_data_storage=launches.storage(),
        )
    except LtiException:
        return None
    return message_launch if message_launch.is_deep_link_launch() else None


@login_required
@require_http_methods(["GET", "POST"])
def deep_link(request: HttpRequest) -> HttpResponse:
    """The LMS's "add external tool" dialog: the instructor picks an assignment, the LMS gets a signed link."""
    message_launch = _deep_link_launch(request)
    if message_launch is None:
        return _refused(request, launches.LaunchRefused(400, "This page is opened from the LMS's tool dialog."))
    course = selectors.course_linked(context=LtiLaunch(message_launch).context)
    assignments = list(course.assignments.all()) if course else []
    chosen = next((a for a in assignments if str(a.uuid) == request.POST.get("assignment")), None)
    if request.method == "POST" and chosen is not None:
        resource = (
            DeepLinkResource()
            .set_url(request.build_absolute_uri(reverse("lms:launch")))
            .set_title(chosen.title)
            .set_custom_params({ASSIGNMENT_CLAIM: str(chosen.uuid)})
        )
        settings_claim = message_launch.get_launch_data()[launches.DEEP_LINKING_SETTINGS]
        request.session.pop(SESSION_DEEP_LINK, None)
        context = {
            "jwt": message_launch.get_deep_link().get_response_jwt([resource]),
            "return_url": settings_claim["deep_link_return_url"],
        }
        return render(request, "lms/deep_link_return.html", context)
    return render(request, "lms/deep_link.html", {"course": course, "assignments": assignments})


ROSTER_OUTCOMES = {
    "applied": (messages.SUCCESS, "Roster from the LMS applied."),
    "in place": (messages.INFO, "The course's roster already matches the LMS: nothing to change."),
    "changed": (messages.ERROR, "The LMS or the course changed since the preview. Check this preview again."),
}


@login_required
@require_http_methods(["GET", "POST"])
def roster_sync(request: HttpRequest, slug: str) -> HttpResponse:
    """The roster from the linked LMS course: a preview (the CSV import's), then exactly that preview applied."""
    course, _ = course_get_for_user(user=request.user, slug=slug, roles=(Role.INSTRUCTOR,))
    contexts = selectors.contexts_with_members(course=course)
    if len(contexts) != 1:
        return render(request, "lms/roster_sync.html", {"course": course, "contexts": contexts}, status=409)
    keep = frozenset({request.user.netid} - {None})
    link = contexts[0].course_link
    try:
        text, left_out = roster.roster_csv(contexts[0], roster.members_fetch(contexts[0]))
    except roster.LmsUnavailable as error:
        context = {"course": course, "error": str(error), "link": link}
        return render(request, "lms/roster_sync.html", context, status=502)
    if request.method == "POST":
        try:
            outcome, plan = roster_confirm(
                course=course, text=text, digest=request.POST.get("digest", ""), keep=keep, actor=request.user
            )
        except ValidationError as error:
            outcome, plan = "changed", roster_plan(text, roster_current(course=course), keep=keep)
            messages.error(request, " ".join(error.messages))
        messages.add_message(request, *ROSTER_OUTCOMES[outcome])
        if outcome != "changed":
            return redirect("courses:course-detail", slug=course.slug)
    else:
        plan = roster_plan(text, roster_current(course=course), keep=keep)
    context = {"course": course, "plan": plan, "left_out": left_out, "lms_course": contexts[0], "link": link}
    return render(request, "lms/roster_sync.html", context, status=400 if not plan.ok else 200)


@login_required
@require_POST
def roster_schedule(request: HttpRequest, slug: str) -> HttpResponse:
    """Turn the scheduled roster sync of the course's one LMS link on or off (its instructors only)."""
    course, _ = course_get_for_user(user=request.user, slug=slug, roles=(Role.INSTRUCTOR,))
    contexts = selectors.contexts_with_members(course=course)
    if len(contexts) != 1:
        messages.error(request, "A roster from the LMS needs exactly one linked LMS course that offers its members.")
        return redirect("courses:course-detail", slug=course.slug)
    scheduled = request.POST.get("scheduled") == "on"
    services.roster_schedule_set(link=contexts[0].course_link, scheduled=scheduled, actor=request.user)
    words = "on: the roster follows the LMS, drops included" if scheduled else "off: nothing changes unless you apply"
    messages.success(request, f"Scheduled roster sync {words}.")
    return redirect("lms:roster-sync", slug=course.slug)


@staff_member_required
def tool_setup(request: HttpRequest) -> HttpResponse:
    """For operators: the addresses and keys to paste into an LMS."""
    base = request.build_absolute_uri("/").rstrip("/")
    registrations = [
        (registration, base + reverse("lms:login", args=[registration.uuid]))
        for registration in LtiRegistration.objects.order_by("name")
    ]
    urls = {
        "jwks": base + reverse("lms:jwks"),
        "launch": base + reverse("lms:launch"),
        "deep_link": base + reverse("lms:launch"),
        "login": base + reverse("lms:login-any"),
    }
    canvas = json.dumps(_canvas_json(urls), indent=2)
    return render(
        request,
        "lms/tool_setup.html",
        {"urls": urls, "registrations": registrations, "canvas": canvas, "has_key": Key.objects.active().exists()},
    )


def _canvas_json(urls: dict) -> dict:
    return {
        "title": "LabQueue",
        "description": "Run GPU coursework on the college's cluster.",
        "oidc_initiation_url": urls["login"],
        "target_link_uri": urls["launch"],
        "public_jwk_url": urls["jwks"],
        "scopes": [],
        "extensions": [
            {
                "platform": "canvas.instructure.com",
                "privacy_level": "public",
                "settings": {
                    "placements": [
                        {
                            "placement": "link_selection",
                            "message_type": "LtiDeepLinkingRequest",
                            "target_link_uri": urls["launch"],
                            "windowTarget": "_blank",
                        },
                        {
                            "placement": "assignment_selection",
                            "message_type": "LtiDeepLinkingRequest",
                            "target_link_uri": urls["launch"],
                            "windowTarget": "_blank",
                        },
                    ]
                },
            }
        ],
        "custom_fields": {"netid": "$Canvas.user.loginId"},
    }
