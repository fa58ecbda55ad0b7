"""Deployments: ``prefect.yaml`` declares them, ``python -m flows.serve`` serves them against a real
Prefect server, ``prefect deployment run ... --watch`` completes with the same report as a direct run, and a
cron schedule fires on its own."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from flows.serve import DEFAULT_FILE, build_deployments, deployment_names, load_specs, main
from tests.command import command_env, into_a_closed_pipe
from tests.flows.prefect_server import PREFECT, ROOT, PrefectServer, stop_process
from tests.incremental_helpers import FAST_MODEL, bbc_corpus, report_content


def test_prefect_yaml_declares_the_deployments() -> None:
    specs = load_specs(DEFAULT_FILE)
    names = deployment_names(specs)
    assert names == ["news-dedup/daily", "news-pipeline/weekly", "learning-curve/manual"]
    daily = specs[0]
    (sched,) = daily["schedules"]
    assert sched["cron"] and sched["timezone"] and sched["active"]
    assert {"corpus", "state", "out", "model", "timezone"} <= set(daily["parameters"])
    # the editors' verdicts act on the daily clusters: the deployment names the pair file they sit beside
    pairs = ROOT / daily["parameters"]["annotated_pairs"]
    assert pairs.is_file() and daily["parameters"]["annotated_pairs"] == "annotations/thucnews_tw_pairs.tsv"
    assert daily["concurrency_limit"]["limit"] == 1
    deployments = build_deployments(specs)
    by_name = {f"{d.flow_name}/{d.name}": d for d in deployments}
    assert by_name["news-dedup/daily"].schedules[0].schedule.timezone == sched["timezone"]
    assert by_name["learning-curve/manual"].schedules == []
    assert by_name["news-dedup/daily"].parameters["state"] == daily["parameters"]["state"]
    assert by_name["news-dedup/daily"].concurrency_limit == 1


def test_every_prefect_deploy_the_docs_give_sets_the_repository_the_runs_start_in() -> None:
    """prefect.yaml's pull step starts each run in ``{{ $NLSIM_REPO }}``, which ``prefect deploy`` fills in
    from its environment (else the worker's, at each run); its own header said ``prefect deploy --all``
    without it, and every run a worker started without it crashed (``os.chdir('')``)."""
    import re

    (step,) = yaml.safe_load(DEFAULT_FILE.read_text())["pull"]
    assert step["prefect.deployments.steps.set_working_directory"]["directory"] == "{{ $NLSIM_REPO }}"
    for path in (DEFAULT_FILE, ROOT / "README.md", ROOT / "docs" / "operations.md"):
        for line in path.read_text(encoding="utf-8").splitlines():
            for command in re.findall(r"`([^`]*prefect deploy\b[^`]*)`", line):
                assert command.startswith("NLSIM_REPO=$PWD prefect deploy"), f"{path.name}: {line}"


def test_the_readme_gives_each_schedule_with_its_time_zone() -> None:
    """The README's table of deployments said the weekly run starts 'Mondays 03:00': a reader on UTC read
    03:00 UTC, where prefect.yaml starts it at 03:00 Asia/Taipei (19:00 UTC on Sundays)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    for name, spec in zip(deployment_names(load_specs()), load_specs(), strict=True):
        for schedule in spec.get("schedules") or []:
            (row,) = [line for line in readme if line.startswith(f"| `{name}` |")]
            assert schedule["timezone"] in row.rsplit("|", 2)[-2], row


def test_prefect_yaml_parameters_are_config_fields() -> None:
    """prefect.yaml only gives values: every parameter is a field of the flow's configuration."""
    specs = load_specs(DEFAULT_FILE)
    for spec, deployment in zip(specs, build_deployments(specs), strict=True):
        schema = deployment._parameter_openapi_schema.model_dump_for_openapi()["properties"]
        assert set(spec.get("parameters") or {}) <= set(schema), spec["name"]
    daily = build_deployments(specs[:1])[0]._parameter_openapi_schema.model_dump_for_openapi()["properties"]
    assert daily["convert"]["enum"] == ["none", "s2t", "t2s", "s2twp", "tw2sp"]
    assert daily["index_kind"]["enum"] == ["auto", "flat", "ivf", "hnsw"]
    assert "OpenCC" in daily["convert"]["description"]


ENTRY = "deployments:\n- name: x\n  entrypoint: flows/dedup.py:news_dedup\n"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("deployments:\n- name: x\n  entrypoint: flows/nope.py:f\n", "nope.py does not exist"),
        ("deployments:\n- name: x\n  entrypoint: flows/dedup.py\n", "give FILE.py:FUNCTION"),
        ("deployments:\n- name: x\n  entrypoint: flows/dedup.py:nothing\n", "cannot be loaded"),
        (ENTRY + "  schedules:\n  - cron: 'not a cron'\n", "schedule 1: Invalid cron string"),
        (ENTRY + "  schedules:\n  - corn: '0 3 * * *'\n", "give either 'cron' or 'interval'"),
        (ENTRY + "  schedules:\n  - cron: '0 3 * * *'\n    timezone: Mars/Base\n", "unknown time zone"),
        (  # the machine's own zone: the schedule would move with the host that serves it
            ENTRY + "  schedules:\n  - cron: '0 3 * * *'\n    timezone: localtime\n"
            "  parameters:\n    corpus: a.parquet\n    out: o\n",
            "schedule 1: timezone 'localtime' names the zone of the machine that runs it",
        ),
        (
            ENTRY + "  parameters:\n    corpus: a/{date}.parquet\n    out: o\n    timezone: localtime\n",
            "--timezone 'localtime' names the zone of the machine that runs it",
        ),
        (  # POSIX's sign: UTC-08:00, where a newsroom writing GMT+8 means Taipei's clock
            ENTRY + "  schedules:\n  - cron: '0 3 * * *'\n    timezone: Etc/GMT+8\n",
            "schedule 1: timezone 'Etc/GMT+8' is UTC-08:00, 8 hours behind UTC",
        ),
        (  # New York's clock names EST, the zone database's EST is UTC-05:00 in summer too
            ENTRY + "  schedules:\n  - cron: '0 3 * * *'\n    timezone: EST\n",
            "schedule 1: timezone 'EST' is UTC-05:00 all year",
        ),
        (ENTRY + "  schedules:\n  - interval: -5\n", "'interval' must be a number of seconds > 0"),
        (  # an interval given as 0: it was told to give either 'cron' or 'interval'
            ENTRY + "  schedules:\n  - interval: 0\n",
            "schedule 1: 'interval' must be a number of seconds > 0, got 0",
        ),
        (ENTRY + "  concurrency_limit: abc\n", "concurrency_limit must be"),
        (ENTRY + "  parameters:\n    corpus: a.parquet\n    colour: red\n", "colour: not a parameter"),
        (ENTRY + "  colour: red\n", "keys not understood by serve: colour"),
        (
            ENTRY + "  parameters:\n    corpus: a.parquet\n    retention_days: 7\n",
            "retention_days does nothing while state is not set",
        ),
        (
            ENTRY + "  parameters:\n    corpus: a.parquet\n    index_kind: flat\n    nprobe: 8\n",
            "nprobe does nothing while index_kind is 'flat'",
        ),
        (
            "deployments:\n- name: x\n  entrypoint: flows/pipeline.py:news_pipeline\n  parameters:\n"
            "    report: false\n    use_gpu: true\n",
            "use_gpu does nothing while report is false",
        ),
        (  # the chain's record goes to out only with its report: none was written there
            "deployments:\n- name: x\n  entrypoint: flows/pipeline.py:news_pipeline\n  parameters:\n"
            "    report: false\n    out: reports/weekly\n",
            "out does nothing while report is false",
        ),
        (
            ENTRY + "  parameters:\n    corpus: a/{date}.parquet\n    out: o\n    timezone: Asia/Taipe\n",
            "--timezone 'Asia/Taipe': not a time zone name",
        ),
        (ENTRY + "  parameters:\n    corpus: a.parquet\n    out: o\n    k: 0\n", "--k must be >= 1, got 0"),
        (
            ENTRY + "  parameters:\n    corpus: a.parquet\n    out: o\n    k: ten\n",
            "k: input should be a valid",
        ),
        (
            ENTRY + "  parameters:\n    corpus: a/{date}.parquet\n    out: o\n    date: 2026/11/22\n",
            "--date '2026/11/22': not a date",
        ),
        (
            ENTRY + "  schedules:\n  - cron: '0 3 * * *'\n  parameters:\n    corpus: a/{date}.parquet\n",
            "out: required by the flow 'news-dedup' and not given: every scheduled run would fail",
        ),
        (  # one tag without brackets: it was served as the tags d, a, i, l, y
            ENTRY + "  tags: daily\n",
            "tags: give a list of tags ([daily]), got 'daily'",
        ),
        (ENTRY + "  version: 2\n", "version: input should be a valid string, got 2"),  # was a traceback
        (  # a day pinned on a schedule: every scheduled run ran that day again, all seen, exit 0
            ENTRY + "  schedules:\n  - cron: '30 6 * * *'\n  parameters:\n    corpus: a/{date}.parquet\n"
            "    out: o\n    state: s\n    date: '2026-11-22'\n",
            "date: '2026-11-22' on a schedule: every scheduled run would run that day again",
        ),
        (ENTRY + "  description: [a, b]\n", "description: input should be a valid string, got ['a', 'b']"),
        (  # both: one of them would be dropped without a word
            ENTRY + "  schedules:\n  - cron: '0 3 * * *'\n    interval: 3600\n",
            "schedule 1: give either 'cron' or 'interval'",
        ),
        (
            ENTRY + "  schedules:\n  - interval: true\n",
            "'interval' must be a number of seconds > 0, got True",
        ),
        (
            ENTRY + "  schedules:\n  - cron: '0 3 * * *'\n    active: 'no'\n",
            "schedule 1: 'active' must be true or false, got 'no'",
        ),
        (ENTRY + "  concurrency_limit: 0\n", "concurrency_limit must be a whole number >= 1"),
        (ENTRY + "  concurrency_limit:\n    limit: 0\n", "concurrency_limit must be a whole number >= 1"),
    ],
    ids=[
        *("no-file", "no-function", "no-flow", "cron", "typo", "zone", "zone-machine", "timezone-machine"),
        *("zone-posix", "zone-standard"),
        *("interval", "interval-zero", "limit", "param", "key"),
        *("needs-state", "needs-ivf", "needs-report", "out-needs-report", "timezone-value", "k-value"),
        *("k-type", "date-value", "required", "tags", "version", "fixed-date", "description"),
        *("cron-and-interval", "interval-bool", "active-text", "limit-zero"),
        "limit-mapping-zero",
    ],
)
@pytest.mark.parametrize("listing", [["--list"], []], ids=["list", "serve"])
def test_serve_refuses_an_entry_it_cannot_serve_in_one_line_before_serving(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    text: str,
    words: str,
    listing: list[str],
) -> None:
    """A deployment entry serve would drop (a misspelt schedule), that the server would refuse at its first
    run (a parameter the flow lacks, a time zone) or that cannot load is one line naming the file (it named
    only the entry) and the entry, and exit status 2, in
    --list as when serving, before anything is served (it was a traceback, or a schedule silently gone)."""
    import prefect

    def served(*deployments: object) -> None:
        raise AssertionError(f"served {len(deployments)} deployment(s)")

    monkeypatch.setattr(prefect, "serve", served)
    path = tmp_path / "prefect.yaml"
    path.write_text(text)
    assert main(["--file", str(path), *listing]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"python -m flows.serve: error: {path}: deployment 'x': ") and words in err, err


