"""A linked course's roster from the LMS (LTI Names and Role Provisioning Services): on request on the web side
(lms.views), and on a schedule on the worker side (lms.tasks.roster_sync_scheduled, for links whose instructor
turned it on).

The LMS's member list is written as a roster CSV and goes through the CSV import's own rules and services
(courses.roster's checks of every netid, its preview and digest; courses.services.roster_confirm), so the LMS
adds, changes roles and drops exactly as an uploaded roster would. A member's netid comes from the
registration's identity claim (the NRPS ``lis_person_sourcedid``, or the claim inside the member's launch
message), else from an earlier verified launch of the same LMS user; a member without one is listed, not
created. Inactive and deleted members are left out, so they are dropped.
"""

from __future__ import annotations

import csv
import io
import logging
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.utils import timezone
from lti_tool.models import Key, LtiContext, LtiUser
from pylti1p3.exception import LtiException
from pylti1p3.names_roles import NamesRolesProvisioningService
from requests import RequestException

from courses.models import Enrollment, Role
from courses.roster import roster_plan
from courses.selectors import roster_current
from courses.services import roster_confirm
from lms.connector import LmsServiceConnector
from lms.launches import claim_value, course_role
from lms.models import CourseLink

logger = logging.getLogger(__name__)

LIS = "https://purl.imsglobal.org/spec/lti/claim/lis"


class LmsUnavailable(Exception):
    """The LMS did not give the member list (its words, for the page)."""


@dataclass(frozen=True)
class MemberLeftOut:
    name: str
    reason: str


def members_fetch(context: LtiContext) -> list[dict]:
    """The context's members, from the LMS (a client-credentials token, then the NRPS pages); none are asked for
    from a deployment or registration an operator switched off."""
    if not (context.deployment.is_active and context.deployment.registration.is_active):
        raise LmsUnavailable("This LMS is switched off in LabQueue: an operator switches it on again to use it.")
    link = context.resource_links.order_by("-datetime_modified").first()
    try:
        service = NamesRolesProvisioningService(
            LmsServiceConnector(context.deployment.registration.to_registration()),
            {"context_memberships_url": context.memberships_url},
        )
        return service.get_members(resource_link_id=link.id_on_platform if link else None)
    except (LtiException, RequestException, ValueError, KeyError) as error:
        raise LmsUnavailable(f"The LMS did not give the course's members: {error}") from None
    except Key.DoesNotExist:
        raise LmsUnavailable("LabQueue has no signing key yet: an operator runs manage.py rotate_keys.") from None


def member_netid(member: dict, *, claim: str, launched: dict[str, str]) -> str:
    name, _, key = claim.partition("#")
    if name == LIS and key == "person_sourcedid":
        netid = claim_value({LIS: {key: member.get("lis_person_sourcedid")}}, claim)
    else:
        netid = next(filter(None, (claim_value(message, claim) for message in member.get("message", []))), "")
    return netid or launched.get(member.get("user_id", ""), "")


def roster_csv(context: LtiContext, members: list[dict]) -> tuple[str, list[MemberLeftOut]]:
    """The members as a roster CSV (netid, email, name, role), and those left out with why."""
    identity = getattr(context.deployment.registration, "identity", None)
    launched = dict(
        LtiUser.objects.filter(registration=context.deployment.registration, auth_user__isnull=False).values_list(
            "sub", "auth_user__netid"
        )
    )
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["netid", "email", "name", "role"])
    left_out = []
    for member in members:
        name = member.get("name") or member.get("user_id", "")
        if member.get("status", "Active") != "Active":
            continue
        netid = member_netid(member, claim=identity.claim, launched=launched) if identity else ""
        role = course_role(member.get("roles"))
        if not netid:
            left_out.append(MemberLeftOut(name, "no campus identity (netid): not added"))
        elif role is None:
            left_out.append(MemberLeftOut(name, "a role LabQueue has no course role for"))
        else:
            writer.writerow([netid, member.get("email", ""), member.get("name", ""), role])
    return out.getvalue(), left_out


def roster_sync_apply(*, link: CourseLink) -> str:
    """Apply the LMS's member list to the linked course as a confirmed preview would (the CSV import's rules: adds,
    role changes, drops; a drop never deletes jobs or usage). The course's instructors are never dropped by
    the schedule, and a member list that would lower one is not applied (an instructor does that on the page).
    Records and logs what it did; returns it."""
    course, context = link.course, link.context
    keep = frozenset(
        Enrollment.objects.filter(course=course, role=Role.INSTRUCTOR).values_list("user__netid", flat=True)
    ) - {None}
    if LtiContext.objects.filter(course_link__course=course).exclude(memberships_url="").count() != 1:
        outcome = "Not applied: the course is linked to several LMS courses; use the CSV import."
    else:
        outcome = _roster_sync_outcome(course, context, keep)
    CourseLink.objects.filter(pk=link.pk).update(roster_synced_at=timezone.now(), roster_sync_outcome=outcome)
    logger.info("Scheduled roster sync of %s from %s: %s", course.slug, context, outcome)
    return outcome


def _roster_sync_outcome(course, context: LtiContext, keep: frozenset[str]) -> str:
    try:
        text, left_out = roster_csv(context, members_fetch(context))
    except LmsUnavailable as error:
        return f"Not applied: {error}"
    plan = roster_plan(text, roster_current(course=course), keep=keep)
    if not plan.ok:
        return "Not applied: " + " ".join(str(error) for error in plan.errors)
    if not plan.has_changes:
        return "Nothing to change: the roster matched the LMS."
    try:
        outcome, plan = roster_confirm(course=course, text=text, digest=plan.digest(), keep=keep, actor=None)
    except ValidationError as error:
        return "Not applied: " + " ".join(error.messages)
    if outcome != "applied":
        return "Not applied: the roster changed while it was read; the next sync tries again."
    return f"Applied: {len(plan.adds)} added, {len(plan.role_changes)} role changes, {len(plan.drops)} dropped" + (
        f"; {len(left_out)} members of the LMS left out (no campus identity or no course role)." if left_out else "."
    )
