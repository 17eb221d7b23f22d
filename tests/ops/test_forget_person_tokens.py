"""Forgetting a person deletes their API tokens: a script still holding one is refused (401) from then on."""

from api.models import PersonalToken
from api.services import token_create
from tests.api.conftest import call
from tests.service_account import manage_in_process


def test_forgetting_a_person_deletes_their_api_tokens_and_no_one_elses(client, student, classmate):
    text = token_create(owner=student, name="ci", scopes=["read:jobs"], course=None, days=30)[1]
    token_create(owner=classmate, name="ci", scopes=["read:jobs"], course=None, days=30)
    assert call(client, "get", "/api/v1/jobs", text).status_code == 200

    done = manage_in_process("forget_person", "student1")

    assert done.returncode == 0, done.stderr
    assert list(PersonalToken.objects.values_list("owner__username", flat=True)) == ["student2"]
    assert call(client, "get", "/api/v1/jobs", text).status_code == 401