def test_serve_lists_an_entry_run_by_hand_that_leaves_required_parameters_to_each_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without a schedule, a required parameter may come with each run (--param), and a date written in
    YAML without quotes (read as a date) is the date it names."""
    path = tmp_path / "prefect.yaml"
    path.write_text(ENTRY + "  parameters:\n    corpus: a/{date}.parquet\n    date: 2026-11-22\n")
    assert main(["--file", str(path), "--list"]) == 0
    assert capsys.readouterr().out == "news-dedup/x: flows/dedup.py:news_dedup - manual\n"


@pytest.mark.slow
@pytest.mark.parametrize("buffered", [True, False], ids=["buffered", "unbuffered"])
def test_serve_list_to_a_reader_that_closed_the_pipe_ends_quietly(tmp_path: Path, buffered: bool) -> None:
    """``python -m flows.serve --list | head -1``: the reader went away, as ``head`` does; the listing ended
    in a ``BrokenPipeError`` traceback (exit 1). It now ends as ``nlsim`` does, nothing on stderr and exit
    status 141 (128 + SIGPIPE)."""
    env = {**command_env(plain=True), "PYTHONUNBUFFERED": "1"}
    if buffered:
        env.pop("PYTHONUNBUFFERED")
    proc = into_a_closed_pipe(["-m", "flows.serve", "--list"], ROOT, env, timeout=300)
    assert proc.stderr == "" and proc.returncode == 141, proc.stderr[-2000:]


def test_serve_list_says_an_inactive_schedule_and_a_paused_deployment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--list printed a schedule written `active: false`, and a deployment written `paused: true`, as one
    that runs."""
    path = tmp_path / "prefect.yaml"
    schedules = "  schedules:\n  - cron: '0 3 * * *'\n    active: false\n  - interval: 3600\n"
    params = "  parameters:\n    corpus: a/{date}.parquet\n    out: o\n"
    path.write_text(ENTRY + schedules + params)
    assert main(["--file", str(path), "--list"]) == 0
    line = "news-dedup/x: flows/dedup.py:news_dedup - cron 0 3 * * * (UTC) inactive; every 1:00:00 (UTC)"
    assert capsys.readouterr().out == line + "\n"
    path.write_text(ENTRY + "  paused: true\n" + schedules + params)
    assert main(["--file", str(path), "--list"]) == 0
    assert capsys.readouterr().out == line + " - paused: no scheduled run starts\n"


