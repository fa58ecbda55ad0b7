"""What an id or a text cell may hold so that every tool reads it back as one cell of one row.

Line readers (Python's ``str.splitlines``, editors, ``grep``) end a row at more than a newline: a vertical
tab, a form feed, the separators U+001C to U+001E, U+0085 and the Unicode line and paragraph separators
U+2028 and U+2029. Other control characters (``\\x07``, an escape ``\\x1b``) show nothing, or act on a
terminal, and a NUL ends a text in many tools. An id holds none of them, and U+001F (the unit separator)
joins the two item ids of a pair id (:func:`nlsim.io.editor_file.pair_id`), so an id holding it could make
two pairs share one id.

Example:
    >>> first_control("thuc-00012") is None
    True
    >>> describe(first_control("a\\x1fb"))
    'U+001F (a control character)'
    >>> first_control("line one\\nline two", allowed="\\n") is None
    True
"""

from __future__ import annotations

import re
import unicodedata

LINE_BREAKING = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
"""Characters ``str.splitlines`` ends a line at."""


_TSV_RUN = re.compile(r"\s*[\t\r\n]\s*")
_BREAK_RUN = re.compile("\\s*[\t" + re.escape("".join(sorted(LINE_BREAKING))) + "]\\s*")


def one_line(text: str, *, every_break: bool = False) -> str:
    """``text`` with each run of white space that holds a tab, carriage return or newline (with
    ``every_break``, any character of :data:`LINE_BREAKING` too) read as one space: a headline a CMS
    exported with a line break in it, as a TSV cell holds it.

    >>> one_line("Floods in the north\\r\\n  more rain"), one_line("a\\tb"), one_line("a\\u2028b")
    ('Floods in the north more rain', 'a b', 'a\\u2028b')
    >>> one_line("a\\u2028b", every_break=True)
    'a b'
    """
    return (_BREAK_RUN if every_break else _TSV_RUN).sub(" ", text)


def first_control(text: str, *, allowed: str = "") -> str | None:
    """The first control character (Unicode category Cc) or line or paragraph separator (Zl, Zp) of
    ``text`` that is not in ``allowed``; ``None`` when there is none."""
    for ch in text:
        if ch in allowed:
            continue
        if ch in LINE_BREAKING or unicodedata.category(ch) in ("Cc", "Zl", "Zp"):
            return ch
    return None


def describe(ch: str) -> str:
    """A character named for a message: its code point and what it is."""
    if ch == "\x00":
        what = "a NUL character"
    elif ch in "\t":
        what = "a tab"
    elif ch in LINE_BREAKING:
        what = "a line break for line readers"
    else:
        what = "a control character"
    return f"U+{ord(ch):04X} ({what})"


def hidden(text: str) -> list[str]:
    """The characters of ``text`` that show nothing and take no room (Unicode category Cf: a zero-width
    space, a byte-order mark left by joined files, a direction mark), in order: an id or a column name
    holding one reads as the one without it, and is another.

    Example:
        >>> hidden("pub\u200bdate\ufeff"), hidden("published_at")
        (['\u200b', '\ufeff'], [])
    """
    return [ch for ch in text if unicodedata.category(ch) == "Cf"]


INVISIBLE = frozenset({"Cf", "Cc", "Zs", "Zl", "Zp"})
"""Unicode categories that show nothing: format and control characters and separators."""


def invisible_only(text: str) -> str | None:
    """The code points of ``text`` when none of its characters shows anything (zero-width spaces, soft
    hyphens, byte-order marks: a text with nothing to read), for a message; ``None`` when one does.

    Example:
        >>> invisible_only("\u200b\u00ad"), invisible_only("a\u200b")
        ('U+00AD, U+200B', None)
    """
    if any(unicodedata.category(ch) not in INVISIBLE for ch in text):
        return None
    return ", ".join(sorted({f"U+{ord(ch):04X}" for ch in text}))
