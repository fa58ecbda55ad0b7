"""Helpers shared by the benchmark scripts: peak memory, timing, table printing, the replicated vectors.

Not part of the library: benchmarks only.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Collection
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"
CACHE = RESULTS / "cache"
BASE_VECTORS = CACHE / "thucnews_e5.npy"
BASE_META = RESULTS / "thucnews_e5.json"
CORPUS = ROOT / "data" / "thucnews.parquet"
"""The bundled corpus, the default ``--corpus`` of the benchmarks that embed or deduplicate it: the
repository's file wherever a benchmark is run from."""


def given_path(text: str) -> Path:
    """An argparse ``type`` for a file or folder given on the command line: made absolute against the
    folder the benchmark is run from, so that the child processes it starts in the repository (and the
    checks before them) read the file meant, not one of the same name under the repository."""
    return Path(os.path.abspath(os.path.expanduser(text)))


def shown(path: str | Path) -> str:
    """``path`` as the results name it: relative to the repository where it lies inside it (the same on
    every machine), else as it is."""
    try:
        return str(Path(path).relative_to(ROOT))
    except ValueError:
        return str(path)


def peak_rss_mb() -> float:
    """This process's peak resident set size (VmHWM), in MB."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def rss_mb() -> float:
    """Current resident set size, in MB."""
    import psutil

    return psutil.Process().memory_info().rss / 2**20


def cpu() -> Any:
    """The CPU (:class:`nlsim.inference.cpu.CpuInfo`): model name and the ISA flags that matter."""
    sys.path.insert(0, str(HERE.parent))
    from nlsim.inference.cpu import cpu_info

    return cpu_info()


def cpu_family() -> str:
    """A short name for a results row: vendor family and whether it has AMX (figures are never compared
    across families)."""
    info = cpu()
    name = info.model.lower()
    vendor = "Intel Xeon" if "xeon" in name else "AMD EPYC" if "epyc" in name else info.model
    return f"{vendor}, {'AMX' if info.has_amx else 'no AMX'}"


def results_stem(name: str, record: dict[str, Any]) -> Path:
    """``benchmarks/results/<name>_<cpu family>_<avx2|bf16>`` for a benchmark's JSON and Markdown, from its
    :func:`machine_record` (figures are never compared across CPU kinds)."""
    family = cpu_family().split(",")[0].lower().replace(" ", "_")
    flags = record.get("flags") or []
    kind = "bf16" if record.get("amx") or any("bf16" in f for f in flags) else "avx2"
    return RESULTS / f"{name}_{family}_{kind}"


def write_results(name: str, record: dict[str, Any], markdown: str) -> Path:
    """Write a benchmark's ``record`` (JSON, its ``machine`` from :func:`machine_record`) and ``markdown`` to
    :func:`results_stem` ``.json`` and ``.md`` (each atomically), say so with the CPU the figures were
    measured on, and return the stem."""
    sys.path.insert(0, str(HERE.parent))
    from nlsim.io.atomic import atomic_write_text

    stem = results_stem(name, record["machine"])
    # each file whole or as it was: a run stopped while writing never leaves a committed page cut short
    atomic_write_text(stem.with_suffix(".json"), json.dumps(record, indent=2) + "\n")
    atomic_write_text(stem.with_suffix(".md"), markdown + "\n")
    print(f"wrote {stem}.json and .md: figures measured on the CPU {record['machine'].get('model')}")
    return stem


def save_figure(fig: Any, path: str | Path, **kwargs: Any) -> None:
    """``fig.savefig(path, **kwargs)``, whole or not at all: drawn into a temporary file beside ``path`` (of
    the same suffix: the format is read from it) and moved over ``path`` once written."""
    sys.path.insert(0, str(HERE.parent))
    from nlsim.io.atomic import atomic_path

    with atomic_path(path, suffix=Path(path).suffix) as tmp:
        fig.savefig(tmp, **kwargs)


def machine() -> str:
    """One line naming the machine the figures come from: CPU model, the ISA flags that decide which
    precision pays off (avx512*, VNNI, bf16, AMX), cores, memory, load."""
    import psutil

    mem = psutil.virtual_memory().total / 2**30
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return f"CPU {cpu().describe()}, {mem:.0f} GiB RAM, load average at start {load:.1f}{gpu_words()}"


def gpu_words() -> str:
    """``", GPU <name>"`` where the benchmark has imported torch and torch sees a CUDA GPU (the models then
    run there), else nothing: a figure measured on a GPU names it."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available():
        return ""
    return ", GPU " + ", ".join(torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count()))


