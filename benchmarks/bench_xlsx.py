"""Time the writers of ``report.xlsx`` on a synthetic report of each size: openpyxl and XlsxWriter.

Builds a report's tables without a model: a news day of N headlines (``bench_newsday.news_day``: Chinese
and English titles, ten sources, links, times over one day); stories drawn at random from 60% of its items
(2 to 40 members, Pareto-distributed), the others alone; one pair per member past a story's first and as
many more between two of its members; a topic per five stories. The four sheets (``clusters``, ``topics``,
``members``, ``pairs``) are made as the report makes them (``nlsim.report.files.spreadsheet_files``,
``nlsim.io.columns.sheet_frame``). Each writer writes them ``--repeat`` times, its best kept: CPU seconds
of this process (which a busy machine disturbs less than the wall time) and wall seconds; the two files are
read back and compared cell by cell. XlsxWriter is optional (``pip install xlsxwriter``): without it,
openpyxl alone.

    python benchmarks/bench_xlsx.py --sizes 20000 50000

Writes ``benchmarks/results/xlsx.md`` (with the CPU's model name); a run at other ``--sizes`` or ``--repeat``
writes ``xlsx-<what differs>.md`` beside it.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, machine, print_table  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SIZES = [20000, 50000]
"""The reports of the committed figures (``results/xlsx.md``): items each."""
REPEAT = 2
sys.path.insert(0, str(ROOT))


def report_tables(n: int, seed: int = 0) -> dict[str, pd.DataFrame]:
    """The sheets of a synthetic report of ``n`` items (see the module doc), as ``report.xlsx`` holds them."""
    from bench_newsday import news_day

    from nlsim.io import columns
    from nlsim.report.files import spreadsheet_files

    rng = random.Random(seed)
    items = news_day(n, seed=seed)
    ids = items["id"].tolist()
    order = list(range(n))
    rng.shuffle(order)
    stories: list[list[int]] = []
    at = 0
    while at < int(n * 0.6):
        size = min(int(rng.paretovariate(1.3)) + 1, 40)
        size = max(size, 2)
        stories.append(sorted(order[at : at + size]))
        at += size
    by = items.set_index("id")
    shown = [c.name for c in columns.shown()]
    pair_rows = []
    cluster_rows = []
    for k, members in enumerate(stories):
        cid = f"c-{k:06d}"
        links = [(members[0], m) for m in members[1:]]
        links += [tuple(sorted(rng.sample(members, 2))) for _ in range(len(members) - 1)]
        scores = []
        for a, b in links:
            s = round(rng.uniform(0.9, 1.0), 6)
            scores.append(s)
            row: dict[str, Any] = {"id_a": ids[a], "id_b": ids[b], "similarity": s, "cosine": s}
            row |= {"cross_encoder": None, "cluster_id": cid, "exact_copy": rng.random() < 0.2}
            for f in shown:
                row[f"{f}_a"], row[f"{f}_b"] = items[f].iat[a], items[f].iat[b]
            pair_rows.append(row)
        member_ids = [ids[m] for m in members]
        times = items["published_at"].iloc[members]
        cluster_rows.append(
            {
                "cluster_id": cid,
                "topic_id": f"t-{k // 5:06d}",
                "status": "new",
                "size": len(members),
                "representative": member_ids[0],
                "representative_title": by.at[member_ids[0], "title"],
                "member_ids": member_ids,
                "added_ids": member_ids,
                "absorbed": [],
                "sources": sorted(set(items["source"].iloc[members])),
                "first_published": times.min(),
                "last_published": times.max(),
                "max_similarity": max(scores),
                "mean_similarity": sum(scores) / len(scores),
                "weakest_link": min(scores),
            }
        )
    clusters = pd.DataFrame(cluster_rows)
    topic_rows = []
    for t, group in clusters.groupby("topic_id", sort=True):
        member_ids = [m for ms in group["member_ids"] for m in ms]
        topic_rows.append(
            {
                "topic_id": t,
                "size": len(member_ids),
                "stories": len(group),
                "cluster_ids": group["cluster_id"].tolist(),
                "member_ids": member_ids,
                "representative": member_ids[0],
                "representative_title": by.at[member_ids[0], "title"],
                "first_published": group["first_published"].min(),
                "last_published": group["last_published"].max(),
            }
        )
    files = spreadsheet_files(pd.DataFrame(pair_rows), clusters, items, pd.DataFrame(topic_rows))
    tables = files["report.xlsx"]
    return {t: columns.sheet_frame(table, columns.table(t), "Asia/Taipei") for t, table in tables.items()}


def openpyxl_writer(tables: Mapping[str, pd.DataFrame], path: Path) -> None:
    """The report's writer (``nlsim.report.spreadsheet.write_xlsx``: openpyxl's write-only mode)."""
    from nlsim.report.spreadsheet import write_xlsx

    write_xlsx(tables, path)


def xlsxwriter_writer(tables: Mapping[str, pd.DataFrame], path: Path) -> None:
    """The same sheets through XlsxWriter in its constant-memory mode (rows streamed to disk as openpyxl's
    write-only mode does; its other mode holds every cell in memory), with the report's cell rules:
    text through ``xlsx_text`` as a string cell (XlsxWriter escapes ``_xHHHH_`` itself), numbers and flags as
    such, nothing for a missing value."""
    import numpy as np
    import xlsxwriter

    from nlsim.report import spreadsheet as sp

    options = {"constant_memory": True, "strings_to_formulas": False, "strings_to_urls": False}
    book = xlsxwriter.Workbook(str(path), options | {"strings_to_numbers": False})
    per_sheet = sp.XLSX_SHEET_ROWS - 1
    for name, frame in tables.items():
        for n, title in enumerate(sp.sheet_names(name, len(frame), per_sheet)):
            sheet = book.add_worksheet(title)
            for j, c in enumerate(frame.columns):
                sheet.write_string(0, j, sp.xlsx_text(str(c)))
            rows = frame.iloc[n * per_sheet : (n + 1) * per_sheet].itertuples(index=False, name=None)
            for i, row in enumerate(rows, 1):
                for j, v in enumerate(row):
                    v = v.item() if isinstance(v, np.generic) else v
                    if v is None or v is pd.NaT or (isinstance(v, float) and np.isnan(v)):
                        continue
                    if isinstance(v, bool):
                        sheet.write_boolean(i, j, v)
                    elif isinstance(v, (int, float)):
                        sheet.write_number(i, j, v)
                    else:
                        sheet.write_string(i, j, sp.xlsx_text(str(v)))
    book.close()


WRITERS: dict[str, Callable[[Mapping[str, pd.DataFrame], Path], None]] = {
    "openpyxl": openpyxl_writer,
    "xlsxwriter": xlsxwriter_writer,
}


def read_back(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Each sheet's rows as openpyxl reads them, an empty text cell as no cell (openpyxl writes none for an
    empty text, XlsxWriter an empty string: a spreadsheet shows both alike)."""
    from openpyxl import load_workbook

    book = load_workbook(path, read_only=True)
    out = {
        name: [tuple(None if v == "" else v for v in row) for row in book[name].iter_rows(values_only=True)]
        for name in book.sheetnames
    }
    book.close()
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        description="Time the writers of report.xlsx (openpyxl, XlsxWriter) on a synthetic report of each "
        "size, and check that both write the same cells."
    )
    ap.add_argument(
        "--sizes", type=int, nargs="+", default=SIZES, help="items a report (default: 20000 50000)"
    )
    ap.add_argument(
        "--repeat", type=int, default=REPEAT, help="runs of each writer, the best kept (default: 2)"
    )
    ap.add_argument("--no-save", action="store_true", help="do not write results/xlsx.md (default: write it)")
    ns = ap.parse_args(argv)
    if min(ns.sizes) < 100 or ns.repeat < 1:
        ap.error("--sizes must be 100 items or more and --repeat 1 or more")
    host = machine()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in ns.sizes:
            tables = report_tables(n)
            row: dict[str, Any] = {"items": n, **{f"{t} rows": len(f) for t, f in tables.items()}}
            read = {}
            for label, writer in WRITERS.items():
                if label == "xlsxwriter" and importlib.util.find_spec("xlsxwriter") is None:
                    print(
                        "bench_xlsx.py: XlsxWriter is not installed (pip install xlsxwriter): openpyxl alone"
                    )
                    continue
                path = Path(tmp) / f"{n}-{label}.xlsx"
                cpu, wall = float("inf"), float("inf")
                for _ in range(ns.repeat):
                    t, c = time.perf_counter(), time.process_time()
                    writer(tables, path)
                    cpu = min(cpu, time.process_time() - c)
                    wall = min(wall, time.perf_counter() - t)
                row[f"{label} cpu s"], row[f"{label} wall s"] = round(cpu, 2), round(wall, 2)
                row[f"{label} MB"] = round(path.stat().st_size / 2**20, 1)
                read[label] = read_back(path)
            if len(read) == 2:
                row["cpu ratio"] = round(row["openpyxl cpu s"] / row["xlsxwriter cpu s"], 2)
                row["same cells"] = "yes" if read["openpyxl"] == read["xlsxwriter"] else "no"
            rows.append(row)
            print(json.dumps(row), flush=True)
    print(f"machine: {host}")
    table = print_table(rows, list(rows[0]))
    if not ns.no_save:
        from nlsim.io.atomic import atomic_write_text

        # a run at other sizes or repeats (a quick check) writes beside the committed figures, never over them
        changed = [f"sizes{'_'.join(map(str, ns.sizes))}"] if ns.sizes != SIZES else []
        changed += [f"repeat{ns.repeat}"] if ns.repeat != REPEAT else []
        stem = RESULTS / "-".join(["xlsx", *changed])
        atomic_write_text(stem.with_suffix(".md"), f"machine: {host}\n\n{table}\n")
        print(f"wrote {stem}.md")


if __name__ == "__main__":
    main()
