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

import html
import math
import re
import sys
import unicodedata
from collections.abc import Iterable
from functools import cache
from typing import Any

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


TEXT_CONTROL = re.compile(r"[\x00-\x08\x0b-\x0c\x0e-\x1f\x7f]")
"""The C0 control characters (and DEL) a text has no use for: all but the tab, the line feed and the
carriage return, which a text's lines are made of."""


def text_control(text: str) -> str | None:
    """The first control character of ``text`` a text has no use for (:data:`TEXT_CONTROL`: a NUL, a bell,
    the escape of a terminal's colour); ``None`` when there is none. A NUL is the mark of a damaged export.

    >>> text_control("Floods\\x00 in the north"), text_control("line one\\nline\\ttwo")
    ('\\x00', None)
    """
    found = TEXT_CONTROL.search(text)
    return None if found is None else found.group(0)


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


SHOWS_NOTHING = frozenset(
    "\u115f\u1160\u3164\uffa0"  # the Hangul fillers: letters (Lo) that show nothing
    "\u2800"  # BRAILLE PATTERN BLANK: a symbol (So), a blank cell
    "\u034f\u17b4\u17b5\u180b\u180c\u180d\u180f"  # marks (Mn) Unicode calls default ignorable
    + "".join(map(chr, range(0xFE00, 0xFE10)))  # the variation selectors
    + "".join(map(chr, range(0xE0100, 0xE01F0)))
)
"""Characters outside Unicode category Cf that show nothing either, though their category is that of a letter,
a symbol or a mark: a title of them alone (U+3164, which a form that wants a text not empty takes) reads as
empty, and an id holding one reads as the id without it."""


def unseen(ch: str) -> bool:
    """Whether ``ch`` shows nothing, though a text holding it looks the same without it: a format character
    (Unicode category Cf: a zero-width space, a byte-order mark left by joined files, a direction mark) or
    one of :data:`SHOWS_NOTHING` (a Hangul filler, the blank Braille pattern, a variation selector).

    >>> unseen("\u200b"), unseen("\u3164"), unseen("\u2800"), unseen("a"), unseen(" ")
    (True, True, True, False, False)
    """
    return ch in SHOWS_NOTHING or unicodedata.category(ch) == "Cf"


def hidden(text: str) -> list[str]:
    """The characters of ``text`` that show nothing (:func:`unseen`), in order: an id or a column name
    holding one reads as the one without it, and is another.

    Example:
        >>> hidden("pub\u200bdate\ufeff"), hidden("published_at"), hidden("n\u31641")
        (['\u200b', '\ufeff'], [], ['\u3164'])
    """
    return [ch for ch in text if unseen(ch)]


def id_fault(text: str) -> str | None:
    """Why ``text`` cannot be an id, or ``None``: it holds a control character, or a character that shows
    nothing (:func:`hidden`), with which the id reads as the one without it and would be another item.

    Example:
        >>> id_fault("thuc-1") is None, "U+200B (zero width space)" in id_fault("thuc-\u200b1")
        (True, True)
    """
    bad = first_control(text)
    if bad is not None:
        return f"id {text!r} holds {describe(bad)}: an id may hold no control character"
    unseen = hidden(text)
    if not unseen:
        return None
    # a zero-width space, a byte-order mark (two files joined), a direction mark: the id reads as one
    # without it, but is another id (a day's item sent again so would be a new item, its own duplicate)
    ch = unseen[0]
    name = unicodedata.name(ch, "a format character").lower()
    return (
        f"id {text!r} holds U+{ord(ch):04X} ({name}), which shows nothing: the id reads as the one "
        "without it, and would be another item; remove it"
    )


INVISIBLE = frozenset({"Cf", "Cc", "Zs", "Zl", "Zp"})
"""Unicode categories that show nothing: format and control characters and separators."""


def blank(ch: str) -> bool:
    """Whether ``ch`` shows nothing at all: a character of an :data:`INVISIBLE` category (white space, a
    control or format character) or one that shows nothing whatever its category (:func:`unseen`).

    >>> blank("\u3000"), blank("\u00a0"), blank("\u3164"), blank("-")
    (True, True, True, False)
    """
    return unseen(ch) or unicodedata.category(ch) in INVISIBLE


