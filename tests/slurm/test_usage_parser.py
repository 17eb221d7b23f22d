"""What finished jobs used, folded from sacct's job and step lines (slurm.usage), on output captured from the
lab cluster (tests/slurm/captured/22.05/sacct-usage.txt: see the notes at its top)."""

from pathlib import Path

import pytest

from slurm.usage import JobUsage, cpu_time_seconds, parse_usage

CAPTURED = Path(__file__).parent / "captured"


def captured(name: str) -> str:
    lines = (CAPTURED / name).read_text().splitlines(keepends=True)
    return "".join(line.replace("^_", "\x1f") for line in lines if not line.startswith("#"))


def test_each_job_of_the_capture_gets_its_cpu_time_and_peak_memory_from_its_steps():
    usage = parse_usage(captured("22.05/sacct-usage.txt"))

    assert usage == {
        # One CPU spun for 4 s while holding 50 MB (python3 itself adds some).
        "1124": JobUsage(job_id="1124", cpu_seconds=4.027, max_rss_mb=59),
        # Its steps never sampled memory: not measured, not zero.
        "1125": JobUsage(job_id="1125", cpu_seconds=0.009, max_rss_mb=None),
        "1126": JobUsage(job_id="1126", cpu_seconds=0.002, max_rss_mb=3),
        # Cancelled while held: no step, nothing used.
        "1127": JobUsage(job_id="1127", cpu_seconds=0.0, max_rss_mb=None),
    }
    # The lab cluster does not account gres/gpuutil or gres/gpumem: GPU figures are not measured there.
    assert all(job.gpu_util_percent is None and job.gpu_mem_mb is None for job in usage.values())


def test_gpu_utilisation_and_memory_are_read_where_the_cluster_accounts_them():
    """The TRESUsageInTot of a cluster with AcctGatherGpu (NVML): not capturable on the lab cluster, whose GPUs
    are not real, so written as Slurm documents it; the largest of the steps is the job's."""
    stdout = (
        "9\x1f00:10:00\x1f\x1f\n"
        "9.batch\x1f00:04:00\x1f2048M\x1fcpu=00:04:00,gres/gpumem=3000M,gres/gpuutil=35,mem=2048M\n"
        "9.0\x1f00:06:00\x1f1024M\x1fcpu=00:06:00,gres/gpumem=5G,gres/gpuutil=80,mem=1024M\n"
    )

    assert parse_usage(stdout)["9"] == JobUsage(
        job_id="9", cpu_seconds=600.0, max_rss_mb=2048, gpu_util_percent=80.0, gpu_mem_mb=5120
    )


def test_lines_that_are_not_sacct_records_are_skipped():
    stdout = "sacct: error: something\n1\x1f00:01.500\x1f\x1f\n1.batch\x1f00:01.500\x1f10M\x1fmem=10M\n"

    assert parse_usage(stdout) == {"1": JobUsage(job_id="1", cpu_seconds=1.5, max_rss_mb=10)}


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("00:00.004", 0.004), ("00:04.027", 4.027), ("01:02:03", 3723.0), ("1-00:00:00", 86400.0), ("", 0.0)],
)
def test_totalcpu_as_sacct_prints_it(text, seconds):
    assert cpu_time_seconds(text) == seconds
