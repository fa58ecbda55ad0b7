"""The run record: what one dedup run reports, typed.

:class:`RunRecord` is what every run leaves behind, batch or incremental: the report's ``run.json``
(:meth:`RunRecord.to_dict`), the page (:mod:`nlsim.report.html`), the Markdown summary
(:func:`nlsim.report.summary.render_markdown`), the command's output and, from a flow, a Prefect artifact; an
incremental run also keeps it in its state (``runs/<run_id>.json`` and the manifest's ``last_run``). Its
parts are records too: its counts (:class:`Counts`), where the clusters it absorbed or dissolved went
(:class:`ClusterChanges`, ``run.json``'s ``extra``), the model that judged (:class:`ModelInfo`, with its
:class:`ModelCard`), the rule that made the story clusters (:class:`StoryRule`), the rerank stage
(:class:`RerankRecord`), a model switch (:class:`ModelSwitch`), what the editors' verdicts did
(:class:`EditorsRecord`, each change to a cluster a :class:`ClusterChange`) and the report judged against
editors' pairs (:class:`nlsim.evaluation.judge.Judgement`). A record read back from a ``run.json`` (a
replayed report; one another nlsim version wrote) is :meth:`RunRecord.from_dict`.

A record is immutable: a run builds it once, from its stages' typed results
(:func:`nlsim.dedup.run.run_record`), after the stages that decide its figures; what accrues while the
stages run, their timings and the messages told to the user, is kept by the run's :class:`RunLog`, and
:meth:`RunRecord.timed` is the record with the log as it stands.

Example:
    >>> log = RunLog()
    >>> with log.stage("load"):
    ...     pass
    >>> record = RunRecord(run_id="r1", counts=Counts(items_in=3)).timed(log)
    >>> sorted(record.timings_s), record.to_dict()["items"]
    (['load'], 3)
    >>> RunRecord.from_dict(record.to_dict()) == record
    True
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from nlsim import progress
from nlsim.clusters.rules import ClusterRule, SharedSupport
from nlsim.evaluation.calibration import Calibration
from nlsim.evaluation.judge import Judgement
from nlsim.io.records import known_fields
from nlsim.report.spreadsheet import TextChange


@dataclass(frozen=True)
class Counts:
    """What a run counted (``run.json``'s ``counts``); ``None``: not counted by this kind of run (a batch run
    classifies no item as changed, skipped, too old or expired).

    Attributes:
        items_in: rows read; quarantined: bad rows set aside; new: items first seen; changed: seen before
            with other text (embedded again); skipped: seen before, same text; too_old: older than the
            retention window (not added); expired: kept items dropped by retention.
        candidates: pairs searched before the rerank; kept: items in the window after the run; pairs: the
            pairs the report lists; clusters: the clusters in the report (dissolved ones aside);
            clustered_items: their items; clusters_new, clusters_grown, clusters_merged: by status;
            clusters_absorbed: cluster ids merged into another; clusters_dissolved: clusters a model change
            broke up; clusters_in_window: a daily run's clusters in the whole window; near_misses: the
            near misses listed; exact_copies: items that repeat another's text; topics: the topic groups
            of the window (stories and single items sharing a topic and entity); topic_items: their items.
    """

    items_in: int | None = None
    quarantined: int | None = None
    new: int | None = None
    changed: int | None = None
    skipped: int | None = None
    too_old: int | None = None
    expired: int | None = None
    candidates: int | None = None
    kept: int | None = None
    pairs: int | None = None
    clusters: int | None = None
    clustered_items: int | None = None
    clusters_new: int | None = None
    clusters_grown: int | None = None
    clusters_merged: int | None = None
    clusters_absorbed: int | None = None
    clusters_dissolved: int | None = None
    clusters_in_window: int | None = None
    near_misses: int | None = None
    exact_copies: int | None = None
    topics: int | None = None
    topic_items: int | None = None

    def as_dict(self) -> dict[str, int]:
        """The counts made, by name (``run.json``)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Counts:
        return cls(**known_fields(cls, data))


