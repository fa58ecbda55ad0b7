"""Every relative link of the README and of docs/ leads somewhere: the file exists, and a link to a heading
of a Markdown file names a heading that file has (the anchor GitHub makes of it). A section moved from one
document to another, or renamed, breaks the links into it; this finds them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])

FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
CODE = re.compile(r"(`+).+?\1", re.DOTALL)
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)


def prose(text: str) -> str:
    """The text without its code blocks and code spans, where brackets are not links."""
    return CODE.sub("", FENCE.sub("", text))


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, markup and punctuation dropped, spaces as hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading: its text
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading anchor of a Markdown file, repeated headings numbered as GitHub numbers them."""
    seen: dict[str, int] = {}
    out = set()
    for heading in HEADING.findall(FENCE.sub("", path.read_text(encoding="utf-8"))):
        base = anchor(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def links(path: Path) -> list[str]:
    return [
        target
        for target in LINK.findall(prose(path.read_text(encoding="utf-8")))
        if not re.match(r"[a-z][a-z0-9+.-]*:", target)  # http:, https:, mailto: ...
    ]


def broken(path: Path) -> list[str]:
    """The relative links of one document that lead nowhere, each with the reason."""
    out = []
    for target in links(path):
        file, _, fragment = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        if not dest.exists():
            out.append(f"{target}: no file {file}")
        elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
            out.append(f"{target}: {dest.name} has no heading with the anchor #{fragment}")
    return out


@pytest.mark.parametrize(
    ("heading", "expected"),
    [
        (
            "7. The editors' routine: review in the page, merge, retrain",
            "7-the-editors-routine-review-in-the-page-merge-retrain",
        ),
        (
            "Same story, cross-validated (batch 3 merged, 2026-11-24)",
            "same-story-cross-validated-batch-3-merged-2026-11-24",
        ),
        (
            "1. Deployments (`prefect.yaml`, `python -m flows.serve`)",
            "1-deployments-prefectyaml-python--m-flowsserve",
        ),
        ("Schedule it — every day", "schedule-it--every-day"),
    ],
)
def test_anchors_are_the_ones_github_makes(heading: str, expected: str) -> None:
    assert anchor(heading) == expected


@pytest.mark.parametrize("doc", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_leads_to_a_file_and_heading(doc: Path) -> None:
    assert broken(doc) == []


def test_a_link_to_a_moved_section_is_found(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A\n\n## Fine-tuning speed\n\nsee [b](b.md#gone) and [c](c.md)\n")
    (tmp_path / "b.md").write_text("# B\n\n```\n## not a heading\n```\n[back](a.md#fine-tuning-speed)\n")
    assert broken(tmp_path / "b.md") == []
    assert broken(tmp_path / "a.md") == [
        "b.md#gone: b.md has no heading with the anchor #gone",
        "c.md: no file c.md",
    ]


def test_links_in_code_are_not_links() -> None:
    text = "`[a](missing.md)` and\n```\n[b](gone.md)\n```\n[c](here.md#x)"
    assert LINK.findall(prose(text)) == ["here.md#x"]
