"""Flow ``learning-curve`` on a tiny curve: table, plot, and a rerun that trains nothing."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from stsb_helpers import write_stsb_sample

from nlsim.training.config import LearningCurveConfig


@pytest.fixture(scope="module")
def pairs_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_stsb_sample(tmp_path_factory.mktemp("lcflow"), train=8, validation=8, test=8)


@pytest.mark.slow
def test_learning_curve_flow(
    prefect_harness,
    pairs_file: Path,
    tmp_path: Path,  # noqa: ANN001
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import dataclasses

    import nlsim.training.learning_curve
    from flows.learning_curve import learning_curve_flow

    cfg = LearningCurveConfig(
        pairs=str(pairs_file),
        out=str(tmp_path / "lc"),
        sizes=(4, 8),
        seeds=(1,),
        baselines=("tfidf-char2",),
        model="paraphrase-MiniLM-L3-v2",
        conversion="none",
        epochs=1,
        batch_size=4,
        max_length=32,
        threads=1,
    )
    state = learning_curve_flow(**dataclasses.asdict(cfg), return_state=True)
    first = state.result()
    assert first["points"] == 2
    # a progress artifact of the curve's points, as the other long flows keep one of their steps
    points = [a for a in run_artifacts(state) if a.key == "learning-curve-points"]
    assert [(a.type, a.data, a.description) for a in points] == [
        ("progress", 100.0, "points of the curve: 2 of 2")
    ]
    assert Path(first["plot"]).read_bytes()[:4] == b"\x89PNG"
    assert "| 8 | 1 |" in Path(first["table"]).read_text(encoding="utf-8")

    def no_training(*a, **k):  # noqa: ANN002, ANN003, ANN202
        raise AssertionError("a finished point was retrained")

    monkeypatch.setattr(nlsim.training.learning_curve, "finetune", no_training)
    assert learning_curve_flow(**dataclasses.asdict(cfg))["points"] == 2


def run_artifacts(state: Any) -> list[Any]:
    """The artifacts of the flow run whose final state is ``state``."""
    import asyncio

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    async def read() -> list[Any]:
        async with get_client() as client:
            run = ArtifactFilterFlowRunId(any_=[state.state_details.flow_run_id])
            return await client.read_artifacts(artifact_filter=ArtifactFilter(flow_run_id=run))

    return asyncio.run(read())


def test_list_parameters_written_as_on_the_command_line_are_the_lists_they_name() -> None:
    """`prefect deployment run 'learning-curve/manual' --param sizes=350,700` (the schema takes "a,b,c", as
    the command line writes it): the sizes 350 and 700, not the characters of the text (refused as "a value
    twice", a seed "," a traceback, a baseline 'z' unknown)."""
    from flows.learning_curve import learning_curve_flow
    from nlsim.errors import ConfigError

    given = {"sizes": "350,700", "seeds": "1, 2", "baselines": "zero-shot,tfidf-char2"}
    params = learning_curve_flow.validate_parameters({"pairs": "p.tsv", "out": "lc", **given})
    cfg = LearningCurveConfig(**params)
    assert (cfg.sizes, cfg.seeds, cfg.baselines) == ((350, 700), (1, 2), ("zero-shot", "tfidf-char2"))
    assert LearningCurveConfig(**{**params, "baselines": ""}).baselines == ()
    with pytest.raises(ConfigError, match="--seeds: 'x' is not a whole number"):
        LearningCurveConfig(**{**params, "seeds": "1,x"})
    # an empty item was dropped: "350,,700" ran the curve at 350 and 700 without a word
    with pytest.raises(ConfigError, match="--sizes: '350,,700' has an empty item"):
        LearningCurveConfig(**{**params, "sizes": "350,,700"})


def _ctrl_c_as_in_a_terminal() -> None:
    """A command started in the background ignores SIGINT; a terminal's Ctrl-C finds its default handler."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _running(process: Any) -> bool:
    """Whether ``process`` (a :class:`psutil.Process`) still runs: a zombie has ended."""
    import psutil

    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.mark.slow
@pytest.mark.parametrize(
    ("sig", "status", "said"),
    [(signal.SIGTERM, 143, "stopped (SIGTERM)"), (signal.SIGINT, 130, "interrupted")],
    ids=["sigterm", "ctrl-c"],
)
def test_a_flow_command_stopped_mid_curve_ends_in_one_line_and_stops_its_temporary_server(
    pairs_file: Path, tmp_path: Path, sig: signal.Signals, status: int, said: str
) -> None:
    """``python -m flows.learning_curve`` stopped after its first point, as ``nlsim`` is: by ``kill`` (a
    scheduler's timeout) it died at once, Prefect's temporary API server left running for good, holding its
    port and memory; by Ctrl-C it ended in a traceback of Prefect's. Either now ends in one line and the
    status ``nlsim`` gives, after the server is stopped; the point written is kept for the resume."""
    import psutil

    from tests.flows.test_ephemeral import clean_env

    out = tmp_path / "lc"
    args = ["--pairs", str(pairs_file), "--out", str(out), "--sizes", "4,8", "--seeds", "1,2"]
    args += ["--baselines", "tfidf-char2", "--model", "paraphrase-MiniLM-L3-v2", "--convert", "none"]
    args += ["--epochs", "1", "--batch-size", "4", "--max-length", "32", "--threads", "1"]
    log = tmp_path / "stderr.txt"  # a file, not a pipe: a server left running would hold a pipe open
    with log.open("w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "flows.learning_curve", *args],
            env=clean_env(tmp_path / "home"),
            stdout=subprocess.DEVNULL,
            stderr=err,
            cwd=tmp_path,
            preexec_fn=_ctrl_c_as_in_a_terminal,
        )
    try:
        deadline = time.monotonic() + 300
        while not (out / "runs" / "size4_seed1.json").is_file():
            assert proc.poll() is None and time.monotonic() < deadline, "no point written"
            time.sleep(0.05)
        children = psutil.Process(proc.pid).children(recursive=True)
        assert children, "no temporary server"
        proc.send_signal(sig)
        proc.wait(timeout=120)
        _, left = psutil.wait_procs(children, timeout=30)
        alive = [c for c in left if _running(c)]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    for child in alive:  # the test's own leftovers go (by their ids)
        child.kill()
    stderr = log.read_text(encoding="utf-8")
    assert not alive, f"the temporary server outlived the command: {[c.pid for c in alive]}"
    assert proc.returncode == status, stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    ends = [line for line in stderr.splitlines() if line.startswith("python -m flows.learning_curve:")]
    assert ends == [f"python -m flows.learning_curve: {said}"], stderr[-3000:]
    assert (out / "runs" / "size4_seed1.json").is_file()


@pytest.mark.slow
@pytest.mark.parametrize("where", ["in-a-finalizer", "in-an-import"])
def test_a_sigterm_that_lands_in_an_import_or_a_finalizer_during_a_flow_run_still_stops_the_command(
    where: str, tmp_path: Path
) -> None:
    """During a flow run Prefect's engine takes SIGTERM (its exception ends the run Crashed, then it hands
    the signal on to the command's handler), and its handler raised wherever the main thread was: as the
    import machinery took the import lock, the command stopped but its exit waited for ever on Prefect's
    threads, which import as they go (``python -m flows.learning_curve`` stopped mid-curve did not end in
    120 s); in a finalizer, Python dropped the exception and the curve ran to its end, exit 0. Both now stop
    the command (:func:`tests.commands.test_cli.stopped_where`)."""
    from tests.commands.test_cli import stopped_where

    stopping = "from flows.orchestration import sigterm_stops_the_flow_run as stopping\n"
    stopping += "from prefect.utilities.engine import capture_sigterm"
    run = "with capture_sigterm(): stopped_run()"
    assert stopped_where(where, tmp_path, stopping=stopping, run=run) == [
        "stopped by Terminated",
        "another thread's import goes on",
    ]


def test_a_run_that_failed_after_a_sigterm_ends_as_stopped() -> None:
    """SIGTERM landing as Prefect created a task run made its crash handling fail ("ValueError: Task run is
    not set"): the run ended Failed, and the stopped command said that error and exit 1. A run that did not
    complete after a SIGTERM came ends as a stopped one (143, one line); one that completed, or failed with
    no SIGTERM, ends as it did."""
    from prefect.states import Completed, Failed

    from flows.orchestration import stopped_by_sigterm
    from nlsim.cli import Terminated

    failed = Failed(message="Flow run encountered an exception: ValueError: Task run is not set")
    with pytest.raises(Terminated):
        stopped_by_sigterm(failed, [signal.SIGTERM])
    assert stopped_by_sigterm(failed, []) is failed
    done = Completed()
    assert stopped_by_sigterm(done, [signal.SIGTERM]) is done


def test_a_flow_main_called_with_its_options_and_stopped_keeps_the_callers_process(monkeypatch) -> None:
    """A stopped flow command's exit is bounded (:func:`nlsim.cli.exit_within`: the process ends 30 s after
    its stop line at the latest); a program that calls a flow's ``main(argv)`` and is stopped by Ctrl-C
    keeps its process: the bound is armed for the process's own command line alone."""
    import flows.orchestration as orchestration

    armed: list[int] = []
    monkeypatch.setattr(orchestration, "exit_within", lambda status, **kw: armed.append(status))

    class Stopped:  # a flow whose run is stopped by Ctrl-C
        description = "a flow"

        def __call__(self, **params: Any) -> Any:
            raise KeyboardInterrupt

    status = orchestration.run_from_command_line(Stopped(), "python -m flows.x", lambda p: None, (), [])
    assert (status, armed) == (130, [])
