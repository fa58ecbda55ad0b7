"""The runnable examples in nlsim's docstrings run and give what they show."""

import doctest
import importlib
import os
import pkgutil
import re
import tempfile

import pytest

import flows
import nlsim

MODULES = sorted(
    m.name for m in pkgutil.walk_packages(nlsim.__path__, prefix="nlsim.") if not m.name.endswith("__main__")
)
FLOWS = sorted(m.name for m in pkgutil.walk_packages(flows.__path__, prefix="flows."))
"""The flows' modules too: their examples (reading ``prefect.yaml``) need no server."""


@pytest.mark.slow
@pytest.mark.parametrize("name", MODULES + FLOWS)
def test_docstring_examples(name, repo_root, monkeypatch, tmp_path):
    monkeypatch.chdir(repo_root)
    # the examples' tempfile.mkdtemp() folders (a saved model among them) go under tmp_path, which goes with
    # the test, instead of staying in the system's temporary folder after every run
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    module = importlib.import_module(name)
    saved = dict(os.environ)
    try:
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    finally:  # an example that sets nlsim's variables puts them back: the next test here reads them
        # (the libraries' own, such as torch's TORCHINDUCTOR_CACHE_DIR set on a first import, are theirs)
        names = {k for k in {*saved, *os.environ} if k.startswith("NLSIM_")}
        changed = sorted(k for k in names if saved.get(k) != os.environ.get(k))
        os.environ.clear()
        os.environ.update(saved)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
    assert not changed, f"the examples of {name} left these environment variables changed: {changed}"


@pytest.mark.parametrize("name", MODULES + FLOWS)
def test_no_example_is_run_into_the_prose(name):
    """An example's lines rewrapped as a paragraph ('Example: >>> import numpy as np >>> batch = ...', as
    nlsim.inference.probe's was) are no example: doctest finds none there, and the reader cannot run it."""
    module = importlib.import_module(name)
    flattened = [
        f"{test.name}: {line.strip()[:80]}"
        for test in doctest.DocTestFinder(recurse=True).find(module)
        for line in (test.docstring or "").splitlines()
        if ">>>" in line and not line.lstrip().startswith(">>>") and not line.lstrip().startswith("...")
    ]
    assert not flattened, flattened


@pytest.mark.parametrize("name", MODULES + FLOWS)
def test_no_docstring_holds_the_quotes_of_a_broken_string_join(name):
    """A sentence once written as two joined strings and made a docstring keeps the quotes between them
    ('... (the last may be "\\n    "shorter).'), which the reader sees in help()."""
    module = importlib.import_module(name)
    broken = [
        test.name
        for test in doctest.DocTestFinder(recurse=True).find(module)
        if test.docstring and re.search(r'"\s*\n\s*"', test.docstring) and '"""' not in test.docstring
    ]
    assert not broken, broken
