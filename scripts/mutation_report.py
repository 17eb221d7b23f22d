"""Survivors per module after `mutmut run` (what `make mutate` prints).

Reads mutmut's own result files (mutants/**/*.py.meta). A surviving mutant listed in
tests/mutation/equivalent.txt (name, then the reason it changes no behaviour) counts as
equivalent, not as a survivor. Exit status 1 when a module is over its survivor budget.
"""

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


if __name__ == "__main__":
    sys.exit(main())
