"""The order rule every cluster decision rests on: earliest first by ``published_at``, undated items last,
ties by id.

A cluster's *key member* is its first member under this rule and its id is ``"c-" + key member id``, so a
cluster found by a batch run and by a series of daily runs gets the same id.

Example:
    >>> order_key_of(None, "x") > order_key_of("2030-01-01", "y")
    True
    >>> order_rank(["b", "a", "c"], pd.to_datetime(["2024-01-02", "2024-01-02", None], utc=True)).tolist()
    [1, 0, 2]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd


class OrderKey(NamedTuple):
    """An item's place under the order rule: keys sort earliest first, undated last, ties by id.

    >>> OrderKey.of_undated("b") > OrderKey(undated=0, ns=5, item_id="a")
    True
    """

    undated: int
    """1 when the item has no ``published_at`` (it sorts after every dated item), else 0."""
    ns: int
    """``published_at`` in nanoseconds since the epoch (0 when undated)."""
    item_id: str

    @classmethod
    def of_undated(cls, item_id: str) -> OrderKey:
        """The key of an undated item (or of a name known by its id alone): after every dated one."""
        return cls(1, 0, str(item_id))


CLUSTER_PREFIX = "c-"


def cluster_id_for(item_id: str) -> str:
    """The id of the cluster whose key member is ``item_id``."""
    return f"{CLUSTER_PREFIX}{item_id}"


def key_member_of(cluster_id: str) -> str:
    """The id of the key member a cluster id was made from (the inverse of :func:`cluster_id_for`).

    >>> key_member_of(cluster_id_for("x1"))
    'x1'
    """
    return cluster_id[len(CLUSTER_PREFIX) :]


def order_key_of(published_at: Any, item_id: str) -> OrderKey:
    """Order key of one item."""
    ts = pd.Timestamp(published_at) if published_at is not None else pd.NaT
    if ts is pd.NaT or pd.isna(ts):
        return OrderKey.of_undated(item_id)
    if ts.tzinfo is None:
        ts = ts.tz_localize("UTC")
    return OrderKey(0, int(ts.value), str(item_id))


def _ns(times: Any) -> tuple[np.ndarray, np.ndarray]:
    series = times if isinstance(times, pd.Series) else pd.Series(list(times), dtype=object)
    t = pd.to_datetime(series, utc=True)
    nat = t.isna().to_numpy()
    ns = t.dt.tz_convert(None).to_numpy(dtype="datetime64[ns]").astype("int64")
    return nat, ns


def order_keys(ids: Sequence[str], times: Any) -> dict[str, OrderKey]:
    """Order keys of many items (``times`` aligned with ``ids``, datetime-like, NaT allowed)."""
    nat, ns = _ns(times)
    return {
        str(i): OrderKey.of_undated(i) if n else OrderKey(0, int(v), str(i))
        for i, n, v in zip(ids, nat, ns, strict=True)
    }


def order_rank(ids: Sequence[str], times: Any) -> np.ndarray:
    """Rank of each row under the order rule (0 = first)."""
    nat, ns = _ns(times)
    frame = pd.DataFrame({"nat": nat, "t": np.where(nat, 0, ns), "id": [str(i) for i in ids]})
    order = frame.sort_values(["nat", "t", "id"], kind="mergesort").index.to_numpy()
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return rank