def invisible_only(text: str) -> str | None:
    """The code points of ``text`` when none of its characters shows anything (:func:`blank`: zero-width
    spaces, soft hyphens, byte-order marks, Hangul fillers: a text with nothing to read), for a message;
    ``None`` when one does.

    Example:
        >>> invisible_only("\u200b\u00ad"), invisible_only("a\u200b"), invisible_only("\u3164\u2800")
        ('U+00AD, U+200B', None, 'U+2800, U+3164')
    """
    if not all(map(blank, text)):
        return None
    return ", ".join(sorted({f"U+{ord(ch):04X}" for ch in text}))


SPREADSHEET_ERRORS = frozenset(
    "#NULL! #DIV/0! #VALUE! #REF! #NAME? #NUM! #N/A #GETTING_DATA #SPILL! #CALC! #FIELD! #BLOCKED! "
    "#CONNECT! #BUSY! #UNKNOWN! #PYTHON! #EXTERNAL! #ERROR!".split()
)
"""The error values Excel and Google Sheets show in a cell whose formula failed: what a cell holds once a
spreadsheet ran its text as a formula and the file was saved again (LibreOffice's are ``Err:`` and a
number: :func:`spreadsheet_error`)."""
_CALC_ERROR = re.compile(r"Err:\d{3}")


def spreadsheet_error(text: str) -> str | None:
    """Why ``text`` (a cell's whole text, white space around it aside) is no text but a spreadsheet's error
    value (:data:`SPREADSHEET_ERRORS`, LibreOffice's ``Err:508``), or ``None``: a title a spreadsheet ran as
    a formula (``-5% on the market``, ``=Floods``) and saved as its error, which every such title now reads.

    >>> spreadsheet_error("#NAME?")[:37], spreadsheet_error(" Err:508 ") is None
    ("'#NAME?' is a spreadsheet's error val", False)
    >>> spreadsheet_error("#N/A in the budget app") is None
    True
    """
    value = text.strip()
    if value not in SPREADSHEET_ERRORS and not _CALC_ERROR.fullmatch(value):
        return None
    return (
        f"{value!r} is a spreadsheet's error value, not a text: a spreadsheet ran the text as a formula (one "
        "starting with =, +, - or @) and the file was saved so; restore the text from the source"
    )


MISSING_MARKERS = frozenset({"\\n", "null", "none", "nan", "<na>", "nat", "n/a", "undefined"})
"""What exports write for a missing value (lower case): MySQL's ``\\N``, ``NULL``, Python's ``None``,
pandas' ``nan``, ``<NA>`` and ``NaT`` (``str()`` of a missing value), ``N/A``, JavaScript's ``undefined``."""


def missing_cell(value: Any) -> bool:
    """Whether a cell ``value`` holds no value at all (``None``, NaN, ``NaT``, ``pd.NA``); text never does.

    >>> missing_cell(None), missing_cell(float("nan")), missing_cell(""), missing_cell("NULL")
    (True, True, False, False)
    """
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    import pandas as pd  # deferred: the text checks above run without pandas

    return value is pd.NaT or (not isinstance(value, (str, bytes, list, dict)) and pd.isna(value) is True)


def missing_marker(text: str) -> str | None:
    """Why ``text`` (a cell's whole text, white space around it aside) is no text but an export's marker of
    a missing value (:data:`MISSING_MARKERS`, in any case), or ``None``.

    >>> missing_marker(" NULL ")[:28], missing_marker("None of them") is None
    ("'NULL' marks a missing value", True)
    """
    value = text.strip()
    if value.lower() not in MISSING_MARKERS:
        return None
    return (
        f"{value!r} marks a missing value, not a text: the file was exported so (a database's NULL, a "
        "script's None or nan); give the text, or leave the cell empty"
    )


def placeholder(text: str) -> str | None:
    """Why ``text`` is no text but what a tool wrote in its place (:func:`spreadsheet_error`,
    :func:`missing_marker`), or ``None``: every item holding it would be one text, each a copy of the
    others."""
    return spreadsheet_error(text) or missing_marker(text)


