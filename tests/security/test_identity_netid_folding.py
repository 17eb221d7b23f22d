"""A netid that only becomes another one by case folding is refused, at SSO and in a roster: the Kelvin sign
(U+212A) lowercases to an ASCII "k", so "\u212astudent" would otherwise sign in as, or enrol, "kstudent"."""

import pytest
from django.contrib.auth import get_user_model

from courses.models import Enrollment
from portal import sso
from tests.courses.test_roster import upload

User = get_user_model()

KELVIN = "\u212a"


@pytest.mark.parametrize("name", [f"{KELVIN}student@example.edu", f"student{KELVIN}@example.edu"])
def test_an_sso_name_with_the_kelvin_sign_is_refused_not_folded_into_an_ascii_netid(name):
    rules = sso.SsoRules(netid_pattern=r"(?i)^([^@]+)@example\.edu$")
    trust = sso.IdpTrust(netid_scopes=frozenset({"example.edu"}))

    with pytest.raises(sso.IdentityRefused, match="cannot be a cluster user name"):
        sso.identity_from_claims(sso.canonical_claims({"eppn": name}), rules, trust)
    assert sso.identity_from_claims(sso.canonical_claims({"eppn": "KStudent@example.edu"}), rules, trust).netid == (
        "kstudent"
    ), "an ASCII name in capitals is still folded"


def test_a_roster_row_with_the_kelvin_sign_is_refused_and_enrols_nobody(client, course, instructor):
    client.force_login(instructor)

    preview = upload(client, f"netid,email,name,role\n{KELVIN}student,kelvin@example.edu,Kay Student,student\n")

    assert preview.status_code == 400
    errors = [str(error) for error in preview.context["plan"].errors]
    assert len(errors) == 1 and errors[0].startswith("Line 2:"), errors
    assert not User.objects.filter(netid="kstudent").exists()
    assert not Enrollment.objects.filter(course=course, user__netid__iexact="kstudent").exists()
