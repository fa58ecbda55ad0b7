"""The hostile-input cases: bad inputs through the real command line, as data.

Each case writes its files into a folder of its own (a corpus, "user files" such as notes, a project
folder, a site, a state or model folder) and runs one ``python -m nlsim ...`` command there, in a
subprocess (:func:`run_case`). Then:

- a case meant to be refused must exit with status 1 or 2 and a one-line ``nlsim CMD: error: ...`` last on
  stderr, without a traceback, naming what the case names (the file, ``row N``, the field or option), and
  pass its check where it has one (what the refusal must not have done first: train a new version);
- a case meant to work (a corpus that is odd but valid) must exit 0 and load exactly its data rows:
  ``nlsim embed``'s sidecar lists the ids of the rows it embedded, ``nlsim dedup --json`` counts the items
  read and quarantined;
- in every case, every file that was in the folder before the run must still be there with the same bytes
  (SHA-256), except the outputs a working case is meant to write (its ``--out``, ``--state``); lock files
  left by a refused run on a state folder are not counted.

Cases: bad CSV/TSV/JSONL/Parquet corpora, odd but valid corpora, dangerous paths (an output on an input,
folders nlsim did not write, paths through folders not made yet), bad options (devices this torch lacks),
bad calibration files, bad pair files and editors' files, broken state folders, damaged model folders (any
file against the manifest written when nlsim saved it, the reranker's too), text that spreadsheets or the
page must keep as text (control characters, formulas, a right-to-left override), progress in a log file,
damaged, locked or misnamed model stores (a report folder given as one) and what killed chains left,
reports that are not one run, pairs that do not belong to the report they judge, a daily run after a model
change, the editors' verdict store lost, cut, torn, left by a killed merge or shared by the pair files of one
stem, and the series veto under a low threshold. The model is the small
``paraphrase-MiniLM-L3-v2`` with ``--threshold``, ``--no-cache`` and tiny corpora (and a chain trained once
on 24 headlines). A case meant to work passes only when its result is right (its check).

``tests/hostile/test_bad_inputs.py`` runs every case as a slow test (two at a time);
``benchmarks/bench_bad_inputs.py`` runs the same cases and prints the table.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import json
import lzma
import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tests import command
from tests.command import run_in_process, run_subprocess

ROOT = Path(__file__).resolve().parents[2]
MODEL = "paraphrase-MiniLM-L3-v2"
RUN_OPTS = ["--model", MODEL, "--convert", "none", "--no-cache", "--no-progress"]
ERROR_LINE = re.compile(r"^nlsim [a-z-]+( [a-z]+)?: error: ")
LOCK_FILES = ("lock.json", ".lock.guard")

Files = dict[str, "str | bytes"]


@dataclass
class Case:
    """One bad input: the files it starts from, the command, and what must happen."""

    name: str
    group: str
    argv: list[str]
    files: Files = field(default_factory=dict)
    expect: str = "refuse"  # "refuse" or "ok"
    words: tuple[str, ...] = ()  # what the error message must name
    status: int | None = None  # the exact exit status, where the contract fixes it
    ids: list[str] | None = None  # ok: the ids the corpus must load as (embed sidecar)
    rows: int | None = None  # ok: data rows read + quarantined (dedup --json)
    outputs: tuple[str, ...] = ()  # ok: paths the run may write or change
    setup: Callable[[Path], None] | None = None
    # ok: the result is right; refuse: what the refusal must not have done before it (trained, written)
    check: Callable[[Path, subprocess.CompletedProcess[str]], str | None] | None = None
    env: dict[str, str] = field(default_factory=dict)  # more environment for the command
    # the command must run in a process of its own (a lock naming the process that set the case up)
    process: bool = False


# --- corpora ------------------------------------------------------------------------------------------

HEAD = "id,title,source,published_at\n"
TITLES = [
    "Floods hit the north of the country",
    "Floods hit the north of the country again",
    "Stock markets fall sharply",
    "Football club wins the cup",
    "Stock markets fall sharply on Monday",
    "New bridge opens in the capital",
]


def csv_rows(n: int = 5, start: int = 1) -> str:
    return "".join(
        f"n{i},{TITLES[(i - 1) % len(TITLES)]},AP,2024-05-01T{i % 24:02d}:00:00Z\n"
        for i in range(start, start + n)
    )


GOOD_CSV = HEAD + csv_rows()
GOOD_IDS = [f"n{i}" for i in range(1, 6)]


def jsonl(records: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


GOOD_RECORDS = [{"id": f"n{i}", "title": TITLES[i - 1], "source": "AP"} for i in range(1, 6)]


def parquet_bytes(columns: dict[str, list[Any]]) -> bytes:
    import io

    import pandas as pd

    buf = io.BytesIO()
    pd.DataFrame(columns).to_parquet(buf, index=False)
    return buf.getvalue()


def dedup(corpus: str, *more: str, out: str = "rep", threshold: str | None = "0.9") -> list[str]:
    argv = ["dedup", "--corpus", corpus, "--out", out, *RUN_OPTS]
    if threshold is not None:
        argv += ["--threshold", threshold]
    return argv + list(more)


def embed(corpus: str, *more: str, out: str = "emb.npy") -> list[str]:
    return ["embed", "--corpus", corpus, "--out", out, *RUN_OPTS, "--text-fields", "title", *more]


USER_FILES: Files = {
    "notes.txt": "my notes\n",
    "project/README.md": "# my project\n",
    "project/data.csv": "a,b\n1,2\n",
}


def bad_corpora() -> list[Case]:
    c = "bad corpus"
    latin1 = (HEAD + "n1,Floods,AP,\nn2,Caf\xe9 closes,AP,\n").encode("latin-1")
    cases = [
        (
            "csv-extra-comma-row-1",
            "news.csv",
            HEAD + "n1,Floods, north,AP,\n" + csv_rows(2, 2),
            ("row 1", "fields"),
        ),
        ("csv-extra-comma-row-3", "news.csv", HEAD + csv_rows(2) + "n3,a,b,c,d,e\n", ("row 3", "fields")),
        ("csv-missing-field", "news.csv", HEAD + csv_rows(2) + "n3,Storm\n", ("row 3", "fields")),
        ("csv-unbalanced-quote", "news.csv", HEAD + 'n1,"Floods hit,AP,\n' + csv_rows(3, 2), ("row 1",)),
        ("csv-text-after-closing-quote", "news.csv", HEAD + csv_rows(1) + 'n2,"Floods"x,AP,\n', ("row 2",)),
        ("csv-header-only", "news.csv", HEAD, ("no rows",)),
        ("csv-empty-file", "news.csv", "", ("empty",)),
        ("csv-blank-lines-only", "news.csv", HEAD + "\n\n\n", ("no rows",)),
        ("csv-no-id-column", "news.csv", "title,source\nFloods,AP\n", ("'id'",)),
        ("csv-no-title-column", "news.csv", "id,source\nn1,AP\n", ("'title'",)),
        (
            "csv-duplicate-id",
            "news.csv",
            HEAD + csv_rows(2) + "n1,Again,AP,\n",
            ("row 3", "'id'", "duplicate"),
        ),
        ("csv-empty-title", "news.csv", HEAD + csv_rows(1) + "n2,,AP,\n", ("row 2", "'title'")),
        (
            "csv-gzip-empty-title",  # a compressed corpus: its bad row named as in the file it holds
            "news.csv.gz",
            gzip.compress((HEAD + csv_rows(1) + "n2,,AP,\n").encode()),
            ("row 2", "'title'"),
        ),
        ("csv-gzip-not-compressed", "news.csv.gz", GOOD_CSV, ("not compressed", "news.csv")),
        ("csv-blank-title", "news.csv", HEAD + csv_rows(1) + "n2,   ,AP,\n", ("row 2", "'title'")),
        (
            "csv-invisible-title",  # a zero-width space and a byte-order mark: nothing to read
            "news.csv",
            HEAD + csv_rows(1) + "n2,\u200b\ufeff,AP,\n",
            ("row 2", "'title'", "invisible"),
        ),
        (
            "csv-hangul-filler-title",  # letters (Lo) that show nothing: no title either
            "news.csv",
            HEAD + csv_rows(1) + "n2,\u3164\u3164,AP,\n",
            ("row 2", "'title'", "invisible", "U+3164"),
        ),
        (
            "csv-hangul-filler-in-id",
            "news.csv",
            HEAD + csv_rows(1) + "n2\u3164,Storm,AP,\n",
            ("row 2", "'id'", "U+3164"),
        ),
        ("csv-blank-id", "news.csv", HEAD + " ,Floods,AP,\n", ("row 1", "'id'")),
        (
            "csv-bad-date",
            "news.csv",
            HEAD + csv_rows(1) + "n2,Floods,AP,yesterday\n",
            ("row 2", "'published_at'"),
        ),
        (
            "csv-future-date",
            "news.csv",
            HEAD + csv_rows(2) + "n3,Typo,AP,2034-01-01\n",
            ("'published_at'", "n3"),
        ),
        (
            "csv-day-first-date",
            "news.csv",
            HEAD + csv_rows(1) + "n2,Floods,AP,12/05/2024 22:00\n",
            ("row 2",),
        ),
        ("csv-minguo-date", "news.csv", HEAD + csv_rows(1) + "n2,Floods,AP,113/05/01\n", ("row 2",)),
        (
            "csv-zone-name-cst",
            "news.csv",
            HEAD + csv_rows(1) + 'n2,Floods,AP,"Wed, 01 May 2024 08:00:00 CST"\n',
            ("row 2", "'published_at'", "CST"),
        ),
        ("csv-year-out-of-range", "news.csv", HEAD + csv_rows(1) + "n2,Floods,AP,0001-05-01\n", ("row 2",)),
        (  # a title a spreadsheet ran as a formula and saved as its error: every such item one text
            "csv-title-a-spreadsheet-error-value",
            "news.csv",
            HEAD + csv_rows(1) + "n2,#NAME?,AP,\nn3,#NAME?,AP,\n",
            ("row 2", "'title'", "#NAME?", "formula"),
        ),
        (  # a database's NULL as MySQL exports it: every such item one text
            "csv-title-a-missing-value-marker",
            "news.csv",
            HEAD + csv_rows(1) + "n2,\\N,AP,\nn3,\\N,AP,\n",
            ("row 2", "'title'", "missing value"),
        ),
        (
            "csv-unix-seconds-date",
            "news.csv",
            HEAD + csv_rows(1) + "n2,Floods,AP,1700000000\n",
            ("row 2", "'published_at'", "a number", "ISO 8601"),
        ),
        (
            "csv-unix-milliseconds-date",
            "news.csv",
            HEAD + csv_rows(2) + "n3,Floods,AP,1714550400000\n",
            ("row 3", "'published_at'", "a number", "ISO 8601"),
        ),
        (
            "csv-published-at-spelt-otherwise",
            "news.csv",
            "id,title,Published_At\nn1,Floods,2024-05-01\n",
            ("'Published_At'",),
        ),
        ("csv-duplicate-header", "news.csv", "id,title,title\nn1,a,b\n", ("'title'", "twice")),
        ("csv-latin-1", "news.csv", latin1, ("row 2", "UTF-8")),
        ("csv-utf-16", "news.csv", GOOD_CSV.encode("utf-16"), ("UTF-8",)),
        ("csv-bom-then-bad-row", "news.csv", "\ufeff" + HEAD + csv_rows(1) + "n2\n", ("row 2", "fields")),
        ("tsv-field-count", "news.tsv", "id\ttitle\nn1\tFloods\nn2\tStorm\tAP\n", ("row 2", "fields")),
        ("tsv-tab-in-title", "news.tsv", "id\ttitle\tsource\nn1\tFloods\tnorth\tAP\n", ("row 1", "fields")),
        ("tsv-latin-1-header", "news.tsv", "id\ttitl\xe9\nn1\ta\n".encode("latin-1"), ("header", "UTF-8")),
        (  # old Mac line endings (only "\r"), as Excel for Mac writes: the row is counted as the reader does
            "tsv-gb18030-old-mac-line-endings",
            "news.tsv",
            "id\ttitle\rn1\tFloods\rn2\tStorm\rn3\t股市大跌\r".encode("gb18030"),
            ("row 3", "line 4", "UTF-8"),
        ),
        ("jsonl-invalid-line", "news.jsonl", jsonl(GOOD_RECORDS[:2]) + "{id: 3}\n", ("row 3", "JSON")),
        (
            "jsonl-truncated-last-line",
            "news.jsonl",
            jsonl(GOOD_RECORDS[:2]) + '{"id": "n3", "tit',
            ("row 3",),
        ),
        (
            "jsonl-array-line",
            "news.jsonl",
            jsonl(GOOD_RECORDS[:1]) + '["n2", "Storm"]\n',
            ("row 2", "object"),
        ),
        ("jsonl-title-number", "news.jsonl", jsonl([{"id": "n1", "title": 42}]), ("row 1", "'title'")),
        ("jsonl-id-bool", "news.jsonl", jsonl([{"id": True, "title": "Floods"}]), ("row 1", "'id'")),
        ("jsonl-id-null", "news.jsonl", jsonl([{"id": None, "title": "Floods"}]), ("row 1", "'id'")),
        ("jsonl-id-float", "news.jsonl", jsonl([{"id": 1.5, "title": "Floods"}]), ("row 1", "'id'")),
        ("jsonl-empty", "news.jsonl", "", ("no rows",)),
        (
            "jsonl-future-date",
            "news.jsonl",
            jsonl([{"id": "n1", "title": "x", "published_at": "2099-01-01"}]),
            ("n1",),
        ),
        (
            "json-rows-wrapped-in-an-object",
            "news.json",
            json.dumps({"items": GOOD_RECORDS}, indent=2),
            ("holding the rows under 'items'",),
        ),
        ("parquet-garbage", "news.parquet", "id,title\nn1,not parquet\n", ("Parquet",)),
        ("parquet-no-title", "news.parquet", parquet_bytes({"id": ["n1"], "source": ["AP"]}), ("'title'",)),
        (
            "parquet-title-int",
            "news.parquet",
            parquet_bytes({"id": ["n1"], "title": [7]}),
            ("row 1", "'title'"),
        ),
        (
            "parquet-null-title",
            "news.parquet",
            parquet_bytes({"id": ["n1", "n2"], "title": ["a", None]}),
            ("row 2", "'title'"),
        ),
        (
            "parquet-duplicate-id",
            "news.parquet",
            parquet_bytes({"id": ["n1", "n1"], "title": ["a", "b"]}),
            ("row 2", "'id'"),
        ),
        (
            "parquet-bad-date",
            "news.parquet",
            parquet_bytes({"id": ["n1"], "title": ["a"], "published_at": ["soon"]}),
            ("row 1", "'published_at'"),
        ),
        ("suffix-xlsx", "news.xlsx", "not a table", ("unknown table format",)),
        ("no-suffix", "news", GOOD_CSV, ("no suffix",)),
    ]
    # the corpus reader is the same for every command: embed (which reads the corpus before loading torch)
    # runs most, dedup the cases its load stage adds (dates in the future) and a few others
    by_dedup = {
        "csv-extra-comma-row-1",
        "csv-future-date",
        "jsonl-future-date",
        "tsv-field-count",
        "csv-latin-1",
    }
    out = [
        Case(n, c, dedup(f) if n in by_dedup else embed(f), {f: data, **USER_FILES}, words=(f, *w), status=1)
        for n, f, data, w in cases
    ]
    full = GOOD_CSV.encode()
    out.append(
        Case(
            "parquet-truncated",
            c,
            dedup("news.parquet"),
            {"news.parquet": parquet_bytes({"id": GOOD_IDS, "title": TITLES[:5]})[:200], **USER_FILES},
            words=("news.parquet", "Parquet"),
            status=1,
        )
    )
    out += [
        Case(
            "corpus-is-a-folder",
            c,
            dedup("news.csv"),
            {"news.csv/x.txt": "x"},
            words=("news.csv", "folder"),
            status=1,
        ),
        Case(
            "corpus-missing",
            c,
            dedup("nothere.csv"),
            dict(USER_FILES),
            words=("nothere.csv", "not found"),
            status=1,
        ),
        Case(
            "corpus-broken-link",
            c,
            dedup("news.csv"),
            dict(USER_FILES),
            words=("news.csv", "broken"),
            status=1,
            setup=lambda d: (d / "news.csv").symlink_to("gone.csv"),
        ),
        Case(
            "corpus-link-loop",
            c,
            dedup("news.csv"),
            dict(USER_FILES),
            words=("news.csv", "loop"),
            status=1,
            setup=lambda d: ((d / "a.csv").symlink_to("news.csv"), (d / "news.csv").symlink_to("a.csv")),
        ),
        Case(
            "text-fields-unknown",
            c,
            dedup("news.csv", "--text-fields", "title,teaser"),
            {"news.csv": full},
            words=("teaser",),
        ),
    ]
    return out


def ok_corpora() -> list[Case]:
    g = "valid corpus"
    tsv_quotes = 'id\ttitle\tsource\nt1\t"Quoted start\tAP\nt2\tSecond\tAP\nt3\tThird "x\tAP\n'
    tsv_quotes += 't4\tFourth\tAP\nt5\tFifth"\tAP\n'
    cases = [
        ("tsv-quotes-are-characters", "news.tsv", tsv_quotes, ["t1", "t2", "t3", "t4", "t5"]),
        (
            "csv-quoted-comma-and-newline",
            "news.csv",
            'id,title\nq1,"Floods, again\nand again"\nq2,"He said ""no"""\nq3,plain\n',
            ["q1", "q2", "q3"],
        ),
        ("csv-byte-order-mark", "news.csv", "\ufeff" + GOOD_CSV, GOOD_IDS),
        ("csv-crlf", "news.csv", GOOD_CSV.replace("\n", "\r\n"), GOOD_IDS),
        ("csv-blank-lines", "news.csv", HEAD + "\n" + csv_rows(2) + "\n\n" + csv_rows(3, 3), GOOD_IDS),
        ("csv-no-final-newline", "news.csv", GOOD_CSV.rstrip("\n"), GOOD_IDS),
        (
            "csv-extra-columns",
            "news.csv",
            "id,title,teaser,x\n" + "".join(f"n{i},T {i},t,{i}\n" for i in range(1, 6)),
            GOOD_IDS,
        ),
        ("csv-quote-inside-field", "news.csv", 'id,title\nn1,6" screen\nn2,say "hi"\n', ["n1", "n2"]),
        (
            "csv-chinese",
            "news.csv",
            "id,title\nz1,臺北市豪雨特報\nz2,台北市豪雨特报\nz3,股市大跌\n",
            ["z1", "z2", "z3"],
        ),
        ("csv-numeric-ids", "news.csv", "id,title\n1,a cat\n2,a dog\n10,a bird\n", ["1", "2", "10"]),
        (
            "csv-dates-year-first-and-rfc-2822",
            "news.csv",
            HEAD + "d1,a,AP,2024/5/1 8:00\nd2,b,AP,2024-05-01 08:00:00 UTC\n"
            'd3,c,AP,"Wed, 01 May 2024 16:00:00 +08:00"\nd4,d,AP,NaT\n',
            ["d1", "d2", "d3", "d4"],
        ),
        ("tsv-old-mac-line-endings", "news.tsv", "id\ttitle\rm1\tA story\rm2\tB story\r", ["m1", "m2"]),
        (  # an old Mac line break a CMS kept in an unquoted title: a character of it, not a row's end
            "csv-lone-carriage-return-in-a-title",
            "news.csv",
            "id,title\nr1,Floods\rhit the north\nr2,Storm\n",
            ["r1", "r2"],
        ),
        (  # white space around an id is dropped, a no-break or an ideographic space as an ASCII one
            "csv-ids-padded-with-unicode-spaces",
            "news.csv",
            'id,title\n"n1\u00a0",a cat\n\u3000n2,a dog\n n3 ,a bird\n',
            ["n1", "n2", "n3"],
        ),
        (
            "jsonl-line-separator-in-a-title",
            "news.jsonl",
            '{"id": "s1", "title": "Floods\u2028again"}\n{"id": "s2", "title": "Storm"}\n',
            ["s1", "s2"],
        ),
        (
            "jsonl-blank-lines",
            "news.jsonl",
            jsonl(GOOD_RECORDS[:2]) + "\n\n" + jsonl(GOOD_RECORDS[2:]),
            GOOD_IDS,
        ),
        (
            "jsonl-integer-ids",
            "news.jsonl",
            jsonl([{"id": 7, "title": "a"}, {"id": 8, "title": "b"}]),
            ["7", "8"],
        ),
        ("parquet", "news.parquet", parquet_bytes({"id": GOOD_IDS, "title": TITLES[:5]}), GOOD_IDS),
        ("csv-gzip", "news.csv.gz", gzip.compress(GOOD_CSV.encode()), GOOD_IDS),
        ("jsonl-bzip2", "news.jsonl.bz2", bz2.compress(jsonl(GOOD_RECORDS).encode()), GOOD_IDS),
        ("json-array-pretty-printed", "news.json", json.dumps(GOOD_RECORDS, indent=2), GOOD_IDS),
        ("tsv-xz", "news.tsv.xz", lzma.compress(b"id\ttitle\nx1\tA story\nx2\tB story\n"), ["x1", "x2"]),
    ]
    out = [
        Case(n, g, embed(f), {f: data, **USER_FILES}, expect="ok", ids=ids, outputs=("emb.npy", "emb.json"))
        for n, f, data, ids in cases
    ]
    bad_rows = HEAD + csv_rows(2) + "n3,,AP,\n" + csv_rows(1, 4) + "n5,Bad date,AP,whenever\nn6,Storm,AP,\n"
    out.append(
        Case(
            "csv-quarantine-keeps-every-row",
            g,
            dedup("news.csv", "--quarantine", "bad.csv", "--json"),
            {"news.csv": bad_rows, **USER_FILES},
            expect="ok",
            rows=6,
            outputs=("rep", "bad.csv"),
            check=_quarantined(2),
        )
    )
    padded = 'id,title\n"n1\u00a0",Floods hit the north\n\u3000n2,Floods hit the north\n'
    padded += " n3 ,Stock markets fall\nn4,Stock markets fall\n"
    judged = "pair_id,split,id_a,id_b,text_a,text_b,score\n"
    judged += "p1,validation,n1,n2,Floods hit the north,Floods hit the north,1\n"
    judged += "p2,validation,n3\u3000,\u00a0n4 ,Stock markets fall,Stock markets fall,1\n"
    out.append(
        Case(  # the ids of the corpus and of the pair file are one when they differ only by spaces around
            "judge-pairs-ids-padded-with-unicode-spaces",
            g,
            dedup("news.csv", "--judge-pairs", "pairs.csv", "--json"),
            {"news.csv": padded, "pairs.csv": judged, **USER_FILES},
            expect="ok",
            rows=4,
            outputs=("rep",),
            check=_judged_in_run(2),
        )
    )
    title = '"Floods | <script>alert(1)</script>\nsecond line"'
    hostile = f"id,title\nh1,{title}\nh2,{title}\nh3,Plain\n"
    out.append(
        Case(
            "titles-with-html-pipes-newlines",
            g,
            dedup("news.csv", "--json"),
            {"news.csv": hostile, **USER_FILES},
            expect="ok",
            rows=3,
            outputs=("rep",),
            check=_summary_table(1),
        )
    )
    return out


