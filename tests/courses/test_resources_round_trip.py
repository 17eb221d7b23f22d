"""A job's resources as a dict and back (courses.scripting.Resources): what the retry form starts from."""

from courses.scripting import Resources


def test_resources_round_trip_through_their_dict():
    resources = Resources(gpus=2, cpus=4, mem_mb=8000, minutes=90)

    assert resources.as_dict() == {"gpus": 2, "cpus": 4, "mem_mb": 8000, "minutes": 90}
    assert Resources(**resources.as_dict()) == resources
