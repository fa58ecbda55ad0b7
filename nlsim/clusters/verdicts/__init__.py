"""The editors' verdicts: which pairs of items an editor said are (or are not) the same story, kept so that
every later report and daily run honours them.

An editor marks a pair in the report page and the export is merged with ``nlsim annotate merge``: the pair
goes into the pair file (it trains the next model, as before) *and* into the verdict store beside it
(:mod:`nlsim.clusters.verdicts.store`: ``annotations/thucnews_tw_pairs.tsv`` keeps its verdicts in
``annotations/thucnews_tw_pairs.tsv.verdicts.csv``, every row with its integrity check). A report
(``nlsim dedup --annotated-pairs FILE``) reads the store checked against its pair file
(:mod:`nlsim.clusters.verdicts.pair_file`: what holds is what the pair file records) and turns the verdicts
into :class:`~nlsim.clusters.constraints.LinkConstraints` (:mod:`nlsim.clusters.verdicts.records`): "same
story" (level 1) is a must-link, any lower level a cannot-link. A daily run keeps a copy in its state, so
the verdicts act in every later run, across model promotions, whether or not the next run names the file.

An editor may overrule the score the pair file gives a training pair (``nlsim annotate merge --overrule``):
the newer decision is the pair's verdict in the store, the earlier ones kept with it, and the pair file is
not changed (:mod:`nlsim.clusters.verdicts.overrule`); it acts in the reports, and training reads the
editor's score (:func:`training_pairs`).

Only verdicts on **training** pairs act (:meth:`Verdicts.constraints`): a validation or test pair used as a
constraint would put the editors' answer into the clusters the report is judged on, and the judged figures
would mean nothing. A verdict on such a pair is kept in the store (it is the editors' work) and listed as
not acting.

Example:
    >>> v = Verdicts.from_records([Verdict("a", "b", 1.0, "train"), Verdict("c", "a", 0.0, "train")])
    >>> v.constraints().forbids("a", "c"), store_path("news.parquet").name
    (True, 'news.parquet.verdicts.csv')
"""

from nlsim.clusters.verdicts.overrule import (
    TrainingPairs,
    decided,
    holds_already,
    kept_mark,
    newer_than,
    overruled_since,
    overruling,
    training_pairs,
    with_overrules,
    with_superseded,
)
from nlsim.clusters.verdicts.pair_file import (
    PairRow,
    StoreCheck,
    check_store,
    pair_rows,
    retire_earlier,
    write_store,
)
from nlsim.clusters.verdicts.records import (
    ACTING_SPLIT,
    COLUMNS,
    EARLIER,
    LEVELS,
    SAME_STORY,
    SPLITS,
    Decision,
    Verdict,
    Verdicts,
    from_frame,
)
from nlsim.clusters.verdicts.store import (
    SUFFIX,
    earlier_paths,
    load_verdicts,
    save_verdicts,
    store_path,
)

__all__ = [
    "ACTING_SPLIT",
    "COLUMNS",
    "EARLIER",
    "LEVELS",
    "SAME_STORY",
    "SPLITS",
    "SUFFIX",
    "Decision",
    "PairRow",
    "StoreCheck",
    "TrainingPairs",
    "Verdict",
    "Verdicts",
    "check_store",
    "decided",
    "earlier_paths",
    "from_frame",
    "holds_already",
    "kept_mark",
    "load_verdicts",
    "newer_than",
    "overruled_since",
    "overruling",
    "pair_rows",
    "retire_earlier",
    "save_verdicts",
    "store_path",
    "training_pairs",
    "with_overrules",
    "with_superseded",
    "write_store",
]