@dataclass(frozen=True)
class ClusterChanges:
    """Where a run's clusters went that are no clusters of their own now (``run.json``'s ``extra``):
    ``merged_into`` each absorbed cluster id and the cluster it was merged into; ``dissolved`` each cluster a
    model change broke up and the members it had."""

    merged_into: dict[str, str] = field(default_factory=dict)
    dissolved: dict[str, list[str]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """As ``run.json`` holds it (``dissolved`` only when a cluster was)."""
        out: dict[str, Any] = {"merged_into": dict(self.merged_into)}
        if self.dissolved:
            out["dissolved"] = dict(self.dissolved)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ClusterChanges:
        return cls(**known_fields(cls, data))


@dataclass(frozen=True)
class TrainingFacts:
    """What the model folder's ``training.json`` says about the training pairs and time."""

    n_train: int | None = None
    n_validation: int | None = None
    seconds: float | None = None
    editor_labels: dict[str, Any] | None = None


@dataclass(frozen=True)
class ModelCard:
    """What the report shows about a fine-tuned model: its quality figures (``metrics``, e.g.
    ``after/test`` -> ``{"spearman": 88.2}``), its training facts, its model-store entry (``store.json``) and
    its learning curve (a PNG file). ``None``: the model folder has none."""

    metrics: dict[str, dict[str, float]] | None = None
    trained: TrainingFacts | None = None
    store: dict[str, Any] | None = None
    learning_curve: str | None = None

    @property
    def created(self) -> str | None:
        """When the model-store version was made."""
        return None if not self.store or "created" not in self.store else str(self.store["created"])

    def spearman(self, key: str) -> float | None:
        """The Spearman figure of ``key`` (``after/test``, ...), ``None`` when not measured."""
        scores = (self.metrics or {}).get(key) or {}
        return scores.get("spearman")

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.metrics is not None:
            out["metrics"] = self.metrics
        if self.trained is not None:
            out["trained"] = asdict(self.trained)
        if self.store:
            out["store"] = self.store
        if self.learning_curve:
            out["learning_curve"] = self.learning_curve
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ModelCard:
        trained = data["trained"] if "trained" in data else None
        return cls(
            metrics=data["metrics"] if "metrics" in data else None,
            trained=TrainingFacts(**known_fields(TrainingFacts, trained)) if trained is not None else None,
            store=data["store"] if "store" in data else None,
            learning_curve=data["learning_curve"] if "learning_curve" in data else None,
        )


@dataclass(frozen=True)
class ModelInfo:
    """The model that judged: what was asked for (``requested``), the encoder (id, fingerprint, folder),
    whether it is zero-shot, its model-store version (a ``current`` run), its card, the calibration behind
    the threshold, and how it ran (backend, precision, the chosen inference path)."""

    requested: str = ""
    zero_shot: bool = False
    version: str | None = None
    model_id: str = ""
    fingerprint: str = ""
    path: str | None = None
    card: ModelCard = field(default_factory=ModelCard)
    threshold_calibration: Calibration | None = None
    backend: str = ""
    precision: str = ""
    inference: dict[str, Any] | None = None
    promoted_at: str | None = None
    """When the model-store version was promoted (``CURRENT.json``'s ``promoted_at``; ``None``: unknown)."""

    @property
    def from_store(self) -> bool:
        """The run asked for the model store's promoted model (``--model current``)."""
        return self.requested == "current"

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"requested": self.requested, "zero_shot": self.zero_shot}
        if self.from_store:
            out["version"] = self.version
            if self.promoted_at is not None:
                out["promoted_at"] = self.promoted_at
        out.update(
            model_id=self.model_id,
            fingerprint=self.fingerprint,
            path=self.path,
            card=self.card.as_dict(),
            threshold_calibration=(
                None if self.threshold_calibration is None else self.threshold_calibration.as_dict()
            ),
            backend=self.backend,
            precision=self.precision,
        )
        if self.inference is not None:
            out["inference"] = self.inference
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ModelInfo:
        known = known_fields(cls, data)
        if known.get("card") is not None:
            known["card"] = ModelCard.from_dict(known["card"])
        else:
            known.pop("card", None)
        cal = known.get("threshold_calibration")
        known["threshold_calibration"] = None if not cal else Calibration(**known_fields(Calibration, cal))
        return cls(**known)


