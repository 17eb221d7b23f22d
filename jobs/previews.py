"""What a job's output file looks like in the browser: its kind (from the name), its text, the first rows
of a CSV, whether an image's bytes are what its name says, and a notebook rendered to sanitised HTML.

Pure functions over bytes the views read through jobs.files (which refuses symlinks, escapes and others'
files). Nothing here reads the disk.
"""

import csv
import io
import warnings
from dataclasses import dataclass
from itertools import islice

import nh3

#: Bytes of a text file shown on its page; the rest is in the download.
TEXT_MAX_BYTES = 256 * 1024
#: Rows and columns of a CSV shown as a table.
CSV_MAX_ROWS = 200
CSV_MAX_COLUMNS = 50
#: Larger images are not shown inline (the download still works).
IMAGE_MAX_BYTES = 20 * 1024 * 1024
#: Larger notebooks are shown as the start of their text, not rendered.
NOTEBOOK_MAX_BYTES = 5 * 1024 * 1024
#: What nbconvert renders (with bleach and BeautifulSoup passes) takes time, so a notebook is rendered only
#: up to these sizes and shown as text beyond them. Measured on a busy 2-core server: uncapped, 246 KB of code
#: took 13 s and 3,000 cells 13 s; at the caps, 63 KB of code 3.7 s, 250 KB of markdown 2.8 s, 200 cells
#: printing 4 MB in all 5 s.
NOTEBOOK_MAX_CELLS = 200
#: Characters of code-cell sources (syntax highlighting, then bleach over the highlighted HTML).
NOTEBOOK_MAX_CODE = 64 * 1024
#: Characters of markdown and raw cells, HTML and markdown outputs and tracebacks.
NOTEBOOK_MAX_MARKUP = 256 * 1024

TEXT = "text"
CSV = "csv"
IMAGE = "image"
SVG = "svg"
NOTEBOOK = "notebook"
DOWNLOAD_ONLY = "download"

TEXT_EXTENSIONS = {"txt", "log", "json", "py", "out", "err", "md"}
#: Extension -> the content type the image endpoint sends, and the magic bytes that prove it.
IMAGE_TYPES = {"png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp"}
#: Bytes read to check an image's type.
MAGIC_BYTES = 16


