"""What operators get: the setup page (staff only), the registration command, and the tool's JWKS."""

import pytest
from django.core.management import CommandError, call_command
from lti_tool.models import Key, LtiDeployment, LtiRegistration

from lms.models import RegistrationIdentity


def test_the_setup_page_gives_the_urls_the_canvas_json_and_the_moodle_fields(client, django_user_model, db):
    Key.objects.generate()
    operator = django_user_model.objects.create_user(username="op", netid="op1", is_staff=True)
    client.force_login(operator)
    page = client.get("/lms/setup/").content.decode()
    for url in ("/lms/jwks.json", "/lms/login/", "/lms/launch/"):
        assert f"http://testserver{url}" in page
    assert "Moodle" in page and "LtiDeepLinkingRequest" in page and "windowTarget" in page


def test_the_setup_page_is_for_operators_only(client, student):
    client.force_login(student)
    assert client.get("/lms/setup/").status_code == 302  # to the admin's sign-in, as other staff pages


def test_the_tool_publishes_its_active_keys_only(client, db):
    old, new = Key.objects.generate(), Key.objects.generate()
    Key.objects.filter(pk=old.pk).update(is_active=False)
    assert [key["kid"] for key in client.get("/lms/jwks.json").json()["keys"]] == [str(new)]


def test_keys_rotate_with_an_overlap(db):
    first = Key.objects.generate()
    call_command("rotate_keys", "--deactivate-after", "7")
    assert Key.objects.active().count() == 2  # the old key stays published until it is a week old
    assert Key.objects.active().latest() != first


def test_an_lms_is_registered_with_the_command(db):
    call_command(
        "lms_register",
        "--name",
        "Canvas",
        "--issuer",
        "https://canvas.instructure.com",
        "--client-id",
        "10000",
        "--deployment-id",
        "1:abc",
        "--deployment-id",
        "2:def",
        "--keyset-url",
        "https://canvas.example.edu/jwks",
        "--auth-url",
        "https://canvas.example.edu/auth",
        "--token-url",
        "https://canvas.example.edu/token",
        "--identity-claim",
        "https://purl.imsglobal.org/spec/lti/claim/lis#person_sourcedid",
    )
    registration = LtiRegistration.objects.get(issuer="https://canvas.instructure.com", client_id="10000")
    assert set(LtiDeployment.objects.filter(is_active=True).values_list("deployment_id", flat=True)) == {
        "1:abc",
        "2:def",
    }
    assert RegistrationIdentity.objects.get(registration=registration).claim.endswith("lis#person_sourcedid")


def test_an_email_claim_is_refused_as_the_identity(db):
    with pytest.raises(CommandError, match="never an e-mail"):
        call_command(
            "lms_register",
            "--name",
            "x",
            "--issuer",
            "https://x",
            "--client-id",
            "1",
            "--keyset-url",
            "https://x/k",
            "--auth-url",
            "https://x/a",
            "--token-url",
            "https://x/t",
            "--identity-claim",
            "email",
        )
    assert not LtiRegistration.objects.exists()
