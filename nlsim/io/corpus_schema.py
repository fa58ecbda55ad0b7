"""The corpus schema: the fields nlsim reads from a corpus file, the schema in one line for ``--help``, and
the column names that look like a field (a ``pub_date`` column is not ``published_at``: it is kept and not
read, and a run says so).

Kept apart from :mod:`nlsim.io.corpus` (which reads the file) so that ``nlsim dedup --help`` can list the
schema without importing pandas.

Example:
    >>> REQUIRED, "published_at" in LOOKALIKES
    (('id', 'title'), True)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from nlsim.errors import InputError
from nlsim.io.cells import hidden

REQUIRED = ("id", "title")
OPTIONAL_TEXT = ("description", "body", "source", "lang", "url")
TEXT_FIELDS = ("title", "description", "body")


def text_fields_problem(fields: Sequence[str]) -> str | None:
    """What is wrong with the fields asked to embed (``--text-fields``): none, one that cannot be embedded,
    or one given twice (its text would be embedded twice over, another text than the model was calibrated
    on); ``None`` when they can be embedded.

    Example:
        >>> text_fields_problem(("title", "body")) is None
        True
        >>> text_fields_problem(("title", "teaser"))
        "cannot embed field 'teaser'; choose from title, description, body"
        >>> text_fields_problem(("title", "title"))
        "'title' is given twice (each field's text is embedded once)"
    """
    if not fields:
        return "give at least one field, e.g. title,description"
    for i, f in enumerate(fields):
        if f not in TEXT_FIELDS:
            return f"cannot embed field {f!r}; choose from {', '.join(TEXT_FIELDS)}"
        if f in fields[:i]:
            return f"{f!r} is given twice (each field's text is embedded once)"
    return None


FUTURE_TOLERANCE_DAYS = 1
"""An item's time or an --as-of up to this many days after now passes (clocks and time zones differ)."""


POSIX_ZONE = re.compile(r"(Etc/)?GMT([+-])0*([1-9]\d?)")
"""The zones that name an offset from GMT the POSIX way round (``Etc/GMT+8`` is 8 hours *behind* UTC)."""


STANDARD_ONLY = {
    "EST": ("UTC-05:00", "New York's", "America/New_York", "America/Panama"),
    "MST": ("UTC-07:00", "Denver's", "America/Denver", "America/Phoenix"),
}
"""The zone database's zones of one standard time all year (``EST`` is UTC-05:00 in July too), named as a
newsroom names its own clock, daylight saving time included (New York's EST and EDT): the offset, the
clock meant, its zone, and a place's zone of that offset all year."""


READ_OFF = "its times without an offset would be read"
"""What a zone an hour off in summer does to a run (``--timezone``): :func:`standard_zone_problem`."""


def standard_zone_problem(name: str, what: str = "--timezone", effect: str = READ_OFF) -> str | None:
    """Why ``name`` (one of :data:`STANDARD_ONLY`), given as ``what``, is no zone for a run (``effect``:
    what goes an hour off in summer; a schedule's runs start then); ``None`` for another zone.

    >>> standard_zone_problem("EST").split(": ")[0]
    "--timezone 'EST' is UTC-05:00 all year, without daylight saving time (the zone database's EST)"
    """
    if name not in STANDARD_ONLY:
        return None
    offset, clock, zone, fixed = STANDARD_ONLY[name]
    return (
        f"{what} {name!r} is {offset} all year, without daylight saving time (the zone database's "
        f"{name}): {clock} clock in summer is an hour later, and {effect} "
        f"an hour off; name the place's zone instead ({zone}, or {fixed} for {offset} all year)"
    )


MACHINE_ZONES = ("localtime", "posixrules")
"""Names the zone database keeps for the zone of the machine that reads them (links to ``/etc/localtime``,
or to a default the system chose), not for a place: the same deployment on another host reads another."""


def machine_zone() -> str | None:
    """The IANA name of the zone this machine is set to (``TZ``, else the zone ``/etc/localtime`` links to,
    else ``/etc/timezone``); ``None`` when it cannot be told (a ``TZ`` rule such as ``CST-8``, a copied
    file)."""
    import os
    from zoneinfo import available_timezones

    known = available_timezones()
    given = os.environ.get("TZ")
    if given is not None:
        key = given.removeprefix(":")
        key = key.split("/zoneinfo/", 1)[1] if "/zoneinfo/" in key else key
        return key if key in known and key not in MACHINE_ZONES else None
    link = os.path.realpath("/etc/localtime")
    if "/zoneinfo/" in link and link.split("/zoneinfo/", 1)[1] in known:
        return link.split("/zoneinfo/", 1)[1]
    try:
        key = Path("/etc/timezone").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return key if key in known and key not in MACHINE_ZONES else None


