"""What a command's ``--help`` leaves unsaid, for the tests of the commands outside ``nlsim`` (the Prefect
flows' ``python -m flows.X``, the benchmark scripts): their parsers are built inside ``main``, so each is
caught where it would parse its arguments (:func:`parser_of`), and nothing runs."""

from __future__ import annotations

import argparse
from collections.abc import Callable

import pytest


class _Parsed(Exception):
    """Raised where the command would parse its arguments: no work is done."""


def parser_of(start: Callable[[], object], monkeypatch: pytest.MonkeyPatch) -> argparse.ArgumentParser:
    """The top-level parser ``start()`` builds, caught where it would parse its arguments."""
    found: list[argparse.ArgumentParser] = []

    def caught(self: argparse.ArgumentParser, args: object = None, namespace: object = None) -> None:
        found.append(self)
        raise _Parsed

    monkeypatch.setattr(argparse.ArgumentParser, "parse_known_args", caught)
    with pytest.raises(_Parsed):
        start()
    return found[0]


def problems(parser: argparse.ArgumentParser, name: str) -> list[str]:
    """What the help of ``parser`` (and of each command it lists) leaves unsaid: a description that does not
    open with a whole sentence, a command listed without a line, an option without a help line, or one
    that takes a value and may be left out without its default said."""
    found = []
    first = " ".join((parser.description or "").strip().split("\n\n")[0].split())
    if not first.endswith((".", "?")):
        found.append(f"{name}: the description does not open with a whole sentence: {first[-60:]!r}")
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            listed = {c.dest: (c.help or "").strip() for c in action._choices_actions}
            for sub, child in action.choices.items():
                if sub.startswith("_"):  # a child process's own command, not listed
                    continue
                if not listed.get(sub):
                    found.append(f"{name} {sub}: listed without a help line")
                found += problems(child, f"{name} {sub}")
            continue
        if isinstance(action, argparse._HelpAction) or action.help == argparse.SUPPRESS:
            continue
        flag = f"{name} {(action.option_strings or [action.dest])[0]}"
        text = (action.help or "").strip()
        if not text:
            found.append(f"{flag}: no help line")
        elif action.option_strings and action.nargs != 0 and not action.required:
            if "default" not in text.lower():
                found.append(f"{flag}: its default is not said")
    return found
