"""Shared fixtures. Prefect settings are fixed here, before any test imports prefect."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# made here, removed when the session ends; a pytest-xdist worker makes its own rather than take the one the
# controlling process made (and passed down in the environment)
MADE_HOME = "NLSIM_TEST_MADE_PREFECT_HOME"
if "PREFECT_HOME" not in os.environ or os.environ.get(MADE_HOME) == os.environ["PREFECT_HOME"]:
    os.environ["PREFECT_HOME"] = os.environ[MADE_HOME] = tempfile.mkdtemp(prefix="nlsim-prefect-home-")
    atexit.register(shutil.rmtree, os.environ["PREFECT_HOME"], ignore_errors=True)
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# run by pytest-xdist (`pytest -n N`: N workers, each its own process importing this file, so each gets
# its own PREFECT_HOME and NLSIM_HOME below and its own temporary folders from pytest): the machine's cores
# are shared out, so that N workers each using every core do not oversubscribe it. Set before torch (and
# faiss) is imported, and inherited by the commands the tests run in subprocesses, so that results compared
# across processes (the kill tests) are computed with the same thread count.
XDIST_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if XDIST_WORKERS > 1 and "OMP_NUM_THREADS" not in os.environ:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    os.environ["OMP_NUM_THREADS"] = str(max(1, cores // XDIST_WORKERS))
# the inference path is chosen from cached speed probes only (tests that probe say so): no timing noise
os.environ.setdefault("NLSIM_PROBE", "cached")
# the tests' reports, states and models are thrown away: what they write is not flushed to disk before it is
# renamed into place (the flushes took about a third of the time of a module of daily runs), unless the
# caller asks for it (NLSIM_FSYNC=on); tests/io/test_atomic.py checks the flushes themselves
os.environ.setdefault("NLSIM_FSYNC", "off")
# a temporary nlsim home for the whole session, whatever the shell set: converted models, caches, quality
# checks and probes written by the tests (and by the commands they run) never reach the user's own
# (~/.cache/nlsim); it goes when the session ends
TEST_HOME = tempfile.mkdtemp(prefix="nlsim-test-home-")
os.environ["NLSIM_HOME"] = TEST_HOME
atexit.register(shutil.rmtree, TEST_HOME, ignore_errors=True)

FAST_MODEL = "paraphrase-MiniLM-L3-v2"

CPU_FEATURE_MODULES = (
    "tests/commands/test_training_commands.py",
    "tests/dedup/test_run.py",
    "tests/encoders/test_onnx_backend.py",
    "tests/encoders/test_precision.py",
    "tests/rerank/test_cross_encoder.py",
    "tests/rerank/test_reranker.py",
    "tests/training/test_mixed_precision.py",
    "tests/training/test_validation.py",
)
"""Test modules whose outcome depends on the CPU's instruction sets (which inference paths are checked,
which precision trains): marked ``cpu_features``, and run a second time by ``test.sh`` with the flags of an
avx2-only CPU (``NLSIM_CPU_FLAGS="avx avx2 fma"``), so that no kind of CPU breaks the suite unseen."""


SLOWEST_FIRST = (
    "tests/flows/test_deployments.py",
    "tests/hostile/test_bad_inputs.py",
    "tests/dedup/test_faults.py",
    "tests/chain/test_chain.py",
    "tests/flows/test_dedup_distributed.py",
    "tests/training/test_side_by_side.py",
    "tests/dedup/test_daily.py",
    "tests/encoders/test_precision.py",
    "tests/flows/test_finetune_flow.py",
    "tests/io/test_model_store.py",
    "tests/flows/test_alerts.py",
    "tests/report/test_review_page.py",
    "tests/dedup/test_run.py",
    "tests/flows/test_ephemeral.py",
    "tests/chain/test_readme_figures.py",
    "tests/dedup/test_state.py",
    "tests/rerank/test_reranker.py",
    "tests/report/test_report_files.py",
    "tests/flows/test_operations.py",
    "tests/hostile/test_refusals.py",
    "tests/rerank/test_cross_encoder.py",
)
"""The slowest test modules, slowest first (each one's time in a two-worker run of the suite, 2026-12-01:
from about 240 s for the served deployments down to about 40 s; docs/measurements.md, "The test suite"),
moved to the head of the collection; the other modules keep their order after them. pytest-xdist's workers
(``test.sh``: ``--dist loadfile --no-loadscope-reorder``) take one module at a time in this order, so they
start the long modules first and end on short ones, and neither waits long for the other at the end.
xdist's own order (most tests first) put the few-test modules last, the slowest among them: the 4 tests of
the deployments, 240 s, ran while the other worker had little or nothing left to do."""


def _module(item: pytest.Item) -> str:
    return Path(str(item.fspath)).resolve().relative_to(ROOT).as_posix()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    modules = {item.nodeid: _module(item) for item in items}
    for item in items:
        if modules[item.nodeid] in CPU_FEATURE_MODULES:
            item.add_marker(pytest.mark.cpu_features)
    rank = {module: i for i, module in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(modules[item.nodeid], len(rank)))  # stable: a module's order kept


@pytest.fixture(scope="session")
def prefect_harness() -> Iterator[None]:
    """One temporary Prefect API for the whole session (flows under test run against it)."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def fast_encoder():  # noqa: ANN201 - Encoder
    """The small English test model, loaded once, on the torch backend.

    With the default ``backend="auto"`` an encoder moves to ONNX Runtime at its first job of 1,000 texts or
    more, and ONNX's vectors differ from torch's in the last bits: a shared encoder would then give results
    that depend on which tests ran before (the kill tests compare bytes with a CLI run in a new process).
    The ONNX path has its own tests in ``tests/encoders/test_onnx_backend.py``.
    """
    from nlsim.encoders import load_encoder

    return load_encoder(FAST_MODEL, backend="torch")