def machine_zone_problem(name: str, what: str = "--timezone") -> str:
    """Why ``name`` (one of :data:`MACHINE_ZONES`), given as ``what``, is no zone for a run: its times would
    move with the host.

    Example:
        >>> machine_zone_problem("localtime").split(" (")[0]
        "--timezone 'localtime' names the zone of the machine that runs it"
    """
    here = machine_zone()
    told = f"this one is set to {here}" if here else "which zone this one is set to could not be told"
    name_it = f"{what} {here}, or the newsroom's zone, e.g. Asia/Taipei" if here else "e.g. Asia/Taipei, UTC"
    return (
        f"{what} {name!r} names the zone of the machine that runs it ({told}), and another host may be "
        "set otherwise: times without an offset, the report's days and a daily state's clock would move "
        f"with the host; give the zone's IANA name instead ({name_it})"
    )


def _bracketed_zone(name: str) -> str | None:
    """The time zone named in brackets at the end of ``name`` (``+01:00[Europe/London]``, as Java writes a
    time; ``[Asia/Taipei]``), ``None`` when there is none there.

    >>> _bracketed_zone("2024-05-01T08:00:00+01:00[Europe/London]"), _bracketed_zone("Europe/London")
    ('Europe/London', None)
    """
    from zoneinfo import ZoneInfo

    start = name.rfind("[")
    if start < 0 or not name.endswith("]"):
        return None
    inner = name[start + 1 : -1].strip()
    try:
        ZoneInfo(inner)
    except (ValueError, KeyError, OSError):
        return None
    return inner


OFFSET_NAME = re.compile(r"(UTC|GMT|UT|Z)?\s*[+-]\s*\d{1,2}(:?\d{2})?", re.IGNORECASE)
"""An offset given where a zone is asked for (``UTC+8``, ``+08:00``, ``GMT-5``)."""


def _zone_hint(name: str) -> str:
    """What to give instead of ``name``, which is no time zone: the zone that is ``name`` in another case or
    without its spaces (the zone database's names are read in their case), that an offset is no zone, or
    an example.

    >>> _zone_hint("asia/taipei"), _zone_hint("UTC+8").split(":")[0], _zone_hint("Asia/Taipai")
    ("did you mean 'Asia/Taipei'?", 'an offset, not a time zone', 'e.g. Asia/Taipei, UTC')
    """
    from zoneinfo import available_timezones

    if OFFSET_NAME.fullmatch(name.strip()):
        return "an offset, not a time zone: name the place's zone (Asia/Taipei for UTC+08:00)"
    spelled = {zone.lower(): zone for zone in available_timezones()}.get(name.strip().lower())
    return f"did you mean {spelled!r}?" if spelled else "e.g. Asia/Taipei, UTC"


def zone_problem(name: str, what: str = "--timezone", effect: str = READ_OFF) -> str | None:
    """What is wrong with ``name`` as the run's time zone (given as ``what``: ``--timezone``, or a
    deployment schedule's ``timezone``, whose runs start on its clock: ``effect``,
    :func:`standard_zone_problem`): not a time zone, a name of the
    machine's own zone (:data:`MACHINE_ZONES`: another host reads another), or one named as ``Etc/GMT+8``,
    which is UTC-08:00 (POSIX's sign, as the zone database keeps it) where a newsroom writing GMT+8 means
    UTC+08:00: every time without an offset would be 16 hours off, as would the run's day, or one of standard
    time all year named as a newsroom names its clock (``EST``: :func:`standard_zone_problem`). ``None``
    when it is a zone to use.

    Example:
        >>> zone_problem("Asia/Taipei") is None, zone_problem("Etc/GMT") is None
        (True, True)
        >>> zone_problem("Etc/GMT+8").split(": ")[0]
        "--timezone 'Etc/GMT+8' is UTC-08:00, 8 hours behind UTC (the zone database's sign is POSIX's)"
    """
    from zoneinfo import ZoneInfo

    if name in MACHINE_ZONES:
        return machine_zone_problem(name, what)
    try:
        ZoneInfo(name)
    # ZoneInfoNotFoundError is a KeyError; a folder of the database (Europe, America/Argentina) an OSError
    except (ValueError, KeyError, OSError):
        inner = _bracketed_zone(name)
        if inner is not None:  # a time as Java writes it, or its zone in brackets: the zone is the name
            return f"{what} {name!r}: not a time zone name; the zone in its brackets is: {inner}"
        return f"{what} {name!r}: not a time zone name ({_zone_hint(name)})"
    posix = POSIX_ZONE.fullmatch(name)
    if posix is None:
        return standard_zone_problem(name, what, effect)
    sign, hours = posix.group(2), int(posix.group(3))
    meant = "-" if sign == "+" else "+"
    way = "behind" if sign == "+" else "ahead of"
    return (
        f"{what} {name!r} is UTC{meant}{hours:02d}:00, {hours} hours {way} UTC (the zone database's sign "
        f"is POSIX's): it reads two ways; name the place's zone instead (Asia/Taipei, America/New_York)"
    )