def _judged_in_run(n: int) -> Callable[[Path, Any], str | None]:
    """The report's ``run.json`` judged ``n`` pairs, every scored pair found in the corpus."""

    def check(d: Path, proc: Any) -> str | None:
        judge = json.loads((d / "rep" / "run.json").read_text(encoding="utf-8"))["judge"]
        got = (judge["judged_pairs"], judge["pairs_not_in_corpus"])
        return None if got == (n, 0) else f"judged, not in the corpus {got}, expected {(n, 0)}"

    return check


def _quarantined(n: int) -> Callable[[Path, Any], str | None]:
    def check(d: Path, proc: Any) -> str | None:
        import pandas as pd

        q = pd.read_csv(d / "bad.csv")
        return None if len(q) == n else f"quarantine file has {len(q)} rows, expected {n}"

    return check


def _summary_table(clusters: int) -> Callable[[Path, Any], str | None]:
    def check(d: Path, proc: Any) -> str | None:
        md = (d / "rep" / "summary.md").read_text()
        rows = [line for line in md.splitlines() if line.startswith("| c-")]
        lines = md.splitlines()
        head = lines[lines.index(rows[0]) - 2] if rows else ""  # the table's header, above its rule
        cells = head.count("|")  # the table's own header: as many cells in each row
        if len(rows) != clusters or any(r.replace("\\|", "").count("|") != cells for r in rows):
            return f"summary.md table broken: {rows} under {head!r}"
        if "<script>" in md or "<script>alert" in (d / "rep" / "index.html").read_text():
            return "raw HTML from a title in summary.md or index.html"
        return None

    return check


# --- dangerous paths ---------------------------------------------------------------------------------------

SITE: Files = {
    "site/index.html": "<h1>mine</h1>",
    "site/summary.md": "# mine",
    "site/run.json": '{"files": {}}',
    "site/index/notes.txt": "mine",
}
MARKER = ".nlsim.json"
EARLIER_QUARANTINE = "\ufeffrow,field,reason,raw_id,raw_title\n7,title,empty text,n7,\n"
"""A quarantine file as an earlier run wrote it (nlsim replaces it; a failed run must leave it)."""


def marker(kind: str) -> str:
    return json.dumps({"written_by": "nlsim", "kind": kind, "nlsim_version": "0"})


def dangerous_paths() -> list[Case]:
    g = "dangerous path"
    base: Files = {"news.csv": GOOD_CSV, **USER_FILES}
    pairs = pair_table()

    def link(src: str, dst: str) -> Callable[[Path], None]:
        return lambda d: (d / src).symlink_to(dst)

    # a quarantine file an earlier run wrote: a run that fails after reading the corpus leaves it as it was
    earlier: Files = {"news.csv": HEAD + csv_rows(2) + "n3,,AP,\n", "q.csv": EARLIER_QUARANTINE, **USER_FILES}
    late = HEAD + csv_rows(4) + "n5,,AP,\nn6,Storm,AP,2025-05-01T08:00:00Z\n"  # a lone item a year on
    return [
        Case(
            "quarantine-kept-when-the-model-is-missing",
            g,
            dedup("news.csv", "--quarantine", "q.csv", "--model", "models/none"),
            earlier,
            words=("models/none",),
        ),
        Case(
            "quarantine-kept-when-every-row-is-refused",
            g,
            dedup("news.csv", "--quarantine", "q.csv"),
            {**earlier, "news.csv": HEAD + "n1,,AP,\nn2,-,AP,\n"},
            words=("news.csv", "every row was rejected", "row 1", "q.csv is left as it was"),
            status=1,
        ),
        Case(
            "quarantine-kept-when-a-daily-load-fails-later",  # the lone late item is refused after the rows
            g,
            dedup("news.csv", "--quarantine", "q.csv", "--state", "st"),
            {**earlier, "news.csv": late},
            words=("news.csv", "dated more than"),
            status=1,
        ),
        Case(
            "quarantine-is-the-corpus",
            g,
            dedup("news.csv", "--quarantine", "news.csv"),
            base,
            words=("--quarantine", "--corpus"),
            status=2,
        ),
        Case(
            "quarantine-is-./corpus",
            g,
            dedup("news.csv", "--quarantine", "./news.csv"),
            base,
            words=("--quarantine", "--corpus"),
            status=2,
        ),
        Case(
            "quarantine-is-a-link-to-the-corpus",
            g,
            dedup("news.csv", "--quarantine", "alias.csv"),
            base,
            words=("--quarantine",),
            status=2,
            setup=link("alias.csv", "news.csv"),
        ),
        Case(
            "quarantine-is-a-user-file",
            g,
            dedup("news.csv", "--quarantine", "notes.txt"),
            base,
            words=("--quarantine", "notes.txt", "not a quarantine file"),
            status=2,
        ),
        Case(
            "quarantine-is-a-user-csv",
            g,
            dedup("news.csv", "--quarantine", "project/data.csv"),
            base,
            words=("--quarantine", "not a quarantine file"),
            status=2,
        ),
        Case(
            "quarantine-is-the-calibration",
            g,
            dedup("news.csv", "--quarantine", "cal.json", "--calibration", "cal.json", threshold=None),
            {**base, "cal.json": calibration()},
            words=("--quarantine", "--calibration"),
            status=2,
        ),
        Case(
            "out-is-the-corpus-file",
            g,
            dedup("news.csv", out="news.csv"),
            base,
            words=("--out", "--corpus"),
            status=2,
        ),
        Case(
            "corpus-inside-out",
            g,
            dedup("rep/pairs.parquet", out="rep"),
            {"rep/pairs.parquet": parquet_bytes({"id": GOOD_IDS, "title": TITLES[:5]}), **USER_FILES},
            words=("--out", "--corpus"),
            status=2,
        ),
        Case(
            "out-is-a-user-site",
            g,
            dedup("news.csv", out="site"),
            {**base, **SITE},
            words=("--out", "site"),
            status=2,
        ),
        Case(
            "out-is-the-user-project",
            g,
            dedup("news.csv", out="project"),
            base,
            words=("--out", "project"),
            status=2,
        ),
        Case(
            "out-is-a-user-file",
            g,
            dedup("news.csv", out="notes.txt"),
            base,
            words=("--out", "notes.txt"),
            status=2,
        ),
        # an --out that cannot be made is a runtime failure (exit 1; tests/hostile/test_refusals.py)
        Case("out-under-a-file", g, dedup("news.csv", out="notes.txt/rep"), base, words=("--out",), status=1),
        Case(
            "out-with-a-forged-marker",
            g,
            dedup("news.csv", out="site"),
            {**base, **SITE, f"site/{MARKER}": "{}"},
            words=("--out",),
            status=2,
        ),
        Case(
            "out-is-a-daily-report-folder",
            g,
            dedup("news.csv", out="daily"),
            {**base, f"daily/{MARKER}": marker("daily-report"), "daily/LATEST": "x\n"},
            words=("daily-report",),
            status=2,
        ),
        Case(
            "out-is-a-model-folder",
            g,
            dedup("news.csv", out="m"),
            {**base, f"m/{MARKER}": marker("model"), "m/config.json": "{}"},
            words=("model",),
            status=2,
        ),
        Case(
            "out-holds-the-calibration",
            g,
            dedup("news.csv", "--calibration", "rep/cal.json", threshold=None),
            {**base, "rep/cal.json": calibration()},
            words=("--out", "--calibration"),
            status=2,
        ),
        Case(
            "state-is-a-user-folder",
            g,
            dedup("news.csv", "--state", "project"),
            base,
            words=("--state", "project"),
            status=2,
        ),
        Case(
            "state-holds-user-generations",
            g,
            dedup("news.csv", "--state", "mine"),
            {
                **base,
                "mine/generations/2024/notes.txt": "mine",
                "mine/generations/g000001-abcdef/x.txt": "mine",
            },
            words=("--state",),
            status=2,
        ),
        Case(
            "state-holds-user-generations-rebuild",
            g,
            dedup("news.csv", "--state", "mine", "--rebuild-state"),
            {**base, "mine/generations/g000001-abcdef/x.txt": "mine"},
            words=("--state",),
            status=2,
        ),
        Case(
            "state-is-a-file",
            g,
            dedup("news.csv", "--state", "notes.txt"),
            base,
            words=("--state", "notes.txt"),
            status=2,
        ),
        Case(
            "state-contains-the-corpus",
            g,
            dedup("data/news.csv", "--state", "data"),
            {"data/news.csv": GOOD_CSV, **USER_FILES},
            words=("--state", "--corpus"),
            status=2,
        ),
        Case(
            "state-equals-out",
            g,
            dedup("news.csv", "--state", "st", out="st"),
            base,
            words=("--out", "--state"),
            status=2,
        ),
        Case(
            "state-is-a-report-folder",
            g,
            dedup("news.csv", "--state", "r"),
            {**base, f"r/{MARKER}": marker("report"), "r/summary.md": "x"},
            words=("--state", "report"),
            status=2,
        ),
        Case(
            "embed-sidecar-is-the-corpus",
            g,
            embed("news.json", out="news.npy"),
            {"news.json": jsonl(GOOD_RECORDS), **USER_FILES},
            words=("news.json", "--corpus"),
            status=2,
        ),
        Case(
            "embed-sidecar-is-a-user-file",
            g,
            embed("news.csv", out="emb.npy"),
            {**base, "emb.json": '{"mine": 1}'},
            words=("emb.json",),
            status=2,
        ),
        Case("embed-out-not-npy", g, embed("news.csv", out="notes.txt"), base, words=("--out",), status=2),
        Case(
            "embed-out-under-a-file",
            g,
            embed("news.csv", out="notes.txt/e.npy"),
            base,
            words=("--out",),
            status=1,
        ),
        Case(
            "calibrate-out-is-the-pairs",
            g,
            [
                "calibrate",
                "--model",
                MODEL,
                "--pairs",
                "pairs.tsv",
                "--convert",
                "none",
                "--out",
                "pairs.tsv",
            ],
            {"pairs.tsv": pairs, **USER_FILES},
            words=("--out", "--pairs"),
            status=2,
        ),
        Case(
            "finetune-out-is-a-user-project",
            g,
            finetune("pairs.tsv", "project"),
            {"pairs.tsv": pairs, "project/config.json": "{}", **USER_FILES},
            words=("project", "not a model folder written by nlsim"),
            status=2,
        ),
        Case(
            "finetune-out-with-a-forged-marker",
            g,
            finetune("pairs.tsv", "project"),
            {
                "pairs.tsv": pairs,
                f"project/{MARKER}": '{"kind": "model"}',
                "project/config.json": "{}",
                **USER_FILES,
            },
            words=("project",),
            status=2,
        ),
        Case(
            "finetune-out-is-the-pairs-file",
            g,
            finetune("pairs.tsv", "pairs.tsv"),
            {"pairs.tsv": pairs, **USER_FILES},
            words=("--out", "pairs.tsv"),
            status=2,
        ),
        Case(
            "finetune-out-holds-the-pairs",
            g,
            finetune("m/pairs.tsv", "m"),
            {"m/pairs.tsv": pairs, f"m/{MARKER}": marker("model"), **USER_FILES},
            words=("--out", "--pairs"),
            status=2,
        ),
        Case(
            "annotate-draw-out-is-the-corpus",
            g,
            ["annotate", "draw", "--corpus", "items.tsv", "--model", "tfidf-char2", "--out", "items.tsv"],
            {"items.tsv": items_table(), **USER_FILES},
            words=("--out", "--corpus"),
            status=2,
        ),
        Case(
            "annotate-draw-out-is-the-pairs",
            g,
            [
                "annotate",
                "draw",
                "--corpus",
                "items.tsv",
                "--pairs",
                "pairs.tsv",
                "--model",
                "tfidf-char2",
                "--out",
                "pairs.tsv",
            ],
            {"items.tsv": items_table(), "pairs.tsv": pairs, **USER_FILES},
            words=("--out", "--pairs"),
            status=2,
        ),
        Case(
            "annotate-merge-into-itself",
            g,
            ["annotate", "merge", "--filled", "pairs.tsv", "--pairs", "pairs.tsv"],
            {"pairs.tsv": pairs, **USER_FILES},
            words=("pairs.tsv",),
        ),
    ]


