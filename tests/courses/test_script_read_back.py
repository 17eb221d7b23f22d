"""The template body a job ran, read back from its script, and the diff shown to course staff
(courses.scripting)."""

import pytest

from courses.scripting import BODY_MARKER, PARAMETERS_LINE, Resources, render_script, script_body, script_diff

RESOURCES = Resources(gpus=0, cpus=1, mem_mb=500, minutes=5)


def test_a_script_without_a_dataset_or_a_label_has_no_line_for_either():
    script = render_script(body="python train.py\n", values={"EPOCHS": 5}, resources=RESOURCES)

    assert script == (
        "#!/bin/bash\n"
        "#SBATCH --nodes=1\n"
        "#SBATCH --ntasks=1\n"
        "#SBATCH --cpus-per-task=1\n"
        "#SBATCH --mem=500M\n"
        "#SBATCH --time=00:05:00\n"
        "# Parameters, checked by the portal:\n"
        "export EPOCHS=5\n"
        "# ---- assignment script ----\n"
        "python train.py\n"
    )


@pytest.mark.parametrize(
    "body",
    [
        "ls -X\n",
        "echo done  \n",
        "echo start\n\techo indented\t\n",
        f"echo one\n{BODY_MARKER}\necho two\n",
        f"echo one\n{PARAMETERS_LINE}\n{BODY_MARKER}\necho two\n",
    ],
)
def test_the_body_a_job_ran_is_read_back_exactly_from_its_script(body):
    script = render_script(body=body, values={"EPOCHS": 5}, resources=RESOURCES, label="CS101: CNN")

    assert script_body(script) == body


@pytest.mark.parametrize("label", [BODY_MARKER.removeprefix("# "), "Lab 2\n# ---- assignment script ----\necho early"])
def test_a_label_that_reads_like_the_body_marker_is_not_read_back_as_the_body(label):
    script = render_script(body="python train.py\n", values={}, resources=RESOURCES, label=label)

    assert script_body(script) == "python train.py\n"


@pytest.mark.parametrize("script", ["#!/bin/bash\npython train.py\n", f"#!/bin/bash\n{PARAMETERS_LINE}\nexport A=1\n"])
def test_a_script_the_portal_did_not_write_holds_no_body(script):
    assert script_body(script) is None


def test_the_diff_for_course_staff_shows_the_changed_line_between_the_two_labels():
    diff = script_diff(
        "python train.py\necho done\n",
        "python train.py --epochs 5\necho done\n",
        old_label="ran by job 12",
        new_label="assignment now",
    )

    assert diff == (
        "--- ran by job 12\n"
        "+++ assignment now\n"
        "@@ -1,2 +1,2 @@\n"
        "-python train.py\n"
        "+python train.py --epochs 5\n"
        " echo done"
    )