def test_serve_refuses_an_unknown_only_as_an_option_that_cannot_work(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--only", "news-dedup/nightly"]) == 2
    err = capsys.readouterr().err
    said = "no deployment named news-dedup/nightly in the file"
    assert err == f"python -m flows.serve: error: {DEFAULT_FILE}: {said}\n"


def test_serve_refuses_a_misspelt_only_beside_a_right_one(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two --only, one misspelt: nothing is served and the misspelt one is named (the right one was served
    alone, and the misspelt one dropped without a word)."""
    import prefect

    def served(*deployments: object) -> None:
        raise AssertionError(f"served {len(deployments)} deployment(s)")

    monkeypatch.setattr(prefect, "serve", served)
    for listing in (["--list"], []):
        argv = ["--only", "news-dedup/daily", "--only", "news-pipeline/weekyl", *listing]
        assert main(argv) == 2
        out, err = capsys.readouterr()
        assert (
            out == ""
            and err
            == f"python -m flows.serve: error: {DEFAULT_FILE}: no deployment named news-pipeline/weekyl "
            "in the file\n"
        )


def _wait(predicate, timeout: float, what: str, every: float = 1.0):  # noqa: ANN001, ANN202
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def serve_until_it_serves(
    env: dict[str, str], cwd: Path, served: Callable[[], bool] | None = None, limit: float = 300
) -> tuple[int | None, str, str]:
    """``python -m flows.serve --only news-dedup/daily`` in a session of its own, until it ends or says it
    is serving (``served()``, by default its line saying so; then stopped by its process group, with any
    temporary server it started): its exit status (``None``: it was serving), stdout and stderr."""
    command = [sys.executable, "-m", "flows.serve", "--only", "news-dedup/daily"]
    out, err = cwd / "serve.out", cwd / "serve.err"
    with open(out, "wb") as stdout, open(err, "wb") as stderr:
        proc = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=stdout, stderr=stderr, start_new_session=True
        )
        try:
            serving = served or (lambda: b"serving" in out.read_bytes())
            _wait(lambda: proc.poll() is not None or serving(), limit, "serve")
        finally:
            status = proc.poll()
            if status is None:
                stop_process(proc)
    return status, out.read_text(errors="replace"), err.read_text(errors="replace")


@pytest.mark.slow
def test_serve_without_a_server_is_refused_naming_the_setting_and_how_to_start_one(tmp_path: Path) -> None:
    """Without ``PREFECT_API_URL`` (in the environment or the active profile) the deployments were served on
    Prefect's temporary server, which goes with the serving process: schedules, runs and their logs kept
    nowhere, and ``python -m flows.alerts`` refuses to set an alert on it. Refused in one line before
    anything is served, naming the setting and how to start a server."""
    env = {k: v for k, v in command_env(plain=True).items() if not k.startswith("PREFECT_")}
    env |= {"PREFECT_HOME": str(tmp_path / "prefect-home"), "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    status, out, err = serve_until_it_serves(env, tmp_path)
    assert status == 2, f"exit {status}: {out[-2000:]} {err[-2000:]}"
    assert "serving" not in out
    assert err.startswith("python -m flows.serve: error: PREFECT_API_URL is not set") and err.count("\n") == 1
    assert "prefect server start --host 127.0.0.1 --port 4200" in err
    assert "PREFECT_API_URL=http://127.0.0.1:4200/api" in err


@pytest.mark.slow
def test_serve_takes_the_server_the_active_profile_names(tmp_path: Path) -> None:
    """``PREFECT_API_URL`` set in the active Prefect profile (``prefect config set``), not in the
    environment, names a server as well: served there, not refused."""
    with PrefectServer(tmp_path / "prefect") as server:
        env = server.client_env()
        home = Path(env["PREFECT_HOME"])
        home.mkdir(parents=True, exist_ok=True)
        profile = f'active = "desk"\n\n[profiles.desk]\nPREFECT_API_URL = "{env.pop("PREFECT_API_URL")}"\n'
        (home / "profiles.toml").write_text(profile, encoding="utf-8")
        status, out, err = serve_until_it_serves(env, tmp_path, lambda: _deployment(server) is not None)
    assert status is None and "serving news-dedup/daily" in out, f"exit {status}: {out[-2000:]} {err[-2000:]}"


@pytest.mark.slow
def test_served_deployment_runs_from_cli_and_on_cron(tmp_path: Path, fast_encoder) -> None:  # noqa: ANN001
    from nlsim.dedup.config import DedupConfig
    from tests.incremental_helpers import run_daily

    corpus = tmp_path / "news.parquet"
    bbc_corpus(n_other=30, n_rewrites=5).to_parquet(corpus, index=False)
    common = {
        "corpus": str(corpus),
        "model": FAST_MODEL,
        "convert": "none",
        "threshold": 0.9,
        "k": 50,
        "retention_days": 0,
    }
    # the repository's prefect.yaml, with the daily schedule every minute and parameters for this test
    spec = yaml.safe_load(DEFAULT_FILE.read_text())
    daily = spec["deployments"][0]
    daily["schedules"] = [{"cron": "* * * * *", "timezone": "UTC", "active": True}]
    daily["parameters"] = {**common, "state": str(tmp_path / "cron-state"), "out": str(tmp_path / "cron-out")}
    test_yaml = tmp_path / "prefect.yaml"
    test_yaml.write_text(yaml.safe_dump(spec))

    with PrefectServer(tmp_path / "prefect") as server:
        env = server.client_env()
        serve_log = open(tmp_path / "serve.log", "wb")  # noqa: SIM115
        serve = subprocess.Popen(
            [sys.executable, "-m", "flows.serve", "--file", str(test_yaml), "--only", "news-dedup/daily"],
            cwd=ROOT,
            env=env,
            stdout=serve_log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            dep = _wait(lambda: _deployment(server), 120, "the served deployment")
            # an ad hoc run from the command line (Prefect 3 has no `prefect run`)
            manual_out = tmp_path / "manual-out"
            cmd = [
                PREFECT,
                "deployment",
                "run",
                "news-dedup/daily",
                "--param",
                f"state={tmp_path / 'manual-state'}",
                "--param",
                f"out={manual_out}",
                "--watch",
                "--watch-timeout",
                "420",
            ]
            proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=480)
            assert proc.returncode == 0, (
                proc.stdout[-3000:] + proc.stderr[-3000:] + _tail(tmp_path / "serve.log")
            )
            assert "Completed" in proc.stdout + proc.stderr
            # its report exists and matches a direct run of the same thing
            direct = run_daily(
                DedupConfig.of(
                    corpus=corpus,
                    out=tmp_path / "direct-out",
                    model=FAST_MODEL,
                    convert="none",
                    threshold=0.9,
                    k=50,
                    cache=False,
                    progress=False,
                ),
                tmp_path / "direct-state",
                retention_days=None,
                encoder=fast_encoder,
            )
            assert (manual_out / "latest" / "run.json").is_file()
            assert report_content(manual_out / "latest") == report_content(direct.report_dir)
            assert direct.stats.counts.pairs > 0
            # the run's figures are in Prefect too: counts, stage timings, model and threshold
            arts = server.api(
                "POST",
                "/artifacts/filter",
                json={"artifacts": {"key": {"any_": ["news-dedup-incremental-run"]}}},
            )
            assert arts, "no run artifact"
            md = arts[0]["data"]
            for needle in (
                "| clusters_new |",
                "| skipped |",
                "| quarantined |",
                "| embed |",
                FAST_MODEL,
                "threshold: 0.9",
            ):
                assert needle in md, needle

            # the every-minute schedule creates a run by itself, and the served process runs it
            def auto_completed() -> list:
                runs = server.api(
                    "POST", "/flow_runs/filter", json={"deployments": {"id": {"any_": [dep["id"]]}}}
                )
                return [r for r in runs if r.get("auto_scheduled") and r["state_type"] == "COMPLETED"]

            done = _wait(auto_completed, 300, "a scheduled run to complete", every=3)
            assert done[0]["deployment_id"] == dep["id"]
            assert report_content(tmp_path / "cron-out" / "latest") == report_content(direct.report_dir)
        finally:
            stop_process(serve)
            serve_log.close()


def _deployment(server: PrefectServer) -> dict | None:
    try:
        return server.api("GET", "/deployments/name/news-dedup/daily")
    except Exception:
        return None


def _tail(path: Path, n: int = 3000) -> str:
    try:
        return path.read_text(errors="replace")[-n:]
    except OSError:
        return ""


@pytest.mark.slow
def test_served_daily_runs_fail_in_one_line_and_reuse_the_state_limit(tmp_path: Path) -> None:
    """The README's path, `prefect deployment run 'news-dedup/daily' --param date=... --watch`, against a
    served deployment: two days run (the second finds the state folder's concurrency limit and does not
    create it again: no IntegrityError on the server); a bad date and a missing day each fail with one
    line that is the run's state message, printed by `--watch` (the server streams log lines, as
    docs/operations.md starts it) and by `prefect flow-run inspect`; the bad date's run is named with the
    date given, not today's; the serving process prints no traceback."""
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    news = bbc_corpus(n_other=30, n_rewrites=5)
    half = len(news) // 2
    news.iloc[:half].to_parquet(incoming / "2026-11-22.parquet", index=False)
    news.iloc[half:].to_parquet(incoming / "2026-11-23.parquet", index=False)
    spec = yaml.safe_load(DEFAULT_FILE.read_text())
    daily = spec["deployments"][0]
    daily["schedules"] = []
    daily["parameters"] = {
        "corpus": str(incoming / "{date}.parquet"),
        "timezone": "Asia/Taipei",
        "state": str(tmp_path / "state"),
        "out": str(tmp_path / "out"),
        "model": FAST_MODEL,
        "convert": "none",
        "threshold": 0.9,
        "k": 50,
        "retention_days": 0,
        "cache": False,
    }
    test_yaml = tmp_path / "prefect.yaml"
    test_yaml.write_text(yaml.safe_dump(spec))

    with PrefectServer(tmp_path / "prefect", stream_logs=True) as server:
        env = server.client_env(COLUMNS="1000")  # the CLI wraps at the terminal's width, mid-word
        serve_log = open(tmp_path / "serve.log", "wb")  # noqa: SIM115
        serve = subprocess.Popen(
            [sys.executable, "-m", "flows.serve", "--file", str(test_yaml), "--only", "news-dedup/daily"],
            cwd=ROOT,
            env=env,
            stdout=serve_log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

        def run(date: str) -> subprocess.CompletedProcess:
            cmd = [PREFECT, "deployment", "run", "news-dedup/daily", "--param", f"date={date}"]
            cmd += ["--watch", "--watch-timeout", "420"]
            return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=480)

        def flow_run(date: str) -> dict:
            runs = server.api("POST", "/flow_runs/filter", json={})
            (found,) = [r for r in runs if r["parameters"].get("date") == date]
            return found

        try:
            _wait(lambda: _deployment(server), 120, "the served deployment")
            for day in ("2026-11-22", "2026-11-23"):
                done = run(day)
                assert done.returncode == 0, done.stdout[-3000:] + _tail(tmp_path / "serve.log")
            assert len(list((tmp_path / "out" / "runs").iterdir())) == 2
            assert "IntegrityError" not in server.log_tail(10**7)

            expected = {
                "2026-13-01": "ConfigError: --date '2026-13-01': not a date; give YYYY-MM-DD",
                "2026-11-24": f"no input for 2026-11-24: {incoming / '2026-11-24.parquet'} does not exist",
            }
            for day, line in expected.items():
                failed = run(day)
                watched = " ".join((failed.stdout + failed.stderr).split())
                assert failed.returncode == 1 and "finished in state 'Failed'" in watched
                assert line in watched, watched[-3000:]
                record = flow_run(day)
                assert record["state"]["message"].startswith(line), record["state"]["message"]
                assert record["name"] == f"news-dedup {day} daily"
                inspect = subprocess.run(
                    [PREFECT, "flow-run", "inspect", record["id"]], env=env, capture_output=True, text=True
                )
                assert line in " ".join(inspect.stdout.split())
        finally:
            stop_process(serve)
            serve_log.close()
    served = _tail(tmp_path / "serve.log", 10**7)
    assert "Traceback" not in served, served[-4000:]
    for day in expected:
        errors = [ln for ln in served.splitlines() if "| ERROR" in ln and f"news-dedup {day} daily" in ln]
        assert len(errors) == 1, errors


TAIPEI = "  schedules:\n  - cron: '30 0 * * *'\n    timezone: Asia/Taipei\n"


def refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, text: str
) -> str:
    """serve's one-line refusal of the file ``text`` (exit status 2, nothing served)."""
    import prefect

    def served(*deployments: object) -> None:
        raise AssertionError(f"served {len(deployments)} deployment(s)")

    monkeypatch.setattr(prefect, "serve", served)
    path = tmp_path / "prefect.yaml"
    path.write_text(text)
    assert main(["--file", str(path), "--list"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"python -m flows.serve: error: {path}: deployment 'x': "), err
    return err


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (  # a 00:30 Taipei run is 16:30 UTC the day before: {date} in UTC would read yesterday's corpus
            ENTRY + TAIPEI + "  parameters:\n    corpus: a/{date}.parquet\n    out: o\n",
            "schedule 1 is in Asia/Taipei but timezone is 'UTC'",
        ),
        (
            ENTRY
            + TAIPEI
            + "  parameters:\n    corpus: a.parquet\n    out: o\n    quarantine: q-{date}.csv\n"
            "    timezone: Europe/London\n",
            "schedule 1 is in Asia/Taipei but timezone is 'Europe/London'",
        ),
        (  # a schedule without a zone runs on UTC's clock
            ENTRY + "  schedules:\n  - cron: '30 0 * * *'\n  parameters:\n    corpus: a/{date}.parquet\n"
            "    out: o\n    timezone: Asia/Taipei\n",
            "schedule 1 is in UTC but timezone is 'Asia/Taipei'",
        ),
    ],
    ids=["zone-default", "zone-other", "schedule-zone-default"],
)
def test_serve_refuses_a_dated_entry_whose_timezone_is_not_its_schedule_zone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, text: str, words: str
) -> None:
    """A daily entry scheduled at 00:30 Asia/Taipei with its ``timezone`` parameter left at UTC took
    ``{date}`` in UTC (16:30 UTC the day before): every run read the day before's corpus. It was served; it
    is now refused in one line naming the entry and the zones (exit status 2)."""
    assert words in refused(tmp_path, capsys, monkeypatch, text)


