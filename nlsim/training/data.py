"""The data of a fine-tuning run: the annotated pairs, split, converted to one script, checked.

The pairs are read as training reads them (:func:`nlsim.clusters.verdicts.training_pairs`): a training
pair an editor overruled (``nlsim annotate merge --overrule``) takes the editor's newer score from the
verdict store beside the pair file, which is then one of the run's data files; validation and test pairs
are read as the pair file has them.

Refused before any training: a split that is missing, a training or validation split too small or with
a single score value (nothing to learn, or nothing to choose the checkpoint on), and a validation split
without pairs on both sides of the calibration level.

Example:
    >>> import pandas as pd
    >>> df = pd.DataFrame({"x": range(10)})
    >>> small = select_train_subset(df, 3, 1)["x"].tolist()
    >>> select_train_subset(df, 6, 1)["x"].tolist()[:3] == small
    True
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from nlsim.clusters.constraints import pair_key
from nlsim.clusters.verdicts import TrainingPairs, training_pairs
from nlsim.errors import ConfigError, InputError
from nlsim.evaluation.calibration import check_calibratable
from nlsim.evaluation.metrics import check_scorable, convert_texts
from nlsim.io.atomic import file_sha256
from nlsim.io.pairs import (
    check_split_leaks,
    count_once,
    item_id,
    load_pairs,
    repeated_rows,
    split_counts,
    validate_pairs,
    warn_unsplit,
)
from nlsim.progress import warn
from nlsim.training.config import MIN_TRAIN_PAIRS, FinetuneConfig

MIN_VALIDATION_PAIRS = 3
TRAINING_SPLITS = "training, validation and test"
"""What a training run reads of a pair file: a row without a split is none of them
(:func:`nlsim.io.pairs.warn_unsplit` says so)."""


def select_train_subset(train: pd.DataFrame, size: int | None, seed: int) -> pd.DataFrame:
    """``size`` rows of ``train`` drawn with ``seed`` (all rows, shuffled, when ``size`` is None).

    Subsets are nested: for one seed, the first ``size`` rows of a single permutation.
    """
    if size is not None and size > len(train):
        raise ConfigError(f"train_size {size} is larger than the {len(train)} training pairs")
    order = np.random.default_rng(seed).permutation(len(train))
    if size is not None:
        order = order[:size]
    return train.iloc[order].reset_index(drop=True)


def convert_pairs(pairs: pd.DataFrame, conversion: str) -> pd.DataFrame:
    """A copy of ``pairs`` with ``text_a``/``text_b`` script-converted (the originals kept as ``orig_*``)."""
    out = pairs.copy()
    out["orig_text_a"], out["orig_text_b"] = out["text_a"], out["text_b"]
    out["text_a"] = convert_texts(out["text_a"].tolist(), conversion)
    out["text_b"] = convert_texts(out["text_b"].tolist(), conversion)
    return out


def split_pairs(pairs: pd.DataFrame, cfg: FinetuneConfig) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Train (subset), validation and test frames from one pair table with a ``split`` column."""
    parts = []
    for name in (cfg.data.train_split, cfg.data.val_split, cfg.data.test_split):
        parts.append(pairs[pairs["split"] == name].reset_index(drop=True))
    train, val, test = parts
    source = cfg.data.pairs or "<pairs>"
    if train.empty:
        raise InputError(
            source, None, "split", f"no pairs in split {cfg.data.train_split!r}{split_counts(pairs)}"
        )
    if val.empty:
        raise InputError(
            source,
            None,
            "split",
            f"no pairs in split {cfg.data.val_split!r}{split_counts(pairs)}: the best checkpoint is chosen "
            "on it",
        )
    size = cfg.data.train_size
    if size is not None and size > len(train):
        raise ConfigError(
            f"--train-size {size}: more than the {len(train)} pairs in split {cfg.data.train_split!r} of "
            f"{source}"
        )
    sub_seed = cfg.recipe.seed if cfg.data.subset_seed is None else cfg.data.subset_seed
    return select_train_subset(train, size, sub_seed), val, test