HTML_ELEMENTS = frozenset(
    "a abbr acronym address article aside b bdi bdo big blink blockquote br caption center cite code col "
    "colgroup dd del dfn div dl dt em figcaption figure font footer h1 h2 h3 h4 h5 h6 header hr i iframe img "
    "ins kbd label li main mark nav nobr noscript object ol p picture pre q rp rt ruby s samp script section "
    "small source span strike strong style sub summary sup table tbody td tfoot th thead time tr tt u ul var "
    "video wbr".split()
)
"""The HTML elements whose tags :func:`shown_text` leaves out of a text (any case, with attributes or not,
opening, closing or empty: ``<b>``, ``</B>``, ``<br/>``, ``<a href='...'>``): a ``<`` before another word
(``<Reuters>``, ``<3``) is text."""
_REFERENCE = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
_TAG = re.compile(
    r"<!--.*?-->|</?(?:" + "|".join(sorted(HTML_ELEMENTS, key=len, reverse=True)) + r")(?:\s[^<>]*)?/?>",
    re.IGNORECASE | re.DOTALL,
)
SHOWN_TEXT_VERSION = 2
"""Which reading of :func:`model_text` the texts a run embeds went through
(:meth:`nlsim.dedup.window.Window.texts`), kept in a daily state's identity (``markup``): a state whose
vectors were made from texts with their HTML read as words (it names none), or with their control and
format characters (1), is embedded again once."""
_UNESCAPES = 3
"""How many times a text escaped more than once (``&amp;amp;``) is read again, at most."""


def shown_text(text: str) -> str:
    """``text`` as a web page would show the HTML a CMS left in it: each character reference (``&amp;``,
    ``&#39;``, ``&nbsp;``, ``&#x2014;``, written with its ``;``) read as its character, a text escaped twice
    (``&amp;amp;``) read again, then the tags of :data:`HTML_ELEMENTS` and comments left out. An ``&`` that
    starts no reference (``M&S``, ``Q&A``) and a ``<`` that starts no tag are text.

    >>> shown_text("AT&amp;T: &#163;1.8m &lt;b&gt;fine&lt;/b&gt;"), shown_text("<b>Storm</b> warning<br/>")
    ('AT&T: £1.8m fine', 'Storm warning')
    >>> shown_text("M&S <3 Q&A"), shown_text("AT&amp;amp;T")
    ('M&S <3 Q&A', 'AT&T')
    """
    for _ in range(_UNESCAPES):
        read = _REFERENCE.sub(lambda m: html.unescape(m.group(0)), text)
        if read == text:
            break
        text = read
    return _TAG.sub("", text)


_TERMINAL_ESCAPE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")
"""A terminal's escape sequence (ECMA-48: ``\\x1b[31m``, a colour; ``\\x1b[0m``, its end), which a log or a
script's output leaves in a text: it shows nothing, its letters are no words."""
_BREAKING = re.compile("[ \t]*(?:[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029][ \t]*)+")
"""A run of control characters but the tab, the line feed and the carriage return (C0, DEL and C1: a NUL,
Word's line break ``\\x0b``, NEL ``\\x85``) and of line or paragraph separators, with the spaces around it."""
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029]")
"""One of the characters of :data:`_BREAKING`."""
KEPT_FORMAT = frozenset("\u200c\u200d")
"""The format characters a text keeps: the zero-width non-joiner and joiner, which part or join the letters
of Persian and Indic words and make one emoji of several."""


def code_point_class(points: Iterable[int]) -> re.Pattern[str]:
    """One character class of the code points ``points`` (ascending), written as their runs of neighbours: a
    text is read through it far faster than character by character.

    >>> code_point_class([0x200B, 0x200C, 0x200D, 0xFEFF]).sub("", "a\u200bb\ufeffc")
    'abc'
    """
    ranges: list[list[int]] = []
    for code in points:
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1][1] = code
        else:
            ranges.append([code, code])
    return re.compile("[" + "".join(f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in ranges) + "]")


@cache
def _format_codes() -> tuple[int, ...]:
    """The code points of the format characters (Unicode category Cf, of this Python's Unicode database),
    ascending: every code point's category read once, for :func:`_format_characters` and
    :func:`unseen_characters` both."""
    return tuple(code for code in range(sys.maxunicode + 1) if unicodedata.category(chr(code)) == "Cf")


@cache
def _format_characters() -> re.Pattern[str]:
    """The format characters (:func:`_format_codes`) but :data:`KEPT_FORMAT`, as one character class
    (:func:`code_point_class`): a text is read through it five times faster than character by character.
    Built once, when first needed."""
    return code_point_class(code for code in _format_codes() if chr(code) not in KEPT_FORMAT)


