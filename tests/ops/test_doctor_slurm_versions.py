"""Which Slurm client releases doctor accepts for a controller: the same major release, or one up to two
major releases older (three from 24.11 on, Slurm's upgrade guide); never a newer one. Pure: no cluster."""

from ops.doctor import slurm_version_problem


def test_the_same_major_release_is_compatible_whatever_the_maintenance_release():
    assert slurm_version_problem(client="22.05.2", controller="22.05.8") == ""


def test_clients_up_to_two_major_releases_older_work_before_24_11():
    assert slurm_version_problem(client="22.05.8", controller="23.11.4") == ""
    assert slurm_version_problem(client="21.08.8", controller="23.11.4") == (
        "3 major releases older than the controller, which supports clients up to 2 older"
    )


def test_from_24_11_on_clients_up_to_three_major_releases_older_work():
    assert slurm_version_problem(client="23.11.10", controller="24.11.1") == ""
    assert slurm_version_problem(client="23.02.7", controller="24.11.1") == ""
    assert slurm_version_problem(client="22.05.8", controller="24.11.1").startswith("4 major releases older")


def test_a_client_newer_than_the_controller_is_not_supported():
    assert slurm_version_problem(client="23.02.1", controller="22.05.8") == (
        "newer than the controller, which Slurm does not support"
    )


def test_a_release_doctor_does_not_know_is_not_guessed():
    assert slurm_version_problem(client="26.05.1", controller="25.11.2") == (
        "doctor cannot tell whether 26.05 clients work with a 25.11 controller"
    )
