"""A linked course's roster from the LMS (LTI Names and Role Provisioning Services), web side: lms.views.

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
from dataclasses import dataclass

from lti_tool.models import Key, LtiContext, LtiUser
from pylti1p3.exception import LtiException
from pylti1p3.names_roles import NamesRolesProvisioningService
from requests import RequestException

from lms.connector import LmsServiceConnector
from lms.launches import claim_value, course_role

LIS = "https://purl.imsglobal.org/spec/lti/claim/lis"


class LmsUnavailable(Exception):
    """The LMS did not give the member list (its words, for the page)."""


@dataclass(frozen=True)
class MemberLeftOut:
    name: str
    reason: str


def members_fetch(context: LtiContext) -> list[dict]:
    """The context's members, from the LMS (a client-credentials token, then the NRPS pages)."""
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
