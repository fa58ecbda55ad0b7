"""The environment ``scripts/setup.sh`` makes holds the versions ``requirements/constraints.txt`` pins: a
fresh clone runs on what the suite ran on, not on what the registry released since (a new ml_dtypes once
slipped in unpinned)."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]


def pins() -> dict[str, str]:
    out = {}
    for line in (ROOT / "requirements" / "constraints.txt").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            assert version, f"constraints.txt: {line!r} pins no exact version"
            out[canonicalize_name(name)] = version.strip()
    return out


def test_every_pinned_package_installed_here_has_its_pinned_version() -> None:
    pinned = pins()
    assert len(pinned) > 100 and "numpy" in pinned and "torch" not in pinned  # torch: pyproject.toml
    installed = {canonicalize_name(d.metadata["Name"]): d.version for d in metadata.distributions()}
    drifted = {n: (v, installed[n]) for n, v in pinned.items() if n in installed and installed[n] != v}
    assert not drifted, f"versions differ from requirements/constraints.txt (pinned, here): {drifted}"
    missing = [n for n in pinned if n not in installed]
    assert not missing, f"pinned in requirements/constraints.txt, not installed by setup: {missing}"
