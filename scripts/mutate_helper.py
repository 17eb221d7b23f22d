"""Mutation testing of the job-directory helper's code, scripts/labqueue_jobdir.py (what `scripts/mutate --helper`
runs).

mutmut cannot reach the helper the way it reaches the portal: sudo runs it with `/usr/bin/python3 -IS`, the
system Python without the virtualenv or the site module, so mutmut's trampolines (which pick the mutant to run
inside one mutated copy of a module) never load. So each mutant is written here as a whole helper of its own,
made with mutmut's own mutation operators (module-level constants such as the open flags included), and the
tests that run the helper run once per mutant with LABQUEUE_TEST_JOBDIR_HELPER naming it: the test set-up
installs that module, compiled, beside the launcher the sudoers rule names (tests/helper_install.py). A mutant
is killed when a test fails. Results go to .mutate-helper/mutants/scripts/labqueue-jobdir.py.meta in mutmut's
format, and scripts/mutation_report.py reports them there like any module.

    scripts/mutate --helper --list                 every mutant's name and the line it changes
    scripts/mutate --helper 'labqueue-jobdir._write_one__*'   only the mutants whose names match

Run it alone on the lab (like `make mutate`): while it runs, the installed helper is a mutant.
"""

import fnmatch
import json
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from functools import partial
from pathlib import Path

from mutmut.mutation.file_mutation import create_mutations

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from tests.helper_install import jobdir_helper_install  # noqa: E402 (the checkout's tests package, put on the path)

HELPER = REPO / "scripts" / "labqueue_jobdir.py"
WORK = REPO / ".mutate-helper"
META = WORK / "mutants" / "scripts" / "labqueue-jobdir.py.meta"
#: The tests that run the helper: through the worker, the doctor's probe, the purge, and the helper alone.
HELPER_TESTS = (
    "tests/security/test_jobdir_provision.py",
    "tests/security/test_jobdir_submit.py",
    "tests/security/test_jobdir_remove.py",
    "tests/security/test_service_account_slurm_conf.py",
    "tests/security/test_worker_attacks.py",
    "tests/jobs/test_workdir_symlink.py",
    "tests/jobs/test_workdir_probe.py",
    "tests/jobs/test_purge_job_files.py",
)
#: mutmut's exit codes (mutmut.stats.status_by_exit_code): a test failed, none did, the run took too long.
KILLED, SURVIVED, TIMEOUT = 1, 0, 36
TIMEOUT_SECONDS = 900


def helper_mutants(code: str) -> dict[str, Callable[[], str]]:
    """name -> a function making that mutant's whole source, named like mutmut's: <function>__mutmut_<n>,
    numbered per function, `module` for module-level code."""
    module, mutations, _, _ = create_mutations(HELPER.name, code)
    numbers: Counter[str] = Counter()
    mutants = {}
    for mutation in mutations:
        outer = mutation.contained_by_top_level_function
        where = outer.name.value if outer is not None else "module"
        numbers[where] += 1
        mutants[f"labqueue-jobdir.{where}__mutmut_{numbers[where]}"] = partial(
            lambda m: module.deep_replace(m.original_node, m.mutated_node).code, mutation
        )
    return mutants


def changed_line(code: str, source: str) -> str:
    return next((b for a, b in zip(code.splitlines(), source.splitlines(), strict=False) if a != b), "").strip()


def mutant_run(name: str, source: str) -> tuple[int, str]:
    """Run the helper's tests with this mutant installed; mutmut's exit code for the outcome, and the test
    that failed on it."""
    path = WORK / "helpers" / f"{name}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source)
    env = {**os.environ, "LABQUEUE_TEST_JOBDIR_HELPER": str(path)}
    argv = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *HELPER_TESTS]
    try:
        done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        return TIMEOUT, ""
    if done.returncode not in (0, 1):  # an interrupted or broken run is not a kill
        raise SystemExit(f"{name}: the tests could not run (pytest exit {done.returncode})\n{done.stdout[-2000:]}")
    failed = next((line for line in done.stdout.splitlines() if line.startswith(("FAILED ", "ERROR "))), "")
    if done.returncode == 1 and "+ Timeout +" in done.stdout:  # pytest-timeout stopped a test: no test failed on it
        return TIMEOUT, failed
    return (KILLED if done.returncode == 1 else SURVIVED), failed


def main(args: list[str]) -> int:
    code = HELPER.read_text()
    mutants = helper_mutants(code)
    if args[:1] == ["--list"]:
        for name, source in mutants.items():
            print(f"{name}  {changed_line(code, source())}")
        return 0
    chosen = [name for name in mutants if not args or any(fnmatch.fnmatchcase(name, glob) for glob in args)]
    results = json.loads(META.read_text())["exit_code_by_key"] if META.exists() else {}
    # A name the helper's mutants no longer have is dropped; one not run yet is "not checked" (null).
    results = {name: results.get(name) for name in mutants}
    try:
        for name in chosen:
            start, source = time.monotonic(), mutants[name]()
            results[name], failed = mutant_run(name, source)
            META.parent.mkdir(parents=True, exist_ok=True)
            META.write_text(json.dumps({"exit_code_by_key": results}))
            outcome = {KILLED: "killed", SURVIVED: "SURVIVED", TIMEOUT: "timeout"}[results[name]]
            print(f"{name}: {outcome} ({time.monotonic() - start:.0f} s)  {changed_line(code, source)}", flush=True)
            if failed:
                print(f"    by {failed}", flush=True)
    finally:
        jobdir_helper_install()  # the checkout's own helper back
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
