"""Mutants of one module run against a lab cluster, one at a time, with a chosen list of tests (killers first).

    .venv/bin/python scripts/mutate_lab.py jobs/dispatch.py --tests LIST --out RESULTS.jsonl [--tree DIR] GLOB...

`make mutate` learns which tests reach each function by running the whole suite once under mutmut (most of an
hour on the lab), and mutmut's trampolines do not reach code that sudo or a fresh interpreter runs. This runner
needs neither: it writes each mutant of MODULE (mutmut's own mutations, decorated functions included, see
scripts/mutmut_decorators.py) as a whole file into a copy of the tree (DIR, default .mutate-lab/), runs the
tests in LIST there (one test id or file per line, `#` comments) with `-x`, and appends one line per mutant to
RESULTS: its name, a digest of its function's source, pytest's exit status (1 with a failed test: killed; 0:
survived), the test that failed, and the seconds it took. Tests that killed a mutant of the same function run
first. A mutant already in RESULTS for the same source of its function is skipped, so a run resumes (a function
that changed runs again); touching RESULTS.pause stops it between two mutants. `scripts/mutation_report.py
--lanes MODULE RESULTS...` counts every mutant of the module as one or more lanes judged it. Before each mutant
the jobs and reservations left on the clusters lab and lab2 are removed (not with --no-cluster, for a list of
tests that leave the clusters alone, run with LABQUEUE_TESTS_NO_CLUSTER=1 beside a lane on the cluster).

The database, broker and cluster are those of the environment (DATABASE_URL, LABQUEUE_REDIS_URL, and for the
Slurm 24.11 cluster the variables of `make test-slurm24`): give a run beside `make test` its own. GLOBs are
fnmatch patterns over mutant names, e.g. 'jobs.dispatch.x_local_failure__mutmut_*'; a survivor may still be
killed by a test outside LIST, so read it and try the tests that should kill it before writing a new one.
"""

import argparse
import contextlib
import fnmatch
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import libcst as cst

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import mutmut_decorators  # noqa: E402
from mutmut.mutation.diff_apply import find_top_level_function_or_method  # noqa: E402
from mutmut.mutation.file_mutation import mutate_file_contents  # noqa: E402

mutmut_decorators.install()  # functions under plain decorators (@transaction.atomic, @property) are mutated too


def _mutated(module: str, source: str):
    """mutmut's mutants of the module. mutmut reads its settings from pyproject.toml: in the checkout, from anywhere."""
    with contextlib.chdir(ROOT):
        return mutate_file_contents(module, source, None, None)


def mutants(module: str) -> dict[str, str]:
    """Each mutant's name (as mutmut names it) and the whole module's source with that mutant applied."""
    source = (ROOT / module).read_text()
    mutated = _mutated(module, source)
    tree, original = cst.parse_module(mutated.code), cst.parse_module(source)
    prefix = module.removesuffix(".py").replace("/", ".")
    found = {}
    for name in mutated.mutant_names:
        function = name.split("__mutmut_")[0]
        plain = function.split("ǁ")[-1] if "ǁ" in function else function.removeprefix("x_")
        mutant, target = (
            find_top_level_function_or_method(tree, name),
            find_top_level_function_or_method(original, plain),
        )
        # The mutant keeps the original's decorators (mutmut writes its copies without them).
        replaced = mutant.with_changes(name=cst.Name(plain), decorators=target.decorators)
        found[f"{prefix}.{name}"] = original.deep_replace(target, replaced).code
    return found


def function_versions(module: str) -> dict[str, str]:
    """A digest of each function's source, by the name its mutants carry (e.g. x_job_submit, xǁJobǁcan_cancel):
    a result recorded under another digest was judged on an earlier version of the function."""
    source = (ROOT / module).read_text()
    original, versions = cst.parse_module(source), {}
    for name in _mutated(module, source).mutant_names:
        function = name.split("__mutmut_")[0]
        if function not in versions:
            plain = function.split("ǁ")[-1] if "ǁ" in function else function.removeprefix("x_")
            node = find_top_level_function_or_method(original, plain)
            versions[function] = hashlib.sha256(cst.Module([]).code_for_node(node).encode()).hexdigest()[:16]
    return versions


