"""training_settings (nlsim/chain/fingerprint.py): the settings a chain's version is known by are those
trained on the machine in hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from nlsim.chain.fingerprint import FP32_EPOCHS, training_settings
from nlsim.training.config import FinetuneConfig

AVX2_ONLY = "avx avx2 fma"
AMX = "avx2 avx512f avx512bw avx512_vnni avx512_bf16 amx_tile amx_bf16 amx_int8"


def test_a_cpu_without_bf16_knows_its_model_by_the_epochs_it_trains(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NLSIM_CPU_FLAGS", AVX2_ONLY)
    settings = training_settings(FinetuneConfig(), "cpu")
    # by default the same recipe as every machine: the same version as a bf16 CPU's or a GPU's
    assert (
        settings["epochs"],
        settings["cross_encoder_epochs"],
        settings["cross_encoder_frozen_layers"],
    ) == (
        2,
        3,
        4,
    )
    assert not set(FP32_EPOCHS) & set(settings)
    assert settings == training_settings(FinetuneConfig())
    # the faster fp32 recipe asked for there is another model, known by what it trains
    fast = FinetuneConfig.of(fp32_epochs=1, fp32_cross_encoder_epochs=1, fp32_cross_encoder_frozen_layers=6)
    got = training_settings(fast, "cpu")
    assert (got["epochs"], got["cross_encoder_epochs"], got["cross_encoder_frozen_layers"]) == (1, 1, 6)
    # asking 3 epochs there with --fp32-epochs 1 trains the same model as asking 2: the version is the same
    assert training_settings(fast.with_(epochs=3), "cpu") == got


@pytest.mark.parametrize("device", ["cpu", "cuda:0"])
def test_with_bf16_or_on_a_gpu_the_fp32_epochs_change_nothing(
    monkeypatch: pytest.MonkeyPatch, device: str
) -> None:
    """There the settings are the asked ones, without the fp32 epochs: a version trained before these
    options existed keeps its fingerprint, and a bf16 CPU and an avx2 one sharing a store never take each
    other's model."""
    monkeypatch.setenv("NLSIM_CPU_FLAGS", AMX)
    here = training_settings(FinetuneConfig(), device)
    assert here == training_settings(FinetuneConfig())
    assert (here["epochs"], here["cross_encoder_epochs"], here["cross_encoder_frozen_layers"]) == (2, 3, 4)
    assert training_settings(FinetuneConfig.of(fp32_epochs=5, fp32_cross_encoder_epochs=5), device) == here
    monkeypatch.setenv("NLSIM_CPU_FLAGS", AVX2_ONLY)
    if device == "cpu":
        assert training_settings(FinetuneConfig.of(fp32_epochs=1), device) != here


def test_an_overrule_that_changes_a_training_score_is_another_annotations_digest() -> None:
    """The digest is of the pairs as training reads them: an editor's newer score on a training pair makes
    another one; a verdict on a validation pair, even one recorded as an overrule, changes nothing."""
    import pandas as pd

    from nlsim.clusters.verdicts import Decision, Verdict, Verdicts, with_overrules
    from nlsim.io.pairs import annotations_digest

    pairs = pd.DataFrame(
        {
            "pair_id": ["p1", "p2"],
            "id_a": ["a", "c"],
            "id_b": ["b", "d"],
            "text_a": ["Floods north", "Stocks up"],
            "text_b": ["Floods south", "Stocks down"],
            "score": [0.75, 0.75],
            "split": ["train", "validation"],
        }
    )
    earlier = (Decision(0.75, "", "pairs.tsv"),)
    first = annotations_digest(with_overrules(pairs, Verdicts()).pairs)
    held_out = Verdicts.from_records([Verdict("c", "d", 0.0, "validation", earlier=earlier)])
    assert annotations_digest(with_overrules(pairs, held_out).pairs) == first
    newer = Verdicts.from_records([Verdict("a", "b", 0.0, earlier=earlier)])
    read = with_overrules(pairs, newer)
    assert annotations_digest(read.pairs) != first and len(read.overruled) == 1
    assert pairs["score"].tolist() == [0.75, 0.75]  # the table given is not changed


def test_a_pair_given_under_two_ids_is_the_same_version_whatever_the_rows_order(tmp_path: Path) -> None:
    """Training reads a pair given in two rows once, the first row's: the file re-sorted put the other id
    first, and the same pairs made another version, trained again. The pair is named by the smaller of its
    ids; a file without such a pair keeps the digest of its versions."""
    import pandas as pd

    from nlsim.chain.fingerprint import training_fingerprint
    from nlsim.io.pairs import annotations_digest
    from nlsim.training.data import read_for_training

    rows = [
        ("p1", "train", "a1", "b1", "Floods north", "Floods in the north", 1.0),
        ("p2", "train", "a2", "b2", "Stocks up", "Rain today", 0.0),
        ("p3", "validation", "a3", "b3", "Rain today", "Rain tomorrow", 0.5),
        ("p9", "train", "a1", "b1", "Floods north", "Floods in the north", 1.0),
    ]
    table = pd.DataFrame(rows, columns=["pair_id", "split", "id_a", "id_b", "text_a", "text_b", "score"])
    written = {"as given": table, "re-sorted": table.iloc[::-1], "once": table.iloc[:3]}
    found = {}
    for name, frame in written.items():
        path = tmp_path / f"{name}.tsv"
        frame.to_csv(path, sep="\t", index=False)
        found[name] = training_fingerprint(read_for_training(path).pairs, "base", {"epochs": 1})
    assert found["as given"] == found["re-sorted"] == found["once"]
    once = read_for_training(tmp_path / "once.tsv").pairs
    assert found["once"][1]["annotations"] == annotations_digest(once)  # no repeat: named as before


def test_settings_that_train_nothing_or_a_share_of_what_is_off_leave_the_version_as_it_is() -> None:
    base = training_settings(FinetuneConfig.of(drop_easy=0.0, cross_encoder_drop_easy=0.0))
    for other in (
        FinetuneConfig.of(drop_easy=0.0, cross_encoder_drop_easy=0.0, easy_sample=0.5),
        FinetuneConfig.of(drop_easy=0.0, cross_encoder_drop_easy=0.0, cross_encoder_easy_sample=0.5),
        FinetuneConfig.of(drop_easy=0.0, cross_encoder_drop_easy=0.0, log_every=5),
    ):
        assert training_settings(other) == base
    # with easy pairs dropped, their share drawn back is the recipe
    on = FinetuneConfig.of(cross_encoder_drop_easy=0.1)
    assert training_settings(on.with_(cross_encoder_easy_sample=0.5)) != training_settings(on)


def test_auto_precision_asked_on_both_sides_is_the_same_training_wherever_it_runs() -> None:
    from nlsim.chain.fingerprint import same_training

    auto = {"annotations": "a", "base_model": "b", "training": {"model": "m", "train_precision": "auto"}}
    assert same_training(auto, dict(auto), auto_here="fp32")
    assert same_training(auto, dict(auto), auto_here="bf16")
