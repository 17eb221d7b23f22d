"""scripts/mutmut_decorators.py with the installed mutmut: functions under @property, @contextmanager and
@transaction.atomic get mutants, and the mutated module still behaves, with and without a mutant switched on.
Pure: mutmut mutates and the module runs in a subprocess (the patch changes mutmut in its own process only)."""

import json
import subprocess
import sys
from pathlib import Path

PATCH = Path(__file__).resolve().parents[2] / "scripts" / "mutmut_decorators.py"

SAMPLE = """
import functools
from contextlib import contextmanager
from types import SimpleNamespace

calls = []


def _atomic(function):
    @functools.wraps(function)
    def inside(*args, **kwargs):
        calls.append("begin")
        try:
            return function(*args, **kwargs)
        finally:
            calls.append("end")

    return inside


transaction = SimpleNamespace(atomic=_atomic)


class Box:
    def __init__(self, size):
        self.size = size

    @property
    def double(self) -> int:
        return self.size * 2


@contextmanager
def opened(size):
    try:
        yield [size + 1]
    finally:
        calls.append("closed")


@transaction.atomic
def box_create(*, size):
    calls.append(f"create {size}")
    return size + 1


@functools.lru_cache
def cached(size):
    return size + 1
"""

# Mutates SAMPLE (with or without the patch), runs the mutated module and prints what it saw, as JSON.
PROBE = """
import importlib.util, json, sys, types
from mutmut.mutation.file_mutation import mutate_file_contents
from mutmut.mutation.trampoline import set_mutant_under_test

if sys.argv[2] == "patched":
    spec = importlib.util.spec_from_file_location("mutmut_decorators", sys.argv[1])
    patch = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(patch)
    patch.install()
mutated = mutate_file_contents("sample.py", sys.argv[3])
module = types.ModuleType("sample")
exec(compile(mutated.code, "sample.py", "exec"), module.__dict__)


def run(mutant):
    set_mutant_under_test(f"sample.{mutant}" if mutant else "")
    module.calls.clear()
    seen = {"double": module.Box(4).double}
    with module.opened(4) as values:
        seen["opened"] = values
    try:
        with module.opened(4):
            raise KeyError("inside the with block")
    except KeyError:
        seen["error passed through"] = True
    seen["create"] = module.box_create(size=4)
    seen["calls"] = list(module.calls)
    return seen


print(json.dumps({
    "mutants": list(mutated.mutant_names),
    "original": run(""),
    "double__mutmut_2": run("xǁBoxǁdouble__mutmut_2"),
    "opened__mutmut_4": run("x_opened__mutmut_4"),
    "box_create__mutmut_3": run("x_box_create__mutmut_3"),
}))
"""


def probe(*, patched: bool) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(PATCH), "patched" if patched else "as installed", SAMPLE],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(done.stdout.splitlines()[-1])


def functions(mutant_names: list[str]) -> set[str]:
    return {name.rpartition("__mutmut_")[0] for name in mutant_names}


def test_mutmut_as_installed_skips_the_decorated_functions():
    seen = probe(patched=False)

    assert functions(seen["mutants"]) == {"xǁBoxǁ__init__"}


def test_the_patch_mutates_functions_under_property_contextmanager_and_transaction_atomic_only():
    seen = probe(patched=True)

    assert functions(seen["mutants"]) == {"xǁBoxǁ__init__", "xǁBoxǁdouble", "x_opened", "x_box_create"}


def test_the_mutated_module_behaves_as_the_source_when_no_mutant_is_on():
    seen = probe(patched=True)["original"]

    assert seen["double"] == 8 and seen["opened"] == [5] and seen["create"] == 5
    assert seen["error passed through"]
    assert seen["calls"] == ["closed", "closed", "begin", "create 4", "end"]


def test_a_mutant_runs_under_its_functions_decorators():
    seen = probe(patched=True)

    assert seen["double__mutmut_2"]["double"] == 4 * 3  # `self.size * 3`, read as a property
    # `calls.append("XXclosedXX")` in the generator's `finally`: run on leaving the block, and when it raised
    assert seen["opened__mutmut_4"]["calls"][:2] == ["XXclosedXX", "XXclosedXX"]
    create = seen["box_create__mutmut_3"]
    assert create["create"] == 4 + 2  # `size + 2`, inside the transaction
    assert create["calls"][2:] == ["begin", "create 4", "end"]
