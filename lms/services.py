"""Writes of the LMS integration (web side: lms.views and the lms_register command)."""

from __future__ import annotations

import logging

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from lti_tool.models import LtiContext, LtiDeployment, LtiRegistration, LtiUser

from courses.models import Course, Enrollment, Role
from courses.services import enrollment_set
from lms.models import CourseLink, RegistrationIdentity
from lms.tasks import line_items_create
from portal.identity import netid_refusal

logger = logging.getLogger(__name__)

ROLE_RANK = {Role.STUDENT: 1, Role.TA: 2, Role.INSTRUCTOR: 3}


def person_for_netid(*, netid: str):
    """The portal person a launch signs in, matched on the netid alone; PermissionDenied (with the words a person
    reads) when there is none, when the netid is one the portal never acts as, or when the account has staff
    rights (an LMS never vouches for those: operators sign in through the portal)."""
    if not netid:
        raise PermissionDenied(
            "Your LMS did not send your campus identity (netid), so LabQueue cannot tell who you are. Sign in to "
            "LabQueue directly, or ask the LMS administrator to send the campus identity with the launch."
        )
    if reason := netid_refusal(netid):
        raise PermissionDenied(reason)
    person = get_user_model().objects.filter(netid=netid, is_active=True).first()
    if person is None:
        raise PermissionDenied(
            f"LabQueue has no account for “{netid}” yet. Sign in to LabQueue once with your campus login, or ask "
            "your instructor to add you to the course's roster; then launch again from the LMS."
        )
    if person.is_staff or person.is_superuser:
        raise PermissionDenied("Accounts with operator rights sign in through LabQueue's own sign-in page.")
    return person


def lti_user_link(*, lti_user: LtiUser, person) -> None:
    """Remember who a verified launch's LMS user (its `sub`) is, for roster syncs whose members carry no netid."""
    if lti_user.auth_user_id != person.pk:
        LtiUser.objects.filter(pk=lti_user.pk).update(auth_user=person)


@transaction.atomic
def lms_enrollment_grant(*, user, course: Course, role: str) -> Enrollment | None:
    """The role the LMS gives in a linked course, never lowering one LabQueue already gives (drops are the
    roster's work)."""
    current = Enrollment.objects.filter(user=user, course=course).first()
    if current is not None and ROLE_RANK[Role(current.role)] >= ROLE_RANK[Role(role)]:
        return current
    return enrollment_set(user=user, course=course, role=role)


@transaction.atomic
def course_link_create(*, context: LtiContext, course: Course, actor) -> CourseLink:
    """Link an LMS course to a LabQueue course the actor teaches; an LMS course is linked once."""
    if not Enrollment.objects.filter(user=actor, course=course, role=Role.INSTRUCTOR).exists():
        raise PermissionDenied("Only an instructor of the LabQueue course can link it.")
    if not context.id_on_platform:  # an LMS-wide place, not a course: it would stand for everyone of the LMS
        raise ValidationError("Open LabQueue from a course of the LMS to link it; this launch named no course.")
    if CourseLink.objects.filter(context=context).exists():
        raise ValidationError("This LMS course is already linked to a LabQueue course.")
    link = CourseLink.objects.create(context=context, course=course, linked_by=actor)
    transaction.on_commit(lambda: line_items_create.delay(context.pk))  # the assignments with a check
    return link


def roster_schedule_set(*, link: CourseLink, scheduled: bool, actor) -> None:
    """Turn the scheduled roster sync of an LMS link on or off; logged with who did it."""
    CourseLink.objects.filter(pk=link.pk).update(roster_sync_scheduled=scheduled)
    logger.info(
        "Scheduled roster sync of %s from %s turned %s by %s",
        link.course.slug,
        link.context,
        "on" if scheduled else "off",
        actor.netid or actor.username,
    )


@transaction.atomic
def registration_save(
    *,
    name: str,
    issuer: str,
    client_id: str,
    deployment_ids: list[str],
    keyset_url: str,
    auth_url: str,
    token_url: str,
    identity_claim: str,
) -> LtiRegistration:
    """Create or update a registration (keyed on issuer and client id) with its active deployments."""
    if not identity_claim or "email" in identity_claim.lower():
        raise ValidationError("Name the claim that carries the netid (never an e-mail claim).")
    registration, _ = LtiRegistration.objects.update_or_create(
        issuer=issuer,
        client_id=client_id,
        defaults={"name": name, "keyset_url": keyset_url, "auth_url": auth_url, "token_url": token_url},
    )
    RegistrationIdentity.objects.update_or_create(registration=registration, defaults={"claim": identity_claim})
    for deployment_id in deployment_ids:
        LtiDeployment.objects.update_or_create(
            registration=registration, deployment_id=deployment_id, defaults={"is_active": True}
        )
    return registration
