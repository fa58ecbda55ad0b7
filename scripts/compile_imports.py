"""Write the bytecode of what nlsim imports: its own modules and the library files they load, at the top of
a module or inside a function.

``scripts/setup.sh`` runs this after installing, instead of compiling every installed package: the main job
then starts from bytecode, and the set-up does not spend half a minute on the packages' other 9,000 files,
which only the tests and the Prefect deployments read (``bash test.sh`` compiles those too, with
``scripts/setup.sh --all-bytecode``). The library files are those listed in ``compile_imports.txt`` beside
this script (paths inside site-packages), compiled on all cores; a listed file that is not installed is
passed over, and one that is missing from the list is compiled when it is first imported.

The list is what importing nlsim loads: every nlsim module, then every library module an nlsim module
imports anywhere (read from the source, so an import inside a function counts). ``--write-list`` imports
them and writes the list again (after a dependency changes); ``--check-list`` says which loaded files the
list lacks, and fails when it lacks more than 5% of them (the test suite runs it) while the libraries are
the versions the list was written for (its ``# versions:`` line); with other versions it only says so.
Bytecode is written whatever ``PYTHONDONTWRITEBYTECODE`` says (``py_compile`` does not read it).

Usage: ``.venv/bin/python scripts/compile_imports.py [--write-list | --check-list]`` (``--help``: this text)
"""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import os
import pkgutil
import py_compile
import sys
import sysconfig
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIST = Path(__file__).with_suffix(".txt")
MIN_SHARE = 0.95
"""``--check-list`` fails below this share of the loaded files listed: a dependency's new release moves a
few files (the rest of the list still holds, and those compile when imported); an import added to nlsim
without ``--write-list`` moves many."""
HEADER = (
    "# library files that importing nlsim loads (paths inside site-packages), compiled by scripts/setup.sh;\n"
    "# written by `.venv/bin/python scripts/compile_imports.py --write-list`\n"
)


def imported_names(source: str) -> Iterator[tuple[str, tuple[str, ...]]]:
    """``(module, names)`` of every absolute import in ``source``: ``import a.b`` gives ``("a.b", ())``,
    ``from a import b, c`` gives ``("a", ("b", "c"))``.

    >>> list(imported_names("import os.path\\ndef f():\\n    from json import dumps\\nfrom . import x"))
    [('os.path', ()), ('json', ('dumps',))]
    """
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, ()
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.module, tuple(a.name for a in node.names if a.name != "*")


def load(module: str, names: tuple[str, ...]) -> None:
    """Import ``module`` and each of ``names`` from it (a lazy attribute or a submodule)."""
    mod = importlib.import_module(module)
    for name in names:
        try:
            getattr(mod, name)
        except AttributeError:
            importlib.import_module(f"{module}.{name}")


def nlsim_sources() -> list[Path]:
    """nlsim's own source files."""
    return sorted((ROOT / "nlsim").rglob("*.py"))


def import_all() -> list[str]:
    """Import every nlsim module and every library module they import; what could not be imported (an
    optional library, a GPU build's part), one line each."""
    sys.path.insert(0, str(ROOT))
    import nlsim

    left_out: list[str] = []
    walk = pkgutil.walk_packages(nlsim.__path__, "nlsim.", onerror=left_out.append)
    modules = [m.name for m in walk if not m.name.endswith("__main__")]  # __main__ would run the CLI
    imports: dict[tuple[str, tuple[str, ...]], None] = {}
    for path in nlsim_sources():
        for module, names in imported_names(path.read_text(encoding="utf-8")):
            if module.split(".")[0] != "nlsim":
                imports[(module, names)] = None
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception as e:  # noqa: BLE001 - an unimportable module costs its bytecode only
            left_out.append(f"{name} ({type(e).__name__}: {e})")
    for module, names in imports:
        try:
            load(module, names)
        except Exception as e:  # noqa: BLE001 - an optional library that is not installed here
            left_out.append(f"{' '.join([module, *names])} ({type(e).__name__}: {e})")
    return left_out


def site_packages() -> Path:
    return Path(sysconfig.get_paths()["purelib"]).resolve()