# --- options ----------------------------------------------------------------------------------------------


def bad_options() -> list[Case]:
    g = "bad option"
    base: Files = {"news.csv": GOOD_CSV, "pairs.tsv": pair_table(), **USER_FILES}
    opts = [
        ("threshold-nan", dedup("news.csv", threshold="nan"), ("--threshold",)),
        ("threshold-7.5", dedup("news.csv", threshold="7.5"), ("--threshold",)),
        ("threshold--2", dedup("news.csv", threshold="-2"), ("--threshold",)),
        ("threshold-text", dedup("news.csv", threshold="high"), ("--threshold",)),
        ("no-threshold-for-a-registry-model", dedup("news.csv", threshold=None), ("threshold",)),
        ("k-0", dedup("news.csv", "--k", "0"), ("--k",)),
        ("k-negative", dedup("news.csv", "--k", "-5"), ("--k",)),
        ("batch-size-0", dedup("news.csv", "--batch-size", "0"), ("--batch-size",)),
        ("window-hours-negative", dedup("news.csv", "--window-hours", "-1"), ("--window-hours",)),
        ("window-hours-nan", dedup("news.csv", "--window-hours", "nan"), ("--window-hours",)),
        (
            "retention-days-negative",
            dedup("news.csv", "--state", "st", "--retention-days", "-1"),
            ("--retention-days",),
        ),
        (
            "retention-days-nan",
            dedup("news.csv", "--state", "st", "--retention-days", "nan"),
            ("--retention-days",),
        ),
        (
            "retention-days-inf",
            dedup("news.csv", "--state", "st", "--retention-days", "inf"),
            ("--retention-days",),
        ),
        (
            "as-of-yesterday",
            dedup("news.csv", "--state", "st", "--as-of", "yesterday"),
            ("--as-of", "yesterday"),
        ),
        (  # the 12th of May or the 5th of December? a state's clock never moves back: never guessed
            "as-of-day-first",
            dedup("news.csv", "--state", "st", "--as-of", "12/05/2024"),
            ("--as-of", "12/05/2024", "year first"),
        ),
        (  # POSIX reads GMT+8 as 8 hours behind UTC, a newsroom means ahead
            "as-of-gmt-plus-offset",
            dedup("news.csv", "--state", "st", "--as-of", "2024-05-01 16:00 GMT+8"),
            ("--as-of", "GMT+8"),
        ),
        (  # a placeholder year: no clock a state can hold
            "as-of-year-one",
            dedup("news.csv", "--state", "st", "--as-of", "0001-01-01"),
            ("--as-of", "0001-01-01"),
        ),
        ("date-impossible", dedup("news-{date}.csv", "--date", "2024-13-45"), ("--date",)),
        ("corpus-other-placeholder", dedup("news-{day}.csv"), ("news-{day}.csv", "only {date}")),
        ("corpus-date-and-other-placeholder", dedup("news-{date}-{day}.csv"), ("not {day}", "only {date}")),
        ("corpus-date-unbalanced-brace", dedup("news-{date.csv"), ("news-{date.csv", "opens or closes")),
        ("timezone-unknown", dedup("news.csv", "--timezone", "Mars/Base"), ("--timezone",)),
        (  # a folder of the zone database, not a zone: the operating system's "Is a directory" named neither
            "timezone-a-region-folder",
            dedup("news.csv", "--timezone", "Europe"),
            ("--timezone 'Europe'", "not a time zone name"),
        ),
        (  # the machine's own zone: a daily state's times would move with the host that runs it
            "timezone-the-machines-own",
            dedup("news.csv", "--state", "st", "--timezone", "localtime"),
            ("--timezone 'localtime'", "names the zone of the machine", "IANA name"),
        ),
        ("text-fields-empty", dedup("news.csv", "--text-fields", ""), ("--text-fields",)),
        ("convert-unknown", dedup("news.csv", "--convert", "latin"), ("--convert",)),
        ("index-unknown", dedup("news.csv", "--index", "btree"), ("--index",)),
        ("representative-unknown", dedup("news.csv", "--representative", "random"), ("--representative",)),
        (
            "model-missing-models-path",
            dedup("news.csv", "--model", "models/x"),
            ("models/x", "no such model folder"),
        ),
        ("model-missing-relative-path", dedup("news.csv", "--model", "./nope"), ("./nope",)),
        (
            "model-missing-absolute-path",
            dedup("news.csv", "--model", "/nonexistent/model"),
            ("/nonexistent/model",),
        ),
        ("model-is-a-file", dedup("news.csv", "--model", "notes.txt"), ("notes.txt", "file")),
        ("model-is-a-user-folder", dedup("news.csv", "--model", "project"), ("project", "config.json")),
        ("rerank-without-reranker", dedup("news.csv", "--rerank"), ("--rerank",)),
        (
            "calibration-missing",
            dedup("news.csv", "--calibration", "nothere.json", threshold=None),
            ("nothere.json", "file not found"),
            1,  # a missing input file, as --corpus: a runtime failure
        ),
        ("missing-corpus-option", ["dedup", "--out", "rep"], ("--corpus",)),
        ("embed-batch-size-0", embed("news.csv", "--batch-size", "0"), ("--batch-size",)),
        (
            "embed-text-fields-empty",
            ["embed", "--corpus", "news.csv", "--out", "e.npy", "--text-fields", ","],
            ("--text-fields",),
        ),
        (
            "evaluate-unknown-split",
            ["evaluate", "--model", "tfidf-char2", "--pairs", "pairs.tsv", "--split", "dev"],
            ("--split 'dev'", "unknown split"),
            2,  # a bad option, not a bad pair file
        ),
        (
            "calibrate-level-7",
            ["calibrate", "--model", MODEL, "--pairs", "pairs.tsv", "--level", "7", "--out", "c.json"],
            ("level",),
        ),
        (
            "calibrate-level-name",
            ["calibrate", "--model", MODEL, "--pairs", "pairs.tsv", "--level", "similar", "--out", "c.json"],
            ("similar",),
        ),
        ("finetune-epochs-0", finetune("pairs.tsv", "model", "--epochs", "0"), ("epochs",)),
        ("finetune-lr-negative", finetune("pairs.tsv", "model", "--lr", "-1"), ("--lr must be > 0",)),
        ("finetune-batch-size-1", finetune("pairs.tsv", "model", "--batch-size", "1"), ("--batch-size",)),
        ("finetune-train-size-1", finetune("pairs.tsv", "model", "--train-size", "1"), ("--train-size",)),
        (
            "finetune-silver-corpus-missing",
            finetune("pairs.tsv", "model", "--silver-corpus", "nothere.tsv"),
            ("nothere.tsv",),
        ),
        ("finetune-level-0", finetune("pairs.tsv", "model", "--level", "0"), ("level",)),
    ]
    return [
        Case(n, g, o[1], base, words=o[2], status=o[3] if len(o) > 3 else 2) for o in opts for n in [o[0]]
    ]


# --- calibration files -----------------------------------------------------------------------------------


def calibration(**fields: Any) -> str:
    data = {"threshold": 0.9, "level": 1.0, "precision": 1, "recall": 1, "f1": 1, "n": 10, "n_positive": 3}
    data.update(fields)
    return json.dumps({k: v for k, v in data.items() if v is not ...})


def bad_calibrations() -> list[Case]:
    g = "bad calibration"
    files = [
        ("threshold-nan", calibration(threshold=float("nan")), ("threshold",)),
        ("threshold-7.5", calibration(threshold=7.5), ("threshold",)),
        ("threshold--3", calibration(threshold=-3), ("threshold",)),
        ("threshold-text", calibration(threshold="high"), ("threshold",)),
        ("threshold-null", calibration(threshold=None), ("threshold",)),
        ("threshold-missing", calibration(threshold=...), ("threshold",)),
        ("level-0", calibration(level=0), ("level",)),
        ("level-text", calibration(level="story"), ("level",)),
        ("not-json", "threshold = 0.9\n", ("not a valid calibration",)),
        ("empty-file", "", ("not a valid calibration",)),
        ("json-array", "[0.9]", ("not a valid calibration",)),
        ("truncated", calibration()[:25], ("not a valid calibration",)),
    ]
    out = [
        Case(
            f"calibration-{n}",
            g,
            dedup("news.csv", "--calibration", "cal.json", threshold=None),
            {"news.csv": GOOD_CSV, "cal.json": text, **USER_FILES},
            words=("cal.json", *w),
            status=1,
        )
        for n, text, w in files
    ]
    out.append(
        Case(
            "calibration-of-another-model",
            g,
            dedup("news.csv", "--calibration", "cal.json", threshold=None),
            {
                "news.csv": GOOD_CSV,
                "cal.json": calibration(model="other/model", fingerprint="0" * 64),
                **USER_FILES,
            },
            words=("cal.json", "calibrated for another model"),
            status=2,
        )
    )
    out.append(
        Case(
            "calibration-is-a-folder-without-one",
            g,
            dedup("news.csv", "--calibration", "project", threshold=None),
            {"news.csv": GOOD_CSV, **USER_FILES},
            words=("project", "a folder without calibration.json"),
            status=2,
        )
    )
    return out


# --- pair files -------------------------------------------------------------------------------------------


def pair_table(
    rows: list[tuple[str, str, str, str]] | None = None, header: str = "text_a\ttext_b\tscore\tsplit"
) -> str:
    if rows is None:
        rows = []
        for split, n in (("train", 8), ("validation", 8), ("test", 6)):
            for i in range(n):
                rows.append(
                    (
                        f"{split} sentence {i} about cats",
                        f"{split} text {i} on dogs",
                        f"{(i % 5) / 4:g}",
                        split,
                    )
                )
    return header + "\n" + "".join("\t".join(r) + "\n" for r in rows)


def finetune(pairs: str, out: str, *more: str) -> list[str]:
    return [
        "finetune",
        "--pairs",
        pairs,
        "--out",
        out,
        "--model",
        MODEL,
        "--convert",
        "none",
        "--epochs",
        "1",
        "--no-reranker",
        "--level",
        "0.5",
        *more,
    ]


def items_table() -> str:
    return "id\ttitle\n" + "".join(f"i{i}\t{t}\n" for i, t in enumerate(TITLES))


def bad_pairs() -> list[Case]:
    g = "bad pairs"
    good = pair_table()
    lines = good.splitlines()
    test_row = next(line for line in lines if line.endswith("\ttest"))
    a, b, score, _ = test_row.split("\t")

    def evaluate(p: str = "pairs.tsv", split: str = "test") -> list[str]:
        return ["evaluate", "--model", "tfidf-char2", "--pairs", p, "--convert", "none", "--split", split]

    cases = [
        ("missing-score-column", evaluate(), "text_a\ttext_b\tsplit\na\tb\ttest\n", ("'score'",), 1),
        ("score-1.5", evaluate(), good + "x\ty\t1.5\ttest\n", ("row 23", "'score'"), 1),
        ("score-text", evaluate(), good + "x\ty\thigh\ttest\n", ("row 23", "'score'"), 1),
        ("score-empty", evaluate(), good + "x\ty\t\ttest\n", ("row 23", "'score'"), 1),
        ("score-nan", evaluate(), good + "x\ty\tnan\ttest\n", ("row 23", "'score'"), 1),
        ("empty-text", evaluate(), good + "\ty\t0.5\ttest\n", ("row 23", "'text_a'"), 1),
        (
            "duplicate-pair-id",
            evaluate(),
            "pair_id\ttext_a\ttext_b\tscore\tsplit\np1\ta\tb\t0\ttest\np1\tc\td\t1\ttest\n",
            ("row 2", "pair_id"),
            1,
        ),
        ("unknown-split", evaluate(), good + "x\ty\t0.5\tdev\n", ("row 23", "'split'"), 1),
        (
            "test-pair-copied-to-train",
            evaluate(),
            good + f"{a}\t{b}\t{score}\ttrain\n",
            ("row 23", "'test'", "'train'"),
            1,
        ),
        (
            "test-pair-swapped-into-train",
            evaluate(),
            good + f"{b}\t{a}\t{score}\ttrain\n",
            ("row 23", "'test'"),
            1,
        ),
        (
            "test-pair-respaced-into-train",
            evaluate(),
            good + f" {a.upper()} \t{b}\t{score}\ttrain\n",
            ("row 23", "'test'"),
            1,
        ),
        (
            "test-pair-again-without-a-split",
            evaluate(split="all"),
            good + f"{b}\t{a}\t{score}\t\n",
            ("row 23", "'test'", "no split"),
            1,
        ),
        (
            "item-paired-with-itself",
            evaluate(),
            "id_a\tid_b\ttext_a\ttext_b\tscore\tsplit\nx1\tx2\ta\tb\t0\ttest\nx3\tx3\tc\tc\t1\ttest\n",
            ("row 2", "'id_b'", "paired with itself"),
            1,
        ),
        (
            "same-ids-in-two-splits",
            evaluate(),
            "id_a\tid_b\ttext_a\ttext_b\tscore\tsplit\nx1\tx2\ta\tb\t0\ttrain\nx2\tx1\tc\td\t1\ttest\n",
            ("row 2", "'id_a'"),
            1,
        ),
        (
            "csv-extra-comma",
            evaluate("pairs.csv"),
            "text_a,text_b,score,split\na,b,0.5,test\nc,d,e,0.5,test\n",
            ("row 2", "fields"),
            1,
        ),
        (
            "jsonl-not-a-pair-format",
            evaluate("pairs.jsonl"),
            '{"text_a": "a"}\n',
            ("unknown table format",),
            1,
        ),
        (
            "non-utf8",
            evaluate(),
            ("text_a\ttext_b\tscore\tsplit\nx\tcaf\xe9\t0.5\ttest\n").encode("latin-1"),
            ("row 1", "UTF-8"),
            1,
        ),
        (
            "no-pairs-in-split",
            evaluate(split="validation"),
            pair_table([("a", "b", "0.5", "test")]),
            ("validation",),
            1,
        ),
        ("evaluate-one-pair", evaluate(), pair_table([("a", "b", "0.5", "test")]), ("1 pair(s)",), 1),
        (
            "evaluate-constant-scores",
            evaluate(),
            pair_table([(f"a{i}", f"b{i}", "0.5", "test") for i in range(5)]),
            ("score 0.5",),
            1,
        ),
        (
            "finetune-two-training-pairs",
            finetune("pairs.tsv", "model"),
            pair_table(
                [(f"a{i}", f"b{i}", f"{i % 2}", "train") for i in range(2)]
                + [(f"v{i}", f"w{i}", f"{i % 2}", "validation") for i in range(6)]
            ),
            ("training split has 2",),
            1,
        ),
        (
            "finetune-constant-training-scores",
            finetune("pairs.tsv", "model"),
            pair_table(
                [(f"a{i}", f"b{i}", "1", "train") for i in range(6)]
                + [(f"v{i}", f"w{i}", f"{i % 2}", "validation") for i in range(6)]
            ),
            ("every training pair",),
            1,
        ),
        (
            "finetune-no-validation",
            finetune("pairs.tsv", "model"),
            pair_table([(f"a{i}", f"b{i}", f"{i % 2}", "train") for i in range(6)]),
            ("validation",),
            1,
        ),
        (
            "finetune-level-on-one-side",
            finetune("pairs.tsv", "model"),
            pair_table(
                [(f"a{i}", f"b{i}", f"{i % 2}", "train") for i in range(6)]
                + [(f"v{i}", f"w{i}", f"{i / 20:g}", "validation") for i in range(6)]
            ),
            ("level",),
            1,
        ),
        (
            "finetune-constant-test-scores",
            finetune("pairs.tsv", "model"),
            pair_table(
                [(f"a{i}", f"b{i}", f"{i % 2}", "train") for i in range(6)]
                + [(f"v{i}", f"w{i}", f"{i % 2}", "validation") for i in range(6)]
                + [(f"t{i}", f"u{i}", "0.5", "test") for i in range(4)]
            ),
            ("field 'score'", "split 'test'", "--no-test"),
            1,
        ),
        (
            "finetune-test-pair-in-train",
            finetune("pairs.tsv", "model"),
            good + f"{a}\t{b}\t{score}\ttrain\n",
            ("row 23", "'test'"),
            1,
        ),
    ]
    out = []
    for n, argv, text, w, status in cases:
        name = argv[argv.index("--pairs") + 1]
        out.append(Case(f"pairs-{n}", g, argv, {name: text, **USER_FILES}, words=(name, *w), status=status))
    return out