def check_trainable(train: pd.DataFrame, validation: pd.DataFrame, cfg: FinetuneConfig, source: str) -> None:
    """Refuse, before training, splits that cannot train, choose a checkpoint or calibrate
    (:class:`~nlsim.errors.InputError`, naming the file and the field: what the pair file holds, exit
    status 1)."""
    for name, frame, least in (
        ("training", train, MIN_TRAIN_PAIRS),
        ("validation", validation, MIN_VALIDATION_PAIRS),
    ):
        if len(frame) < least:
            raise InputError(
                source,
                None,
                "split",
                f"the {name} split has {len(frame)} pair(s); at least {least} are needed",
            )
        if frame["score"].nunique() < 2:
            raise InputError(
                source,
                None,
                "score",
                f"every {name} pair has the score {frame['score'].iloc[0]:g}; the scores must differ (there "
                "is nothing to learn or to choose the checkpoint on)",
            )
    level = cfg.evaluation.calibrate_level
    if level is not None:  # as nlsim calibrate refuses it
        way_out = "add pairs, or choose another --level"
        check_calibratable(validation, float(level), source, cfg.data.val_split, way_out=way_out)


def check_test_scorable(test: pd.DataFrame, split: str, source: str) -> None:
    """Refuse, before training, a test split (``split``, scored after training) no correlation can be
    computed on (:func:`~nlsim.evaluation.metrics.check_scorable`, as ``nlsim evaluate`` and ``nlsim
    learning-curve`` refuse it): fewer than 3 pairs (the Spearman of 2 pairs is +1 or -1 whatever the
    model), or all of one score (undefined), said only once the training time is spent. The way out is
    named: more pairs, pairs with other scores, or ``--no-test``. A file without test pairs trains as it
    did, scoring validation only (:func:`warn_untested`).

    Example:
        >>> check_test_scorable(pd.DataFrame({"score": [0.5, 0.5]}), "test", "p.tsv")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        nlsim.errors.InputError: p.tsv: field 'split': 2 pair(s) in split 'test'; Spearman needs at least ...
    """
    if test.empty:  # no test pairs: validation only, said by warn_untested
        return
    way_out = (
        "; give the split more pairs, with scores that differ, or pass --no-test to train without scoring it"
    )
    check_scorable(test, source, split, more=way_out)


def warn_untested(pairs: pd.DataFrame, split: str, source: str) -> None:
    """Warn (:func:`nlsim.progress.warn`) that the pair file ``source`` (read as ``pairs``) has no pairs in
    the test split ``split``, which the run was asked to score: it trains and scores validation only, and
    its figures have no test row, which they would otherwise not say (a split misspelt, the test rows left
    in another file).

    Example:
        >>> warn_untested(pd.DataFrame({"split": ["train", "validation"]}), "test", "p.tsv")  # says so
    """
    warn(
        f"{source}: no pairs in split {split!r}{split_counts(pairs)}: the model is scored on validation "
        "only, and its figures have no test row (give the file test pairs, or pass --no-test not to score "
        "one)"
    )


@dataclass
class PreparedPairs:
    """Converted train (subset), validation and test pairs, and the data files with their SHA-256.

    ``held_out`` holds every validation and test text (original and converted, the test split's even when
    it is not scored) and ``annotated`` every annotated text pair ``(min, max)``, converted: silver pairs
    (:mod:`nlsim.training.silver`) avoid both.
    """

    train: pd.DataFrame
    validation: pd.DataFrame
    test: pd.DataFrame
    data_files: dict[str, str]
    held_out: set[str] = field(default_factory=set)
    annotated: set[tuple[str, str]] = field(default_factory=set)
    overruled: int = 0
    """Training pairs read with an editor's newer score over the pair file's (overruled)."""
    overruled_keys: frozenset[tuple[str, str]] = frozenset()
    """Those pairs, as :func:`~nlsim.clusters.constraints.pair_key` (:meth:`overruled_in_train` counts the
    ones among :attr:`train`, the training subset drawn)."""

    def overruled_in_train(self) -> int:
        """How many pairs of :attr:`train` were read with an editor's newer score (:attr:`overruled_keys`)."""
        if not self.overruled_keys or "id_a" not in self.train.columns or "id_b" not in self.train.columns:
            return 0
        ids = zip(self.train["id_a"], self.train["id_b"], strict=True)
        return sum(1 for a, b in ids if pair_key(item_id(a), item_id(b)) in self.overruled_keys)


def overruled_note(n: int) -> str:
    """What a training run says of the ``n`` training pairs an editor overruled.

    >>> overruled_note(2)[:56]
    "2 training pair(s) read with an editor's newer score (ov"
    """
    return (
        f"{n} training pair(s) read with an editor's newer score (overruled in the verdict store; the pair "
        "file keeps the annotators')"
    )