def loaded_files() -> list[str]:
    """The library source files loaded in this process, as paths inside site-packages."""
    site = site_packages()
    out = set()
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if file and file.endswith(".py"):
            path = Path(file).resolve()
            if path.is_relative_to(site):
                out.add(path.relative_to(site).as_posix())
    return sorted(out)


def versions(files: list[str]) -> str:
    """``name==version`` of the distributions that hold ``files`` (paths inside site-packages), sorted.

    >>> versions(["numpy/__init__.py"]).startswith("numpy==")
    True
    """
    owners = importlib.metadata.packages_distributions()
    tops = {f.split("/")[0].removesuffix(".py") for f in files}
    dists = sorted({d for top in tops for d in owners.get(top, [])})
    return " ".join(f"{d}=={importlib.metadata.version(d)}" for d in dists)


def _lines(path: Path | None) -> list[str]:
    """The lines of the list ``path`` (else :data:`LIST`); none where it is missing."""
    path = path or LIST
    return path.read_text(encoding="utf-8").splitlines() if path.is_file() else []


def listed_versions(path: Path | None = None) -> str:
    """The list's ``# versions:`` line (empty where it has none)."""
    lines = _lines(path)
    return next(
        (line.removeprefix("# versions:").strip() for line in lines if line.startswith("# versions:")), ""
    )


def listed_files(path: Path | None = None) -> list[str]:
    """The paths of the list (``path``, else :data:`LIST`), comments and blank lines left out."""
    return [line for line in _lines(path) if line.strip() and not line.startswith("#")]


def _compile(files: list[str]) -> int:
    """Compile ``files``; how many failed (a syntax this Python cannot read: left as the installer left
    it)."""
    failed = 0
    for file in files:
        try:
            py_compile.compile(file, doraise=True)
        except (py_compile.PyCompileError, OSError):
            failed += 1
    return failed


def compile_listed() -> tuple[int, int]:
    """Compile nlsim's sources and the listed library files that are installed, on all cores; how many
    files, and how many of them failed."""
    site = site_packages()
    files = [str(p) for p in nlsim_sources()]
    files += [str(site / f) for f in listed_files() if (site / f).is_file()]
    workers = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    chunks = [files[i :: workers * 8] for i in range(workers * 8)]
    with ProcessPoolExecutor(workers) as pool:
        failed = sum(pool.map(_compile, chunks))
    return len(files), failed


def main(argv: list[str]) -> int:
    usage = f"usage: {Path(__file__).name} [--write-list | --check-list]"
    if argv in (["-h"], ["--help"]):  # what the script does, and nothing done
        print(f"{usage}\n\n{__doc__}", end="")
        return 0
    if not argv:
        n, failed = compile_listed()
        note = f" ({failed} could not be compiled)" if failed else ""
        print(f"bytecode of {n:,} files that nlsim imports{note}")
        return 0
    if argv[0] not in ("--write-list", "--check-list") or len(argv) > 1:
        print(usage, file=sys.stderr)
        return 2
    left_out = import_all()
    for line in left_out:
        print(f"not imported here: {line}")
    files = loaded_files()
    if argv[0] == "--write-list":
        from nlsim.io.atomic import atomic_write_text  # nlsim is importable once import_all has run

        listing = "".join(f"{f}\n" for f in files)
        atomic_write_text(LIST, HEADER + f"# versions: {versions(files)}\n" + listing)
        print(f"{LIST.name}: {len(files):,} library files")
        return 0
    listed = listed_files()
    written_for, here = listed_versions(), versions(listed)
    if written_for != here:
        changed = sorted(set(here.split()) - set(written_for.split()))
        print(f"{LIST.name} was written for other library versions (here: {' '.join(changed)}): not checked")
        return 0
    missing = sorted(set(files) - set(listed))
    for f in missing:
        print(f"not in {LIST.name}: {f}")
    share = 1 - len(missing) / max(1, len(files))
    print(f"{len(files):,} library files loaded, {len(missing)} not in {LIST.name} ({share:.1%} listed)")
    return 0 if share >= MIN_SHARE else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
