"""A corpus or pair file compressed whole (``items.csv.gz``, ``.jsonl.bz2``, ``.tsv.xz``), as newsroom exports
often are: read as the file it holds, its errors named by the compressed file, row and field."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import re
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from nlsim.annotation.merge import merge_annotations
from nlsim.errors import ConfigError, InputError
from nlsim.io.corpus import load_corpus
from nlsim.io.pairs import load_pairs
from nlsim.io.tables import estimated_rows, read_table

PACKERS: dict[str, Callable[[bytes], bytes]] = {
    ".gz": gzip.compress,
    ".bz2": bz2.compress,
    ".xz": lzma.compress,
}
TABLES = {
    ".csv": 'id,title,source\nn1,"Floods, again",AP\nn2,Storm warning,Reuters\n',
    ".tsv": "id\ttitle\tsource\nn1\tFloods, again\tAP\nn2\tStorm warning\tReuters\n",
    ".jsonl": '{"id": "n1", "title": "Floods, again", "source": "AP"}\n'
    '{"id": "n2", "title": "Storm warning", "source": "Reuters"}\n',
}


@pytest.mark.parametrize("packed", list(PACKERS))
@pytest.mark.parametrize("suffix", list(TABLES))
def test_a_compressed_corpus_is_read_as_the_file_it_holds(tmp_path: Path, suffix: str, packed: str) -> None:
    path = tmp_path / f"items{suffix}{packed.upper() if packed == '.gz' else packed}"
    path.write_bytes(PACKERS[packed](TABLES[suffix].encode()))
    corpus = load_corpus(path, text_fields=("title",))
    assert corpus.ids == ["n1", "n2"]
    assert corpus.texts() == ["Floods, again", "Storm warning"]
    assert corpus.frame["source"].tolist() == ["AP", "Reuters"]
    assert estimated_rows(path) == 2


def test_a_bad_row_of_a_gzipped_csv_is_named_by_file_row_and_field(tmp_path: Path) -> None:
    path = tmp_path / "items.csv.gz"
    path.write_bytes(gzip.compress(b"id,title\nn1,Floods\nn2,\nn3,Storm\n"))
    with pytest.raises(InputError) as info:
        load_corpus(path, text_fields=("title",))
    assert (info.value.file, info.value.row, info.value.field) == (str(path), 2, "title")
    path.write_bytes(gzip.compress("id,title\nn1,Floods\nn2,Caf\xe9\n".encode("latin-1")))
    with pytest.raises(InputError, match=r"not valid UTF-8 .* of the file it holds") as info:
        read_table(path)
    assert (info.value.file, info.value.row, info.value.field) == (str(path), 2, "title")


def test_a_broken_row_of_a_gzipped_csv_is_quarantined_with_its_text(tmp_path: Path) -> None:
    path = tmp_path / "items.csv.gz"
    path.write_bytes(gzip.compress(b"id,title\nn1,Floods\nn2,Storm,again\nn3,Rain\n"))
    corpus = load_corpus(path, text_fields=("title",), quarantine=tmp_path / "bad.csv")
    assert corpus.ids == ["n1", "n3"]
    assert corpus.quarantined[["row", "raw_line"]].to_dict("records") == [
        {"row": 2, "raw_line": "n2,Storm,again"}
    ]


@pytest.mark.parametrize(
    ("name", "data", "words"),
    [
        ("items.parquet.gz", gzip.compress(b"PAR1"), "Parquet compresses its own columns"),
        ("items.csv.gz", b"id,title\nn1,Floods\n", "not compressed (gzip)"),
        ("items.csv.xz", gzip.compress(b"id,title\nn1,Floods\n"), "compressed as gzip, not xz"),
        ("items.csv.gz", gzip.compress(b"id,title\n" + b"n1,Floods\n" * 100)[:-12], "cannot be decompressed"),
        ("items.gz", gzip.compress(b"id,title\nn1,Floods\n"), "suffix '.gz'); use .parquet"),
        ("items.zip", b"PK\x03\x04", "suffix '.zip'"),
    ],
    ids=["parquet-gz", "plain-csv-gz", "gzip-named-xz", "cut-gzip", "gz-alone", "zip"],
)
def test_a_compressed_file_that_cannot_be_read_says_why(
    tmp_path: Path, name: str, data: bytes, words: str
) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(InputError, match=re.escape(words)) as info:
        load_corpus(path, text_fields=("title",))
    assert info.value.file == str(path) and "Traceback" not in str(info.value)


def test_the_unknown_suffix_message_says_a_compressed_table_is_read(tmp_path: Path) -> None:
    path = tmp_path / "items.csv.zst"
    path.write_bytes(b"\x28\xb5\x2f\xfd")
    with pytest.raises(
        InputError, match=r"suffix '\.zst'.*\(or one of them compressed: \.csv\.gz, \.bz2 or \.xz\)"
    ):
        read_table(path)


def test_a_gzipped_pair_file_is_read_and_a_merge_into_it_is_refused(tmp_path: Path) -> None:
    pairs = tmp_path / "pairs.tsv.gz"
    pairs.write_bytes(gzip.compress(b"text_a\ttext_b\tscore\tsplit\nA\tB\t0.5\ttrain\nC\tD\t1\ttest\n"))
    assert load_pairs(pairs)[["text_a", "score", "split"]].to_dict("records") == [
        {"text_a": "A", "score": 0.5, "split": "train"},
        {"text_a": "C", "score": 1.0, "split": "test"},
    ]
    before = pairs.read_bytes()
    filled = tmp_path / "filled.csv"
    filled.write_text("pair_id,id_a,id_b,text_a,text_b,score\np1,a,b,E,F,1\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"pairs\.tsv\.gz is compressed \(gzip\).*merge into .*pairs\.tsv"):
        merge_annotations(filled, pairs)
    assert pairs.read_bytes() == before


@pytest.mark.parametrize("packed", list(PACKERS))
def test_a_compressed_parquet_file_under_a_text_name_says_to_decompress_it(
    tmp_path: Path, packed: str
) -> None:
    """``news.csv.gz`` holding a Parquet file was told ``name it .parquet``: renamed so it was still
    compressed, and refused again (a Parquet file compressed whole). It is now told that the compressed
    file holds a Parquet file, to decompress and name .parquet."""
    import pandas as pd

    inner = tmp_path / "inner.parquet"
    pd.DataFrame({"id": ["n1"], "title": ["Storm warning"]}).to_parquet(inner)
    path = tmp_path / f"news.csv{packed}"
    path.write_bytes(PACKERS[packed](inner.read_bytes()))
    with pytest.raises(InputError) as err:
        read_table(path)
    said = str(err.value)
    assert "holds a Parquet file" in said and "decompress it" in said and "news.parquet" in said, said


@pytest.mark.parametrize("packed", ["", ".gz"])
def test_a_json_array_corpus_is_estimated_by_its_elements_not_its_lines(tmp_path: Path, packed: str) -> None:
    """A ``.json`` corpus of one JSON array on one line was estimated as 1 item (its lines counted), and
    one written with ``indent=2`` as many times its items: the chain's time estimate was wrong either way.
    Its elements are counted, whatever their strings hold (brackets, commas, quotes, line breaks)."""
    items = [
        {"id": "n1", "title": 'Floods, again [live] {update} "quoted" \\ done', "tags": ["a", "b"]},
        {"id": "n2", "title": "Storm,\nwarning", "meta": {"x": [1, {"y": 2}]}},
        {"id": "n3", "title": "}],[{"},
    ]
    pack = PACKERS[packed] if packed else (lambda data: data)
    one_line = tmp_path / f"items.json{packed}"
    one_line.write_bytes(pack(("\ufeff" + json.dumps(items, ensure_ascii=False)).encode()))
    indented = tmp_path / f"indented.json{packed}"
    indented.write_bytes(pack(json.dumps(items, indent=2).encode()))
    empty = tmp_path / f"empty.json{packed}"
    empty.write_bytes(pack(b" [ ]\n"))
    assert [estimated_rows(p) for p in (one_line, indented, empty)] == [3, 3, 0]


def test_a_json_array_corpus_is_estimated_in_less_memory_than_the_file_takes(tmp_path: Path) -> None:
    """The chain's estimate read a ``.json`` corpus whole and then rewrote it, string by string, as its
    brackets and commas: a 16 MB array took about 220 MB of memory (a 1 GB export, many GB) before the run
    read it. It reads the file a piece at a time, the count the same, strings cut across the pieces, an
    escaped quote or backslash at a piece's end, a string longer than a piece included."""
    items = [
        {"id": f"n{i}", "title": f'Floods "{i}", [again] \\', "n": [i, {"x": i}]} for i in range(150_000)
    ]
    items[7] = {"id": "long", "title": '\\"}, {' * 400_000}  # 2.4 MB of one string: longer than a piece
    path = tmp_path / "items.json"
    path.write_text(json.dumps(items), encoding="utf-8")
    tracemalloc.start()
    try:
        assert estimated_rows(path) == len(items)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < path.stat().st_size / 2, (peak, path.stat().st_size)


def test_a_json_array_after_much_white_space_is_estimated_by_its_elements(tmp_path: Path) -> None:
    """Whether a ``.json`` corpus is one array was told from its first 64 bytes: an export that puts more
    white space than that before its ``[`` (blank lines, an editor's indentation) was estimated by its
    lines, not its elements, though the reader takes it as the array it is."""
    items = [{"id": f"n{i}", "title": f"t{i}"} for i in range(3)]
    path = tmp_path / "items.json"
    path.write_text("\n" * 50 + " " * 100 + json.dumps(items, indent=2), encoding="utf-8")
    assert estimated_rows(path) == 3
    blank = tmp_path / "blank.json"
    blank.write_text(" " * 200, encoding="utf-8")
    assert estimated_rows(blank) == 0