def machine_record() -> dict[str, Any]:
    """The machine as a JSON object for results files."""
    import psutil

    return {
        **cpu().as_dict(),
        "family": cpu_family(),
        "ram_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "load_average_at_start": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
        "python": platform.python_version(),
    }


def load_base() -> np.ndarray:
    """The real e5 embeddings of the 10,000 THUCNews titles (``make_vectors.py`` writes them)."""
    if not BASE_VECTORS.is_file():
        sys.exit(f"{BASE_VECTORS} is missing: run `python benchmarks/make_vectors.py` first")
    base = np.load(BASE_VECTORS)
    items = json.loads(BASE_META.read_text())["items"]
    if len(base) != items:
        sys.exit(
            f"{BASE_VECTORS} holds {len(base):,} vectors where {BASE_META.name} records {items:,}: "
            "run `python benchmarks/make_vectors.py` (no --limit) again"
        )
    return base


def base_noise() -> float:
    """The replication noise chosen by ``make_vectors.py`` (see there)."""
    return float(json.loads(BASE_META.read_text())["replication"]["noise"])


def replicate(base: np.ndarray, n: int, noise: float, seed: int = 0, chunk: int = 100_000) -> np.ndarray:
    """``n`` unit vectors: row i is ``base[i % len(base)]`` plus Gaussian noise (per-dimension std
    ``noise / sqrt(dim)``, so the noise vector has norm ~``noise``), re-normalised. The first ``len(base)``
    rows are the base vectors themselves. Deterministic for a given seed; built chunk by chunk."""
    m, d = base.shape
    out = np.empty((n, d), np.float32)
    rng = np.random.default_rng(seed)
    sd = noise / np.sqrt(d)
    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        rows = np.arange(start, stop) % m
        block = base[rows].astype(np.float32, copy=True)
        block += rng.standard_normal((stop - start, d), dtype=np.float32) * np.float32(sd)
        first = np.arange(start, stop) < m
        block[first] = base[rows[first]]
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        out[start:stop] = block
    return out


