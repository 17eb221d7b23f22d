"""LabQueue's Slurm adapter: a narrow interface over sbatch, squeue, sacct, scancel.

Frozen dataclasses in and out, every command through :mod:`slurm.runner`,
typed errors that say whether a retry can help (SlurmUnavailable) or not
(SlurmRejected). Django settings are read when a function runs:
SLURM_RUN_AS_PREFIX, SLURM_COMMAND_TIMEOUT, SLURM_BIN_DIR. The state vocabulary (pending,
running, live, final and the portal outcome of each) is :mod:`slurm.states`. What finished
jobs used, folded from sacct's step lines: :mod:`slurm.usage`.

A plain Python package: it imports no LabQueue app, only django.conf.settings when a command runs.
"""

from .commands import accounting, cancel, find_by_name, queue, sbatch_path, submit
from .errors import SlurmError, SlurmMisconfigured, SlurmRejected, SlurmTimeout, SlurmUnavailable
from .records import AcctRecord, JobSpec, LiveJob, federated_job_id_parts
from .usage import JobUsage, job_usage

__all__ = [
    "AcctRecord",
    "JobSpec",
    "JobUsage",
    "LiveJob",
    "SlurmError",
    "SlurmMisconfigured",
    "SlurmRejected",
    "SlurmTimeout",
    "SlurmUnavailable",
    "accounting",
    "cancel",
    "federated_job_id_parts",
    "find_by_name",
    "job_usage",
    "queue",
    "sbatch_path",
    "submit",
]