def read_for_training(pairs_file: str | Path, every: pd.DataFrame | None = None) -> TrainingPairs:
    """The annotated pairs of ``pairs_file`` (``every``: already read) as training reads them: the rows that
    name no split said (they are left out), each training pair an editor overruled with the editor's newer
    score (:func:`~nlsim.clusters.verdicts.training_pairs`), and a pair given in two rows counted once
    (:func:`~nlsim.io.pairs.count_once`). Fine-tuning, the chain and the learning curve read them so. The
    pairs' rows in the file (from 1) are kept in their table's ``attrs["rows"]`` (:data:`ROWS`), for
    :func:`check_converted_leaks` to name, and the smallest id of a pair given in several rows under
    several ids in ``attrs["smallest_ids"]`` (:data:`SMALLEST_IDS`: :func:`smallest_ids`)."""
    every = load_pairs(pairs_file) if every is None else every
    warn_unsplit(every, TRAINING_SPLITS, pairs_file)
    read = training_pairs(pairs_file, every)
    once = count_once(read.pairs, pairs_file)
    rows = [int(i) + 1 for i in once.index]
    once = once.reset_index(drop=True)
    once.attrs[ROWS] = rows
    once.attrs[SMALLEST_IDS] = smallest_ids(read.pairs)
    return replace(read, pairs=once)


ROWS = "rows"
"""The ``attrs`` key of a table of pairs read for training that holds each pair's row in its file (from 1)."""

SMALLEST_IDS = "smallest_ids"
"""The ``attrs`` key of a table of pairs read for training that maps the id of a pair given in several rows
(the row kept) to the smallest of the ids it was given under, where that is another (:func:`smallest_ids`)."""


def smallest_ids(every: pd.DataFrame) -> dict[str, str]:
    """For each pair of ``every`` (its index the file's rows from 0) given in several rows of a split under
    several ids, the id of the row :func:`~nlsim.io.pairs.count_once` keeps (the first) mapped to the
    smallest of its ids, where that is another: which row comes first is the file's order, the pair the
    same (the training fingerprint names it so: :func:`nlsim.chain.fingerprint.training_fingerprint`).

    Example:
        >>> df = pd.DataFrame({"pair_id": ["p9", "p2", "p1"], "text_a": ["A", "c", "a"],
        ...                    "text_b": ["B", "d", "b"], "split": "train"})
        >>> smallest_ids(df)
        {'p9': 'p1'}
    """
    ids = {int(row) + 1: str(i) for row, i in zip(every.index, every["pair_id"], strict=True)}
    repeats = dict(repeated_rows(every))
    names: dict[str, str] = {}
    for row, first in repeats.items():
        while first in repeats:  # the row it repeats repeats another: the kept one is further up
            first = repeats[first]
        kept = ids[first]
        names[kept] = min(names.get(kept, kept), ids[row])
    return {kept: name for kept, name in names.items() if name != kept}


def file_rows(pairs: pd.DataFrame) -> list[int]:
    """Each pair's row in its file (from 1): as :func:`read_for_training` kept them, else its place."""
    rows = pairs.attrs[ROWS] if ROWS in pairs.attrs else None
    if isinstance(rows, list) and len(rows) == len(pairs):
        return [int(r) for r in rows]
    return list(range(1, len(pairs) + 1))


def check_converted_leaks(every: pd.DataFrame, rows: list[int], source: str, conversion: str) -> None:
    """Refuse (:class:`~nlsim.errors.InputError`, naming ``source``, the row and the field) a pair of
    ``every`` (converted: :func:`convert_pairs`) that is, as the model reads it, the pair of an earlier row
    in another split (a training pair in Traditional characters given again in test in Simplified ones,
    in either order), or in the same split with another score: the pair file's own check compares the
    texts as written (:func:`~nlsim.io.pairs.load_pairs`), the model reads them converted (``conversion``),
    so a test pair would be trained on, or one pair learnt with two scores. The check is the pair file's
    (:func:`~nlsim.io.pairs.check_split_leaks`) on the converted texts, every row alike: a row naming no
    split, left out of training (:func:`~nlsim.io.pairs.warn_unsplit`), is a split of its own there, as
    the pair file's check and ``nlsim evaluate --convert`` (:func:`~nlsim.io.pairs.load_pairs`) refuse it,
    so that a file training takes is one they take. ``rows``: each pair's row in the file (from 1)."""
    check_split_leaks(every, source, rows=rows, converted=conversion)


def once_converted(every: pd.DataFrame, rows: list[int], source: str, conversion: str) -> pd.DataFrame:
    """``every`` (converted: :func:`convert_pairs`; ``rows``, each pair's row in the file from 1) without
    the rows that repeat an earlier row's pair in the same split as the model reads them, converted to one
    script (a validation pair in Traditional characters given again in Simplified ones with the same score:
    another score is refused by :func:`check_converted_leaks`), said as :func:`~nlsim.io.pairs.count_once`
    says it. Counted twice, the pair would weigh double in an epoch and in the validation and test figures,
    where ``nlsim evaluate`` counts it once. The texts are compared as ``every`` holds them, converted
    already."""
    placed = every.set_axis(pd.Index(rows) - 1)  # the file's rows, for count_once to name
    once = count_once(placed, source, conversion=conversion, read=placed)
    return every[np.isin(np.asarray(rows) - 1, once.index.to_numpy())].reset_index(drop=True)