@cache
def unseen_characters() -> re.Pattern[str]:
    """Every character :func:`unseen` names (the format characters, :data:`KEPT_FORMAT` among them, and
    :data:`SHOWS_NOTHING`), as one character class (:func:`code_point_class`). Built once, when first
    needed.

    >>> unseen_characters().sub("", "\u200f【快訊】颱風\u3164")
    '【快訊】颱風'
    """
    return code_point_class(sorted({*_format_codes(), *(ord(ch) for ch in SHOWS_NOTHING)}))


def model_text(text: str) -> str:
    """``text`` as the model reads it and exact copies are told (:meth:`nlsim.dedup.window.Window.texts`):
    as a page shows it (:func:`shown_text`), each run of control characters (:data:`_BREAKING`: a NUL, a
    bell, Word's line break, a line separator) one space, and without a terminal's escape sequences
    (:data:`_TERMINAL_ESCAPE`) and the format characters that show nothing (Unicode category Cf: a
    zero-width space, a byte-order mark, direction controls, a soft hyphen; not :data:`KEPT_FORMAT`). A
    title a damaged export or a joined file left them in reads as the title without them, where the model
    read ``north\\x0bkill`` as ``northkill`` and ``\\x1b[31m`` as words; the corpus, and the report, keep
    the text as written. The tab, the line feed and the carriage return are text.

    >>> model_text("Floods\\x00in the north\\x0bkill three")
    'Floods in the north kill three'
    >>> model_text("\\x1b[31mFlo\\u200bods\\x1b[0m\\ufeff")
    'Floods'
    >>> model_text("<b>Storm</b>\\u2028warning"), model_text("line one\\nline\\ttwo")
    ('Storm warning', 'line one\\nline\\ttwo')
    """
    text = _format_characters().sub("", _TERMINAL_ESCAPE.sub("", shown_text(text)))
    if _CONTROL.search(text) is None:
        return text
    return _BREAKING.sub(lambda run: "" if run.start() == 0 or run.end() == len(text) else " ", text)


def model_texts(texts: Iterable[str], conversion: str | None) -> list[str]:
    """``texts`` as a model reads them: each as :func:`model_text` reads it (as a page shows it, without
    control and format characters), then script-converted (:func:`nlsim.conversion.convert`; ``None`` or
    ``"none"``: not converted). What a dedup run embeds, and what pairs are trained, evaluated and
    calibrated on.

    >>> model_texts(["正源&#8226;尚峰<b>系列</b>", "颱風"], "tw2sp")
    ['正源•尚峰系列', '台风']
    """
    from nlsim.conversion import convert  # deferred: OpenCC, read only by what converts

    return convert([model_text(t) for t in texts], conversion or "none")


_DECIMAL_COMMA = re.compile(r"[+-]?\d*,\d+")


def score_number(value: object) -> float:
    """The number a score cell holds, or a :class:`ValueError` whose message says why it holds none (``is not
    a number``, for a text with a hint at what to write).

    A text is read as typed in either width (a Chinese input method in full-width mode types ``０．７５``;
    Unicode NFKC, white space around it dropped); a decimal comma (``0,75``) or a percentage (``75%``) is
    refused saying how to write it, never guessed (``1,000`` reads two ways); so is one with an underscore
    (``1_0``, which Python's ``float`` would read as 10).

    Example:
        >>> score_number("０．７５"), score_number(" 1 "), score_number(0.5)
        (0.75, 1.0, 0.5)
        >>> score_number("0,75")
        Traceback (most recent call last):
        ...
        ValueError: is not a number (a decimal comma? write it 0.75)
    """
    if not isinstance(value, str):
        try:
            return float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise ValueError("is not a number") from None
    text = unicodedata.normalize("NFKC", value).strip()
    if "_" in text:  # float() takes 1_0 as 10 and 0.5_0 as 0.5: no spreadsheet or editor writes a number so
        raise ValueError("is not a number as written (an underscore inside it)")
    try:
        return float(text)
    except ValueError:
        pass
    hint = ""
    if _DECIMAL_COMMA.fullmatch(text):
        hint = f" (a decimal comma? write it {text.replace(',', '.')})"
    elif text.endswith("%"):
        try:
            hint = f" (a percentage? write it {float(text[:-1]) / 100:g})"
        except ValueError:
            pass
    raise ValueError(f"is not a number{hint}")