JOINED = "joined"
"""A :class:`ClusterChange` of a same-story verdict: its two items are one cluster only because of it."""
SPLIT = "split"
"""A :class:`ClusterChange` of a not-the-same-story verdict: the cluster was cut along it."""


@dataclass(frozen=True)
class ClusterChange:
    """What one acting verdict changed in the report's clusters (what a cluster's card says of the editors).

    Attributes:
        id_a, id_b, score: the verdict's pair and the rubric level the editor gave.
        change: :data:`JOINED` (a same-story verdict: without the verdicts the rule keeps the two apart) or
            :data:`SPLIT` (a not-the-same-story verdict: the rule without it puts the two together).
        clusters: the ids of the clusters it touched, as the run names them: the cluster it joined, or
            the cluster(s) its two items are in after the cut (an item left alone has none).
        overrules: the verdict is an editor's newer decision over the score the pair file gives a training
            pair (``nlsim annotate merge --overrule``), another score than that one.
        notes: the editor's note on the verdict, as the verdict store keeps it ('' for none).
        confirms: the verdict is an editor's decision on a training pair that gives the score the pair file
            gives it: it confirms the annotators' score, and overrules nothing.
    """

    id_a: str
    id_b: str
    score: float
    change: str
    clusters: list[str] = field(default_factory=list)
    overrules: bool = False
    notes: str = ""
    confirms: bool = False


@dataclass(frozen=True)
class StoryRule:
    """The rule that made a run's story clusters, with its settings (:mod:`nlsim.clusters.rules`): what the
    page's preview of an editor's mark runs (``assets/rules.js``, a port of the rule).

    Attributes:
        name: ``support`` (:class:`~nlsim.clusters.rules.SharedSupport`) or ``components``.
        min_share, large, large_share, large_floor: the support rule's share and what a large cluster needs
            (``None`` for the components rule, or a condition not set).
        cut: how an editor's "not the same story" parts a group (``order``, ``min-cut``:
            :mod:`nlsim.clusters.cuts`).

    >>> StoryRule.of(SharedSupport(min_share=0.4, large=5, large_floor=0.94), "order")
    StoryRule(name='support', min_share=0.4, large=5, large_share=None, large_floor=0.94, cut='order')
    """

    name: str
    min_share: float | None = None
    large: int | None = None
    large_share: float | None = None
    large_floor: float | None = None
    cut: str = "order"

    @classmethod
    def of(cls, rule: ClusterRule, cut: str) -> StoryRule:
        """The record of ``rule`` and ``cut``."""
        if isinstance(rule, SharedSupport):
            floor = None if rule.large_floor is None else round(float(rule.large_floor), 6)
            return cls(rule.name, rule.min_share, rule.large, rule.large_share, floor, cut)
        return cls(rule.name, cut=cut)


