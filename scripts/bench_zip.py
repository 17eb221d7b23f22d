#!/usr/bin/env python
"""Benchmark: "Download all" of a 500 MB job: how soon the zip's first byte is ready, how long the whole zip
takes, and the memory it needs, for the streamed zip the download view sends (jobs.files.zip_stream: the
walk, the size check and the first file's first chunk before the first byte) and, with --old, for the zip
built whole before sending (what the view did before: zipfile into a temporary file, 16 MB in memory).

    .venv/bin/python scripts/bench_zip.py [--mb 500] [--old]

The job directory is made in a temporary folder (half model weights that do not compress, half logs and CSV
that do) and removed afterwards. Peak memory is Python's own allocations (tracemalloc) during one zip.
The machine is shared with other tests and benchmarks: expect noise in the times.
"""

import argparse
import os
import sys
import tempfile
import time
import tracemalloc
import zipfile
from pathlib import Path
from tempfile import SpooledTemporaryFile

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from jobs import files  # noqa: E402  (after the path: the script runs from anywhere)

MB = 1024 * 1024


def job_directory(root: Path, total_mb: int) -> None:
    """`total_mb` MB of what a training job leaves: weights (random bytes) and text (logs, CSV)."""
    (root / "results").mkdir()
    block = os.urandom(MB)
    text = b"".join(f"epoch {n % 50} step {n} loss {1 / (n + 1):.6f}\n".encode() for n in range(40_000))[:MB]
    halves = {"results/model.bin": block, "job.out": text}
    for name, chunk in halves.items():
        with open(root / name, "wb") as out:
            for number in range(total_mb // 2):
                out.write(chunk[number % 7 :] + chunk[: number % 7])  # no two megabytes alike


def measure(label: str, chunks) -> None:
    """Time to the first chunk, to the last, bytes sent and peak memory of consuming `chunks()`."""
    tracemalloc.start()
    started = time.perf_counter()
    stream = iter(chunks())
    first = next(stream)
    first_at = time.perf_counter() - started
    sent = len(first)
    for chunk in stream:
        sent += len(chunk)
    total = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(
        f"{label:<34} first byte {first_at * 1000:8.1f} ms   whole zip {total:6.1f} s   "
        f"{sent / MB:6.1f} MB sent   peak memory {peak / MB:6.1f} MB"
    )


def streamed(root: Path, cap: int):
    return lambda: files.zip_stream(str(root), folder="job", max_bytes=cap)


def built_whole(root: Path, cap: int):
    """The zip as the view built it before streaming: every file deflated into a spooled temporary file."""

    def chunks():
        spool = SpooledTemporaryFile(max_size=16 * MB)
        with zipfile.ZipFile(spool, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for path, _ in files._walk(str(root)):
                with os.fdopen(files.open_file(str(root), path), "rb") as source, archive.open(f"job/{path}", "w") as t:
                    while chunk := source.read(MB):
                        t.write(chunk)
        spool.seek(0)
        while chunk := spool.read(8192):  # FileResponse's block size
            yield chunk

    return chunks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=500, help="size of the job's files in MB (default 500)")
    parser.add_argument("--old", action="store_true", help="also measure the zip built whole before sending")
    args = parser.parse_args()
    cap = 512 * MB  # LABQUEUE_ZIP_MAX_BYTES' default
    with tempfile.TemporaryDirectory(prefix="bench-zip-") as folder:
        root = Path(folder)
        job_directory(root, args.mb)
        print(f"A job of {sum(p.stat().st_size for p in root.rglob('*') if p.is_file()) / MB:.0f} MB in 2 files")
        measure("streamed (jobs.files.zip_stream)", streamed(root, cap))
        if args.old:
            measure("built whole, then sent (before)", built_whole(root, cap))


if __name__ == "__main__":
    main()
