"""CSV cells a spreadsheet shows as text and never runs as a formula (every CSV export uses it)."""

#: A spreadsheet reads a cell starting with one of these as a formula (OWASP, "CSV Injection").
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(cell: str) -> str:
    """The cell as text a spreadsheet shows and never runs: a leading single quote before a formula start.

    (defusedcsv leaves tab and carriage return alone, so the rule is written out here.)
    """
    return f"'{cell}" if cell.startswith(FORMULA_STARTS) else cell