def run_child(args: list[str], timeout: float = 900, python: str | None = None) -> dict[str, Any]:
    """Run ``python <args>`` in a fresh process (so its peak RSS is its own); it prints one JSON line last.
    ``python``: another interpreter (e.g. a peer's own environment), default this one."""
    t = time.perf_counter()
    proc = subprocess.run(
        [python or sys.executable, *args], capture_output=True, text=True, timeout=timeout, cwd=HERE.parent
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed:\n{proc.stderr[-3000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out.setdefault("wall_s", time.perf_counter() - t)
    return out


def print_table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    """Print (and return) a Markdown table of ``rows``."""

    def fmt(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:,.3f}" if abs(v) < 10 else f"{v:,.1f}"
        if isinstance(v, int):
            return f"{v:,}"
        return str(v)

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(fmt(r.get(c, "")) for c in columns) + " |" for r in rows]
    text = "\n".join(lines)
    print(text)
    return text


def numbers(
    parser: argparse.ArgumentParser,
    option: str,
    text: str,
    kind: type = float,
    lo: float | None = None,
    hi: float | None = None,
) -> list[Any]:
    """The comma list ``text`` of ``option`` as numbers of ``kind``, each within ``[lo, hi]``; anything else
    ends the run with argparse's one-line error naming the option (exit 2), before any work."""
    out = []
    for item in (x.strip() for x in text.split(",")):
        if not item:
            continue
        try:
            value = kind(item)
        except ValueError:
            parser.error(f"argument {option}: {item!r} is not {'an integer' if kind is int else 'a number'}")
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            span = f"between {lo:g} and {hi:g}" if lo is not None and hi is not None else f"at least {lo:g}"
            parser.error(f"argument {option}: {item} is out of range (each must be {span})")
        out.append(value)
    return out


def check_model_stores(parser: argparse.ArgumentParser, stores: list[Path]) -> None:
    """Each ``--model-store`` is a folder with a promoted model, checked for all of them before any work (a
    mistyped second store would otherwise end the run after the first store's minutes)."""
    sys.path.insert(0, str(HERE.parent))
    from nlsim.errors import NlsimError
    from nlsim.io.model_store import ModelStore

    for store in stores:
        models = ModelStore(store)
        try:
            why = models.missing() or (None if models.current() else f"{store}: no model has been promoted")
        except NlsimError as exc:
            why = str(exc).splitlines()[0]
        if why:
            parser.error(f"argument --model-store: {why}")


def check_files(parser: argparse.ArgumentParser, option: str, paths: list[Path]) -> None:
    """Each of ``paths`` (given by ``option``) is a readable file, checked before any work."""
    for path in paths:
        if not Path(path).is_file():
            what = "is not a file" if Path(path).exists() else "does not exist"
            parser.error(f"argument {option}: {path} {what}")


BENCH_EXTRA = {
    "sentence_transformers": "sentence-transformers",
    "datasets": "datasets",
    "accelerate": "accelerate",
}
"""The modules of the ``[bench]`` extra (``pyproject.toml``) by their package names: the benchmarks that run
sentence-transformers beside nlsim need them."""


def needs_bench_extra(parser: argparse.ArgumentParser, what: str, modules: tuple[str, ...]) -> None:
    """Refuse, in one line and before any work, a run of ``what`` that needs ``modules`` of the ``[bench]``
    extra this Python lacks (met otherwise as an ImportError after minutes of nlsim's side of the run)."""
    missing = [BENCH_EXTRA.get(m, m) for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        named = " and ".join([", ".join(missing[:-1]), missing[-1]] if len(missing) > 1 else missing)
        parser.error(
            f"{what} needs {named}, which {sys.executable} lacks: install the [bench] extra first "
            "(pip install -e '.[bench]')"
        )


def positive(kind: type = int) -> Any:
    """An argparse ``type`` for a count or size: a number of ``kind`` above 0 (``--runs 0``, ``--kept -5``
    are refused by argparse in one line naming the option, exit 2)."""

    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            what = "an integer" if kind is int else "a number"
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"{text} is not above 0")
        return value

    return parse


def _same(value: Any, default: Any) -> bool:
    """``value`` is the default (a list given on the command line equals a default tuple of its items)."""
    if isinstance(value, list | tuple) and isinstance(default, list | tuple):
        return list(value) == list(default)
    return value == default


def sized_stem(
    stem: str, parser: argparse.ArgumentParser, args: argparse.Namespace, besides: Collection[str] = ()
) -> str:
    """``stem`` when every option of ``parser`` is at its default, else ``stem`` followed by each option that
    is not, in the order ``--help`` lists them (e.g. ``embedding-n200``, ``rerank-pairs100-full``,
    ``probe_rounds-gap2.0_8.0``): a run at another size or setting writes beside the committed figures, never
    over them, whichever option it changed. ``besides``: the ``dest`` of each option that only says where
    or under what name the results go (``--out``, ``--tag``) or how the run gets ready, left out of the
    name, as the options hidden from ``--help`` (a child process's own) are."""
    changed = [
        _setting(action, getattr(args, action.dest))
        for action in parser._actions
        if action.option_strings
        and action.help != argparse.SUPPRESS
        and not isinstance(action, argparse._HelpAction)
        and action.dest not in besides
        and not _same(getattr(args, action.dest), action.default)
    ]
    return "-".join([stem, *changed])


def _setting(action: argparse.Action, value: Any) -> str:
    """An option set away from its default as a part of a file name: a flag by its own name
    (``no-quality``), else its name and value, each item of a list apart (``sizes300_600``), every run of
    other characters than letters, digits and dots one ``_``."""
    import re

    if action.nargs == 0:
        return action.option_strings[-1].lstrip("-")
    items = value if isinstance(value, list | tuple) else [value]
    text = "_".join(re.sub(r"[^A-Za-z0-9.]+", "_", str(item)) for item in items)
    return f"{action.dest.replace('_', '-')}{text}"


def run_nlsim(cmd: list[str], cwd: Path) -> None:
    """Run an ``nlsim`` command whose own messages go to the terminal; when it fails, end with one line
    saying which command (its error is the line above), not a ``CalledProcessError`` traceback."""
    proc = subprocess.run(cmd, cwd=cwd)
    if proc.returncode != 0:
        shown = f"nlsim {cmd[3]}" if cmd[1:3] == ["-m", "nlsim"] else " ".join(cmd[:2])
        raise SystemExit(f"{shown} failed (exit {proc.returncode}); its error is above")
