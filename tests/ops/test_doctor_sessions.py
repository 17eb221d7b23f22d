"""doctor's check of interactive notebook sessions: the proxy's shared secret and the set-up line for jupyter."""

import pytest

from ops.doctor import FAIL, OK, WARN, doctor_run

pytestmark = pytest.mark.slurm  # doctor_run runs every check, Slurm's too


def _sessions_check():
    return next(result for result in doctor_run() if result.name == "notebook sessions")


def test_sessions_are_off_and_fine_while_no_assignment_is_interactive(settings, assignment):
    settings.LABQUEUE_INTERACTIVE_PROXY_SECRET = ""
    assert _sessions_check().status == OK


def test_an_interactive_assignment_without_the_proxy_secret_fails_and_says_what_to_set(settings, assignment):
    settings.LABQUEUE_INTERACTIVE_PROXY_SECRET = ""
    assignment.interactive = True
    assignment.save()
    result = _sessions_check()
    assert result.status == FAIL
    assert "no session ever opens" in result.detail
    assert "LABQUEUE_INTERACTIVE_PROXY_SECRET" in result.fix and "nginx" in result.fix


def test_a_short_secret_fails_and_an_empty_setup_line_warns(settings, assignment):
    assignment.interactive = True
    assignment.save()
    settings.LABQUEUE_INTERACTIVE_PROXY_SECRET = "short"
    assert _sessions_check().status == FAIL
    settings.LABQUEUE_INTERACTIVE_PROXY_SECRET = "x" * 40
    settings.LABQUEUE_INTERACTIVE_SETUP = ""
    result = _sessions_check()
    assert result.status == WARN and "module load" in result.fix
    settings.LABQUEUE_INTERACTIVE_SETUP = ". /opt/labqueue/jupyter/bin/activate"
    assert _sessions_check().status == OK
