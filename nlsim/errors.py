"""Error types that name what went wrong, and where."""

from __future__ import annotations

from pathlib import Path


class NlsimError(Exception):
    """Base class of every error nlsim raises on purpose."""


class InputError(NlsimError):
    """Bad input data: names the file, the row and the field.

    A data file's row (a corpus, a pair file, any table nlsim reads) is its 1-based data row, the header
    excluded, whatever the format: the first item is row 1. An editors' file (``nlsim annotate merge``'s
    ``--filled``), which editors fix in a spreadsheet, is named by its *sheet row* instead (``sheet=True``):
    the row as a spreadsheet shows it, the header being sheet row 1, and the message says ``sheet row``.

    Example:
        >>> str(InputError("news.csv", 3, "title", "empty text"))
        "news.csv: row 3, field 'title': empty text"
        >>> str(InputError("marks.csv", 4, "score", "not scored", sheet=True))
        "marks.csv: sheet row 4, field 'score': not scored"
    """

    def __init__(
        self, file: str | Path, row: int | None, field: str | None, reason: str, *, sheet: bool = False
    ) -> None:
        self.file = str(file)
        self.row = row
        self.field = field
        self.reason = reason
        self.sheet = sheet
        where = [self.file]
        if row is not None:
            where.append(f"{'sheet row' if sheet else 'row'} {row}")
        if field is not None:
            where.append(f"field {field!r}")
        super().__init__(
            f"{where[0]}: {', '.join(where[1:])}: {reason}" if len(where) > 1 else f"{where[0]}: {reason}"
        )


class InputErrors(InputError):
    """Several rows of one input refused at once, each named by file, row and field (one line each).

    The first problem is the error's own ``row``, ``field`` and ``reason``; ``problems`` holds them all.

    Example:
        >>> e = InputErrors("f.csv", [InputError("f.csv", 2, "pair_id", "x"),
        ...                           InputError("f.csv", 5, "id_a", "y")])
        >>> print(e)
        f.csv: 2 rows refused:
          f.csv: row 2, field 'pair_id': x
          f.csv: row 5, field 'id_a': y
    """

    def __init__(self, file: str | Path, problems: list[InputError], what: str = "rows refused") -> None:
        self.problems = list(problems)
        first = self.problems[0]
        super().__init__(first.file, first.row, first.field, first.reason, sheet=first.sheet)
        lines = [f"{file}: {len(self.problems)} {what}:"] + [f"  {p}" for p in self.problems]
        self.args = ("\n".join(lines),)

    def __str__(self) -> str:
        return str(self.args[0])


class StateError(NlsimError):
    """A saved index, embedding file or state folder that is corrupt or belongs to another model."""


class ConfigError(NlsimError):
    """A parameter that cannot work (unknown mode, missing threshold, ...)."""


class OutputError(NlsimError):
    """An output that cannot be written (a folder that is not writable, a path under a file)."""