def once_as_read(pairs: pd.DataFrame, source: str, conversion: str) -> pd.DataFrame:
    """``pairs`` (read for training: :func:`read_for_training`) without the rows that repeat an earlier row's
    pair in the same split as the model reads them, converted with ``conversion``
    (:func:`~nlsim.io.pairs.count_once`), the texts as written and each pair's row in the file kept
    (:data:`ROWS`): the pairs a training run trains, chooses its checkpoint and is scored on
    (:func:`as_trained`), for what scores the same splits beside it (a learning curve's baselines), so that
    all the figures are of one set of pairs, as ``nlsim evaluate`` counts them."""
    placed = pairs.set_axis(pd.Index(file_rows(pairs)) - 1)  # the file's rows, for count_once to name
    once = count_once(placed, source, conversion=conversion)
    rows = [int(i) + 1 for i in once.index]
    once = once.reset_index(drop=True)
    once.attrs[ROWS] = rows
    return once


def as_trained(
    pairs: pd.DataFrame, source: str, conversion: str, rows: list[int] | None = None
) -> pd.DataFrame:
    """``pairs`` (read for training: :func:`read_for_training`) as a training run reads them before it
    splits them (:func:`prepare_pairs`): converted once (:func:`convert_pairs`), refused where the model
    reads one pair in two splits or with two scores (:func:`check_converted_leaks`), and a pair given twice
    as the model reads it counted once (:func:`once_converted`). What a check before any training (the
    chain's, a learning curve's) counts and draws the splits from, so that it refuses what training would.
    ``rows``: each pair's row in the file (from 1; left out, :func:`file_rows`)."""
    rows = file_rows(pairs) if rows is None else rows
    every = convert_pairs(pairs, conversion)
    check_converted_leaks(every, rows, source, conversion)
    return once_converted(every, rows, source, conversion)


def prepare_pairs(cfg: FinetuneConfig, pairs: pd.DataFrame | None = None) -> PreparedPairs:
    """Load (or take) the pairs, split them, draw the training subset and convert the script. Loaded from
    ``cfg.data.pairs``, each training pair an editor overruled takes the editor's newer score (the module
    docstring); a table given is taken as it is, but for a pair in two rows, counted once as in a file."""
    cfg.check()
    data_files: dict[str, str] = {}
    overruled = 0
    overruled_keys: frozenset[tuple[str, str]] = frozenset()
    if pairs is None:
        if not cfg.data.pairs:
            raise ConfigError("no pairs given (cfg.data.pairs or pairs=)")
        read = read_for_training(cfg.data.pairs)
        pairs, overruled = read.pairs, len(read.overruled)
        overruled_keys = frozenset(v.key for v in read.overruled)
        data_files[str(cfg.data.pairs)] = file_sha256(cfg.data.pairs)
        if read.store is not None:
            data_files[str(read.store)] = file_sha256(read.store)
        rows = file_rows(pairs)
    else:
        given = file_rows(pairs)  # validate_pairs numbers the rows by their place, which count_once keeps
        once = count_once(validate_pairs(pairs, "<pairs>"), "<pairs>")
        rows = [given[int(i)] for i in once.index]
        pairs = once.reset_index(drop=True)
    every = as_trained(pairs, str(cfg.data.pairs or "<pairs>"), cfg.data.conversion, rows)
    train, val, test = split_pairs(every, cfg)
    check_trainable(train, val, cfg, str(cfg.data.pairs or "<pairs>"))
    if cfg.evaluation.eval_test:
        check_test_scorable(test, cfg.data.test_split, str(cfg.data.pairs or "<pairs>"))
        if test.empty:
            warn_untested(every, cfg.data.test_split, str(cfg.data.pairs or "<pairs>"))
    held_out: set[str] = set()
    for frame in (val, test):
        for col in ("text_a", "text_b", "orig_text_a", "orig_text_b"):
            held_out.update(frame[col].astype(str))
    annotated = {(min(a, b), max(a, b)) for a, b in zip(every["text_a"], every["text_b"], strict=True)}
    if not cfg.evaluation.eval_test:
        test = test.iloc[0:0]
    return PreparedPairs(train, val, test, data_files, held_out, annotated, overruled, overruled_keys)
