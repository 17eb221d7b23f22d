"""Federation output, from edits of captured real output (the states and ids the lab's federation printed):
the origin's REVOKED copy of a federated job is never the job's row or record, and a federation-wide id names
its origin cluster's id and the job's number there."""

from __future__ import annotations

from slurm import federated_job_id_parts, parsers

from .test_slurm_parsers_odd_output import SQUEUE, sacct_line, with_field

FEDERATED = "134217731"  # lab2 (cluster id 2) << 26, plus its job 3


def test_a_revoked_row_is_left_out_of_squeues_answer() -> None:
    running = SQUEUE.splitlines()[0]
    revoked = running.replace("\x1fRUNNING\x1f", "\x1fREVOKED\x1f").replace("141", "142", 1)
    assert "\x1fREVOKED\x1f" in revoked

    jobs = parsers.parse_squeue(running + "\n" + revoked + "\n")

    assert set(jobs) == {"141"}


def test_a_revoked_record_is_never_the_jobs_record_in_saccts_answer() -> None:
    ran = with_field(with_field(sacct_line("8"), "JobID", FEDERATED), "NodeList", "gpu3")
    origin_copy = with_field(with_field(ran, "State", "REVOKED"), "NodeList", "None assigned")

    assert parsers.parse_sacct(origin_copy + "\n" + ran + "\n")[FEDERATED].node_list == "gpu3"
    assert parsers.parse_sacct(ran + "\n" + origin_copy + "\n")[FEDERATED].node_list == "gpu3"
    assert parsers.parse_sacct(origin_copy + "\n") == {}


def test_a_federation_wide_id_is_the_origin_clusters_id_and_its_job_number() -> None:
    assert federated_job_id_parts("67108888") == (1, 24)
    assert federated_job_id_parts(FEDERATED) == (2, 3)
    assert federated_job_id_parts("67108888_4") == (1, 24)
    assert federated_job_id_parts("2875") is None
    assert federated_job_id_parts("") is None
