"""The README and the user's documents read as documentation, in their source too: a numbered list is
numbered in order (Markdown renders ``1, 1, 2, 3`` as 1 to 4, but a reader of the source or of a diff sees
two firsts), and the pages a user works from say what nlsim does, not how it came to do it (that history is
the record of docs/measurements.md and docs/experiments.md)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])

ITEM = re.compile(r"^(\d+)\. ")

RECORDS = {"measurements.md", "experiments.md"}
"""The dated record of what was measured and tried: the one place that tells how nlsim came to be as it is."""
USER_PAGES = [p for p in DOCUMENTS if p.name not in RECORDS]
HISTORY = re.compile(r"\b(?:as before|no longer|before batch \d|measured again on)\b", re.IGNORECASE)
"""Words that tell what nlsim was rather than what it is."""

ALL_PAGES = sorted({*DOCUMENTS, *ROOT.glob("*/README.md"), *ROOT.glob("annotations/*.md")})
MAKING = re.compile(
    r"\b(?:a later stop|the stop's|this stop|this round|hostile (?:reading|testers?)|second session read)\b",
    re.IGNORECASE,
)
"""Words about how the project itself was being worked on (its stops and rounds of work, who read the code
beside a run), which a reader of nlsim's documents has no use for."""


def misnumbered(text: str) -> list[str]:
    """Each item of a numbered list (outside code blocks) whose number is not the one after the item
    before it, as ``line N: M after K``; a line that is neither an item, blank nor indented ends a list.

    Example:
        >>> misnumbered("1. a\\n   more\\n\\n1. b\\n2. c\\n")
        ['line 4: 1 after 1']
        >>> misnumbered("1. a\\n2. b\\n\\ntext\\n\\n1. c\\n")
        []
    """
    found, fenced, before = [], False, None
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith(("```", "~~~")):
            fenced, before = not fenced, None
            continue
        if fenced or not line.strip():
            continue
        item = ITEM.match(line)
        if item:
            n = int(item[1])
            if before is not None and n != before + 1:
                found.append(f"line {number}: {n} after {before}")
            before = n
        elif not line.startswith(" "):
            before = None
    return found


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_numbered_list_is_numbered_in_order(path: Path) -> None:
    """docs/operations.md's review panel was listed 1, 1, 2, 3 in the source."""
    assert misnumbered(path.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("path", USER_PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_the_users_pages_tell_no_history(path: Path) -> None:
    """docs/operations.md said a store without promotions 'reads as never promoted, as before', that its
    kill points were 'measured again on the current stage layout', and told of a model's 1,090 meaningless
    clusters; the README's measured figures were 'before batch 4'; docs/report.md said the verdicts 'still
    train the next model as before'."""
    text = outside_code(path.read_text(encoding="utf-8"))
    said = [f"line {text.count(chr(10), 0, m.start()) + 1}: {m[0]}" for m in HISTORY.finditer(text)]
    assert said == []


def outside_code(text: str) -> str:
    """``text`` with each inline code span (what nlsim prints, quoted: ``(was v0003-..., no longer a version
    of the store)``) blanked, its line breaks kept, so that only the page's own prose is read.

    >>> outside_code("it is `no longer` said\\nno longer")
    'it is             said\\nno longer'
    """
    return re.sub(r"`[^`]*`", lambda m: re.sub(r"[^\n]", " ", m[0]), text)


@pytest.mark.parametrize("path", ALL_PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_page_tells_how_the_project_was_being_worked_on(path: Path) -> None:
    """docs/measurements.md dated runs by 'a later stop' and 'the stop's last commit', said 'a second
    session read code beside it' and that commits were 'read by hostile testers'."""
    text = path.read_text(encoding="utf-8")
    said = [f"line {text.count(chr(10), 0, m.start()) + 1}: {m[0]}" for m in MAKING.finditer(text)]
    assert said == []
