"""scripts/mutation_report.py on mutmut result files written here: what `make mutate` prints and its exit status.
Pure: no database, no cluster (the report only reads mutants/**/*.py.meta)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPORT = Path(__file__).resolve().parents[2] / "scripts" / "mutation_report.py"
#: mutmut's exit codes per status (mutmut.stats.status_by_exit_code).
KILLED, SURVIVED, TIMEOUT = 1, 0, 36


def report(tmp_path: Path, module: str, exit_codes: dict[str, int]) -> tuple[int, dict[str, str]]:
    """Run the report in `tmp_path` on one module's results; its exit status and {column: value} of its row
    (`over`: whether the row is flagged OVER its survivor budget)."""
    meta = tmp_path / "mutants" / f"{module}.meta"
    meta.parent.mkdir(parents=True)
    meta.write_text(json.dumps({"exit_code_by_key": exit_codes}))
    done = subprocess.run([sys.executable, str(REPORT)], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    header, row = done.stdout.splitlines()[:2]
    columns, values = header.replace("no tests", "no_tests").split(), row.split()
    over = values[-1] == "OVER"
    return done.returncode, {**dict(zip(columns, values[: len(columns)], strict=True)), "over": over}


def test_a_mutant_that_only_timed_out_is_counted_as_a_timeout_not_as_killed(tmp_path):
    codes = {"m__a": KILLED, "m__b": TIMEOUT, "m__c": TIMEOUT, "m__d": KILLED, "m__e": KILLED}

    status, row = report(tmp_path, "reports/queries.py", codes)

    assert (row["module"], row["mutants"], row["killed"], row["timeout"]) == ("reports/queries.py", "5", "3", "2")
    assert (row["survived"], row["no_tests"], row["other"], row["share"]) == ("0", "0", "0", "0.0%")
    assert status == 0 and not row["over"]


def test_timeouts_are_not_survivors_but_a_survivor_in_a_strict_module_is_over_budget(tmp_path):
    codes = {"m__a": TIMEOUT, "m__b": SURVIVED, "m__c": KILLED}

    status, row = report(tmp_path, "jobs/workdir.py", codes)

    assert (row["killed"], row["timeout"], row["survived"]) == ("1", "1", "1")
    assert row["share"] == "33.3%" and row["over"] and status == 1


@pytest.mark.parametrize("module", ["jobs/lifecycle.py", "jobs/staging.py"])
def test_a_survivor_in_the_status_transitions_or_the_staged_uploads_is_over_budget(tmp_path, module):
    codes = {f"m__{n}": KILLED for n in range(30)} | {"m__s": SURVIVED}

    status, row = report(tmp_path, module, codes)

    assert row["survived"] == "1" and row["over"] and status == 1