@dataclass(frozen=True)
class EditorsRecord:
    """The editors' part of a run (``--annotated-pairs``, a daily state's verdicts): what the page needs
    for its review queue and its list of the editors' decisions, and what the verdicts did to the clusters.

    Attributes:
        source: where the verdicts came from ('' for none).
        verdicts: verdicts known; acting: of them, those on training pairs (constraints);
        must_link, cannot_link: acting verdicts whose two items are both in the run's window.
        links_cut: scored links dropped to keep cannot-linked items apart; joined: must-links that joined
            items no scored link joined; refused: must-links a cannot-link overruled.
        decisions: ``[id_a, id_b, score]`` of the acting verdicts among the window's items that acted (the
            page lists them as the editors' decisions).
        overruled: ``[id_a, id_b, score]`` of the same-story verdicts among them that a not-the-same-story
            verdict overruled (the page lists them apart: the two items are not joined).
        scored_ids: pair ids of the scored pairs whose two items the report shows (the review queue skips
            them).
        training_ids, held_out_ids: of them, those of the training split (an editor's mark on one overrules
            its score) and those of the validation and test splits (they judge the report: never marked);
            a scored pair of neither is one whose split the run does not know (a daily state's record).
        text_changed: ``[id_a, id_b]`` of the training verdicts that did not act: an item of theirs carries
            another text now than the one the verdict was given on.
        cluster_changes: what each acting verdict changed in the clusters (:class:`ClusterChange`: the pairs
            it joined or split, and the clusters it touched); a verdict the rule would have followed anyway
            changed nothing and is not listed.
        annotators_overruled: acting verdicts that overrule the score the pair file gives a training pair
            (an editor's newer decision; not :attr:`overruled`, a same-story verdict another one refused).
        notes: ``[id_a, id_b, note]`` of the verdicts of :attr:`decisions` and :attr:`overruled` that carry
            an editor's note in the verdict store (the page shows it with the decision).
    """

    source: str = ""
    verdicts: int = 0
    acting: int = 0
    must_link: int = 0
    cannot_link: int = 0
    links_cut: int = 0
    joined: int = 0
    refused: int = 0
    decisions: list[list[Any]] = field(default_factory=list)
    scored_ids: list[str] = field(default_factory=list)
    overruled: list[list[Any]] = field(default_factory=list)
    text_changed: list[list[str]] = field(default_factory=list)
    training_ids: list[str] = field(default_factory=list)
    held_out_ids: list[str] = field(default_factory=list)
    cluster_changes: list[ClusterChange] = field(default_factory=list)
    annotators_overruled: int = 0
    notes: list[list[str]] = field(default_factory=list)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EditorsRecord:
        """The record from its ``run.json`` form (one written before a field was kept reads its default)."""
        known = known_fields(cls, data)
        known["cluster_changes"] = [
            ClusterChange(**known_fields(ClusterChange, c)) for c in known.get("cluster_changes") or []
        ]
        return cls(**known)


@dataclass(frozen=True)
class RerankRecord:
    """The rerank stage: the score combination, the candidate floor and the cross-encoder's score bound
    behind it, the candidate and kept pair counts, and the cross-encoder's inference path. ``candidates``:
    the pairs the neighbour search found (down to the topic threshold when it is lower); ``rescored``:
    those the cross-encoder read (from the candidate floor); ``None`` in a record written before topic
    groups (then every candidate was rescored)."""

    describe: str
    candidate_floor: float
    cross_encoder_bound: float
    candidates: int
    kept: int
    inference: dict[str, Any] | None = None
    rescored: int | None = None


