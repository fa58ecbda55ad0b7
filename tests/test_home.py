"""The suite never writes into the user's nlsim home (``~/.cache/nlsim``): it runs on a temporary one.

The default home holds the user's converted models, speed probes and quality checks; a test run that wrote
there (a precision check naming a pytest temporary pairs file, cached embeddings of test corpora) would
change what the user's own runs choose.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from nlsim.io.model_cache import nlsim_home

DEFAULT_HOME = (Path.home() / ".cache" / "nlsim").resolve()


def test_the_suite_runs_on_a_temporary_nlsim_home() -> None:
    home = nlsim_home().resolve()
    assert home != DEFAULT_HOME and DEFAULT_HOME not in home.parents, home
    assert Path(tempfile.gettempdir()).resolve() in home.parents, home


def test_a_command_run_by_a_test_uses_it_too(tmp_path: Path) -> None:
    code = "from nlsim.io.model_cache import nlsim_home; print(nlsim_home())"
    proc = subprocess.run(
        [sys.executable, "-c", code], env=dict(os.environ), capture_output=True, text=True, check=True
    )
    assert Path(proc.stdout.strip()).resolve() == nlsim_home().resolve()
