"""No function in the app code is longer than 50 lines: a longer one does several things, and reads better as
named steps. `make lint` checks the other half (xenon: no function worse than radon grade C).

The apps are the import-linter root packages (pyproject.toml), so an app added there is checked too; migrations,
which Django writes, are left out. A function's lines run from its `def` to its last line, docstring included.
"""

import ast
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
MAX_LINES = 50


def app_packages() -> list[str]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    return config["tool"]["importlinter"]["root_packages"]


def functions_longer_than(limit: int, package: Path) -> list[str]:
    """Each function (and method) of the package over `limit` lines, as "path:line name (N lines)"."""
    found = []
    for path in sorted(package.rglob("*.py")):
        where = path.relative_to(package.parent)
        if "migrations" in where.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(), filename=str(where))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > limit:
                    found.append(f"{where}:{node.lineno} {node.name} ({lines} lines)")
    return found


@pytest.mark.parametrize("package", app_packages())
def test_no_function_of_the_app_is_longer_than_50_lines(package):
    assert functions_longer_than(MAX_LINES, REPO / package) == []


def test_a_function_of_51_lines_is_found_and_one_in_a_migration_is_not(tmp_path):
    body = "".join(f"    x{n} = {n}\n" for n in range(50))
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "long.py").write_text(f"def long():\n{body}\n\ndef short():\n    pass\n")
    (tmp_path / "app" / "migrations").mkdir()
    (tmp_path / "app" / "migrations" / "0001_initial.py").write_text(f"def generated():\n{body}")

    assert functions_longer_than(MAX_LINES, tmp_path / "app") == ["app/long.py:1 long (51 lines)"]
