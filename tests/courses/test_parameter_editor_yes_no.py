"""A yes/no parameter's default that is neither is refused on its field with what to write instead."""

import re

from courses.models import Assignment
from tests.courses.test_assignment_edit import create_url
from tests.courses.test_parameter_editor import assignment_data, rows


def field_errors(page: str, field: str) -> list[str]:
    """The messages listed under one field of the editor's first row, as an instructor reads them."""
    after = page.split(f'id="id_param-0-{field}"')[1].split('<div class="field">')[0]
    return re.findall(r"<li>(.*?)</li>", after)


def test_a_yes_no_default_that_is_neither_is_refused_saying_what_to_write(client, instructor, course):
    client.force_login(instructor)
    flag = {"name": "FLAG", "type": "bool", "default": "maybe"}

    response = client.post(create_url(), {**assignment_data(save="1"), **rows(flag)})

    assert response.status_code == 200
    assert field_errors(response.content.decode(), "default") == [
        "The default is not valid: Choose yes (true) or no (false)."
    ]
    assert not Assignment.objects.exists()