@dataclass(frozen=True)
class ModelSwitch:
    """How the state's vectors or threshold differ from this run's: the models, what changed (the names of
    the state's identity fields: ``model_id``, ``fingerprint``, ``threshold``, ...), whether the window is
    embedded again (``reembed``) and how many items that was; the model-store versions before and now and
    when each was promoted, where known (:meth:`with_versions`; ``None``: not a promoted model, or a state
    whose last run did not record it)."""

    from_model: str
    to_model: str
    from_fingerprint: str = ""
    to_fingerprint: str = ""
    changed: list[str] = field(default_factory=list)
    details: list[str] = field(default_factory=list)
    reembed: bool = False
    reembedded: int = 0
    from_version: str | None = None
    to_version: str | None = None
    from_promoted_at: str | None = None
    to_promoted_at: str | None = None
    from_zero_shot: bool | None = None
    to_zero_shot: bool | None = None

    def with_versions(self, before: ModelInfo | None, now: ModelInfo) -> ModelSwitch:
        """The switch with the model-store versions of the model before (the state's last run's, ``None``
        when it recorded none) and now, when each was promoted and whether each is zero-shot.

        >>> switch = ModelSwitch("m", "m", changed=["fingerprint"])
        >>> now = ModelInfo(requested="current", version="v0002-bb", promoted_at="2026-03-02T10:00:00+00:00")
        >>> later = switch.with_versions(ModelInfo(requested="current", version="v0001-aa"), now)
        >>> later.from_version, later.to_version, later.to_promoted_at
        ('v0001-aa', 'v0002-bb', '2026-03-02T10:00:00+00:00')
        """
        return replace(
            self,
            from_version=None if before is None else before.version,
            from_promoted_at=None if before is None else before.promoted_at,
            from_zero_shot=None if before is None else before.zero_shot,
            to_version=now.version,
            to_promoted_at=now.promoted_at,
            to_zero_shot=now.zero_shot,
        )


