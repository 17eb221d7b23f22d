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


# ---- --lanes: the results of scripts/mutate_lab.py ----

LANE_MODULE = "jobs/staging.py"  # small: 25 mutants, made by mutmut's own mutation code as the runner makes them


def lane_report(tmp_path: Path, results: list[dict]) -> tuple[int, str]:
    """Run `--lanes` in `tmp_path` on one results file holding `results`; its exit status and output."""
    lane = tmp_path / "lane.jsonl"
    lane.write_text("".join(json.dumps(result) + "\n" for result in results))
    argv = [sys.executable, str(REPORT), "--lanes", LANE_MODULE, str(lane)]
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout


def lane_row(output: str) -> dict[str, str]:
    header, row = output.splitlines()[:2]
    return dict(zip(header.replace("not run", "not_run").split(), row.split(), strict=True))


def section(output: str, title: str) -> list[str]:
    """The names listed under `title` in the report."""
    lines = output.split(f"\n{title}:\n", 1)[1].split("\n\n")[0].splitlines() if f"\n{title}:\n" in output else []
    return [line.split()[0] for line in lines]


@pytest.fixture
def lane_mutants(tmp_path) -> list[str]:
    """Every mutant of LANE_MODULE, as the report names those no lane ran."""
    _status, output = lane_report(tmp_path, [])
    return section(output, "Not run, or no test failed nor passed")


def killed(name: str) -> dict:
    return {"mutant": name, "exit": 1, "killer": "tests/x.py::test_x", "seconds": 1.0}


def test_the_lanes_report_names_the_survivor_and_the_mutant_no_lane_ran(tmp_path, lane_mutants):
    survivor, never_run, *others = lane_mutants
    results = [killed(name) for name in others] + [{"mutant": survivor, "exit": 0, "killer": None, "seconds": 9.0}]

    status, output = lane_report(tmp_path, results)

    row = lane_row(output)
    assert (row["mutants"], row["killed"], row["survived"], row["not_run"]) == (
        str(len(lane_mutants)),
        str(len(others)),
        "1",
        "1",
    )
    assert section(output, "Survivors") == [survivor]
    assert section(output, "Not run, or no test failed nor passed") == [never_run]
    assert status == 1, "a survivor in the staged uploads is over budget"


def test_a_kill_in_one_lane_counts_and_a_listed_equivalent_is_no_survivor(tmp_path, lane_mutants):
    equivalent, *others = lane_mutants
    (tmp_path / "tests" / "mutation").mkdir(parents=True)
    (tmp_path / "tests" / "mutation" / "equivalent.txt").write_text(f"{equivalent} the reason it changes nothing\n")
    survived_here = {"mutant": others[0], "exit": 0, "killer": None, "seconds": 9.0}  # and killed in the other lane

    status, output = lane_report(tmp_path, [survived_here] + [killed(name) for name in others])

    row = lane_row(output)
    assert (row["killed"], row["equivalent"], row["survived"], row["not_run"]) == (str(len(others)), "1", "0", "0")
    assert status == 0


def test_a_result_judged_on_an_earlier_version_of_its_function_does_not_count(tmp_path, lane_mutants):
    first, *others = lane_mutants
    results = [killed(name) for name in others] + [killed(first) | {"version": "0" * 16}]

    status, output = lane_report(tmp_path, results)

    assert lane_row(output)["not_run"] == "1"
    assert section(output, "Not run, or no test failed nor passed") == [first]
    assert "1 result(s) were judged on an earlier version of their function and do not count." in output
    assert status == 0