def function_of(mutant: str) -> str:
    """The function a mutant's name belongs to, as function_versions names it (x_tail, xǁJobFileǁlinkable)."""
    return mutant.split("__mutmut_")[0].split(".")[-1]


def judged_now(result: dict, versions: dict[str, str]) -> bool:
    """Whether a result was judged on its function's present source (one written before results recorded the
    source's digest counts)."""
    now = versions.get(function_of(result["mutant"]))
    return result.get("version", now) == now


def copy_tree(tree: Path) -> None:
    """The tree as git sees it (tracked and untracked files, nothing ignored), readable by the service account."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True
    ).stdout.splitlines()
    for name in listed:
        if (ROOT / name).is_file():
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, tree / name)
    for folder in [tree, *tree.rglob("*")]:
        if folder.is_dir():
            folder.chmod(0o755)


def clean_clusters() -> None:
    """Cancel the jobs and delete the reservations a mutant may have left on lab and lab2."""
    bin_dir = os.environ.get("LABQUEUE_SLURM_BIN_DIR", "/usr/bin")
    for cluster in ("lab", "lab2"):
        queue = subprocess.run(
            [f"{bin_dir}/squeue", "-M", cluster, "-h", "-o", "%i"], capture_output=True, text=True
        ).stdout.split()
        jobs = [job for job in queue if job.isdigit()]
        if jobs:
            subprocess.run([f"{bin_dir}/scancel", "-M", cluster, *jobs], capture_output=True)
        shown = subprocess.run(
            [f"{bin_dir}/scontrol", "-M", cluster, "show", "res", "-o"], capture_output=True, text=True
        ).stdout
        for reservation in re.findall(r"ReservationName=(\S+)", shown):
            subprocess.run([f"{bin_dir}/scontrol", "-M", cluster, "delete", f"reservation={reservation}"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("module")
    parser.add_argument("globs", nargs="+")
    parser.add_argument("--tests", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--tree", type=Path, default=ROOT / ".mutate-lab")
    parser.add_argument(
        "--no-cluster", action="store_true", help="the tests leave the clusters alone: clean nothing between mutants"
    )
    args = parser.parse_args()
    tests = [line.strip() for line in args.tests.read_text().splitlines() if line.strip() and line[0] != "#"]
    results = [json.loads(line) for line in args.out.read_text().splitlines()] if args.out.exists() else []
    versions = function_versions(args.module)
    done = {result["mutant"] for result in results if judged_now(result, versions)}
    killers: dict[str, list[str]] = {}
    for result in results:
        if result["killer"]:
            killers.setdefault(result["mutant"].split("__mutmut_")[0], []).append(result["killer"])
    copy_tree(args.tree)
    target = args.tree / args.module
    original = target.read_text()
    selected = {
        name: code
        for name, code in mutants(args.module).items()
        if any(fnmatch.fnmatch(name, glob) for glob in args.globs)
    }
    try:
        for name, code in selected.items():
            if name in done:
                continue
            if args.out.with_name(args.out.name + ".pause").exists():
                print("paused")
                break
            function = name.split("__mutmut_")[0]
            first = list(dict.fromkeys(reversed(killers.get(function, []))))
            if not args.no_cluster:
                clean_clusters()
            target.write_text(code)
            started = time.monotonic()
            # In the order given (pytest-randomly would shuffle the killers away from the front).
            argv = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
            argv += ["--no-cov", "--reuse-db"]
            run = subprocess.run(
                argv + first + [test for test in tests if test not in first],
                cwd=args.tree,
                capture_output=True,
                text=True,
            )
            target.write_text(original)
            failed = re.findall(r"^(?:FAILED|ERROR) (\S+)", run.stdout, re.M)
            killer = failed[0] if run.returncode == 1 and failed else None
            result = {
                "mutant": name,
                "version": versions[function_of(name)],
                "exit": run.returncode,
                "killer": killer,
                "seconds": round(time.monotonic() - started, 1),
            }
            if killer:
                killers.setdefault(function, []).append(killer)
            with args.out.open("a") as out:
                out.write(json.dumps(result) + "\n")
            print(name, "killed" if killer else f"exit {run.returncode}", killer or "", result["seconds"], flush=True)
    finally:
        target.write_text(original)
        if not args.no_cluster:
            clean_clusters()
    return 0


if __name__ == "__main__":
    sys.exit(main())
