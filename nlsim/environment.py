"""The environment variables nlsim reads, each read and checked in one place.

A value that is not one of those a variable takes is no longer read as if the variable were unset
(``NLSIM_PROBE=cache`` timed every path, ``NLSIM_PROGRESS=bars`` chose by the terminal,
``NLSIM_CPU_FLAGS=avx,avx2,fma`` made a CPU with no instruction set nlsim knows): each is a
:class:`~nlsim.errors.ConfigError` naming the variable, its value and what it takes.
:func:`check_environment` reads them all, so that a command refuses a bad value before any work (``nlsim``
and the flows' command lines call it first). An empty value is an unset one, but for ``NLSIM_CPU_FLAGS``
(set and blank: a CPU with none of the flags).

| variable | values | default |
|---|---|---|
| ``NLSIM_HOME`` | a folder (made when missing) | ``~/.cache/nlsim`` |
| ``NLSIM_PROGRESS`` | ``bar``, ``lines``, ``off`` | ``bar`` on a terminal, else ``lines`` |
| ``NLSIM_PROBE`` | ``on``, ``cached``, ``off`` | ``on`` |
| ``NLSIM_CPU_FLAGS`` | instruction-set flags, space-separated | the CPU's own |
| ``NLSIM_DEVICE`` | ``cpu``, ``cuda``, ``cuda:1``, ``mps``, ``xpu`` | ``cuda`` when torch sees a GPU |
| ``NLSIM_FSYNC`` | ``on``, ``off`` | ``on`` |

Whether this machine has the device ``NLSIM_DEVICE`` names is checked where it is read
(:func:`nlsim.encoders.device.default_device`: it needs torch); its name is checked here.

Example:
    >>> import os
    >>> from unittest import mock
    >>> with mock.patch.dict(os.environ, NLSIM_PROBE="cache"):
    ...     try:
    ...         probe_mode()
    ...     except ConfigError as exc:
    ...         print(str(exc).split(" (")[0])
    NLSIM_PROBE='cache': not one of on, cached, off
    >>> with mock.patch.dict(os.environ):
    ...     _ = os.environ.pop("NLSIM_PROBE", None)
    ...     probe_mode()
    'on'
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from nlsim.errors import ConfigError

PROGRESS_STYLES = ("bar", "lines", "off")
PROBE_MODES = ("on", "cached", "off")
FSYNC_MODES = ("on", "off")
FLAG = re.compile(r"[a-z0-9_]+")
ISA_FLAGS = (
    "avx2",
    "avx512f",
    "avx512bw",
    "avx512_vnni",
    "avx_vnni",
    "avx512_bf16",
    "amx_tile",
    "amx_bf16",
    "amx_int8",
)
"""The instruction-set flags that matter for inference speed (the ones benchmark files and run records name),
as ``/proc/cpuinfo`` writes them: :mod:`nlsim.inference.cpu` reads no other, and ``NLSIM_CPU_FLAGS`` refuses
one of them misspelt (:func:`cpu_flags`)."""
DEVICE = re.compile(r"(cpu|cuda|mps|xpu)(:(0|[1-9][0-9]?|1[01][0-9]|12[0-7]))?")
"""The devices nlsim runs models on, with an optional index (torch's other device types hold no data, or
are not ones a model runs on here). The index as torch takes it: no leading zero (``cuda:01`` is refused),
at most 127 (torch keeps it in a byte: ``cuda:255`` would be ``cuda``, ``cuda:257`` ``cuda:1``)."""
PROBE_WHAT = "on: time what the cache lacks; cached: cached timings only; off: the first candidate"
FSYNC_WHAT = "on: flush what is written to disk before it is renamed into place; off: leave it to the system"


def _value(name: str) -> str | None:
    """The variable's value without surrounding blanks; ``None`` when unset or empty."""
    value = os.environ.get(name, "").strip()
    return value or None


def _one_of(name: str, choices: tuple[str, ...], what: str) -> str | None:
    value = _value(name)
    if value is None:
        return None
    if value.lower() not in choices:
        raise ConfigError(f"{name}={os.environ[name]!r}: not one of {', '.join(choices)} ({what})")
    return value.lower()


def progress_style() -> str | None:
    """``NLSIM_PROGRESS``: ``bar``, ``lines`` or ``off``; ``None`` when unset (nlsim decides)."""
    return _one_of("NLSIM_PROGRESS", PROGRESS_STYLES, "bar: a bar; lines: a line now and then; off: none")


def probe_mode() -> str:
    """``NLSIM_PROBE``: ``on`` (default: time what the cache lacks), ``cached`` (use cached probes, never
    time: tests, reproducible runs), ``off`` (ignore probes: the first candidate in path order)."""
    return _one_of("NLSIM_PROBE", PROBE_MODES, PROBE_WHAT) or "on"


def flush_to_disk() -> bool:
    """``NLSIM_FSYNC``: whether what nlsim writes is flushed to disk (``fsync``) before it is renamed into
    place (``on``, the default), so that a report, a state or a model survives a power cut or a crash of
    the machine whole or not at all. ``off`` leaves the flushing to the operating system: the renames stay,
    so a reader still never sees a torn file while the machine runs, and a killed run still leaves the
    previous outputs as they were; only what the machine's crash takes with it is at risk. For throwaway
    folders, where the flushes are most of the time of a small run (the test suite sets it).

    Example:
        >>> import os
        >>> from unittest import mock
        >>> with mock.patch.dict(os.environ, NLSIM_FSYNC="Off"):
        ...     flush_to_disk()
        False
    """
    return _one_of("NLSIM_FSYNC", FSYNC_MODES, FSYNC_WHAT) != "off"


