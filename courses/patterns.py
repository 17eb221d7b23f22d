"""Patterns instructors write (hint patterns, string parameter patterns): checked at save time
and matched with a time bound, so no pattern can make a request or a worker spin.

The `regex` library stops a match after `timeout` seconds (the standard `re` cannot be
interrupted). At save time a pattern is tried on inputs where backtracking patterns blow up
and refused if it is slow on them; every later match is still bounded, for patterns saved
before this check existed or slow on inputs the probes do not cover.
"""

import math
import re

import regex

#: Counted repeats ({n}, {n,m}) multiplied together: the regex module expands them when it compiles, before any
#: time bound applies ((?:a{1000}){1000} takes half a second and 270 MB; ten times more, the machine's memory).
MAX_REPEAT_PRODUCT = 10_000
_COUNTED = re.compile(r"\{\s*(\d*)\s*(?:,\s*(\d*)\s*)?\}")

MATCH_SECONDS = 0.05
# Inputs on which backtracking patterns blow up; a pattern slow on them is refused at save time.
SEARCH_PROBES = ("a" * 30 + "!", " ".join(["word"] * 3000) + "!", "x" * 5000 + "\n")
# Whole-value matches (parameter values, at most a few hundred characters) blow up on a long run of
# what a repeated group accepts followed by one character it refuses.
WHOLE_PROBES = tuple(run * 30 + "!" for run in ("a", "A", "0", "a-", "a.", "a_", "a ", "-", "."))


class PatternTooSlow(Exception):
    """Matching took longer than MATCH_SECONDS."""


def pattern_problem(pattern: str, *, whole: bool = False) -> str:
    """Why an instructor's pattern cannot be used, or '' when it is fine.

    `whole`: the pattern must match a whole value (parameters), else it is searched for (hints).
    """
    if math.prod(int(high or low or 1) or 1 for low, high in _COUNTED.findall(pattern)) > MAX_REPEAT_PRODUCT:
        return "The pattern's counted repeats (such as {1000}) multiply to too large a pattern; simplify it."
    try:
        compiled = regex.compile(pattern)
    except regex.error as error:
        return f"The pattern is not a valid regular expression ({error})."
    match = compiled.fullmatch if whole else compiled.search
    try:
        for probe in WHOLE_PROBES if whole else SEARCH_PROBES:
            match(probe, timeout=MATCH_SECONDS * 4)
    except TimeoutError:
        return "The pattern takes too long to match (it backtracks badly); simplify it."
    return ""


def pattern_search(pattern: str, text: str, *, seconds: float = MATCH_SECONDS) -> bool:
    """Whether the pattern occurs in text; raises PatternTooSlow after `seconds` (at most MATCH_SECONDS)."""
    try:
        return regex.search(pattern, text, timeout=min(seconds, MATCH_SECONDS)) is not None
    except TimeoutError as error:
        raise PatternTooSlow(pattern) from error


def pattern_fullmatch(pattern: str, text: str) -> bool:
    """Whether the pattern matches all of text; raises PatternTooSlow after MATCH_SECONDS."""
    try:
        return regex.fullmatch(pattern, text, timeout=MATCH_SECONDS) is not None
    except TimeoutError as error:
        raise PatternTooSlow(pattern) from error