SCHEMA_HELP = (
    "id (required, unique), title (required), description, body, source, url, lang: text; published_at: "
    "ISO 8601 or RFC 2822 time with an offset or UTC (a time without one is read in the run's --timezone, "
    "UTC by default); other columns are kept and not read"
)
"""The corpus schema in one line (``nlsim dedup --help``, errors)."""

LOOKALIKES: dict[str, tuple[str, ...]] = {
    "id": ("guid", "item_id", "article_id", "doc_id", "news_id", "uuid", "key"),
    "title": ("headline", "headlines", "heading", "head", "subject", "title_text", "news_title"),
    "description": ("summary", "lead", "lede", "abstract", "teaser", "desc", "snippet", "subtitle", "dek"),
    "body": ("text", "content", "article", "full_text", "body_text", "story", "article_text", "maintext"),
    "source": ("publisher", "outlet", "site", "feed", "agency", "source_name", "media", "provider"),
    "url": ("link", "href", "permalink", "article_url", "uri"),
    "lang": ("language", "locale", "lang_code", "language_code"),
    "published_at": (
        "pub_date",
        "pubdate",
        "published",
        "publish_date",
        "publication_date",
        "published_date",
        "date_published",
        "publish_time",
        "published_time",
        "date",
        "datetime",
        "time",
        "timestamp",
        "created_at",
        "created",
        "pub_time",
    ),
}
"""Column names (:func:`normalised_column`: lower case, ``_`` for spaces, dashes, dots and between camelCase
words) that look like a schema field."""


def normalised_column(column: object) -> str:
    """A column name as :data:`LOOKALIKES` spells them: lower case, ``_`` for spaces, dashes and dots, and
    between the words of a camelCase name (``publishedAt``, as JSON APIs write it), without the characters
    that show nothing (a zero-width space, a byte-order mark left by joined files).

    Example:
        >>> normalised_column("publishedAt"), normalised_column("Pub Date"), normalised_column("URL")
        ('published_at', 'pub_date', 'url')
        >>> normalised_column("\u200bpublished_at")
        'published_at'
    """
    unseen = set(hidden(str(column)))
    shown = "".join(ch for ch in str(column) if ch not in unseen)
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", shown.strip())
    return re.sub(r"[\s.\-]+", "_", words.lower())


def spelt_otherwise(path: str | Path, columns: Sequence[object], known: Sequence[str]) -> InputError | None:
    """The refusal of the first of ``columns`` that is one of the ``known`` names spelt otherwise
    (``Published_At``, ``description ``, ``publishedAt``, ``publishedat``, one with a zero-width space), by
    file and field: read as an extra column, its values would be left out without a word. ``None`` when
    there is none such.

    Example:
        >>> spelt_otherwise("news.csv", ["id", "Published_At"], ["id", "published_at"]).reason
        "column 'Published_At' is spelt otherwise than 'published_at': rename it 'published_at'"
        >>> spelt_otherwise("marks.csv", ["markedat"], ["marked_at"]).field
        'markedat'
        >>> spelt_otherwise("news.csv", ["id", "published_at"], ["id", "published_at"]) is None
        True
    """
    joined = {name.replace("_", ""): name for name in known}
    for col in columns:
        like = normalised_column(col)
        name = like if like in known else joined.get(like.replace("_", ""))
        if str(col) in known or name is None:
            continue
        unseen = sorted({f"U+{ord(ch):04X}" for ch in hidden(str(col))})
        shows = f" (it holds {', '.join(unseen)}, which shows nothing)" if unseen else ""
        why = f"column {str(col)!r} is spelt otherwise than {name!r}{shows}: rename it {name!r}"
        return InputError(path, None, str(col), why)
    return None


def lookalike_warnings(path: str | Path, columns: Sequence[object]) -> list[str]:
    """One line for each column that looks like a schema field the file does not have (it is not read).

    Example:
        >>> (line,) = lookalike_warnings("news.csv", ["id", "title", "pub_date", "category"])
        >>> line.split(": ")[1]
        "column 'pub_date' is not read"
        >>> line.split("; ")[1]
        "rename it 'published_at' to use it"
    """
    present = {str(c) for c in columns}
    out = []
    for col in columns:
        like = normalised_column(col)
        for schema_field, names in LOOKALIKES.items():
            if like in names and schema_field not in present:
                out.append(
                    f"{path}: column {str(col)!r} is not read: it looks like the schema field "
                    f"{schema_field!r}, which the file does not have; rename it {schema_field!r} to use it"
                )
    return out
