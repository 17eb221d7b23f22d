"""Survivors per module after `mutmut run` (what `make mutate` prints).

Reads mutmut's own result files (mutants/**/*.py.meta). A surviving mutant listed in
tests/mutation/equivalent.txt (name, then the reason it changes no behaviour) counts as
equivalent, not as a survivor. Exit status 1 when a module is over its survivor budget.

    .venv/bin/python scripts/mutation_report.py --lanes MODULE RESULTS.jsonl...

does the same for the results of scripts/mutate_lab.py (one or more lanes, e.g. one on the lab and one without
the cluster): every mutant the module has now, killed in some lane, listed as equivalent, survived, or not run.
A result judged on an earlier version of its function (the runner records a digest of it) does not count.
"""

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from mutmut.stats import status_by_exit_code

EQUIVALENT_FILE = Path("tests/mutation/equivalent.txt")
# Modules where no mutant may survive (files and directories, dispatch, transitions, auth): job_transition lives in
# jobs/lifecycle.py, a job's staged uploads in jobs/staging.py (both once part of services and workdir).
NO_SURVIVORS = ("workdir", "staging", "files", "dispatch", "services", "lifecycle", "transitions", "auth", "models")
BUDGET = 0.10  # at most 10% survivors elsewhere


def equivalents() -> dict[str, str]:
    known = {}
    if EQUIVALENT_FILE.exists():
        for line in EQUIVALENT_FILE.read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                name, _, reason = line.partition(" ")
                known[name] = reason.strip()
    return known


def results() -> dict[str, dict[str, str]]:
    """module path -> mutant name -> status"""
    found = {}
    for meta in sorted(Path("mutants").rglob("*.py.meta")):
        data = json.loads(meta.read_text())
        module = str(meta.relative_to("mutants")).removesuffix(".meta")
        found[module] = {name: status_by_exit_code[code] for name, code in data["exit_code_by_key"].items()}
    return found


def main() -> int:
    known = equivalents()
    over = []
    print(
        f"{'module':40} {'mutants':>7} {'killed':>6} {'timeout':>7} {'equiv':>5} {'survived':>8} {'no tests':>8}"
        f" {'other':>5}  share"
    )
    all_survivors = []
    for module, statuses in results().items():
        counts = Counter()
        for name, status in statuses.items():
            if status == "survived" and name in known:
                status = "equivalent"
            counts[status] += 1
            if status in ("survived", "no tests"):
                all_survivors.append((module, name, status))
        total = len(statuses)
        tested = total - counts["equivalent"] - counts["not checked"]
        bad = counts["survived"] + counts["no tests"]
        share = bad / tested if tested else 0.0
        other = total - sum(counts[k] for k in ("killed", "timeout", "equivalent", "survived", "no tests"))
        strict = any(Path(module).stem.startswith(word) for word in NO_SURVIVORS)
        limit = 0 if strict else BUDGET
        flag = "  OVER" if share > limit else ""
        # A mutant that only ran out of time is a timeout, not a kill: no test failed on it (it may loop, or
        # the tests may just be slow under it).
        row = (
            total,
            counts["killed"],
            counts["timeout"],
            counts["equivalent"],
            counts["survived"],
            counts["no tests"],
            other,
        )
        print(f"{module:40} " + " ".join(f"{value:8}" for value in row) + f"  {share:5.1%}{flag}")
        if flag:
            over.append(module)
    generated = {name for statuses in results().values() for name in statuses}
    stale = sorted(set(known) - generated)
    if stale:
        # A name no mutant has any more: the source changed and mutmut numbered its mutants anew, so the
        # line may now excuse a different mutant. Find the mutant its reason describes and rename the line.
        print(f"\n{EQUIVALENT_FILE} lists {len(stale)} name(s) that no mutant has now:")
        for name in stale:
            print(f"  {name}")
    if all_survivors:
        print("\nSurvivors (show one with: .venv/bin/mutmut show NAME):")
        for _module, name, status in all_survivors:
            print(f"  {name}  [{status}]")
    if any(status == "no tests" for _module, _name, status in all_survivors):
        # mutmut collects which tests reach which function once, then only for new tests: a function that is
        # new (or was a decorated one) has no test in mutants/mutmut-stats.json until that file is removed.
        print("\nA mutant with no tests may be in a function that is new since mutants/mutmut-stats.json was")
        print("written: remove that file (in the run's directory) and run again to collect which tests reach it.")
    return 1 if over else 0


def lanes(module: str, files: list[Path]) -> int:
    """The mutants of `module` as scripts/mutate_lab.py's result files judged them (exit 1: a survivor where
    none may survive, as in the report of `make mutate`)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import mutate_lab  # libcst and mutmut's mutation code, with the decorators patch it installs

    versions = mutate_lab.function_versions(module)
    judged: dict[str, set[int]] = {}
    earlier = 0
    for file in files:
        for line in file.read_text().splitlines():
            result = json.loads(line)
            if not mutate_lab.judged_now(result, versions):
                earlier += 1
                continue
            judged.setdefault(result["mutant"], set()).add(result["exit"])
    known, counts, survivors, missing = equivalents(), Counter(), [], []
    for name in mutate_lab.mutants(module):
        codes = judged.get(name, set())
        if 1 in codes:
            counts["killed"] += 1
        elif name in known:
            counts["equivalent"] += 1
        elif 0 in codes:
            counts["survived"] += 1
            survivors.append(name)
        else:
            counts["not run" if not codes else "other"] += 1
            missing.append(f"{name} {sorted(codes) or ''}".strip())
    columns = ("killed", "equivalent", "survived", "not run", "other")
    print(f"{'module':40} " + " ".join(f"{column:>10}" for column in ("mutants", *columns)))
    row = [sum(counts.values())] + [counts[column] for column in columns]
    print(f"{module:40} " + " ".join(f"{value:10}" for value in row))
    if earlier:
        print(f"\n{earlier} result(s) were judged on an earlier version of their function and do not count.")
    for title, names in (("Survivors", survivors), ("Not run, or no test failed nor passed", missing)):
        if names:
            print(f"\n{title}:")
            for name in names:
                print(f"  {name}")
    strict = any(Path(module).stem.startswith(word) for word in NO_SURVIVORS)
    return 1 if survivors and strict else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lanes", nargs="+", metavar=("MODULE", "RESULTS"), help="scripts/mutate_lab.py's results")
    arguments = parser.parse_args()
    if arguments.lanes and len(arguments.lanes) < 2:
        parser.error("--lanes needs a module and at least one results file")
    sys.exit(lanes(arguments.lanes[0], [Path(name) for name in arguments.lanes[1:]]) if arguments.lanes else main())