def device_name() -> str | None:
    """``NLSIM_DEVICE``: the device to run models on, in any case as the other variables' values (``CPU``
    was refused by torch as "Expected one of cpu, cuda, ..." while ``NLSIM_PROBE=ON`` was taken); ``None``
    when unset. A name that is not ``cpu``, ``cuda``, ``mps`` or ``xpu`` (with an optional ``:N``) is a
    :class:`ConfigError` here, before torch is loaded."""
    value = _value("NLSIM_DEVICE")
    if value is None:
        return None
    if not DEVICE.fullmatch(value.lower()):
        raise ConfigError(
            f"NLSIM_DEVICE={os.environ['NLSIM_DEVICE']!r}: not a device nlsim runs models on (cpu, cuda, "
            "cuda:N for N from 0 to 127, mps or xpu; unset: the GPU when torch sees one, else the CPU)"
        )
    return value.lower()


def cpu_flags() -> frozenset[str] | None:
    """``NLSIM_CPU_FLAGS``: the instruction-set flags to take the CPU for, space-separated as in
    ``/proc/cpuinfo`` (``avx avx2 fma``), in any case as the other variables' values (``AVX2`` was refused as
    not a flag name, "the flags are space-separated"); ``None`` when unset. Set but blank: a CPU with none.
    One of :data:`ISA_FLAGS` with an underscore left out or added (``avx512bf16``, ``avx_vnni`` as
    ``avxvnni``) is refused naming the flag meant: taken as written, it was a flag nlsim does not read, and
    the CPU silently one without it.

    Example:
        >>> import os
        >>> from unittest import mock
        >>> with mock.patch.dict(os.environ, NLSIM_CPU_FLAGS="avx2 avx512bf16"):
        ...     try:
        ...         cpu_flags()
        ...     except ConfigError as exc:
        ...         print(str(exc).split(": ", 1)[1])
        'avx512bf16' is not a flag /proc/cpuinfo writes: 'avx512_bf16' is (NLSIM_CPU_FLAGS="avx2 avx512_bf16")
    """
    given = os.environ.get("NLSIM_CPU_FLAGS")
    if given is None:
        return None
    flags = given.lower().split()
    odd = [f for f in flags if not FLAG.fullmatch(f)]
    if odd:
        raise ConfigError(
            f"NLSIM_CPU_FLAGS={given!r}: {odd[0]!r} is not a flag name; the flags are space-separated, as in "
            '/proc/cpuinfo (NLSIM_CPU_FLAGS="avx avx2 fma")'
        )
    by_letters = {f.replace("_", ""): f for f in ISA_FLAGS}
    for flag in flags:
        meant = by_letters.get(flag.replace("_", ""), flag)
        if meant != flag:
            fixed = " ".join(meant if f == flag else f for f in flags)
            raise ConfigError(
                f"NLSIM_CPU_FLAGS={given!r}: {flag!r} is not a flag /proc/cpuinfo writes: {meant!r} is "
                f'(NLSIM_CPU_FLAGS="{fixed}")'
            )
    return frozenset(flags)


def home() -> Path:
    """``NLSIM_HOME``, default ``~/.cache/nlsim``: where converted models, timings and caches are kept. A
    ``~user`` of no user, or no home folder for the default (``HOME`` unset, a uid without an entry in the
    user database), is a :class:`ConfigError` (it was pathlib's RuntimeError, with a traceback)."""
    given = _value("NLSIM_HOME")
    try:
        return Path(given or Path.home() / ".cache" / "nlsim").expanduser()
    except RuntimeError as exc:  # pathlib: "Could not determine home directory."
        if given:
            user = given.split("/")[0]
            raise ConfigError(
                f"NLSIM_HOME={os.environ['NLSIM_HOME']!r}: there is no user {user[1:]!r} whose home {user} "
                "would be; give the folder's path"
            ) from exc
        raise ConfigError(
            "NLSIM_HOME is not set and this user has no home folder (HOME unset, no entry in the user "
            "database) to keep ~/.cache/nlsim in: set NLSIM_HOME to a folder"
        ) from exc


def check_home() -> Path:
    """:func:`home`, refused when it cannot be a folder: a file, under one, or a link to nothing (itself or
    a folder above it: a volume not mounted) where the folder would be made (it is made when missing)."""
    path = home()
    set_by = f"NLSIM_HOME={os.environ['NLSIM_HOME']!r}" if _value("NLSIM_HOME") else f"the nlsim home {path}"
    for p in (path, *path.parents):
        if p.exists():
            if p.is_dir():
                break
            if p == path:
                raise ConfigError(
                    f"{set_by}: a file, not a folder (the folder for converted models and caches)"
                )
            raise ConfigError(f"{set_by}: {p} is a file, so no folder can be made under it")
        if p.is_symlink():  # exists() follows links: a link to nothing (making the folder said 'File exists')
            raise ConfigError(
                f"{set_by}: {p} is a link to {os.readlink(p)}, which does not exist (a volume not "
                "mounted?), so no folder can be made there"
            )
    return path


def check_environment() -> None:
    """Read every variable above that needs no heavy import: a bad value is a :class:`ConfigError`."""
    progress_style()
    probe_mode()
    cpu_flags()
    device_name()
    flush_to_disk()
    check_home()