def _extension(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    return name.rpartition(".")[2].lower() if "." in name else ""


def file_kind(path: str) -> str:
    """How a file is shown, from its extension: text, a CSV table, an image, a notebook, or download only."""
    extension = _extension(path)
    if extension in TEXT_EXTENSIONS:
        return TEXT
    if extension == "csv":
        return CSV
    if extension in IMAGE_TYPES:
        return IMAGE
    if extension == "svg":
        return SVG
    if extension == "ipynb":
        return NOTEBOOK
    return DOWNLOAD_ONLY


def image_type(path: str, head: bytes) -> str | None:
    """The content type to serve the image as, or None when its first bytes are not what its extension says."""
    content_type = IMAGE_TYPES.get(_extension(path))
    matches = {
        "image/png": head.startswith(b"\x89PNG\r\n\x1a\n"),
        "image/jpeg": head.startswith(b"\xff\xd8\xff"),
        "image/gif": head.startswith((b"GIF87a", b"GIF89a")),
        "image/webp": head[:4] == b"RIFF" and head[8:12] == b"WEBP",
    }
    return content_type if content_type and matches[content_type] else None


def as_text(data: bytes) -> str:
    """UTF-8 with undecodable bytes (and a character cut at the size cap) shown as U+FFFD."""
    return data.decode("utf-8", errors="replace")


@dataclass(frozen=True)
class Table:
    header: list[str]
    rows: list[list[str]]
    more_rows: bool
    more_columns: bool


def csv_table(text: str) -> Table | None:
    """The first rows and columns of CSV text; None when the csv module cannot read it.

    Cells are plain text put into HTML by the template (escaped): a cell that looks like a spreadsheet
    formula is only shown, never evaluated."""
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        rows = list(islice(reader, CSV_MAX_ROWS + 2))  # the header, the rows shown, one more to tell
    except csv.Error:
        return None
    if not rows:
        return None
    header, body = rows[0], rows[1:]
    return Table(
        header=header[:CSV_MAX_COLUMNS],
        rows=[row[:CSV_MAX_COLUMNS] for row in body[:CSV_MAX_ROWS]],
        more_rows=len(body) > CSV_MAX_ROWS,
        more_columns=any(len(row) > CSV_MAX_COLUMNS for row in rows),
    )


class NotebookError(Exception):
    """The file could not be read or rendered as a Jupyter notebook."""


# After nbconvert's SanitizeHTML (which cleans markdown and HTML outputs before rendering), the whole
# rendered body is cleaned once more, by nh3 (fast on a notebook of thousands of cells, where bleach took
# seconds): markdown turns [x](javascript:...) into a link SanitizeHTML never saw.
_TAGS = set(
    "a abbr b blockquote br code dd del div dl dt em h1 h2 h3 h4 h5 h6 hr i img li ol p pre span strong sub sup"
    " table tbody td th thead tr ul".split()
)
_ATTRIBUTES = {"*": {"class", "title"}, "a": {"href"}, "img": {"src", "alt"}, "td": {"colspan", "rowspan"}}
_ATTRIBUTES["th"] = _ATTRIBUTES["td"]
_IMAGE_DATA = ("data:image/png;base64,", "data:image/jpeg;base64,", "data:image/gif;base64,")


def _allowed_value(tag: str, name: str, value: str) -> str | None:
    if tag == "a" and name == "href":
        return value if value.startswith(("http://", "https://", "mailto:")) else None
    if tag == "img" and name == "src":
        return value if value.startswith(_IMAGE_DATA) else None
    return value


def _too_costly(cells: list) -> str:
    """Why rendering these cells would take too long, or "" when it would not."""
    code = sum(len(cell.source) for cell in cells if cell.cell_type == "code")
    markup = sum(len(cell.source) for cell in cells if cell.cell_type != "code")
    for output in (output for cell in cells for output in cell.get("outputs", [])):
        data = output.get("data", {})
        markup += len(data.get("text/html", "")) + len(data.get("text/markdown", ""))
        markup += sum(len(line) for line in output.get("traceback", []))
    if code > NOTEBOOK_MAX_CODE:
        return f"its code cells hold more than {NOTEBOOK_MAX_CODE // 1024} KB, too much to render here"
    if markup > NOTEBOOK_MAX_MARKUP:
        return f"its markdown, HTML and tracebacks come to more than {NOTEBOOK_MAX_MARKUP // 1024} KB"
    return ""


def notebook_html(data: bytes) -> tuple[str, int]:
    """The notebook's first NOTEBOOK_MAX_CELLS cells as read-only, sanitised HTML (nbconvert's basic template:
    no scripts, no widgets), and the number of cells it has."""
    import nbformat
    from nbconvert import HTMLExporter
    from nbconvert.preprocessors.sanitize import SanitizeHTML  # not exported by nbconvert.preprocessors
    from traitlets.config import Config

    config = Config()
    config.HTMLExporter.preprocessors = [SanitizeHTML]
    config.SanitizeHTML.strip = True
    exporter = HTMLExporter(config=config, template_name="basic")
    exporter.exclude_anchor_links = True
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "IPython3 lexer unavailable", nbformat's validation notes
            notebook = nbformat.reads(as_text(data), as_version=4)
            cells = len(notebook.cells)
            notebook.cells = notebook.cells[:NOTEBOOK_MAX_CELLS]
            if reason := _too_costly(notebook.cells):
                raise NotebookError(reason)
            body, _ = exporter.from_notebook_node(notebook)
    except NotebookError:
        raise
    except Exception as error:  # a third-party parser on a student's file: any failure means "show as text"
        raise NotebookError(f"{type(error).__name__}: {error}"[:300]) from error
    html = nh3.clean(
        body,
        tags=_TAGS,
        attributes=_ATTRIBUTES,
        attribute_filter=_allowed_value,
        url_schemes={"http", "https", "mailto", "data"},
        url_relative="deny",
        strip_comments=True,
    )
    return html, cells