MISREAD_AS = ("cp1252", "gb18030", "cp950")
"""The encodings a UTF-8 file is misread in when a program opens it as the system's own (Excel on an
English, a Simplified-Chinese, a Traditional-Chinese Windows, a UTF-8 file without a byte-order mark), in
the order :func:`misread_utf8` tries them."""
MISREAD_LEAST = 3
"""The fewest characters beyond ASCII a text must hold to be taken for misread UTF-8 (a title of one or
two Chinese characters may happen to be valid UTF-8 in another encoding's bytes)."""
_CP1252_AS_LATIN1 = {
    ord(bytes([b]).decode("cp1252")): b for b in range(0x80, 0xA0) if b not in b"\x81\x8d\x8f\x90\x9d"
}
"""cp1252's characters for the bytes 0x80-0x9F, each as the Latin-1 character of its byte: a text so
translated is its cp1252 bytes in Latin-1 (the five bytes cp1252 leaves unused read as the C1 controls of
Latin-1, as Windows and MySQL's latin1 read them)."""
_NON_ASCII = re.compile(r"[^\x00-\x7f]")
_READS_AS_TEXT = re.compile(
    r"[\x00-\x7f\u00a0-\u017f\u2000-\u206f\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
    r"\uff00-\uffef]*"
)
"""What the text a misread UTF-8 text was must be written in to be taken for one: ASCII, Latin-1 and
Latin Extended-A letters, general and CJK punctuation, kana, the CJK ideographs, Hangul syllables, full-
and half-width forms. A Chinese headline whose GB18030 or Big5 bytes happen to be valid UTF-8 reads as
Cyrillic, Greek, Armenian or Hebrew letters and combining marks (``訊息通知`` as ``ӍϢ֪ͨ``), never as these."""
_UTF8_LEAD = re.compile(r"[\u00c2-\u00f4]")
"""A byte that begins a UTF-8 sequence of 2 to 4 bytes, as cp1252 reads it."""


def _misread_bytes(text: str, encoding: str) -> bytes | None:
    """``text``'s bytes in ``encoding`` (cp1252 as :data:`_CP1252_AS_LATIN1` says), or ``None`` where a
    character has none."""
    try:
        if encoding == "cp1252":
            return text.translate(_CP1252_AS_LATIN1).encode("latin-1") if _UTF8_LEAD.search(text) else None
        return text.encode(encoding)
    except UnicodeEncodeError:
        return None


def misread_utf8(text: str) -> tuple[str, str] | None:
    """``(encoding, text it was)`` when ``text`` is UTF-8 that a program read as ``encoding`` (one of
    :data:`MISREAD_AS`) and saved again (mojibake: ``é¢±é¢¨`` for ``颱風``): its bytes in that encoding are
    valid UTF-8 of another text; else ``None``. Never a guess at what a file is: a text in any script that
    is what it says does not read so (its bytes in these encodings are not valid UTF-8).

    Example:
        >>> misread_utf8("é¢±é¢¨å‡±ç±³")
        ('cp1252', '颱風凱米')
        >>> [misread_utf8(t) for t in ("Café Müller", "颱風凱米", "说话", "視訊通話")]
        [None, None, None, None]
    """
    if text.isascii() or len(_NON_ASCII.findall(text)) < MISREAD_LEAST:
        return None
    for encoding in MISREAD_AS:
        raw = _misread_bytes(text, encoding)
        try:
            was = raw.decode("utf-8") if raw is not None else None
        except UnicodeDecodeError:
            continue
        if was is not None and was != text and _READS_AS_TEXT.fullmatch(was):
            return encoding, was
    return None


def misread_reason(text: str, encoding: str, was: str) -> str:
    """Why a text that :func:`misread_utf8` found to be UTF-8 misread as ``encoding`` (it was ``was``) is
    refused where a pair's text is read.

    Example:
        >>> misread_reason("é¢±é¢¨å‡±ç±³", "cp1252", "颱風凱米")[:81]
        "the text 'é¢±é¢¨å‡±ç±³' is UTF-8 misread as cp1252 and saved again: it was '颱風凱米'"
    """
    return (
        f"the text {text[:30]!r} is UTF-8 misread as {encoding} and saved again: it was {was[:30]!r} (a "
        "UTF-8 file opened in a program set to another encoding and saved); write the text as it was, or "
        "take the file from before it was opened so"
    )
