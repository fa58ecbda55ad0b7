"""Prefect flow ``learning-curve``: baselines, then every (size, seed) run, then the table and the plot.

:func:`nlsim.training.learning_curve.run_learning_curve` runs the steps (finished points are read back, not
retrained, so a stopped flow resumes); this flow makes each a task, keeps a progress artifact of the curve's
points (``learning-curve-points``: done of all, updated as each ends) besides those of its long steps
(:func:`flows.orchestration.progress_artifacts`), and publishes the table and the plot.
Its parameters are the fields of :class:`nlsim.training.config.LearningCurveConfig`. Run it without a
server::

    python -m flows.learning_curve --pairs annotations/thucnews_tw_pairs.tsv --out reports/learning-curve
"""

from __future__ import annotations

import base64
import sys
from typing import Any

from prefect.artifacts import create_markdown_artifact, create_table_artifact

from flows.orchestration import (
    config_flow,
    fail,
    progress_artifact,
    progress_artifacts,
    run_from_command_line,
    task_call,
)
from nlsim.commands.learning_curve import add_learning_curve_options
from nlsim.errors import NlsimError
from nlsim.orchestration import Call
from nlsim.training.config import LearningCurveConfig
from nlsim.training.learning_curve import run_learning_curve

POINTS_KEY = "learning-curve-points"
POINT_STEP = "train-point"
"""The step of one point of the curve (trained, or read back when a run before finished it)."""


def counting_points(total: int) -> Call:
    """:func:`task_call`, keeping the progress artifact :data:`POINTS_KEY`: the points of the curve done
    of ``total``, made at 0 and updated as each point's step ends."""
    artifact = progress_artifact(None, 0.0, POINTS_KEY, _points(0, total))
    done = 0

    def call(name: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        nonlocal artifact, done
        result = task_call(name, fn, *args, **kwargs)
        if name == POINT_STEP:
            done += 1
            artifact = progress_artifact(
                artifact, 100.0 * done / max(total, 1), POINTS_KEY, _points(done, total)
            )
        return result

    return call


def _points(done: int, total: int) -> str:
    """The points' progress artifact's description."""
    return f"points of the curve: {done} of {total}"


def _body(**params: Any) -> Any:
    config = LearningCurveConfig(**params)
    try:
        with progress_artifacts("learning-curve"):
            res = run_learning_curve(config, call=counting_points(len(config.sizes) * len(config.seeds)))
    except NlsimError as exc:
        return fail(f"{type(exc).__name__}: {exc}")
    create_table_artifact(
        res.summary.round(4).to_dict("records"),
        key="learning-curve-table",
        description="test metrics per training size (mean and sd over seeds)",
    )
    png = base64.b64encode(res.plot_path.read_bytes()).decode()
    create_markdown_artifact(
        f"{res.table_md}\n\n![learning curve](data:image/png;base64,{png})\n\nPlot file: `{res.plot_path}`",
        key="learning-curve-plot",
        description="learning curve plot",
    )
    print(res.table_md)
    return {"table": str(res.table_path), "plot": str(res.plot_path), "points": len(res.rows)}


learning_curve_flow = config_flow(
    _body,
    (LearningCurveConfig,),
    name="learning-curve",
    description="Test Spearman against training size (mean +/- sd over seeds), with the baselines.",
)


def main(argv: list[str] | None = None) -> int:
    return run_from_command_line(
        learning_curve_flow,
        "python -m flows.learning_curve",
        add_learning_curve_options,
        (LearningCurveConfig,),
        argv,
    )


if __name__ == "__main__":
    sys.exit(main())