@pytest.mark.parametrize(
    ("schedule", "timezone"), [("Asia/Taipei", "Asia/Taipei"), ("Etc/UTC", "UTC"), ("Etc/UTC", None)]
)
def test_serve_takes_an_entry_whose_timezone_is_its_schedule_zone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], schedule: str, timezone: str | None
) -> None:
    """The same entry with ``timezone`` on its schedule's clock is served (a zone of another name on the
    same clock too): its ``{date}`` is the scheduled day."""
    path = tmp_path / "prefect.yaml"
    params = "  parameters:\n    corpus: a/{date}.parquet\n    out: o\n"
    params += f"    timezone: {timezone}\n" if timezone else ""
    path.write_text(ENTRY + TAIPEI.replace("Asia/Taipei", schedule) + params)
    assert main(["--file", str(path), "--list"]) == 0
    assert f"cron 30 0 * * * ({schedule})" in capsys.readouterr().out


def test_serve_takes_an_entry_whose_path_holds_only_an_escaped_date(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``a/{{date}}.parquet`` names a file ``a/{date}.parquet`` (str.format's escaped braces): no date is
    filled in, so its schedule's zone and ``timezone`` need not agree. It was refused as a dated entry."""
    path = tmp_path / "prefect.yaml"
    path.write_text(ENTRY + TAIPEI + "  parameters:\n    corpus: a/{{date}}.parquet\n    out: o\n")
    assert main(["--file", str(path), "--list"]) == 0, capsys.readouterr().err


def test_serve_refuses_a_deployment_declared_twice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two entries of one flow under one name were both served, the second replacing the first on the
    server (its schedule and parameters silently gone); the file is now refused naming both entries."""
    second = ENTRY.split("\n", 1)[1]
    text = ENTRY + "  parameters:\n    corpus: a.parquet\n    out: o\n" + second
    err = refused(tmp_path, capsys, monkeypatch, text)
    assert "news-dedup/x declared twice in the file (entries 1 and 2)" in err, err


def test_serve_takes_one_name_for_deployments_of_two_flows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``news-dedup/x`` and ``news-pipeline/x`` are two deployments: both are listed."""
    other = "- name: x\n  entrypoint: flows/pipeline.py:news_pipeline\n"
    path = tmp_path / "prefect.yaml"
    path.write_text(ENTRY + "  parameters:\n    corpus: a.parquet\n    out: o\n" + other)
    assert main(["--file", str(path), "--list"]) == 0
    out = capsys.readouterr().out
    assert "news-dedup/x:" in out and "news-pipeline/x:" in out, out


def test_serve_refuses_a_deployment_name_that_is_not_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``name: 2026`` (YAML reads it as a number) ended serve, in --list too, in a traceback from Prefect
    (AttributeError: 'int' object has no attribute 'endswith'); it is refused in one line naming the file
    and the field, exit status 2."""
    path = tmp_path / "prefect.yaml"
    path.write_text(
        ENTRY.replace("name: x", "name: 2026") + "  parameters:\n    corpus: a.parquet\n    out: o\n"
    )
    assert main(["--file", str(path), "--list"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == (
        f"python -m flows.serve: error: {path}: deployment 2026: name: give it as text, in quotes ('2026'), "
        "got 2026\n"
    ), err


@pytest.mark.parametrize("zone", [None, "UTC", "Europe/London"])
def test_serve_takes_a_dated_entry_on_an_interval_whatever_the_intervals_zone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], zone: str | None
) -> None:
    """An hourly run (``interval: 3600``) takes ``{date}`` in ``timezone`` at whatever hour it starts: no
    clock of its schedule names another day. A Taipei entry on an interval without a zone was refused as
    'in UTC', with the advice to set ``timezone: UTC``, which would have read the day before's corpus
    until 08:00 in Taipei; it is served."""
    path = tmp_path / "prefect.yaml"
    schedule = "  schedules:\n  - interval: 3600\n" + (f"    timezone: {zone}\n" if zone else "")
    params = "  parameters:\n    corpus: a/{date}.parquet\n    out: o\n    timezone: Asia/Taipei\n"
    path.write_text(ENTRY + schedule + params)
    assert main(["--file", str(path), "--list"]) == 0, capsys.readouterr().err
    assert "news-dedup/x: flows/dedup.py:news_dedup - every 1:00:00" in capsys.readouterr().out


def test_a_deployment_entry_without_a_name_is_refused_naming_the_file(tmp_path: Path) -> None:
    from flows.serve import SpecError

    path = tmp_path / "prefect.yaml"
    path.write_text("deployments:\n- entrypoint: flows/dedup.py:news_dedup\n")
    with pytest.raises(SpecError, match=r"prefect.yaml: a deployment lacks 'name'"):
        load_specs(path)


def test_a_concurrency_limit_without_a_strategy_enqueues_the_runs_over_it() -> None:
    from prefect.client.schemas.objects import ConcurrencyLimitStrategy

    from flows.serve import concurrency_of

    assert concurrency_of({"name": "x", "concurrency_limit": 1}) == 1
    config = concurrency_of({"name": "x", "concurrency_limit": {"limit": 2}})
    assert (config.limit, config.collision_strategy) == (2, ConcurrencyLimitStrategy.ENQUEUE)


@pytest.mark.parametrize(
    "text",
    [
        "  schedules:\n  - cron: '30 6 * * *'\n  parameters:\n    corpus: a/{date}.parquet\n    out: o\n"
        "    date: null\n",
        "  paused: true\n  schedules:\n  - cron: '30 6 * * *'\n  parameters:\n    corpus: a/{date}.parquet\n"
        "    out: o\n    date: '2026-11-22'\n",
        "  schedules:\n  - cron: '30 6 * * *'\n    active: false\n  parameters:\n"
        "    corpus: a/{date}.parquet\n    date: '2026-11-22'\n",
    ],
    ids=["date-null", "paused", "inactive"],
)
def test_serve_takes_a_date_that_no_scheduled_run_would_repeat(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    """``date: null`` is each run's scheduled day; a paused deployment, or one whose only schedule is
    inactive, starts no run on its own: its date and its required settings are given to runs by hand."""
    path = tmp_path / "prefect.yaml"
    path.write_text(ENTRY + text)
    assert main(["--file", str(path), "--list"]) == 0, capsys.readouterr().err
    assert capsys.readouterr().out.startswith(
        "news-dedup/x: flows/dedup.py:news_dedup - cron 30 6 * * * (UTC)"
    )


def test_serve_only_takes_a_deployment_by_its_name_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--only x`` names the deployment ``x`` of whichever flow: it is listed, and no other."""
    other = "- name: y\n  entrypoint: flows/pipeline.py:news_pipeline\n"
    path = tmp_path / "prefect.yaml"
    path.write_text(ENTRY + "  parameters:\n    corpus: a.parquet\n    out: o\n" + other)
    assert main(["--file", str(path), "--list", "--only", "x"]) == 0, capsys.readouterr().err
    assert capsys.readouterr().out == "news-dedup/x: flows/dedup.py:news_dedup - manual\n"


def test_serve_takes_an_entry_with_a_workers_keys(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``work_pool``, ``job_variables`` and the build steps only matter to ``prefect deploy``: serve takes
    the entry as it is written for a worker."""
    path = tmp_path / "prefect.yaml"
    worker = "  work_pool:\n    name: pool\n    job_variables: {}\n  job_variables:\n    image: nlsim\n"
    path.write_text(ENTRY + worker + "  parameters:\n    corpus: a.parquet\n    out: o\n")
    assert main(["--file", str(path), "--list"]) == 0, capsys.readouterr().err
