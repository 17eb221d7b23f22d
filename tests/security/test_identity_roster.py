"""A roster import never names root, a system account or a denied name, and never creates a credential."""

from django.contrib.auth import get_user_model

from courses.models import Enrollment
from tests.courses.test_roster import ROSTER_URL, confirm, upload

User = get_user_model()


def test_a_roster_naming_root_a_system_account_or_a_denied_name_is_refused_row_by_row(client, course, instructor):
    client.force_login(instructor)
    text = (
        "netid,email,name,role\n"
        "student4,student4@example.edu,Pat Four,student\n"
        "root,mallory@attacker.example,Root,student\n"
        "daemon,mallory@attacker.example,Daemon,student\n"
        "nobody,mallory@attacker.example,Nobody,ta\n"
    )

    preview = upload(client, text)

    assert preview.status_code == 400
    assert [str(error) for error in preview.context["plan"].errors] == [
        "Line 3: “root” is a reserved account on the cluster; the portal never runs anything as it.",
        "Line 4: “daemon” is a system account on the cluster (uid 1); the portal never runs anything as it.",
        "Line 5: “nobody” is a reserved account on the cluster; the portal never runs anything as it.",
    ]
    assert preview.context["confirm"] is None, "nothing to confirm"
    assert "reserved account" in preview.content.decode()
    assert not User.objects.filter(netid__in=["student4", "root", "daemon", "nobody"]).exists()


def test_a_confirmation_forged_with_root_applies_nothing(client, course, instructor):
    """The confirm step parses the CSV again: a digest made for another text, or for this one, cannot carry root in."""
    client.force_login(instructor)
    preview = upload(client, "netid,email,name,role\nstudent4,s4@example.edu,Pat Four,student\n")
    digest = preview.context["confirm"].initial["digest"]
    forged = "netid,email,name,role\nroot,mallory@attacker.example,Root,student\n"

    response = client.post(ROSTER_URL, {"csv_text": forged, "digest": digest, "confirm": "1"})

    assert response.status_code == 400
    assert not User.objects.filter(netid="root").exists()
    assert not Enrollment.objects.filter(course=course, user__netid="root").exists()


def test_a_roster_import_creates_people_without_any_credential(client, course, instructor):
    client.force_login(instructor)
    preview = upload(client, "netid,email,name,role\nstudent4,mallory@attacker.example,Pat Four,student\n")

    assert confirm(client, preview).status_code == 302

    newcomer = User.objects.get(netid="student4")
    assert not newcomer.has_usable_password()
    assert newcomer.socialaccount_set.count() == 0
