"""The model store's pointer (``CURRENT.json``) as a run reads it: once, so that the version, its folder and
when it was promoted all come from the same promotion, even when ``nlsim models promote`` moves the pointer
while a run starts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nlsim.io.model_store import CURRENT, STORE_JSON, ModelStore
from nlsim.models.choice import _resolve_current
from nlsim.models.settings import CURRENT_MODEL, ModelSettings


def two_versions(root: Path) -> ModelStore:
    """A store with two registered versions, the first promoted."""
    store = ModelStore(root)
    store.claim()
    for fingerprint in ("aaaaaaaa11", "bbbbbbbb22"):
        folder = store.new_version_dir(fingerprint)
        folder.mkdir(parents=True)
        store.register(folder, {"fingerprint": fingerprint, "metrics": {"spearman": 0.5}})
    first, _ = store.versions()
    store.promote(first, "the first")
    return store


def promote_after_each_read(store: ModelStore, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Make every read of ``CURRENT.json`` move the pointer to the other version right after it (a person's
    promotion landing between two reads); returns the versions each read saw."""
    seen: list[str] = []
    read_text = Path.read_text

    def reading(path: Path, *args: object, **kwargs: object) -> str:
        text = read_text(path, *args, **kwargs)  # type: ignore[arg-type]
        if path.name == CURRENT:
            seen.append(json.loads(text)["version"])
            other = next(v for v in store.versions() if v.name != seen[-1])
            record = {"version": other.name, "promoted_at": f"after read {len(seen)}", "reason": "by hand"}
            path.write_text(json.dumps(record), encoding="utf-8")
        return text

    monkeypatch.setattr(Path, "read_text", reading)
    return seen


def test_a_run_reads_the_pointer_once_and_keeps_one_promotions_facts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = two_versions(tmp_path / "models")
    promoted_at = json.loads((store.root / CURRENT).read_text(encoding="utf-8"))["promoted_at"]
    seen = promote_after_each_read(store, monkeypatch)
    asked = _resolve_current(ModelSettings(name=CURRENT_MODEL, store=str(store.root)))
    first = store.versions()[0]
    assert (asked.version, asked.name, asked.promoted_at) == (first.name, str(first), promoted_at)
    assert len(seen) == 1, f"CURRENT.json read {len(seen)} times"
    assert asked.store_info == json.loads((first / STORE_JSON).read_text(encoding="utf-8"))
