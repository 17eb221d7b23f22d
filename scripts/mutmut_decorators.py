"""mutmut, letting it mutate functions under a few plain decorators: what scripts/mutate runs as `mutmut`.

    python scripts/mutmut_decorators.py run [GLOB...]   (any mutmut command and its arguments)

mutmut 3 skips every decorated function but a lone `@staticmethod` or `@classmethod`: a decorator runs when its
function is defined (copying it onto each mutant could, say, register a URL route once per mutant) and it may
not return a function. The decorators in DECORATORS do neither: each wraps its function in a descriptor or a
wrapper and nothing else, so the code stays idiomatic (`@property`, `@contextmanager`, `@transaction.atomic`)
and is mutated like any other. Two parts of mutmut change, in this process only (mutmut forks its workers):

- MutationVisitor._skip_node_and_children: a function whose decorators are all in DECORATORS is mutated,
  unless mutmut skips it for another reason (`# pragma: no mutate`, an enum hook, a name it never mutates);
  the decorators themselves are never mutated (mutmut skips every Decorator node).
- function_trampoline_arrangement: mutmut puts the function's decorators over its trampoline, so the class
  keeps a property over `@_mutmut_mutated(...)` and a transaction still covers the whole call, mutant and all.
  It copies them onto the copy of the original (`..._orig`) and each mutant too, which the trampoline calls as
  plain functions (`Class.name__mutmut_3(self, ...)`, from the dict mutmut fills after the class): they are
  taken off those. A generator under `@contextmanager` stays a generator: the trampoline of a generator
  function is one (`yield from`), so the context manager still throws the `with` block's error into it.

`mutmut apply NAME` writes a mutant of such a function back without its decorators; `mutmut show NAME`
(a diff of the two copies) is right. tests/mutation/test_mutmut_decorators.py checks this against the installed
mutmut, so an upgrade that changes these two functions fails there, not in a mutation run.
"""

import sys
from collections.abc import Iterable
from pathlib import Path

import libcst as cst
from libcst.metadata import PositionProvider
from mutmut.mutation import file_mutation

#: Decorators that only wrap their function (written as in the source: a name or a dotted name, no call).
DECORATORS = frozenset(
    {
        "property",
        "cached_property",
        "functools.cached_property",
        "contextmanager",
        "contextlib.contextmanager",
        "transaction.atomic",
    }
)

_mutmut_skip = file_mutation.MutationVisitor._skip_node_and_children
_mutmut_arrangement = file_mutation.function_trampoline_arrangement


def _dotted_name(expression: cst.BaseExpression) -> str | None:
    if isinstance(expression, cst.Name):
        return expression.value
    if isinstance(expression, cst.Attribute):
        base = _dotted_name(expression.value)
        return f"{base}.{expression.attr.value}" if base else None
    return None


def plainly_decorated(node: cst.CSTNode) -> bool:
    """A function with decorators, each of them one of DECORATORS."""
    return (
        isinstance(node, cst.FunctionDef)
        and bool(node.decorators)
        and all(_dotted_name(decorator.decorator) in DECORATORS for decorator in node.decorators)
    )


def _skip_node_and_children(self: file_mutation.MutationVisitor, node: cst.CSTNode) -> bool:
    if not plainly_decorated(node):
        return _mutmut_skip(self, node)
    # mutmut's other reasons to skip a whole function, as in its own _skip_node_and_children
    position = self.get_metadata(PositionProvider, node, None)
    if position and position.start.line in self._ignored_node_lines:
        self.ignored_functions.add(node.name.value)
        return True
    return node in self._enum_creation_hooks or node.name.value in file_mutation.NEVER_MUTATE_FUNCTION_NAMES


def function_trampoline_arrangement(
    function: cst.FunctionDef, mutants: Iterable[file_mutation.Mutation], class_name: str | None
):
    declarations, methods, assignments, names = _mutmut_arrangement(function, mutants, class_name)
    if plainly_decorated(function):
        trampoline, *copies = methods  # the original's copy, then the mutants
        methods = [trampoline, *(copy.with_changes(decorators=[]) for copy in copies)]
    return declarations, methods, assignments, names


def install() -> None:
    file_mutation.MutationVisitor._skip_node_and_children = _skip_node_and_children
    file_mutation.function_trampoline_arrangement = function_trampoline_arrangement


if __name__ == "__main__":
    # Python put this script's folder first on sys.path; the tests mutmut runs in this process must not see it.
    if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
        del sys.path[0]
    install()
    from mutmut.__main__ import cli

    sys.argv[0] = "mutmut"
    sys.exit(cli())