# --- state folders ---------------------------------------------------------------------------------------


def _manifest_edit(fn: Callable[[dict[str, Any]], None]) -> Callable[[Path], None]:
    def setup(d: Path) -> None:
        path = d / "st" / "MANIFEST.json"
        m = json.loads(path.read_text())
        fn(m)
        path.write_text(json.dumps(m))

    return setup


def _gen_file(rel: str, how: str) -> Callable[[Path], None]:
    def setup(d: Path) -> None:
        m = json.loads((d / "st" / "MANIFEST.json").read_text())
        path = d / "st" / "generations" / m["generation_dir"] / rel
        data = path.read_bytes()
        if how == "truncate":
            path.write_bytes(data[: len(data) // 2])
        else:
            flipped = bytearray(data)
            flipped[len(data) // 2] ^= 0xFF
            path.write_bytes(bytes(flipped))

    return setup


def _gen_file_gone(rel: str) -> Callable[[Path], None]:
    """Delete a file of the current generation and its manifest entry (a hand edit the checksums miss)."""

    def setup(d: Path) -> None:
        path = d / "st" / "MANIFEST.json"
        m = json.loads(path.read_text())
        (d / "st" / "generations" / m["generation_dir"] / rel).unlink()
        del m["files"][rel]
        path.write_text(json.dumps(m))

    return setup


def _index_meta_without(key: str) -> Callable[[Path], None]:
    """Drop ``key`` from the current generation's index ``meta.json``, its manifest checksum updated."""

    def setup(d: Path) -> None:
        path = d / "st" / "MANIFEST.json"
        m = json.loads(path.read_text())
        meta_path = d / "st" / "generations" / m["generation_dir"] / "index" / "meta.json"
        meta = json.loads(meta_path.read_text())
        del meta[key]
        meta_path.write_text(json.dumps(meta))
        data = meta_path.read_bytes()
        m["files"]["index/meta.json"] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
        path.write_text(json.dumps(m))

    return setup


def bad_states(template: Path) -> list[Case]:
    g = "bad state"
    files: Files = {"day3.csv": HEAD + csv_rows(3, 20), **USER_FILES}
    argv = dedup("day3.csv", "--state", "st")

    def with_state(extra: Callable[[Path], None] | None = None) -> Callable[[Path], None]:
        def setup(d: Path) -> None:
            shutil.copytree(template / "st", d / "st", symlinks=True)
            shutil.copytree(template / "out", d / "out", symlinks=True)
            if extra is not None:
                extra(d)

        return setup

    def gone(name: str) -> Callable[[Path], None]:
        return lambda d: (d / "st" / name).unlink()

    def prev(m: dict[str, Any]) -> None:
        m["generation_dir"] = m["previous_generation_dir"]

    def prev_and_number(m: dict[str, Any]) -> None:
        m["generation_dir"], m["generation"] = m["previous_generation_dir"], m["generation"] - 1

    def bad_names(value: str) -> Callable[[dict[str, Any]], None]:
        return lambda m: m.__setitem__("generation_dir", value)

    def write(rel: str, text: str) -> Callable[[Path], None]:
        return lambda d: (d / "st" / rel).write_text(text)

    cases = [
        ("manifest-deleted", gone("MANIFEST.json"), ("MANIFEST.json", "--rebuild-state")),
        ("manifest-garbage", write("MANIFEST.json", "{not json"), ("MANIFEST.json", "--rebuild-state")),
        ("manifest-empty-object", write("MANIFEST.json", "{}"), ("MANIFEST.json",)),
        ("manifest-points-at-previous-generation", _manifest_edit(prev), ("--rebuild-state",)),
        (
            "manifest-points-at-previous-with-its-number",
            _manifest_edit(prev_and_number),
            ("--rebuild-state",),
        ),
        ("manifest-generation-dir-escapes", _manifest_edit(bad_names("../../project")), ("did not write",)),
        (
            "manifest-generation-dir-missing",
            _manifest_edit(bad_names("g000002-000000")),
            ("--rebuild-state",),
        ),
        (
            "manifest-format-version-99",
            _manifest_edit(lambda m: m.__setitem__("format_version", 99)),
            ("99",),
        ),
        ("items-truncated", _gen_file("items.parquet", "truncate"), ("items.parquet", "--rebuild-state")),
        ("pairs-flipped-byte", _gen_file("pairs.parquet", "flip"), ("pairs.parquet", "--rebuild-state")),
        ("embeddings-flipped-byte", _gen_file("index/embeddings.npy", "flip"), ("--rebuild-state",)),
        ("marker-of-a-report", write(MARKER, marker("report")), ("report",)),
        (
            "manifest-identity-search-a-string",
            _manifest_edit(lambda m: m["identity"].__setitem__("search", "k=20")),
            ("MANIFEST.json", "'search'", "--rebuild-state"),
        ),
        (
            "manifest-identity-text-fields-a-number",
            _manifest_edit(lambda m: m["identity"].__setitem__("text_fields", 7)),
            ("MANIFEST.json", "'text_fields'", "--rebuild-state"),
        ),
        ("index-meta-without-kind", _index_meta_without("kind"), ("meta.json", "'kind'", "--rebuild-state")),
        (
            "report-table-deleted",
            _gen_file_gone("report/pairs.parquet"),
            ("pairs.parquet", "missing", "--rebuild-state"),
        ),
    ]
    out = [
        Case(f"state-{n}", g, argv, dict(files), words=w, setup=with_state(s), status=None)
        for n, s, w in cases
    ]
    out.append(
        Case(
            "state-future-item",
            g,
            dedup("future.csv", "--state", "st"),
            {"future.csv": HEAD + csv_rows(2, 20) + "n99,Typo,AP,2099-01-01\n", **USER_FILES},
            words=("future.csv", "n99", "published_at"),
            setup=with_state(),
            status=1,
        )
    )
    out.append(
        Case(
            "state-as-of-before-the-state",
            g,
            dedup("day3.csv", "--state", "st", "--as-of", "2000-01-01"),
            dict(files),
            words=("--as-of",),
            setup=with_state(),
            status=2,
        )
    )
    out.append(
        Case(
            "state-as-of-in-the-future",  # a year typed wrong: every later day would be too old, for good
            g,
            dedup("day3.csv", "--state", "st", "--as-of", "2099-01-01"),
            dict(files),
            words=("--as-of", "after now"),
            setup=with_state(),
            status=2,
        )
    )
    out.append(
        Case(  # another desk's daily run writing the same --out: it would sweep this run's report away
            "state-out-held-by-another-daily-run",
            g,
            dedup("day3.csv", "--state", "st-desk2", out="out"),
            dict(files),
            words=("report folder", "locked by another run"),
            setup=with_state(_out_locked_by_this_process),
            status=1,
            process=True,
            check=lambda d, _: "--state st-desk2 was made" if (d / "st-desk2").exists() else None,
        )
    )
    out.append(
        Case(
            "state-date-in-the-future",  # 2026 typed wrong: an undated day's clock, which never moves back
            g,
            dedup("day-{date}.csv", "--state", "st", "--date", "2062-11-05"),
            dict(files),
            words=("--date 2062-11-05", "after today"),
            setup=with_state(),
            status=2,
        )
    )
    out.append(
        Case(
            "state-retention-beyond-100-years",
            g,
            dedup("day3.csv", "--state", "st", "--retention-days", "200000"),
            dict(files),
            words=("--retention-days", "36525"),
            setup=with_state(),
            status=2,
        )
    )
    out.append(
        Case(
            "state-day-all-older-than-the-window",
            g,
            dedup("old.csv", "--state", "st"),
            {"old.csv": HEAD + "o1,Old story,AP,2000-01-01\no2,Another one,AP,2000-01-02\n", **USER_FILES},
            words=("old.csv", "published_at", "older than the window"),
            setup=with_state(),
            status=1,
        )
    )
    note = Path("st", "generations", "g000000-000000", "NOTES.txt")
    out.append(
        Case(
            "state-generation-folder-with-a-user-note",
            g,
            dedup("day3.csv", "--state", "st"),
            dict(files),
            words=("NOTES.txt", "not written by nlsim"),
            setup=with_state(lambda d: ((d / note).parent.mkdir(), (d / note).write_text("mine"))),
            status=1,
            check=lambda d, p: None if (d / note).read_text() == "mine" else "note changed",
        )
    )
    out.append(
        Case(
            "state-with-a-user-note-runs",
            "valid state",
            dedup("day3.csv", "--state", "st", "--json"),
            dict(files),
            expect="ok",
            rows=3,
            outputs=("st/", "out/"),
            setup=with_state(lambda d: (d / "st" / "my-notes.txt").write_text("mine")),
            check=lambda d, p: None if (d / "st" / "my-notes.txt").read_text() == "mine" else "note changed",
        )
    )
    out.append(
        Case(
            "state-manifest-deleted-rebuild",
            "valid state",
            dedup("day3.csv", "--state", "st", "--rebuild-state", "--json"),
            dict(files),
            expect="ok",
            rows=3,
            outputs=("st/", "out/"),
            setup=with_state(gone("MANIFEST.json")),
            check=_moved_aside,
        )
    )
    return out


def _moved_aside(d: Path, proc: Any) -> str | None:
    broken = list((d / "st").glob("broken-*/generations/*"))
    return None if len(broken) == 2 else f"expected the 2 old generations in broken-*/, found {broken}"


def build_state_template(folder: Path) -> None:
    """Two committed daily runs (so the state has a current and a previous generation)."""
    folder.mkdir(parents=True)
    (folder / "day1.csv").write_text(HEAD + csv_rows(5))
    (folder / "day2.csv").write_text(HEAD + csv_rows(4, 6))
    for day in ("day1.csv", "day2.csv"):
        proc = prepare(dedup(day, "--state", "st", out="out"), folder)
        if proc.returncode != 0:
            raise RuntimeError(f"state template: {proc.stderr[-2000:]}")


# --- model folders ---------------------------------------------------------------------------------------


def build_model_template(folder: Path) -> None:
    """MiniLM-L3 saved by nlsim, with a calibration.json holding its true fingerprint."""
    from nlsim.encoders import load_encoder
    from nlsim.evaluation.calibration import Calibration, save_calibration

    enc = load_encoder(MODEL, backend="torch")
    enc.save(folder)
    cal = Calibration(0.9, 1.0, 1.0, 1.0, 1.0, 10, 3, model=enc.model_id, fingerprint=enc.fingerprint)
    save_calibration(cal, folder)


def _damage(how: str) -> Callable[[Path], None]:
    def setup(d: Path) -> None:
        from safetensors.torch import load_file, save_file

        m = d / "models" / "m"
        weights = m / "model.safetensors"
        data = weights.read_bytes()
        nohash = False
        if how == "flipped":
            flipped = bytearray(data)
            flipped[len(data) // 2] ^= 0xFF
            weights.write_bytes(bytes(flipped))
        elif how == "truncated":
            weights.write_bytes(data[: len(data) // 2])
        elif how == "truncated-no-hash":
            weights.write_bytes(data[: len(data) // 2])
            nohash = True
        elif how == "missing-weight":
            tensors = load_file(str(weights))
            del tensors["encoder.layer.0.attention.self.query.weight"]
            save_file(tensors, str(weights), metadata={"format": "pt"})
            nohash = True
        elif how == "weights-deleted":
            weights.unlink()
        elif how == "config-garbage":
            (m / "config.json").write_text("{not json")
        elif how == "nlsim-json-garbage":
            (m / "nlsim.json").write_text("{not json")
        elif how == "calibration-nan":
            (m / "calibration.json").write_text(calibration(threshold=float("nan")))
        elif how == "calibration-other-model":
            (m / "calibration.json").write_text(calibration(model="other", fingerprint="0" * 64))
        if nohash:  # a folder saved before nlsim recorded hashes and the manifest of every file
            meta = json.loads((m / "nlsim.json").read_text())
            meta.pop("weights_sha256", None)
            meta.pop("manifest", None)
            (m / "nlsim.json").write_text(json.dumps(meta))
            (m / "manifest.json").unlink()

    return setup


def bad_models(template: Path) -> list[Case]:
    g = "bad model folder"
    damages = [
        ("flipped", ("model.safetensors", "SHA-256"), 1),
        ("truncated", ("model.safetensors", "SHA-256"), 1),
        ("truncated-no-hash", ("cannot be read",), 1),
        ("missing-weight", ("missing", "encoder.layer.0.attention.self.query.weight"), 1),
        ("weights-deleted", ("model.safetensors",), 1),
        ("config-garbage", ("config.json",), None),
        ("nlsim-json-garbage", ("nlsim.json",), 2),
        ("calibration-nan", ("calibration.json", "threshold"), 1),
        ("calibration-other-model", ("calibration.json", "another model"), 2),
    ]
    out = []
    for how, words, status in damages:

        def setup(d: Path, how: str = how) -> None:
            shutil.copytree(template, d / "models" / "m")
            _damage(how)(d)

        argv = [
            "dedup",
            "--corpus",
            "news.csv",
            "--out",
            "rep",
            "--model",
            "models/m",
            "--convert",
            "none",
            "--no-cache",
            "--no-progress",
        ]
        out.append(
            Case(
                f"model-{how}",
                g,
                argv,
                {"news.csv": GOOD_CSV, **USER_FILES},
                words=words,
                setup=setup,
                status=status,
            )
        )
    out.append(
        Case(
            "calibrate-out-is-the-model-folder",
            "dangerous path",
            [
                "calibrate",
                "--model",
                "models/m",
                "--pairs",
                "pairs.tsv",
                "--convert",
                "none",
                "--out",
                "models/m",
            ],
            {"pairs.tsv": pair_table(), **USER_FILES},
            words=("--out", "--model"),
            setup=lambda d: shutil.copytree(template, d / "models" / "m"),
            status=2,
        )
    )
    out.append(
        Case(
            "finetune-out-is-the-base-model",
            "dangerous path",
            finetune("pairs.tsv", "models/m", "--model", "models/m"),
            {"pairs.tsv": pair_table(), **USER_FILES},
            words=("--out", "--model"),
            setup=lambda d: shutil.copytree(template, d / "models" / "m"),
            status=2,
        )
    )
    out.append(
        Case(
            "dedup-out-is-the-model-folder",
            "dangerous path",
            dedup("news.csv", "--model", "models/m", out="models/m"),
            {"news.csv": GOOD_CSV, **USER_FILES},
            words=("--out", "--model"),
            setup=lambda d: shutil.copytree(template, d / "models" / "m"),
            status=2,
        )
    )
    return out


# --- spreadsheet text, the page's text, progress in a log -------------------------------------------------

CONTROL_TITLES = {
    "v1": "Floods hit\x0bthe north of the country",
    "v2": "Floods hit\x0bthe north of the country",
    "b1": "Bell\x07rings over the harbour at dawn",
    "b2": "Bell\x07rings over the harbour at dawn",
    "e1": "Escape\x1b[31m codes in a red headline",
    "e2": "Escape\x1b[31m codes in a red headline",
}
FORMULA_TITLES = {
    "f1": '=HYPERLINK("http://evil.example/","click for the story")',
    "f2": '=HYPERLINK("http://evil.example/","click for the story")',
    "d1": "=cmd|' /C calc'!A0",
    "d2": "=cmd|' /C calc'!A0",
    "m1": "-5% on the stock market today",
    "m2": "-5% on the stock market today",
    "a1": "@newsroom says the vote is delayed",
    "a2": "@newsroom says the vote is delayed",
    "w1": "＝cmd|' /C calc'!A0 全形",  # full-width: Excel in a CJK setting runs it
    "w2": "＝cmd|' /C calc'!A0 全形",
}
RLO = "\u202e"


def titles_parquet(titles: dict[str, str], sources: dict[str, str] | None = None, **more: list[Any]) -> bytes:
    ids = list(titles)
    sources = sources or {}
    return parquet_bytes(
        {"id": ids, "title": [titles[i] for i in ids], "source": [sources.get(i, "AP") for i in ids], **more}
    )


def _sheets(path: Path) -> dict[str, list[list[Any]]]:
    from openpyxl import load_workbook

    book = load_workbook(path)
    return {ws.title: [[c.value for c in row] for row in ws.iter_rows()] for ws in book.worksheets}


def _xlsx_clean(
    report: str, expected: dict[str, str], csv: bool = False
) -> Callable[[Path, Any], str | None]:
    """report.xlsx opens; its members' titles are ``expected`` (with ``csv``, members.csv's too); no cell is
    a formula."""

    def check(d: Path, proc: Any) -> str | None:
        import zipfile

        path = d / report / "report.xlsx"
        with zipfile.ZipFile(path) as z:
            formulas = [n for n in z.namelist() if n.startswith("xl/worksheets/") and b"<f" in z.read(n)]
        if formulas:
            return f"formula cells in {formulas}"
        members = _sheets(path)["members"]
        item, title = members[0].index("item_id"), members[0].index("title")
        titles = {row[item]: row[title] for row in members[1:]}
        wrong = {i: titles.get(i) for i, t in expected.items() if titles.get(i) != t}
        if wrong:
            return f"report.xlsx titles {wrong}, expected {[expected[i] for i in wrong]}"
        if csv:
            import pandas as pd

            table = pd.read_csv(
                d / report / "members.csv", encoding="utf-8-sig", dtype=str, keep_default_na=False
            )
            in_csv = dict(zip(table["item_id"], table["title"], strict=True))
            wrong = {i: in_csv.get(i) for i, t in expected.items() if in_csv.get(i) != t}
            if wrong:
                return f"members.csv titles {wrong}, expected {[expected[i] for i in wrong]}"
        if "id='spreadsheet-text'" not in (d / report / "index.html").read_text(encoding="utf-8"):
            return "the page does not name the titles changed in the spreadsheet"
        return None

    return check


def _csv_escaped(d: Path, proc: Any) -> str | None:
    import pandas as pd

    for name in ("pairs.csv", "members.csv"):
        table = pd.read_csv(d / "rep" / name, encoding="utf-8-sig", dtype=str, keep_default_na=False)
        for column in table.columns:
            if table[column].str.match(r"^[=+\-@\t\r＝＋－＠]").any():
                return f"{name}: column {column} holds text a spreadsheet runs as a formula"
    members = pd.read_csv(d / "rep" / "members.csv", encoding="utf-8-sig", dtype=str, keep_default_na=False)
    if set(members["title"]) != {"'" + t for t in FORMULA_TITLES.values()}:
        return f"members.csv titles {sorted(set(members['title']))}"
    return _xlsx_clean("rep", FORMULA_TITLES)(d, proc)


def _page_isolated(d: Path, proc: Any) -> str | None:
    """In a headless browser: the source's override reverses only itself (the cluster line still reads
    "... · max score 1.000 · c-x5" left to right)."""
    from tests.browser import Browser, find_browser

    if find_browser() is None:
        return "no headless browser to open the page (scripts/setup_browser.sh)"
    script = """(el => { const w = document.createTreeWalker(el, NodeFilter.SHOW_TEXT); const out = []; let t;
      while ((t = w.nextNode())) for (let i = 0; i < t.data.length; i++) { const r = document.createRange();
        r.setStart(t, i); r.setEnd(t, i + 1); out.push([t.data[i], r.getBoundingClientRect().x]); }
      return out; })(document.querySelector('#clusters .sub'))"""
    with Browser() as browser:
        browser.open((d / "rep" / "index.html").as_uri())
        chars = browser.evaluate(script)
    text = "".join(c for c, _ in chars)
    xs = [x for _, x in chars]
    at = text.find("max score")
    if at < 0 or not xs[at] < xs[at + 4] < xs[text.index("c-x5")]:
        return f"the page's own words are reordered around the user's text: {text!r}"
    return None


def _progress_lines(d: Path, proc: Any) -> str | None:
    if "\r" in proc.stderr or "\x1b" in proc.stderr:
        return "carriage returns or terminal codes in the log"
    if not re.search(r"^embed paraphrase-MiniLM-L3-v2: 7/7 texts \(100%\)", proc.stderr, re.M):
        return "no line of embedding progress in the log"
    return None


def report_text() -> list[Case]:
    g = "report text"
    rlo = {
        "x5": f"Floods hit the {RLO}north of the country",
        "x6": f"Floods hit the {RLO}north of the country",
    }
    return [
        Case(
            "xlsx-control-characters-in-titles",
            g,
            dedup("news.parquet", "--json"),
            {"news.parquet": titles_parquet({**CONTROL_TITLES, "p1": "Plain headline"}), **USER_FILES},
            expect="ok",
            rows=7,
            outputs=("rep",),
            check=_xlsx_clean(
                "rep",
                {
                    "v1": "Floods hit the north of the country",
                    "b1": "Bellrings over the harbour at dawn",
                    "e1": "Escape codes in a red headline",
                },
                csv=True,
            ),
        ),
        Case(
            "xlsx-control-character-in-a-daily-run",
            g,
            dedup("day.parquet", "--state", "st", "--json", out="daily"),
            {"day.parquet": titles_parquet(dict(list(CONTROL_TITLES.items())[:2])), **USER_FILES},
            expect="ok",
            rows=2,
            outputs=("st", "daily"),
            check=_xlsx_clean("daily/latest", {"v1": "Floods hit the north of the country"}, csv=True),
        ),
        Case(
            "xlsx-csv-formulas-in-titles-and-sources",
            g,
            dedup("news.parquet", "--json"),
            {
                "news.parquet": titles_parquet(
                    FORMULA_TITLES, {"f2": "=1+1", "d2": "@source", "m1": "+wire"}
                ),
                **USER_FILES,
            },
            expect="ok",
            rows=10,
            outputs=("rep",),
            check=_csv_escaped,
        ),
        Case(
            "page-right-to-left-override",
            g,
            dedup("news.parquet", "--json"),
            {
                "news.parquet": titles_parquet(rlo, {"x5": f"AP {RLO}wire", "x6": "Reuters"}),
                **USER_FILES,
            },
            expect="ok",
            rows=2,
            outputs=("rep",),
            check=_page_isolated,
        ),
        Case(
            "progress-in-a-log-file",
            g,
            [a for a in dedup("news.csv", "--json") if a != "--no-progress"],
            {"news.csv": HEAD + csv_rows(7), **USER_FILES},
            expect="ok",
            rows=7,
            outputs=("rep",),
            env={"NLSIM_PROGRESS": ""},  # stderr is a pipe: nlsim decides, as in `bash run.sh > run.log 2>&1`
            check=_progress_lines,
        ),
    ]


# --- model folders: every file, the reranker, the model store and the chain -----------------------------

STORY_TOPICS = [
    ("Floods hit the north", "Heavy floods strike the northern region"),
    ("Stock markets fall sharply", "Shares tumble on the stock exchange"),
    ("Football club wins the cup", "The club lifts the cup after the final"),
    ("New bridge opens in the capital", "The capital's new bridge is open to traffic"),
    ("Storm closes schools in the south", "Schools shut in the south as the storm arrives"),
    ("Parliament passes the budget", "Lawmakers approve the national budget"),
    ("Wildfire spreads near the coast", "A fire is spreading along the coastline"),
    ("Central bank raises interest rates", "Interest rates go up at the central bank"),
    ("Train strike halts the railway", "Rail workers strike and trains stop"),
    ("Scientists find water on the moon", "Water discovered on the lunar surface"),
    ("Heat wave breaks records in the city", "The city sees record temperatures"),
    ("Election results are announced", "Officials announce the results of the vote"),
]


def story_data() -> tuple[bytes, str]:
    """A corpus of 24 headlines (12 stories, two wordings each) and 48 scored pairs of them with their ids,
    each pair once: train 24, validation 16, test 8 (a quarter of each split same story)."""
    titles = [t for pair in STORY_TOPICS for t in pair]
    ids = [f"s{i:02d}" for i in range(len(titles))]
    n = len(STORY_TOPICS)
    same = [(2 * j, 2 * j + 1, "1") for j in range(n)]
    other = [(2 * j, 2 * ((j + m) % n) + 1, f"{(j + m) % 3 / 8:g}") for m in (1, 2, 3) for j in range(n)]
    splits = {"train": (6, 18), "validation": (4, 12), "test": (2, 6)}
    rows = []
    for split, (n_same, n_other) in splits.items():
        chosen, same, other = same[:n_same] + other[:n_other], same[n_same:], other[n_other:]
        for a, b, score in chosen:
            rows.append(f"p{len(rows):02d}\t{split}\t{ids[a]}\t{ids[b]}\t{titles[a]}\t{titles[b]}\t{score}\n")
    pairs = "pair_id\tsplit\tid_a\tid_b\ttext_a\ttext_b\tscore\n" + "".join(rows)
    return parquet_bytes({"id": ids, "title": titles, "source": ["AP"] * len(ids)}), pairs


CHAIN = ["pipeline", "--pairs", "pairs.tsv", "--model-store", "models"]
CHAIN += ["--base-model", MODEL, "--convert", "none", "--level", "0.8", "--epochs", "1"]
CHAIN += ["--cross-encoder-epochs", "1", "--threads", "1", "--no-report", "--json"]


def build_chain_template(folder: Path) -> None:
    """A chain's store (v0001 trained, registered and decided on) with its pairs and corpus; a copy of that
    model folder with its reranker (``finetuned``); a report over the corpus (``rep``) and one with no
    cluster (``empty``)."""
    folder.mkdir(parents=True)
    corpus, pairs = story_data()
    (folder / "corpus.parquet").write_bytes(corpus)
    (folder / "pairs.tsv").write_text(pairs)
    report = ["dedup", "--corpus", "corpus.parquet", *RUN_OPTS]
    for argv in (
        CHAIN,
        [*report, "--out", "rep", "--threshold", "0.8"],
        [*report, "--out", "empty", "--threshold", "0.99999"],
    ):
        proc = prepare(argv, folder)
        if proc.returncode != 0:
            raise RuntimeError(f"chain template: {proc.stderr[-2000:]}")
    shutil.copytree(_version(folder), folder / "finetuned")
    (folder / "finetuned" / "store.json").unlink()  # written by the store after the save: not the model's


def _version(d: Path) -> Path:
    return next(p for p in (d / "models" / "versions").iterdir() if not p.name.startswith("."))


def _promote(d: Path) -> None:
    record = {"version": _version(d).name, "promoted_at": "2026-11-20T03:00:00+00:00", "reason": "by hand"}
    (d / "models" / "CURRENT.json").write_text(json.dumps(record))


def _promotion_in_history_pointer_lost(d: Path) -> None:
    _promote(d)
    record = json.loads((d / "models" / "CURRENT.json").read_text())
    with (d / "models" / "history.jsonl").open("a", encoding="utf-8") as fh:
        fh.write(json.dumps({"at": record["promoted_at"], "decision": "promoted", **record}) + "\n")
    (d / "models" / "CURRENT.json").unlink()


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _edit_json(path: Path) -> None:
    data = json.loads(path.read_text())
    data["edited_by_hand"] = 1
    path.write_text(json.dumps(data))


def _unlink(path: Path) -> None:
    shutil.rmtree(path) if path.is_dir() else path.unlink()


def _legacy(folder: Path) -> None:
    """The folder as an nlsim before manifests saved it."""
    (folder / "manifest.json").unlink()
    meta = json.loads((folder / "nlsim.json").read_text())
    meta.pop("manifest", None)
    (folder / "nlsim.json").write_text(json.dumps(meta))


def _foreign(folder: Path) -> None:
    """The folder as a plain Hugging Face folder, not saved by nlsim (no manifest, marker nor nlsim.json)."""
    for name in ("manifest.json", ".nlsim.json", "nlsim.json"):
        (folder / name).unlink()


def _tear_history(d: Path) -> None:
    """A last line an older writer left torn, killed in the middle of an append."""
    path = d / "models" / "history.jsonl"
    path.write_text(path.read_text() + '{"at": "2026-11-20T03:00:00+00:00", "dec')


def _history_parses(d: Path, proc: Any) -> str | None:
    lines = (d / "models" / "history.jsonl").read_text(encoding="utf-8").splitlines()
    try:
        records = [json.loads(line) for line in lines]
    except ValueError as exc:
        return f"history.jsonl holds a line that is not JSON ({exc})"
    if [r.get("decision") for r in records].count("unreadable record") != 1:
        return "the torn line is not kept as text in a record of its own"
    return None


def _promotion_recorded(d: Path, proc: Any) -> str | None:
    records = [json.loads(line) for line in (d / "models" / "history.jsonl").read_text().splitlines()]
    if not [r for r in records if r.get("decision") == "promoted" and r.get("recovered")]:
        return "the promotion CURRENT.json names was not recorded in history.jsonl"
    return None


def _swept(name: str) -> Callable[[Path, Any], str | None]:
    def check(d: Path, proc: Any) -> str | None:
        if (d / "models" / "versions" / name).exists():
            return f"models/versions/{name} is still there"
        return None if name in proc.stderr else f"the run does not say it removed {name}"

    return check


def _strict_json(proc: Any) -> dict[str, Any]:
    def refuse(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    return json.loads(proc.stdout.strip().splitlines()[-1], parse_constant=refuse)


def _judged(n: int, mismatched: int) -> Callable[[Path, Any], str | None]:
    def check(d: Path, proc: Any) -> str | None:
        out = _strict_json(proc)
        got = (out["judged_pairs"], out["mismatched_pairs"])
        return None if got == (n, mismatched) else f"judged, mismatched {got}, expected {(n, mismatched)}"

    return check


def _undefined(d: Path, proc: Any) -> str | None:
    out = _strict_json(proc)
    if out["f1_ci95"] is not None:
        return f"an undefined F1 has an interval {out['f1_ci95']}"
    return None if out["precision"] is None and out["f1"] is None else f"precision {out['precision']}"


def _dissolved(d: Path, proc: Any) -> str | None:
    import pandas as pd

    clusters = pd.read_parquet(d / "daily" / "latest" / "clusters.parquet").set_index("cluster_id")
    if "c-a1" not in clusters.index or clusters.loc["c-a1", "status"] != "dissolved":
        return f"c-a1 is not reported as dissolved: {clusters['status'].to_dict()}"
    return None


def _pairs_moved(pairs: str, moved: int) -> str:
    """``pairs`` with the ids of the first ``moved`` validation pairs swapped in reverse order."""
    lines = pairs.splitlines(keepends=True)
    rows = [i for i, line in enumerate(lines) if "\tvalidation\t" in line][:moved]
    cells = [lines[i].split("\t") for i in rows]
    for i, row in zip(rows, cells[::-1], strict=True):
        parts = lines[i].split("\t")
        parts[2], parts[3] = row[2], row[3]
        lines[i] = "\t".join(parts)
    return "".join(lines)


def model_files_and_store(template: Path) -> list[Case]:
    g = "bad model folder"
    _, pairs = story_data()
    out: list[Case] = []

    plain = template.parent / "_model"  # MiniLM-L3 saved by nlsim (build_model_template)

    def model_case(name: str, source: Path, damage: Callable[[Path], None], words: tuple[str, ...]) -> None:
        def setup(d: Path) -> None:
            shutil.copytree(source, d / "models" / "m")
            damage(d / "models" / "m")

        argv = ["dedup", "--corpus", "news.csv", "--out", "rep", "--model", "models/m", *RUN_OPTS[2:]]
        if source == plain:  # the fine-tuned folder's threshold is its reranker's calibration
            argv += ["--threshold", "0.9"]
        out.append(
            Case(name, g, argv, {"news.csv": GOOD_CSV, **USER_FILES}, words=words, setup=setup, status=1)
        )

    for name, damage, words in (
        ("model-tokenizer-json-deleted", lambda m: _unlink(m / "tokenizer.json"), ("tokenizer.json",)),
        ("model-pooling-config-deleted", lambda m: _unlink(m / "1_Pooling"), ("1_Pooling/config.json",)),
        ("model-config-edited", lambda m: _edit_json(m / "config.json"), ("config.json", "SHA-256")),
        (
            "model-tokenizer-config-edited",
            lambda m: _edit_json(m / "tokenizer_config.json"),
            ("tokenizer_config.json",),
        ),
        ("model-manifest-deleted", lambda m: _unlink(m / "manifest.json"), ("manifest.json",)),
        (
            "model-manifest-garbage",
            lambda m: (m / "manifest.json").write_text("{not json"),
            ("manifest.json",),
        ),
        (
            "model-saved-before-manifests-without-tokenizer-json",
            lambda m: (_legacy(m), _unlink(m / "tokenizer.json")),
            ("tokenizer.json",),
        ),
        (
            "model-config-json-deleted",
            lambda m: _unlink(m / "config.json"),
            ("config.json: missing", "manifest.json"),
        ),
        (
            "model-saved-before-manifests-without-config-json",
            lambda m: (_legacy(m), _unlink(m / "config.json")),
            ("config.json: missing", "nlsim saved this folder with it"),
        ),
        (  # transformers would build a tokenizer knowing no word: every text would embed alike
            "model-not-saved-by-nlsim-without-tokenizer-json",
            lambda m: (_foreign(m), _unlink(m / "tokenizer.json")),
            ("tokenizer.json: missing", "no other tokenizer file"),
        ),
        (
            "model-not-saved-by-nlsim-without-config-json",
            lambda m: (_foreign(m), _unlink(m / "config.json")),
            ("config.json: missing", "model.safetensors"),
        ),
    ):
        model_case(name, plain, damage, words)
    for name, damage, words in (
        ("reranker-tokenizer-json-deleted", lambda m: _unlink(m / "reranker/tokenizer.json"), ("reranker/",)),
        ("reranker-weights-truncated", lambda m: _truncate(m / "reranker/model.safetensors"), ("reranker/",)),
        ("reranker-head-deleted", lambda m: _unlink(m / "reranker/head.safetensors"), ("reranker/",)),
        ("reranker-json-deleted", lambda m: _unlink(m / "reranker/reranker.json"), ("reranker/",)),
        ("reranker-folder-deleted", lambda m: _unlink(m / "reranker"), ("reranker/",)),
        (
            "reranker-missing-from-a-folder-saved-before-manifests",
            lambda m: (_legacy(m), _unlink(m / "reranker")),
            ("reranker", "training.json"),
        ),
    ):
        model_case(name, template / "finetuned", damage, words)
    # the whole template (store, pairs, corpus) copied: "models/" is the store the run may write
    base = {**USER_FILES}

    def store(*steps: Callable[[Path], None]) -> Callable[[Path], None]:
        def setup(d: Path) -> None:
            for part in ("models", "pairs.tsv", "corpus.parquet"):
                src = template / part
                shutil.copytree(src, d / part) if src.is_dir() else shutil.copy(src, d / part)
            (d / "news.csv").write_text(GOOD_CSV)
            for step in steps:
                step(d)

        return setup

    current = ["dedup", "--corpus", "news.csv", "--out", "rep", "--model", "current", *RUN_OPTS[2:]]
    refusals: list[tuple[str, list[str], list[Callable[[Path], None]], tuple[str, ...]]] = [
        (
            "store-promoted-model-without-its-reranker",
            current,
            [_promote, lambda d: _unlink(_version(d) / "reranker")],
            ("reranker/",),
        ),
        (
            "store-promoted-model-without-reranker-json",
            current,
            [_promote, lambda d: _unlink(_version(d) / "reranker" / "reranker.json")],
            ("reranker/reranker.json",),
        ),
        (
            "chain-reuses-a-version-with-truncated-weights",
            CHAIN,
            [lambda d: _truncate(_version(d) / "model.safetensors")],
            ("model.safetensors", "--force-train"),
        ),
        (
            "chain-reuses-a-version-without-reranker-weights",
            CHAIN,
            [lambda d: _unlink(_version(d) / "reranker" / "model.safetensors")],
            ("reranker/model.safetensors", "--force-train"),
        ),
        (
            "chain-on-a-store-locked-by-a-live-run",
            CHAIN,
            [_locked_by_this_process],
            ("model store", "locked by another run"),
        ),
        (  # without the pointer the store would read as never promoted: zero-shot, and a gate against it
            "store-pointer-lost-after-a-promotion",
            current,
            [_promotion_in_history_pointer_lost],
            ("CURRENT.json", "last promotion recorded"),
        ),
        (
            "chain-on-a-store-whose-pointer-was-lost-after-a-promotion",
            CHAIN,
            [_promotion_in_history_pointer_lost],
            ("CURRENT.json", "last promotion recorded"),
        ),
    ]
    out += [
        Case(
            name,
            "model store",
            argv,
            base,
            words=words,
            status=1,
            setup=store(*steps),
            process=_locked_by_this_process in steps,
        )
        for name, argv, steps, words in refusals
    ]
    leftover, unregistered = ".v0002-0badf00d.tmp-k3x9a2bq", "v0002-0badf00d"
    recoveries: list[tuple[str, Callable[[Path], None], Callable[[Path, Any], str | None]]] = [
        ("chain-history-with-a-torn-last-line", _tear_history, _history_parses),
        ("chain-after-a-kill-lost-the-promotion-record", _promote, _promotion_recorded),
        (
            "chain-after-a-killed-save-left-a-tmp-folder",
            lambda d: shutil.copytree(_version(d), d / "models" / "versions" / leftover),
            _swept(leftover),
        ),
        (
            "chain-after-a-kill-left-an-unregistered-version",
            lambda d: (
                shutil.copytree(_version(d), d / "models" / "versions" / unregistered),
                (d / "models" / "versions" / unregistered / "store.json").unlink(),
            ),
            _swept(unregistered),
        ),
    ]
    out += [
        Case(
            name,
            "valid model store",
            CHAIN,
            base,
            expect="ok",
            outputs=("models",),
            setup=store(step),
            check=check,
        )
        for name, step, check in recoveries
    ]

    def report(*steps: Callable[[Path], None]) -> Callable[[Path], None]:
        def setup(d: Path) -> None:
            shutil.copytree(template / "rep", d / "rep")
            shutil.copy(template / "corpus.parquet", d / "corpus.parquet")
            for run in (d / "rep").rglob("run.json"):  # the copy's corpus, named as a run names it: absolute
                record = json.loads(run.read_text(encoding="utf-8"))
                if isinstance(record, dict) and "corpus" in record:
                    record["corpus"] = str((d / "corpus.parquet").absolute())
                    run.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
            for step in steps:
                step(d)

        return setup

    judge = ["judge", "--report", "rep", "--pairs", "pairs.tsv", "--json"]
    g = "judge"
    unrelated = re.sub(r"\ts(\d\d)", r"\tx-s\1", pairs)  # every id renamed: none is in the corpus
    refusals = [
        ("naming-other-texts", _pairs_moved(pairs, 16), (), ("row ", "'text_a'", "corpus.parquet"), 1),
        ("of-another-corpus", unrelated, (), ("not in the report's corpus",), 1),
        ("with-the-report-corpus-gone", pairs, (lambda d: _unlink(d / "corpus.parquet"),), ("--corpus",), 2),
    ]
    out += [
        Case(
            f"judge-pairs-{name}",
            g,
            judge,
            {"pairs.tsv": text, **USER_FILES},
            words=("pairs.tsv", *words) if status == 1 else words,
            status=status,
            setup=report(*steps),
        )
        for name, text, steps, words, status in refusals
    ]

    def bigger_corpus(d: Path) -> None:
        import pandas as pd

        corpus = pd.read_parquet(d / "corpus.parquet")
        extra = corpus.iloc[:2].assign(id=["extra-1", "extra-2"])
        pd.concat([corpus, extra]).to_parquet(d / "bigger.parquet", index=False)

    out.append(
        Case(  # its pairs of items the report never saw would count as misses: F1 down, exit 0
            "judge-with-a-corpus-other-than-the-reports",
            g,
            [*judge, "--corpus", "bigger.parquet"],
            {"pairs.tsv": pairs, **USER_FILES},
            words=("--corpus", "is not the corpus the report"),
            status=2,
            setup=report(bigger_corpus),
        )
    )
    out += [
        Case(
            "judge-some-pairs-naming-other-texts",
            "valid judge",
            judge,
            {"pairs.tsv": _pairs_moved(pairs, 12), **USER_FILES},
            expect="ok",
            setup=report(),
            check=_judged(4, 12),
        ),
        Case(
            "judge-nothing-grouped-gives-undefined-not-nan",
            "valid judge",
            [*judge[:2], "empty", *judge[3:]],
            {"pairs.tsv": pairs, **USER_FILES},
            expect="ok",
            setup=report(lambda d: shutil.copytree(template / "empty", d / "empty")),
            check=_undefined,
        ),
    ]
    day1 = [
        ("a1", "Floods hit the north of the country", "2026-11-20T08:00Z"),
        ("a2", "Floods hit the north of the country again", "2026-11-20T09:00Z"),
        ("b1", "Stock markets fall sharply", "2026-11-20T10:00Z"),
        ("b2", "Stock markets fall sharply", "2026-11-20T11:00Z"),
    ]

    def after_day1(d: Path) -> None:
        frame = {
            "id": [r[0] for r in day1],
            "title": [r[1] for r in day1],
            "published_at": [r[2] for r in day1],
        }
        (d / "day1.parquet").write_bytes(parquet_bytes(frame))
        proc = prepare(dedup("day1.parquet", "--state", "st", out="daily"), d)
        if proc.returncode != 0:
            raise RuntimeError(proc.stderr[-2000:])

    day2 = parquet_bytes(
        {"id": ["d1"], "title": ["Football club wins the cup"], "published_at": ["2026-11-21"]}
    )
    out.append(
        Case(
            "daily-model-change-dissolves-a-cluster",
            "valid state",
            dedup("day2.parquet", "--state", "st", "--json", out="daily", threshold="0.95"),
            {"day2.parquet": day2, **USER_FILES},
            expect="ok",
            rows=1,
            outputs=("st", "daily"),
            setup=after_day1,
            check=_dissolved,
        )
    )
    return out


def _out_locked_by_this_process(d: Path) -> None:
    """``out/lock.json`` naming a live process, a daily run writing that report folder: the benchmark."""
    from nlsim.io.lock import current_holder_info

    (d / "out" / "lock.json").write_text(json.dumps(asdict(current_holder_info())))


def _locked_by_this_process(d: Path) -> None:
    """``models/lock.json`` naming a live process: the benchmark itself."""
    from nlsim.io.lock import current_holder_info

    (d / "models" / "lock.json").write_text(json.dumps(asdict(current_holder_info())))


# --- running ---------------------------------------------------------------------------------------------


def nlsim(
    argv: list[str], cwd: Path, timeout: float = 600, more_env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m nlsim ARGV`` in a process of its own (:func:`tests.command.run_subprocess`)."""
    return run_subprocess(argv, cwd, timeout=timeout, **(more_env or {}))


def prepare(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -m nlsim ARGV`` that builds a template or sets a case up (not a command under test): in this
    process on the main thread, as :func:`tests.command.nlsim` runs a command (unless
    ``NLSIM_TEST_SUBPROCESS=1``), else in a process of its own. The cases that need a process of their own
    are set up two at a time, in threads, and :func:`~tests.command.run_in_process` takes one command at a
    time. A command run here saves starting Python, torch and transformers again: about 5 s each, 5 for the
    templates."""
    if threading.current_thread() is threading.main_thread():
        return command.nlsim(*argv, cwd=cwd)
    return nlsim(argv, cwd)


READ_PER_CALL = ("NLSIM_DEVICE",)
"""Environment variables nlsim reads each time it needs them (``default_device``), not once per process: a
case that sets only these runs in this process, with them set (:func:`~tests.command.run_in_process` sets a
command's environment for its run). Were one of them read once and kept, its case would fail here, not
pass unseen: a kept value is that of a run without the variable."""


def needs_process(case: Case) -> bool:
    """Whether ``case``'s command must run in a process of its own (:func:`nlsim`), not in this one
    (:func:`tests.command.run_in_process`): it sets environment variables that nlsim may read once per
    process (any but :data:`READ_PER_CALL`), or its set-up names this process."""
    return case.process or any(name not in READ_PER_CALL for name in case.env)


def snapshot(folder: Path) -> dict[str, str]:
    """Every file below ``folder`` (links included, not followed) with the SHA-256 of its bytes."""
    out = {}
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder).as_posix()
        if p.is_symlink():
            out[rel] = "link:" + os.readlink(p)
        elif p.is_file():
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def case_folder(case: Case, work: Path) -> Path:
    """The folder under ``work`` where :func:`run_case` runs ``case``."""
    return work / re.sub(r"[^\w.-]", "_", case.name)


def run_case(case: Case, work: Path, in_process: bool = False) -> dict[str, Any]:
    """Run ``case`` in its folder under ``work`` and check it: its result row. ``in_process``: the command
    runs in this process (:func:`tests.command.run_in_process`) unless the case :func:`needs_process`; else
    in a subprocess."""
    d = case_folder(case, work)
    d.mkdir(parents=True)
    for rel, data in case.files.items():
        path = d / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    if case.setup is not None:
        case.setup(d)
    before = snapshot(d)
    t = time.perf_counter()
    if in_process and not needs_process(case):
        proc = run_in_process(case.argv, d, more_env=case.env)
    else:
        proc = nlsim(case.argv, d, more_env=case.env)
    seconds = time.perf_counter() - t
    after = snapshot(d)
    problems: list[str] = []
    outputs = [o.rstrip("/") for o in case.outputs]
    changed = [
        rel
        for rel, digest in before.items()
        if not any(rel == o or rel.startswith(o + "/") for o in outputs)
        and Path(rel).name not in LOCK_FILES
        and after.get(rel) != digest
    ]
    if changed:
        problems.append(f"user files lost or changed: {changed[:5]}")
    lines = proc.stderr.strip().splitlines()
    message = lines[-1] if lines else ""
    listed = [i for i, line in enumerate(lines) if ERROR_LINE.match(line)]
    if listed and all(line.startswith("  ") for line in lines[listed[-1] + 1 :]):
        message = "\n".join(lines[listed[-1] :])  # a refusal that lists its problems, one line each below it
    named = False
    dropped = 0
    if case.expect == "refuse":
        named = (
            proc.returncode in (1, 2)
            and bool(ERROR_LINE.match(message))
            and "Traceback" not in proc.stderr
            and all(w in message for w in case.words)
        )
        if not named:
            problems.append(f"not a named refusal (exit {proc.returncode}): {message[:300]!r}")
        elif case.status is not None and proc.returncode != case.status:
            problems.append(f"exit {proc.returncode}, expected {case.status}: {message[:200]!r}")
        elif case.check is not None:  # what the refusal must not have done first
            extra = case.check(d, proc)
            if extra:
                problems.append(extra)
    else:
        if proc.returncode != 0:
            problems.append(f"exit {proc.returncode}: {proc.stderr[-300:]!r}")
        elif case.ids is not None:
            ids = json.loads((d / "emb.json").read_text())["ids"]
            dropped = len(set(case.ids) - set(ids)) + max(0, len(case.ids) - len(ids))
            if ids != case.ids:
                problems.append(f"loaded ids {ids}, expected {case.ids}")
        elif case.rows is not None:
            run = json.loads(proc.stdout.strip().splitlines()[-1])
            got = int(run["counts"]["items_in"]) + int(run["counts"].get("quarantined") or 0)
            dropped = max(0, case.rows - got)
            if got != case.rows:
                problems.append(f"{got} rows read or quarantined, the file has {case.rows}")
        if not problems and case.check is not None:
            extra = case.check(d, proc)
            if extra:
                problems.append(extra)
    return {
        "case": case.name,
        "group": case.group,
        "command": "nlsim " + " ".join(case.argv),
        "expect": case.expect,
        "exit": proc.returncode,
        "message": message[:500],
        "named_error": named,
        "user_files_changed": len(changed),
        "rows_dropped": dropped,
        "seconds": round(seconds, 2),
        "ok": not problems,
        "problems": problems,
    }


def cpu_name() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    return "unknown CPU"


# --- paths through folders not made yet, devices, editors' files, reports that are not one run -----------

SITE: Files = {"site/index.html": "<p>my own page</p>\n", "site/index/mine.txt": "mine\n"}
"""A user's folder that an output path reaches through a folder not made yet (``site/new/../../site``)."""
THROUGH_NEW = "site/new/../../site"


def paths_through_new_folders() -> list[Case]:
    """Every output folder given as a path through a folder not made yet, leading to the user's ``site/``."""
    g = "dangerous path"
    store = ["pipeline", "--pairs", "pairs.tsv", "--model-store", THROUGH_NEW]
    return [
        Case(
            f"{name}-through-a-folder-not-made-yet",
            g,
            argv,
            {"news.csv": GOOD_CSV, "pairs.tsv": pair_table(), **SITE, **USER_FILES},
            words=(what,),
        )
        for name, argv, what in [
            ("dedup-out", dedup("news.csv", out=THROUGH_NEW), "not empty"),
            ("dedup-state", dedup("news.csv", "--state", THROUGH_NEW, out="daily"), "did not write"),
            ("pipeline-model-store", [*store, "--base-model", MODEL, "--no-report"], "not empty"),
            ("finetune-out", finetune("pairs.tsv", THROUGH_NEW), "not empty"),
            ("embed-out-file", embed("news.csv", out="site/new/../index.html"), "index.html"),
        ]
    ]


def devices_this_torch_lacks() -> list[Case]:
    """``NLSIM_DEVICE`` naming a device type torch knows but this build or machine lacks."""
    g = "bad option"
    out = [
        Case(
            f"nlsim-device-{name}-dedup",
            g,
            dedup("news.csv"),
            {"news.csv": GOOD_CSV, **USER_FILES},
            words=("NLSIM_DEVICE", name),
            status=2,  # a setting that cannot work: a usage error, as for an unknown name
            env={"NLSIM_DEVICE": name},
        )
        for name in ("mps", "xpu", "hip", "vulkan", "meta")
    ]
    out.append(
        Case(
            "nlsim-device-mps-finetune",
            g,
            finetune("pairs.tsv", "model"),
            {"pairs.tsv": pair_table(), **USER_FILES},
            words=("NLSIM_DEVICE", "mps"),
            status=2,  # a setting that cannot work: a usage error, as for an unknown name
            env={"NLSIM_DEVICE": "mps"},
        )
    )
    return out


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


EVIL = '=HYPERLINK("http://evil.example/","x")'
EDITOR_COLUMNS = "pair_id,id_a,id_b,text_a,text_b,similarity,stratum,score,annotator,notes,model,threshold"


def editors_file(rows: list[tuple[str, str, str, str]], hashes: list[tuple[str, str]] | None = None) -> str:
    """An editors' file as the report page exports it (ids, texts, score 1), with the hash columns when
    ``hashes`` gives them."""
    import csv
    import io

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(EDITOR_COLUMNS.split(",") + (["sha256_a", "sha256_b"] if hashes is not None else []))
    for i, (a, b, ta, tb) in enumerate(rows):
        row = ["", a, b, ta, tb, "", "report-page:near-miss", "1", "desk", "", "m", ""]
        w.writerow(row + (list(hashes[i]) if hashes is not None else []))
    return buf.getvalue()


def _merged_text(text: str) -> Callable[[Path, Any], str | None]:
    def check(d: Path, proc: Any) -> str | None:
        rows = (d / "pairs.tsv").read_text(encoding="utf-8").splitlines()
        got = rows[-1].split("\t")
        return None if text in got else f"the merged row is {got}, not the text {text!r}"

    return check


def _no_litter(d: Path, proc: Any) -> str | None:
    left = [p.name for p in d.iterdir() if p.name.startswith(".pairs.tsv.")]
    return f"left beside the pair file: {left}" if left else None


def editors_files() -> list[Case]:
    """``nlsim annotate merge`` of editors' files a spreadsheet or a hand changed."""
    g = "bad pairs"
    known = (
        "pair_id\tid_a\tid_b\ttext_a\ttext_b\tscore\tsplit\np1\ti0\ti1\tFloods north\tFloods hit\t1\ttrain\n"
    )
    items = items_table()
    merge = ["annotate", "merge", "--filled", "export.csv", "--pairs", "pairs.tsv"]
    t2, t3 = TITLES[2], TITLES[3]
    refusals = [
        (  # the title ran as a formula and was saved as its value; the hash of the exported text says so
            "merge-export-text-changed-by-a-spreadsheet",
            merge,
            editors_file([("i2", "i3", "x", t3)], [(_sha(EVIL), _sha(t3))]),
            ("sheet row 2", "text_a", "sha256_a"),
        ),
        (  # ids swapped, texts in place: the corpus knows each id's text
            "merge-swapped-ids-with-the-corpus",
            [*merge, "--corpus", "items.tsv"],
            editors_file([("i3", "i2", t2, t3)]),
            ("sheet row 2", "swapped"),
        ),
        (
            "merge-a-text-other-than-the-corpus-text",
            [*merge, "--corpus", "items.tsv"],
            editors_file([("i2", "i3", "x", t3)]),
            ("sheet row 2", "text_a", "corpus"),
        ),
        (
            "merge-an-id-with-a-unit-separator",
            merge,
            editors_file([("i2\x1fi3", "i4", t2, t3)]),
            ("sheet row 2", "id_a"),
        ),
        (
            "merge-a-vertical-tab",
            merge,
            editors_file([("i2", "i3", t2 + "\x0bmore", t3)]),
            ("sheet row 2", "U+000B"),
        ),
        ("merge-a-bell", merge, editors_file([("i2", "i3", t2 + "\x07", t3)]), ("sheet row 2", "U+0007")),
        (  # saved as GB18030, not UTF-8: the row named as every other problem of the file is, by sheet row
            "merge-an-export-saved-as-gb18030",
            merge,
            editors_file(
                [("i2", "i3", t2, t3), ("i4", "i5", t2, t3), ("i6", "i7", "股市大跌", "股市下跌")]
            ).encode("gb18030"),
            ("export.csv", "sheet row 4", "line 4", "UTF-8"),
        ),
        (
            "merge-an-escape",
            merge,
            editors_file([("i2", "i3", t2 + "\x1b[31m", t3)]),
            ("sheet row 2", "U+001B"),
        ),
        (
            "merge-a-line-separator",
            merge,
            editors_file([("i2", "i3", t2 + "\u2028more", t3)]),
            ("sheet row 2", "U+2028"),
        ),
    ]
    out = [
        Case(
            name,
            g,
            argv,
            {"pairs.tsv": known, "items.tsv": items, "export.csv": text, **USER_FILES},
            words=words,
        )
        for name, argv, text, words in refusals
    ]
    litter = ".pairs.tsv.k3x_9a2b.tmp.tsv"
    out += [
        Case(
            "merge-an-escaped-formula-is-merged-as-its-text",
            "valid pairs",
            merge,
            {
                "pairs.tsv": known,
                "export.csv": editors_file([("i2", "i3", "'" + EVIL, t3)], [(_sha(EVIL), _sha(t3))]),
            },
            expect="ok",
            outputs=("pairs.tsv",),
            check=_merged_text(EVIL),
        ),
        Case(  # a merge killed before its rename left a full copy beside the pair file
            "merge-after-a-killed-merge-left-its-copy",
            "valid pairs",
            merge,
            {"pairs.tsv": known, litter: known + "half", "export.csv": editors_file([("i2", "i3", t2, t3)])},
            expect="ok",
            outputs=("pairs.tsv", litter),
            check=_no_litter,
        ),
        Case(
            "corpus-id-with-a-unit-separator",
            "bad corpus",
            embed("news.csv"),
            {"news.csv": HEAD + "n1,Floods,AP,\nn2\x1fn3,Storm,AP,\n", **USER_FILES},
            words=("news.csv", "row 2", "id", "U+001F"),
        ),
        Case(
            "pairs-id-with-a-unit-separator",
            "bad pairs",
            finetune("pairs.tsv", "model"),
            {
                "pairs.tsv": pair_table(
                    [("a\x1fb", "c", "x", "y", "1", "train")], "id_a\tid_b\ttext_a\ttext_b\tscore\tsplit"
                )
            },
            words=("pairs.tsv", "row 1", "id_a"),
        ),
    ]
    return out


def _said_fallback(d: Path, proc: Any) -> str | None:
    return None if "cross-validated" in proc.stdout else f"the fallback is not said: {proc.stdout[-300:]!r}"


def calibration_fallback() -> list[Case]:
    rows = [(f"cats {i}", f"dogs {i}", "1" if i < 2 else "0", "validation") for i in range(12)]
    return [
        Case(
            "calibrate-cross-validated-with-two-same-story-pairs-says-so",
            "valid calibration",
            ["calibrate", "--model", MODEL, "--pairs", "pairs.tsv", "--convert", "none", "--out", "cal.json"],
            {"pairs.tsv": pair_table(rows), **USER_FILES},
            expect="ok",
            outputs=("cal.json",),
            check=_said_fallback,
        )
    ]


def _estimate_sane(d: Path, proc: Any) -> str | None:
    """A chain of a minute on 24 pairs: its estimate is seconds or minutes, never hours."""
    said = [line for line in proc.stderr.splitlines() if "estimated time" in line]
    if not said:
        return "no estimate said"
    if re.search(r"about \d+ h ", said[0]):
        return f"a nonsense estimate: {said[0][:200]!r}"
    return None


def _a_killed_move(template: Path) -> Callable[[Path], None]:
    def setup(d: Path) -> None:
        from tests.faults import fault_env

        shutil.copytree(template / "rep", d / "rep")
        shutil.copy(template / "corpus.parquet", d / "corpus.parquet")
        nlsim(dedup("corpus.parquet", threshold="0.5"), d, more_env=fault_env("report-move", str(ROOT)))

    return setup


def stores_chains_and_reports(template: Path) -> list[Case]:
    """A lost pointer whose version is gone, the chain's estimate on a model of fewer layers than it
    freezes, and reports that are not one run."""

    def store_without_the_promoted_version(d: Path) -> None:
        shutil.copytree(template / "models", d / "models")
        _promotion_in_history_pointer_lost(d)
        shutil.rmtree(_version(d))

    def story(d: Path) -> None:
        for part in ("pairs.tsv", "corpus.parquet"):
            shutil.copy(template / part, d / part)

    def copied_in(d: Path) -> None:
        shutil.copytree(template / "rep", d / "rep")
        shutil.copy(template / "corpus.parquet", d / "corpus.parquet")
        shutil.copy(template / "empty" / "clusters.parquet", d / "rep" / "clusters.parquet")

    judge = ["judge", "--report", "rep", "--pairs", "pairs.tsv", "--corpus", "corpus.parquet"]
    pairs = {"pairs.tsv": story_data()[1], **USER_FILES}
    return [
        Case(
            "store-pointer-lost-and-the-last-promoted-version-gone",
            "model store",
            ["dedup", "--corpus", "news.csv", "--out", "rep", "--model", "current", *RUN_OPTS[2:]],
            {"news.csv": GOOD_CSV, **USER_FILES},
            words=("no longer in", "no promoted version is left"),
            status=1,
            setup=store_without_the_promoted_version,
        ),
        Case(
            "chain-estimate-with-fewer-layers-than-frozen-layers",
            "valid model store",
            CHAIN,
            {**USER_FILES},
            expect="ok",
            outputs=("models",),
            setup=story,
            check=_estimate_sane,
        ),
        Case(
            "judge-a-clusters-file-copied-from-another-report",
            "judge",
            judge,
            pairs,
            words=("clusters.parquet", "not one run"),
            status=1,
            setup=copied_in,
        ),
        Case(
            "judge-a-report-killed-while-moved-in",
            "judge",
            judge,
            pairs,
            words=(".staging-", "killed"),
            status=1,
            setup=_a_killed_move(template),
        ),
    ]


# --- the editors' verdict store beside the pair file, and the series veto ---------------------------------

NEWS_TITLES = {f"n{i}": TITLES[i - 1] for i in range(1, 6)}
"""The items of :data:`GOOD_CSV`: at ``--threshold 0.9`` n1/n2 and n3/n5 are linked (MiniLM-L3)."""
MERGED_HEAD = "pair_id\tid_a\tid_b\ttext_a\ttext_b\tscore\tsplit\tstratum\n"
V1_STORE = "pair_id,id_a,id_b,score,split,annotator,source,decided_at\n"


def merged_pairs(rows: list[tuple[str, str]], first: str = "") -> str:
    """A pair file whose ``rows`` (two item ids) were merged from an editors' file as "not the same story"
    (``stratum`` ``editor-loop:``, split train), after ``first`` (rows of the file's own, as written)."""
    lines = [
        f"e{n}\t{a}\t{b}\t{NEWS_TITLES[a]}\t{NEWS_TITLES[b]}\t0\ttrain\teditor-loop:report-page:cluster\n"
        for n, (a, b) in enumerate(rows)
    ]
    return MERGED_HEAD + first + "".join(lines)


def _store_of(pairs: str, rows: list[tuple[str, str]]) -> Callable[[Path], None]:
    """Write the verdict store of ``pairs`` as a merge leaves it: ``rows`` as "not the same story"."""

    def setup(d: Path) -> None:
        from nlsim.clusters.verdicts import Verdict, Verdicts, save_verdicts, store_path
        from nlsim.io.editor_file import text_sha256

        verdicts = [
            Verdict(
                a,
                b,
                0.0,
                "train",
                "desk",
                "marks.csv",
                "",
                text_sha256(NEWS_TITLES[a]),
                text_sha256(NEWS_TITLES[b]),
            )
            for a, b in rows
        ]
        save_verdicts(Verdicts.from_records(verdicts), store_path(d / pairs))

    return setup


OVERRULED_ROW = f"p0\tn1\tn2\t{NEWS_TITLES['n1']}\t{NEWS_TITLES['n2']}\t0.75\ttrain\tlex-high\n"
"""A training pair the annotators scored 0.75 (no verdict), which an editor's verdict overrules."""


def _torn_overrule(pairs: str) -> Callable[[Path], None]:
    """The store of ``pairs`` holding an editor's overruling verdict on n1/n2 (the annotators' 0.75 kept
    as its earlier decision), its row torn before its row check, as a writer killed in it leaves it."""

    def setup(d: Path) -> None:
        from nlsim.clusters.verdicts import Decision, Verdict, Verdicts, save_verdicts, store_path
        from nlsim.io.editor_file import text_sha256

        store = store_path(d / pairs)
        newer = Verdict(
            "n1",
            "n2",
            0.0,
            "train",
            "desk",
            "marks.csv",
            "2026-11-29T10:00:00+00:00",
            text_sha256(NEWS_TITLES["n1"]),
            text_sha256(NEWS_TITLES["n2"]),
            earlier=(Decision(0.75, "", pairs),),
        )
        save_verdicts(Verdicts.from_records([newer]), store)
        text = store.read_text()
        store.write_text(text[: text.rindex(",")])

    return setup


def _together(
    a: str, b: str, together: bool, said: str = "", folder: str = "rep"
) -> Callable[[Path, Any], str | None]:
    """The report's clusters put ``a`` and ``b`` together (or apart), and the run said ``said``."""

    def check(d: Path, proc: Any) -> str | None:
        import pandas as pd

        clusters = pd.read_parquet(d / folder / "clusters.parquet")
        one = any(a in set(m) and b in set(m) for m in clusters["member_ids"])
        if one != together:
            where = "apart" if together else "in one cluster"
            return f"{a} and {b} are {where}: {clusters['member_ids'].tolist()}"
        return None if said in proc.stderr else f"the run does not say {said!r}"

    return check


OWN_ROW = "p0\tn3\tn4\tStock markets fall sharply\tFootball club wins the cup\t0.25\ttrain\tlex-high\n"
"""A scored pair of the pair file's own (no verdict)."""


def not_the_same(export: str) -> str:
    """:func:`editors_file`'s rows scored 0 (not the same story) instead of 1."""
    return export.replace(",1,desk,", ",0,desk,")


def _killed_merge(d: Path) -> None:
    from tests.faults import fault_env

    merge = ["annotate", "merge", "--filled", "export.csv", "--pairs", "pairs.tsv"]
    proc = nlsim(merge, d, more_env=fault_env("merge-verdicts", str(ROOT)))
    if proc.returncode != -9:
        raise RuntimeError(
            f"the merge was not killed at merge-verdicts: {proc.returncode} {proc.stderr[-500:]}"
        )


def _cut_store(pairs: str, keep: int) -> Callable[[Path], None]:
    def setup(d: Path) -> None:
        from nlsim.clusters.verdicts import store_path

        store = store_path(d / pairs)
        store.write_text("".join(store.read_text().splitlines(keepends=True)[: 1 + keep]))

    return setup


def _torn_store(pairs: str) -> Callable[[Path], None]:
    """The store of ``pairs`` cut inside its last row (its source and time lost), as a killed writer leaves
    it."""

    def setup(d: Path) -> None:
        from nlsim.clusters.verdicts import store_path

        store = store_path(d / pairs)
        text = store.read_text()
        store.write_text(text[: text.rindex(",desk,") + 5])

    return setup


def _warm_chain(template: Path) -> Callable[[Path], None]:
    """The chain template's store with its version promoted, and its pairs with one more training pair: the
    next chain trains and registers a new version."""

    def setup(d: Path) -> None:
        import pandas as pd

        shutil.copytree(template / "models", d / "models")
        _promote(d)
        items = pd.read_parquet(d / "corpus.parquet")
        title = dict(zip(items["id"], items["title"], strict=True))
        with (d / "pairs.tsv").open("a", encoding="utf-8") as fh:
            fh.write(f"p99\ttrain\ts00\ts02\t{title['s00']}\t{title['s02']}\t0\n")

    return setup


def _no_new_version(d: Path, proc: Any) -> str | None:
    made = [p.name for p in (d / "models" / "versions").iterdir() if not p.name.startswith(("v0001", "."))]
    return f"refused after training and registering {made}" if made else None


def _day_one(d: Path) -> None:
    proc = prepare(dedup("day1.csv", "--state", "state", "--annotated-pairs", "pairs.tsv", out="daily"), d)
    if proc.returncode != 0:
        raise RuntimeError(f"day 1: {proc.stderr[-1000:]}")


def _series_template(template: Path) -> Callable[[Path], None]:
    def setup(d: Path) -> None:
        shutil.copytree(template / "finetuned", d / "finetuned")

    return setup


SERIES_CSV = HEAD + "s1,Exam results of 2010 announced,AP,\ns2,Exam results of 2011 announced,AP,\n"
"""Two items of one series (another year): the veto keeps them apart whatever the threshold."""


def verdict_stores(template: Path) -> list[Case]:
    """The editors' verdict store beside the pair file: lost, cut, torn, left by a killed merge, shared by
    the pair files of one stem or named as earlier versions named it; a chain given a damaged one; a verdict
    whose item's text changed; and the series veto under a threshold below 0.75."""
    g, ok = "bad pairs", "valid pairs"
    both = [("n1", "n2"), ("n3", "n5")]
    report = ["--annotated-pairs", "pairs.tsv"]
    news = {"news.csv": GOOD_CSV, **USER_FILES}
    day2 = HEAD + "n2,Floods hit the north of the country,AP,2024-05-01T06:00:00Z\n"  # n2 now reads as n1
    chain = [*CHAIN[: CHAIN.index("--no-report")], "--corpus", "corpus.parquet", "--out", "rep"]
    chain += ["--no-progress"]
    story_corpus, story_pairs = story_data()
    return [
        Case(  # the store holds a verdict the pair file does not: it must not act
            "dedup-after-a-merge-killed-between-the-store-and-the-pair-file",
            ok,
            dedup("news.csv", *report),
            {
                **news,
                "pairs.tsv": MERGED_HEAD,
                "export.csv": editors_file([("n1", "n2", TITLES[0], TITLES[1])]),
            },
            expect="ok",
            outputs=("rep",),
            setup=_killed_merge,
            check=_together("n1", "n2", True, "does not hold"),
        ),
        Case(
            "dedup-with-the-verdict-store-deleted",
            ok,
            dedup("news.csv", *report),
            {**news, "pairs.tsv": merged_pairs(both)},
            expect="ok",
            outputs=("rep",),
            check=_together("n3", "n5", False, "rebuilt from the pair file"),
        ),
        Case(
            "dedup-with-the-verdict-store-cut-at-a-row-boundary",
            ok,
            dedup("news.csv", *report),
            {**news, "pairs.tsv": merged_pairs(both)},
            expect="ok",
            outputs=("rep",),
            setup=lambda d: (_store_of("pairs.tsv", both)(d), _cut_store("pairs.tsv", 1)(d)) and None,
            check=_together("n3", "n5", False, "rebuilt from the pair file"),
        ),
        Case(  # the store an earlier nlsim named after the stem holds pairs.csv's verdict, not pairs.tsv's
            "dedup-with-the-verdict-store-of-another-pair-file-of-the-stem",
            ok,
            dedup("news.csv", *report),
            {
                **news,
                "pairs.tsv": MERGED_HEAD + OWN_ROW,
                "pairs.csv": merged_pairs([("n1", "n2")]).replace("\t", ","),
                "pairs.verdicts.csv": V1_STORE + ",n1,n2,0,train,desk,marks.csv,\n",
            },
            expect="ok",
            outputs=("rep",),
            check=_together("n1", "n2", True),
        ),
        Case(
            "dedup-with-the-verdict-store-under-its-earlier-name",
            ok,
            dedup("news.csv", *report),
            {
                **news,
                "pairs.tsv": merged_pairs([("n1", "n2")]),
                "pairs.verdicts.csv": V1_STORE + ",n1,n2,0,train,desk,marks.csv,\n",
            },
            expect="ok",
            outputs=("rep",),
            check=_together("n1", "n2", False, "pairs.verdicts.csv"),
        ),
        Case(  # as an earlier nlsim wrote it (no row checks): the last row ends inside its time
            "dedup-with-an-earlier-verdict-store-torn-inside-its-last-row",
            g,
            dedup("news.csv", *report),
            {
                **news,
                "pairs.tsv": merged_pairs(both),
                "pairs.verdicts.csv": V1_STORE
                + ",n1,n2,0,train,desk,a.csv,2026-11-29\n,n3,n5,0,train,desk,a.csv,20",
            },
            words=("pairs.verdicts.csv", "row 2", "torn", "nlsim annotate verdicts"),
        ),
        Case(
            "dedup-with-a-verdict-store-torn-inside-its-last-row",
            g,
            dedup("news.csv", *report),
            {**news, "pairs.tsv": merged_pairs(both)},
            setup=lambda d: (_store_of("pairs.tsv", both)(d), _torn_store("pairs.tsv")(d)) and None,
            words=("pairs.tsv.verdicts.csv", "row 2", "torn", "nlsim annotate verdicts"),
        ),
        Case(
            "merge-into-a-verdict-store-torn-inside-its-last-row",
            g,
            ["annotate", "merge", "--filled", "export.csv", "--pairs", "pairs.tsv"],
            {
                **news,
                "pairs.tsv": merged_pairs([("n1", "n2")]),
                "pairs.verdicts.csv": V1_STORE + ",n1,n2,0,train,desk,a.csv,2026-11",
                "export.csv": editors_file([("n3", "n4", TITLES[2], TITLES[3])]),
            },
            words=("pairs.verdicts.csv", "row 1", "torn"),
        ),
        Case(  # the editor's newer decision is only in the store: refused, and the way back is said
            "dedup-with-an-overruling-verdict-torn-inside-its-row",
            g,
            dedup("news.csv", *report),
            {**news, "pairs.tsv": MERGED_HEAD + OVERRULED_ROW},
            setup=_torn_overrule("pairs.tsv"),
            words=("pairs.tsv.verdicts.csv", "row 1", "torn", "--overrule"),
        ),
        Case(
            "merge-overrule-into-a-store-whose-overruling-verdict-is-torn",
            g,
            ["annotate", "merge", "--filled", "export.csv", "--pairs", "pairs.tsv", "--overrule"],
            {
                **news,
                "pairs.tsv": MERGED_HEAD + OVERRULED_ROW,
                "export.csv": editors_file([("n1", "n2", NEWS_TITLES["n1"], NEWS_TITLES["n2"])]),
            },
            setup=_torn_overrule("pairs.tsv"),
            words=("pairs.tsv.verdicts.csv", "row 1", "torn"),
        ),
        Case(  # validation pairs judge the report: never overruled, refused by name
            "merge-overrule-of-a-validation-pair",
            g,
            ["annotate", "merge", "--filled", "export.csv", "--pairs", "pairs.tsv", "--overrule"],
            {
                **news,
                "pairs.tsv": MERGED_HEAD + OVERRULED_ROW.replace("\ttrain\t", "\tvalidation\t"),
                "export.csv": editors_file([("n1", "n2", NEWS_TITLES["n1"], NEWS_TITLES["n2"])]),
            },
            words=("export.csv", "sheet row 2", "validation", "only a training pair is overruled"),
        ),
        Case(  # a promoted model and new pairs: the report comes after training a new version
            "pipeline-with-a-damaged-verdict-store-is-refused-before-training",
            "model store",
            chain,
            {
                **USER_FILES,
                "corpus.parquet": story_corpus,
                "pairs.tsv": story_pairs,
                "pairs.verdicts.csv": V1_STORE + ",s00,s01,0.6,train,,,\n",
            },
            words=("pairs.verdicts.csv", "row 1", "'score'"),
            outputs=("models",),  # the store's own records (recovering the promotion made by hand)
            setup=_warm_chain(template),
            check=_no_new_version,
        ),
        Case(
            "daily-run-after-a-verdicts-item-changed-its-text",
            ok,
            dedup("day2.csv", "--state", "state", out="daily"),
            {"day1.csv": GOOD_CSV, "day2.csv": day2, "pairs.tsv": merged_pairs([("n1", "n2")]), **USER_FILES},
            expect="ok",
            outputs=("state", "daily"),
            setup=lambda d: (_store_of("pairs.tsv", [("n1", "n2")])(d), _day_one(d)) and None,
            check=_together("n1", "n2", True, "another text", folder="daily/latest"),
        ),
        Case(
            "series-veto-under-a-threshold-below-0.75",
            "series veto",
            ["dedup", "--corpus", "series.csv", "--out", "rep", "--model", "finetuned", "--threshold", "0.01"]
            + ["--convert", "none", "--no-cache", "--no-progress"],
            {"series.csv": SERIES_CSV, **USER_FILES},
            expect="ok",
            outputs=("rep",),
            setup=_series_template(template),
            check=_together("s1", "s2", False, "the series veto held 1 pair(s)"),
        ),
    ]


TEMPLATES: dict[str, Callable[[Path], None]] = {
    "_model": build_model_template,
    "_state": build_state_template,
    "_chain": build_chain_template,
}
"""The folders some cases copy, built once per run by :func:`build_templates` (the chain's trains a model)."""


def _store_folder(d: Path) -> None:
    """``models/`` (which holds the case's CURRENT.json) marked as the model store nlsim made."""
    from nlsim.io.ownership import write_marker

    write_marker(d / "models", "model-store")


def _report_folder(d: Path) -> None:
    from nlsim.io.ownership import claim_folder

    claim_folder(d / "rep", "report")


def _report_before_markers(d: Path) -> None:
    """A report folder as an nlsim before markers wrote it: its run.json lists its files' SHA-256."""
    from nlsim.io.atomic import file_sha256

    (d / "rep").mkdir()
    (d / "rep" / "pairs.csv").write_text("id_a,id_b,similarity\nn1,n2,0.95\n")
    files = {"pairs.csv": file_sha256(d / "rep" / "pairs.csv")}
    (d / "rep" / "run.json").write_text(json.dumps({"files": files}))


def stores_named_wrongly() -> list[Case]:
    """A model store whose CURRENT.json is damaged (not JSON, another shape), and a report folder given as
    the model store: each named, with what to do."""
    g = "bad model store"
    listing = ["models", "list", "--model-store", "models"]
    out = [
        Case(
            f"models-list-with-current-json-{name}",
            g,
            listing,
            {"models/CURRENT.json": text, **USER_FILES},
            words=("models/CURRENT.json", "damaged", why, "nlsim models promote"),
            status=1,
            setup=_store_folder,
        )
        for name, text, why in (
            ("not-json", '{"version": ', "not valid JSON"),
            ("a-list", '["v0001-0badf00d"]', "a JSON list"),
            ("without-a-version", '{"promoted_at": "2026-11-20T03:00:00+00:00"}', "names no version"),
        )
    ]
    named = ("--model-store rep", "is a report folder", "not a model store")
    for how, setup in (("", _report_folder), ("-written-before-markers", _report_before_markers)):
        for which, argv in (
            ("models-list", ["models", "list", "--model-store", "rep"]),
            ("dedup-current", dedup("news.csv", "--model-store", "rep", out="out", threshold=None)),
            (
                "pipeline",
                ["pipeline", "--pairs", "pairs.tsv", "--corpus", "news.csv", "--model-store", "rep"],
            ),
        ):
            if which == "dedup-current":
                argv[argv.index(MODEL)] = "current"
            out.append(
                Case(
                    f"{which}-with-a-report-folder{how}-as-the-model-store",
                    g,
                    argv,
                    {"news.csv": GOOD_CSV, "pairs.tsv": pair_table(), **USER_FILES},
                    words=named,
                    status=2,
                    setup=setup,
                )
            )
    return out


def all_cases(work: Path) -> list[Case]:
    """Every case, its templates under ``work`` (built later by :func:`build_templates`, only for the cases
    that run). Case names are unique."""
    cases = (
        bad_corpora()
        + ok_corpora()
        + dangerous_paths()
        + bad_options()
        + bad_calibrations()
        + bad_pairs()
        + bad_states(work / "_state")
        + bad_models(work / "_model")
        + report_text()
        + model_files_and_store(work / "_chain")
        + paths_through_new_folders()
        + devices_this_torch_lacks()
        + editors_files()
        + calibration_fallback()
        + stores_chains_and_reports(work / "_chain")
        + verdict_stores(work / "_chain")
        + stores_named_wrongly()
    )
    names = [c.name for c in cases]
    assert len(set(names)) == len(names), "case names must be unique"
    return cases


def build_templates(work: Path) -> None:
    """Build every template folder the cases copy (the chain's template needs the model's)."""
    for name, build in TEMPLATES.items():
        if not (work / name).exists():
            build(work / name)


def summarise(rows: list[dict[str, Any]]) -> dict[str, int]:
    """The figures of a run of cases: refusals by name, valid inputs right, user files changed, wrong
    results with exit 0, rows dropped, cases that failed a check."""
    refuse = [r for r in rows if r["expect"] == "refuse"]
    ok = [r for r in rows if r["expect"] == "ok"]
    return {
        "cases tried": len(rows),
        "cases meant to be refused": len(refuse),
        "refused with a named error": sum(r["named_error"] for r in refuse),
        "valid inputs that ran and loaded every row": sum(r["ok"] for r in ok),
        "valid inputs": len(ok),
        "user files lost or changed": sum(r["user_files_changed"] for r in rows),
        "wrong results with exit 0": sum(r["exit"] == 0 and not r["ok"] for r in rows),
        "rows silently dropped": sum(r["rows_dropped"] for r in rows),
        "cases that failed a check": sum(not r["ok"] for r in rows),
    }