@pytest.fixture(autouse=True)
def _restore_torch_threads() -> Iterator[None]:
    """Tests that train with ``threads=1`` change torch's process-wide setting; put it back after each test,
    so results compared across processes (the kill tests) are computed with the same thread count."""
    import torch

    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


SESSION_TEMP = "session-"
"""The name's prefix of the temporary folders that session-scoped fixtures make (``tmp_path_factory.mktemp(
SESSION_TEMP + name)``): they stay until the session ends, where every other fixture's folder goes when its
module ends (:func:`_module_temp_goes`)."""


@pytest.fixture(scope="module", autouse=True)
def _module_temp_goes(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    """The temporary folders made while a test module ran (its module-scoped fixtures' saved models, reports
    and corpora) go when the module ends, not when the whole session does, unless a test of the module
    failed (then they are kept to read, as a failed test's ``tmp_path`` is). A passed test's ``tmp_path``
    goes at its teardown already (``tmp_path_retention_policy``); without this, the models that module
    fixtures save piled up over the session, and a CI machine with a few GB free ran out of disk."""
    base = tmp_path_factory.getbasetemp()
    before = {p.name for p in base.iterdir()}
    failed = request.session.testsfailed
    yield
    if request.session.testsfailed != failed:
        return
    for path in base.iterdir():
        if path.name not in before and not path.name.startswith(SESSION_TEMP):
            if path.is_symlink():  # pytest's NAMEcurrent link to the newest NAME<n> folder
                path.unlink(missing_ok=True)
            else:
                shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def small_reranked_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model folder with a calibrated reranker, fine-tuned in seconds from the small English model on a
    few STS-B pairs (for the tests of what uses a reranker, not of its quality)."""
    from stsb_helpers import small_reranker_config, stsb_sample

    from nlsim.training.finetune import finetune

    out = tmp_path_factory.mktemp(SESSION_TEMP + "reranked") / "model"
    pairs = stsb_sample(train=48, validation=24, test=16)
    finetune(small_reranker_config(out), pairs=pairs, log=lambda _: None)
    return out
