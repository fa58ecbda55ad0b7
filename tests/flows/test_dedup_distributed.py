"""flows/dedup_distributed.py: the Dask-sharded flow gives the single-process embeddings and report."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

FAST_MODEL = "paraphrase-MiniLM-L3-v2"


def test_task_runner_choice() -> None:
    from flows.dedup_distributed import DaskOptions, make_task_runner

    remote = make_task_runner(DaskOptions(dask_address="tcp://10.0.0.5:8786"))
    assert remote.address == "tcp://10.0.0.5:8786"
    local = make_task_runner(DaskOptions(n_workers=3, threads_per_worker=2))
    assert local.address is None
    assert local.cluster_kwargs["n_workers"] == 3 and local.cluster_kwargs["threads_per_worker"] == 2
    assert local.cluster_kwargs["processes"] is True


@pytest.mark.parametrize("flag", ["--n-workers", "--threads-per-worker", "--shard-size"])
def test_a_count_below_one_is_refused_before_any_work(tmp_path, capsys, flag: str) -> None:
    from flows.dedup_distributed import main

    out = tmp_path / "rep"
    with pytest.raises(SystemExit) as exited:
        main(["--corpus", str(tmp_path / "news.csv"), "--out", str(out), flag, "0"])
    assert exited.value.code == 2
    assert f"{flag} must be >= 1, got 0" in capsys.readouterr().err
    assert not out.exists()


def test_n_workers_beside_a_dask_address_is_refused_before_any_work(tmp_path, capsys) -> None:
    """An existing cluster has the workers it has: --n-workers beside its address was silently ignored."""
    from flows.dedup_distributed import DaskOptions, main

    out = tmp_path / "rep"
    argv = [
        "--corpus",
        str(tmp_path / "news.csv"),
        "--out",
        str(out),
        "--dask-address",
        "tcp://10.0.0.5:8786",
    ]
    with pytest.raises(SystemExit) as exited:
        main([*argv, "--n-workers", "8"])
    assert exited.value.code == 2
    assert "--n-workers 8 does nothing with --dask-address tcp://10.0.0.5:8786" in capsys.readouterr().err
    assert not out.exists()
    assert DaskOptions().local_workers == 2 and DaskOptions(n_workers=5).local_workers == 5


@pytest.mark.parametrize(("where", "words"), [("none", "missing"), ("file.txt", "a file")])
def test_a_shared_dir_that_is_not_a_folder_is_refused_before_any_work(tmp_path, capsys, where, words) -> None:
    """The search tasks write into it after the whole embedding: it failed there, with a traceback."""
    from flows.dedup_distributed import main

    (tmp_path / "file.txt").write_text("notes")
    out = tmp_path / "rep"
    with pytest.raises(SystemExit) as exited:
        main(
            ["--corpus", str(tmp_path / "news.csv"), "--out", str(out), "--shared-dir", str(tmp_path / where)]
        )
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert f"--shared-dir {tmp_path / where}: {words}" in err and "Traceback" not in err, err
    assert not out.exists() and (tmp_path / "file.txt").read_text() == "notes"


@pytest.mark.slow
def test_a_scheduler_that_does_not_answer_is_refused_before_any_work(
    prefect_harness, repo_root, tmp_path, capsys
) -> None:
    """It was found by the first shard's task, 30 s after the corpus was read and the model loaded, and said
    with a traceback (exit status 1)."""
    import socket

    from flows.dedup_distributed import main

    corpus = tmp_path / "news.parquet"
    pd.read_parquet(repo_root / "data/bbc.parquet").iloc[:50].to_parquet(corpus)
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        address = f"tcp://127.0.0.1:{s.getsockname()[1]}"
    out = tmp_path / "rep"
    argv = ["--corpus", str(corpus), "--out", str(out), "--model", FAST_MODEL, "--threshold", "0.9"]
    assert main([*argv, "--dask-address", address]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"python -m flows.dedup_distributed: error: --dask-address {address}: no Dask")
    assert not out.exists()


def _check_in_thread(address: str, timeout: float, wait: float = 30.0) -> BaseException | None:
    """``check_scheduler(address, timeout)`` in a thread: what it raised (``None``: it accepted); a check
    still running after ``wait`` seconds fails the test instead of hanging it."""
    import threading

    from flows.dedup_distributed import check_scheduler

    raised: list[BaseException | None] = []

    def knock() -> None:
        try:
            check_scheduler(address, timeout=timeout)
            raised.append(None)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            raised.append(exc)

    thread = threading.Thread(target=knock, daemon=True)
    thread.start()
    thread.join(wait)
    assert not thread.is_alive(), f"check_scheduler({address!r}) still waits after {wait} s"
    return raised[0]


def test_an_address_that_takes_the_connection_but_never_answers_is_refused_in_time() -> None:
    """A port where something else listens (a web server, the dashboard's port) takes the connection and
    never answers Dask's handshake: the check waited for ever, and so did the run."""
    import socket

    from nlsim.errors import ConfigError

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        address = f"tcp://127.0.0.1:{s.getsockname()[1]}"
        raised = _check_in_thread(address, timeout=1)
    assert isinstance(raised, ConfigError), raised
    assert str(raised).startswith(f"--dask-address {address}: no Dask scheduler answers")


def test_a_scheduler_is_accepted_and_a_worker_address_refused() -> None:
    """The address must be the scheduler's: a worker's answers Dask's handshake too, and the run would
    then have waited on it for a scheduler's replies."""
    from distributed import LocalCluster

    from nlsim.errors import ConfigError

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        assert _check_in_thread(cluster.scheduler_address, timeout=5) is None
        worker = next(iter(cluster.scheduler_info["workers"]))
        raised = _check_in_thread(worker, timeout=5)
    assert isinstance(raised, ConfigError), raised
    assert f"--dask-address {worker}: " in str(raised) and "not a Dask scheduler" in str(raised), raised


def test_a_model_folder_given_by_a_relative_path_reaches_the_workers_by_its_full_path(
    tmp_path, monkeypatch
) -> None:
    """``--model models/versions/V`` (or ``--model current`` with the default store ``models``): the tasks
    named the folder as given, and a worker of another folder (``dask worker`` started elsewhere, the model
    store mounted at the same path as the docs ask) looked for it under its own folder and failed."""
    from pathlib import Path
    from types import SimpleNamespace

    from flows.dedup_distributed import model_ref

    (tmp_path / "models" / "versions" / "v1").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    folder = SimpleNamespace(name="v1", path=Path("models/versions/v1"))
    assert model_ref(folder) == str((tmp_path / "models" / "versions" / "v1").resolve())
    assert model_ref(SimpleNamespace(name="org/model", path="org/model")) == "org/model"  # a hub name
    assert model_ref(SimpleNamespace(name=FAST_MODEL, path=Path("elsewhere"))) == FAST_MODEL


def test_embed_shard_task_equals_encoder(fast_encoder) -> None:
    from flows.dedup_distributed import embed_shard_task

    texts = ["Floods in the north", "Storm warning for the coast", "Markets fall"]
    got = embed_shard_task.fn(texts, FAST_MODEL, batch_size=2, threads=1)
    np.testing.assert_allclose(got, fast_encoder.encode(texts, progress=False), atol=1e-5)


def test_the_workers_embed_on_the_runs_inference_path(monkeypatch) -> None:
    """``--precision int8`` (or ``--backend``): the workers loaded the model with the defaults and embedded
    in fp32, while run.json said int8 and ``nlsim dedup`` with the same options embedded in int8 (another
    report: 134 pairs instead of 129 on 300 THUCNews items). The shards now run on the path the run
    settled, in the flow's own process as in ``nlsim dedup``."""
    from types import SimpleNamespace

    import flows.dedup_distributed as dd
    from nlsim.dedup import stages
    from nlsim.dedup.sharded import embed_shard
    from nlsim.encoders import load_encoder

    def in_process(kind: str, jobs: list[dict]) -> list:  # the shards' tasks, run here
        return [embed_shard(*job["args"], **job["kwargs"]) for job in jobs]

    monkeypatch.setattr(dd, "run_shards", SimpleNamespace(with_options=lambda **_: in_process))
    texts = [
        "Floods in the north",
        "Storm warning for the coast",
        "Markets fall",
        "Rain again",
        "Banks rally",
    ]
    model = SimpleNamespace(encoder=load_encoder(FAST_MODEL, backend="torch", precision="int8"))
    plan = stages.EmbedPlan(batch_size=2, progress=False)
    want, _ = stages.embed(texts, model, plan)
    got, _ = dd.dask_call(dd.DaskOptions(shard_size=2))("embed", stages.embed, texts, model, plan)
    fp32 = load_encoder(FAST_MODEL, backend="torch").encode(texts, progress=False)
    assert np.abs(want - fp32).max() > 1e-3  # int8 is not fp32: the comparison below can tell them apart
    np.testing.assert_allclose(got, want, atol=1e-5)


def test_every_local_worker_gets_a_share_of_each_embedding_call(monkeypatch, fast_encoder) -> None:
    """A daily run embeds 512 texts at a time, and a batch run of fewer texts than --shard-size (2,000) in
    one call: each call was one task, so one worker embedded while the others waited. Each call is now cut
    into at least one shard per local worker (at most --shard-size texts each), and the vectors are the
    same."""
    from types import SimpleNamespace

    import flows.dedup_distributed as dd
    from nlsim.dedup import stages
    from nlsim.dedup.sharded import embed_shard

    sizes: list[list[int]] = []

    def in_process(kind: str, jobs: list[dict]) -> list:
        sizes.append([len(job["args"][0]) for job in jobs])
        return [embed_shard(*job["args"], **job["kwargs"]) for job in jobs]

    monkeypatch.setattr(dd, "run_shards", SimpleNamespace(with_options=lambda **_: in_process))
    texts = [f"Storm warning number {i} for the coast" for i in range(11)]
    model = SimpleNamespace(encoder=fast_encoder)
    plan = stages.EmbedPlan(chunk=5, progress=False)  # a daily run's chunks, smaller
    call = dd.dask_call(dd.DaskOptions(n_workers=2, shard_size=2000))
    got, _ = call("embed", stages.embed, texts, model, plan)
    assert sizes == [[3, 2], [3, 2], [1]]
    np.testing.assert_allclose(got, fast_encoder.encode(texts, progress=False), atol=1e-5)
    sizes.clear()
    remote = dd.dask_call(dd.DaskOptions(dask_address="tcp://10.0.0.5:8786", shard_size=4))
    remote("embed", stages.embed, texts, model, stages.EmbedPlan(progress=False))
    assert sizes == [[4, 4, 3]]  # a cluster of unknown size: --shard-size as given


@pytest.mark.slow
@pytest.mark.parametrize("fails", [False, True], ids=["completed", "failed"])
def test_one_local_cluster_serves_the_whole_run_and_is_stopped_after_it(
    prefect_harness, repo_root, tmp_path, monkeypatch, fails: bool
) -> None:
    """Without --dask-address every stage the run shards ran on a task runner that started a local cluster
    of its own (the embedding, then the search; a daily run one for every 512 texts), whose workers loaded
    the model again each time; the docs say one, started for the run and stopped after it, failed or not.
    Here the cluster is a stand-in and the shards run in this process: what is checked is where the run
    sends them."""
    from types import SimpleNamespace

    import distributed

    import flows.dedup_distributed as dd
    from nlsim.dedup.sharded import embed_shard, search_shard
    from nlsim.errors import ConfigError

    started: list[SimpleNamespace] = []

    def cluster(**kwargs) -> SimpleNamespace:
        made = SimpleNamespace(scheduler_address=f"tcp://127.0.0.1:{9000 + len(started)}", closed=False)
        made.close = lambda: setattr(made, "closed", True)
        started.append(made)
        return made

    runners: list = []

    def with_options(task_runner) -> object:
        runners.append(task_runner)
        return lambda kind, jobs: [
            (embed_shard if kind == "embed" else search_shard)(*job["args"], **job["kwargs"]) for job in jobs
        ]

    monkeypatch.setattr(distributed, "LocalCluster", cluster)
    monkeypatch.setattr(dd, "run_shards", SimpleNamespace(with_options=with_options))
    if fails:

        def broken(frames: list) -> None:
            raise ConfigError("the search shards could not be merged")

        monkeypatch.setattr(dd, "merge_pairs", broken)
    corpus = tmp_path / "news.parquet"
    pd.read_parquet(repo_root / "data/bbc.parquet").iloc[:40].to_parquet(corpus)
    state = dd.news_dedup_distributed(
        corpus=str(corpus),
        out=str(tmp_path / "rep"),
        model=FAST_MODEL,
        convert="none",
        threshold=0.9,
        text_fields="title",
        cache=False,
        n_workers=1,
        shard_size=20,
        return_state=True,
    )
    assert state.is_failed() == fails, state.message
    assert len(runners) == 2  # the embedding's shards, the search's
    assert len(started) == 1, f"{len(started)} local clusters for one run"
    assert [r.address for r in runners] == [started[0].scheduler_address] * 2
    assert started[0].closed


@pytest.fixture()
def small_corpus(tmp_path, repo_root):
    frame = pd.read_parquet(repo_root / "data" / "bbc.parquet")
    # 160 items plus 40 that share a title with another (real duplicates in the BBC set)
    dup = frame[frame.duplicated("title", keep=False)].head(40)
    rest = frame.drop(dup.index).head(160)
    part = pd.concat([rest, dup]).reset_index(drop=True)
    path = tmp_path / "news.parquet"
    part.to_parquet(path, index=False)
    return path


@pytest.mark.slow
def test_two_worker_cluster_matches_single_process(
    prefect_harness, small_corpus, tmp_path, fast_encoder
) -> None:
    from flows.dedup_distributed import news_dedup_distributed
    from nlsim.dedup.config import DedupConfig
    from nlsim.dedup.run import run_dedup

    common = dict(
        corpus=str(small_corpus),
        model=FAST_MODEL,
        convert="none",
        threshold=0.9,
        text_fields="title",
        k=5,
        cache=False,
    )
    config = DedupConfig.of(out=str(tmp_path / "single"), progress=False, **common)
    single = run_dedup(config, encoder=fast_encoder)
    summary = news_dedup_distributed(out=str(tmp_path / "dask"), n_workers=2, shard_size=60, **common)
    assert summary["embedding_runner"].startswith("local Dask cluster, 2 workers")
    a = np.load(tmp_path / "single" / "index" / "embeddings.npy")
    b = np.load(tmp_path / "dask" / "index" / "embeddings.npy")
    assert a.shape == b.shape == (200, 384)
    np.testing.assert_allclose(a, b, atol=2e-5)
    for name in ("pairs.parquet", "clusters.parquet"):
        pa, pb = pd.read_parquet(single.out / name), pd.read_parquet(tmp_path / "dask" / name)
        assert len(pa) > 0
        pd.testing.assert_frame_equal(pa, pb, check_exact=False, atol=1e-4)
    assert summary["pairs"] == len(single.pairs) and summary["clusters"] == len(single.clusters)


@pytest.mark.slow
def test_a_separate_scheduler_and_two_worker_processes_give_the_single_process_report(
    prefect_harness, small_corpus, tmp_path, fast_encoder
) -> None:
    """Past one machine, on one: `dask scheduler` and two `dask worker` processes on 127.0.0.1, the flow
    pointed at the scheduler's address (as an operator points it at theirs); the shards run on those
    workers (the search tasks get the index as bytes: no shared folder), and the report is the one a single
    process writes."""
    from distributed import Client

    from flows.dedup_distributed import news_dedup_distributed
    from nlsim.dedup.config import DedupConfig
    from nlsim.dedup.run import run_dedup
    from tests.flows.dask_cluster import DaskCluster

    common = dict(
        corpus=str(small_corpus),
        model=FAST_MODEL,
        convert="none",
        threshold=0.9,
        text_fields="title",
        k=5,
        cache=False,
    )
    single = run_dedup(
        DedupConfig.of(out=str(tmp_path / "single"), progress=False, **common), encoder=fast_encoder
    )
    with DaskCluster(tmp_path / "cluster", workers=2) as cluster:
        summary = news_dedup_distributed(
            out=str(tmp_path / "dask"), dask_address=cluster.address, shard_size=60, **common
        )
        with Client(cluster.address, timeout=30) as client:
            ran = client.run(lambda: "nlsim.dedup.sharded" in __import__("sys").modules)
            workers = client.scheduler_info()["workers"]
    assert summary["embedding_runner"] == cluster.address
    assert len(workers) == 2 and all(addr.startswith("tcp://127.0.0.1:") for addr in workers)
    assert any(ran.values()), ran  # the shards ran in the worker processes
    a = np.load(tmp_path / "single" / "index" / "embeddings.npy")
    b = np.load(tmp_path / "dask" / "index" / "embeddings.npy")
    assert a.shape == b.shape == (200, 384)
    np.testing.assert_allclose(a, b, atol=2e-5)
    for name in ("pairs.parquet", "clusters.parquet"):
        pa, pb = pd.read_parquet(single.out / name), pd.read_parquet(tmp_path / "dask" / name)
        assert len(pa) > 0
        pd.testing.assert_frame_equal(pa, pb, check_exact=False, atol=1e-4)
    assert summary["pairs"] == len(single.pairs) and summary["clusters"] == len(single.clusters)