@dataclass
class RunLog:
    """What accrues while a run's stages run: each stage's time and the messages told to the user."""

    timings_s: dict[str, float] = field(default_factory=dict)
    messages: list[str] = field(default_factory=list)

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Time a stage (accumulates when a stage runs more than once)."""
        t = time.perf_counter()
        try:
            yield
        finally:
            self.timings_s[name] = round(self.timings_s.get(name, 0.0) + time.perf_counter() - t, 4)

    def say(self, message: str) -> None:
        """Tell the user (:func:`nlsim.progress.say`) and keep the message for the run record."""
        self.messages.append(message)
        progress.say(message)


@dataclass(frozen=True)
class RunRecord:
    """Counts (:class:`Counts`), timings, model, threshold and settings of one run.

    ``finished_at`` and ``spreadsheet_changes`` are set when the report is written
    (:func:`nlsim.report.files.finished`).
    """

    run_id: str = ""
    mode: str = "batch"
    corpus: str = ""
    counts: Counts = field(default_factory=Counts)
    timings_s: dict[str, float] = field(default_factory=dict)
    model: str = ""
    model_fingerprint: str = ""
    model_info: ModelInfo | None = None
    threshold: float | None = None
    threshold_source: str = ""
    conversion: str = ""
    text_fields: str = ""
    rerank: RerankRecord | None = None
    index: str = ""
    embedding_cache_hit: bool | None = None
    retention_days: float | None = None
    window_hours: float | None = None
    """Pairs only of items published at most this many hours apart (``--window-hours``; ``None``: any)."""
    as_of: str | None = None
    cluster_rule: str = ""
    """The rule that made the clusters (``support 0.4``: the support rule at that share; ``components``)."""
    story_rule: StoryRule | None = None
    """The same rule with its settings, as the page's preview runs it (``None``: a record written before)."""
    near_miss_limit: int | None = None
    """How many near misses the run asked for (``--near-misses``; 0: none, the search floor not lowered;
    ``None``: a record written before it was kept)."""
    timezone: str = "UTC"
    """The time zone of the report's days and times (``--timezone``; the daily deployment's ``timezone``)."""
    input_key: str = ""
    started_at: str = ""
    model_switch: ModelSwitch | None = None
    messages: list[str] = field(default_factory=list)
    extra: ClusterChanges = field(default_factory=ClusterChanges)
    finished_at: str | None = None
    spreadsheet_changes: list[TextChange] | None = None
    judge: Judgement | None = None
    """The report judged against editors' scored pairs (``--judge-pairs``); ``None`` when not asked."""
    editors: EditorsRecord | None = None
    """The editors' scored pairs and verdicts the run took (``--annotated-pairs``, the state's verdicts)."""
    all_seen: bool = False
    """A daily run every one of whose items was already in the window with the same text: nothing new."""
    older_day: bool = False
    """A daily run of a day older than the runs before it (its items all dated before the state's clock):
    its report is in ``OUT/runs/<run id>/``, and ``OUT/latest`` still names the newer report."""
    newest_day: str | None = None
    """The start (UTC) of the newest day told by its date (a day without news, or one whose items have no
    date: its ``--date``, else, run without ``--as-of``, today) among this daily run's and the runs' before
    it on the state: a day before it is a day older than the runs before it, though the state's clock stood
    still (``None``: no such day, or a record written before it was kept)."""

    @property
    def daily(self) -> bool:
        return self.mode == "incremental"

    @property
    def info(self) -> ModelInfo:
        """The model's record (an empty one when the run recorded none)."""
        return self.model_info if self.model_info is not None else ModelInfo()

    @property
    def model_name(self) -> str:
        """The model as the report names it."""
        return self.model or self.info.model_id or "?"

    @property
    def items(self) -> int | None:
        """Rows read."""
        return self.counts.items_in

    @property
    def clusters_in_window(self) -> int | None:
        """A daily run's clusters in the whole window."""
        return self.counts.clusters_in_window

    def timed(self, log: RunLog) -> RunRecord:
        """This record with the run's timings and messages as they stand."""
        return replace(self, timings_s=dict(log.timings_s), messages=list(log.messages))

    def to_dict(self) -> dict[str, Any]:
        """The run record as ``run.json`` holds it: every field, plus the headline counts at the top level
        (``items``, ``pairs``, ``clusters``, ``clustered_items``, ``quarantined``) and ``elapsed_s``."""
        d: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self)}
        c = self.counts
        d.update(
            counts=c.as_dict(),
            timings_s=dict(self.timings_s),
            model_info={} if self.model_info is None else self.model_info.as_dict(),
            rerank=None if self.rerank is None else asdict(self.rerank),
            story_rule=None if self.story_rule is None else asdict(self.story_rule),
            model_switch=None if self.model_switch is None else asdict(self.model_switch),
            editors=None if self.editors is None else asdict(self.editors),
            messages=list(self.messages),
            extra=self.extra.as_dict(),
        )
        for late in ("finished_at", "spreadsheet_changes", "judge"):  # after the headline figures, when set
            del d[late]
        d.update(
            items=c.items_in,
            quarantined=c.quarantined or 0,
            pairs=c.pairs,
            clusters=c.clusters,
            clustered_items=c.clustered_items,
            elapsed_s=round(sum(self.timings_s.values()), 2),
        )
        if self.finished_at is not None:
            d["finished_at"] = self.finished_at
        if self.spreadsheet_changes is not None:
            d["spreadsheet_changes"] = [asdict(t) for t in self.spreadsheet_changes]
        if self.judge is not None:
            d["judge"] = self.judge.to_dict()
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunRecord:
        """A record from its ``run.json`` form (the headline counts are derived, not read)."""
        known = known_fields(cls, data)
        known["counts"] = Counts.from_dict(known.get("counts") or {})
        known["extra"] = ClusterChanges.from_dict(known.get("extra") or {})
        if known.get("model_info"):
            known["model_info"] = ModelInfo.from_dict(known["model_info"])
        else:
            known.pop("model_info", None)
        if known.get("rerank") is not None:
            known["rerank"] = RerankRecord(**known_fields(RerankRecord, known["rerank"]))
        if known.get("story_rule") is not None:
            known["story_rule"] = StoryRule(**known_fields(StoryRule, known["story_rule"]))
        if known.get("model_switch") is not None:
            known["model_switch"] = ModelSwitch(**known_fields(ModelSwitch, known["model_switch"]))
        if known.get("editors") is not None:
            known["editors"] = EditorsRecord.from_dict(known["editors"])
        if known.get("spreadsheet_changes") is not None:
            known["spreadsheet_changes"] = [TextChange(**t) for t in known["spreadsheet_changes"]]
        if known.get("judge") is not None:
            known["judge"] = Judgement.of(known["judge"])
        return cls(**known)
