"""An alert on a failed run: ``python -m flows.alerts`` sets up the automation on a real Prefect server
started on 127.0.0.1, a daily run that fails (its day's file is missing) reaches the webhook and the
notification block with its one-line reason, and running the command again updates the automation instead
of adding a second one."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.flows.prefect_server import PrefectServer


class Hooks:
    """An HTTP server on 127.0.0.1 that keeps the JSON body of every POST, by path."""

    def __init__(self) -> None:
        self.received: list[tuple[str, Any]] = []
        hooks = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the name http.server calls
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    data = json.loads(body)
                except ValueError:
                    data = body.decode("utf-8", "replace")
                hooks.received.append((self.path, data))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait(self, path: str, timeout: float) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for got, data in self.received:
                if got == path:
                    return data
            time.sleep(0.5)
        raise AssertionError(f"nothing posted to {path} within {timeout} s: {self.received}")


def python(server: PrefectServer, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], env=server.client_env(), cwd=cwd, capture_output=True, text=True, timeout=600
    )


@pytest.mark.slow
def test_a_failed_daily_run_reaches_the_webhook_and_the_notification_block(tmp_path: Path) -> None:
    hooks = Hooks()
    with PrefectServer(tmp_path / "prefect") as server:
        try:
            save = (
                "from prefect.blocks.notifications import CustomWebhookNotificationBlock as B; "
                f"B(name='desk', url='{hooks.url}/notify', "
                "json_data={'subject': '{{subject}}', 'body': '{{body}}'}).save('desk', overwrite=True)"
            )
            assert python(server, tmp_path, "-c", save).returncode == 0
            alert = [
                "-m",
                "flows.alerts",
                "--webhook",
                f"{hooks.url}/hook",
                "--notify",
                "custom-webhook/desk",
            ]
            made = python(server, tmp_path, *alert)
            assert made.returncode == 0, made.stderr[-3000:]
            assert made.stdout.startswith("created automation nlsim-failed-runs (")
            assert "news-dedup" in made.stdout and "call-webhook, send-notification" in made.stdout
            again = python(server, tmp_path, *alert)
            assert again.returncode == 0 and again.stdout.startswith("updated automation nlsim-failed-runs")
            listed = server.api("POST", "/automations/filter", json={})
            assert [a["name"] for a in listed] == ["nlsim-failed-runs"]

            # the daily flow, as the deployment runs it, on a day whose file is missing: Failed, in one line
            day = [
                "--corpus",
                "incoming/{date}.parquet",
                "--date",
                "2026-11-22",
                "--state",
                "st",
                "--out",
                "r",
            ]
            run = python(server, tmp_path, "-m", "flows.dedup", *day, "--threshold", "0.9")
            assert run.returncode == 1, run.stderr[-3000:]
            posted = hooks.wait("/hook", timeout=120)
            assert posted["flow"] == "news-dedup" and posted["flow_run"] == "news-dedup 2026-11-22 daily"
            assert posted["state"] == "Failed"
            ui = server.api_url.removesuffix("/api")  # the server knows no UI address of its own
            assert posted["url"] == f"{ui}/runs/flow-run/{posted['flow_run_id']}"
            assert posted["message"].startswith(
                "no input for 2026-11-22: incoming/2026-11-22.parquet does not"
            )
            assert posted["text"].startswith(
                "nlsim: news-dedup run news-dedup 2026-11-22 daily Failed: no input"
            )
            notified = hooks.wait("/notify", timeout=60)
            assert notified["subject"] == "nlsim: news-dedup run news-dedup 2026-11-22 daily Failed"
            assert notified["body"].startswith("no input for 2026-11-22")
            assert notified["body"].endswith(f"flow run {posted['flow_run_id']}: {posted['url']}")

            removed = python(server, tmp_path, "-m", "flows.alerts", "--remove")
            assert removed.stdout.strip() == "removed 1 automation(s) called nlsim-failed-runs"
            assert server.api("POST", "/automations/filter", json={}) == []
        finally:
            hooks.server.shutdown()


def test_the_alert_command_refuses_without_a_server(tmp_path: Path) -> None:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(PREFECT_HOME=str(tmp_path / "home"), PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    proc = subprocess.run(
        [sys.executable, "-m", "flows.alerts", "--webhook", "http://127.0.0.1:9/x"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2 and "set PREFECT_API_URL" in proc.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--list", "--webhook", "https://hooks.example/x"], "--list and --webhook do not go together"),
        (["--remove", "--notify", "email/desk"], "--remove and --notify do not go together"),
        (["--list", "--remove"], "--list and --remove do not go together"),
        (["--remove", "--flow", "news-dedup"], "--remove and --flow do not go together"),
        (["--notify", "email/desk", "--name", " "], "--name ' ': give the automation a name"),
        (["--list", "--flow", "news-dedup"], "--list and --flow do not go together"),
        (["--notify", "slack"], "--notify 'slack': give the block as TYPE/NAME"),
        (["--notify", "slack-webhook/"], "--notify 'slack-webhook/': give the block as TYPE/NAME"),
        (["--notify", "/newsroom"], "--notify '/newsroom': give the block as TYPE/NAME"),
        (["--notify", "slack-webhook/news/room"], "--notify 'slack-webhook/news/room': give the block as"),
        (["--webhook", "hooks.slack.com/services/x"], "not an http(s) URL"),
        (
            ["--webhook", "https://hooks.example/x", "--flow", "news-dedup", "--flow", "news-dedupe"],
            "--flow 'news-dedupe': no flow of this project is called that (its flows: ",
        ),
        (
            ["--webhook", "https://hooks.example/x", "--name", "Desk Alerts"],
            "--name 'Desk Alerts': with --webhook it names the Webhook block 'Desk Alerts-webhook' too",
        ),
    ],
    ids=[
        "list-webhook",
        "remove-notify",
        "list-remove",
        "remove-flow",
        "blank-name",
        "list-flow",
        "notify-form",
        "notify-no-name",
        "notify-no-type",
        "notify-two-slashes",
        "webhook-url",
        "flow-name",
        "name",
    ],
)
def test_options_that_cannot_work_are_refused_before_the_server_is_asked(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], argv: list[str], words: str
) -> None:
    """An action beside --list or --remove was ignored (the command listed, or removed, and exited 0), and so
    was --flow (--remove --flow news-dedup removed the alert on every flow); a blank --name (an unset
    variable) made an automation no --list showed; a bad
    --notify was a bare line, exit status 1; a --webhook that is no URL was saved, to fail at the first
    failed run; a misspelt --flow was watched for good, and never fired; a --name the webhook block cannot
    take stopped with a traceback when the server refused the block."""
    import flows.alerts as alerts

    def acted(*args: object) -> int:
        raise AssertionError("the server was asked")

    monkeypatch.setattr(alerts, "api_url", lambda: "http://127.0.0.1:9/api")
    monkeypatch.setattr(alerts, "_act", acted)
    with pytest.raises(SystemExit) as exited:
        alerts.main(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("python -m flows.alerts: error: ") and words in err, err


def test_a_notification_block_refused_saves_no_webhook_block(monkeypatch: pytest.MonkeyPatch) -> None:
    """--webhook with a --notify block that is not on the server: the webhook block was saved first."""
    import argparse

    import flows.alerts as alerts

    saved: list[str] = []

    def missing(slug: str) -> None:
        raise alerts.AlertError(f"--notify {slug!r}: no such block on the server")

    monkeypatch.setattr(alerts, "notify_action", missing)
    monkeypatch.setattr(alerts, "webhook_action", lambda name, url: saved.append(url))
    args = argparse.Namespace(
        list=False, remove=False, webhook="https://hooks.example/x", notify="email/desk", name="n", flow=["f"]
    )
    with pytest.raises(alerts.AlertError):
        alerts._act(args, argparse.ArgumentParser())
    assert saved == []


def render(template: str, server_ui: str | None) -> str:
    """``template`` as the server renders it for a failed daily run, the server's own UI address being
    ``server_ui`` (``None``: the server was started without PREFECT_UI_URL or PREFECT_API_URL)."""
    import uuid
    from types import SimpleNamespace

    from prefect.server.events.jinja_filters import all_filters
    from prefect.server.utilities.user_templates import _sync_template_environment

    env = _sync_template_environment.overlay()
    env.filters.update(all_filters)
    env.filters["ui_url"] = lambda run: server_ui and f"{server_ui}/runs/flow-run/{run.id}"
    run = SimpleNamespace(
        id=uuid.UUID("08eb9eb8-0f11-40b7-907c-d7bb8c607958"),
        name="news-dedup 2026-11-22 daily",
        state=SimpleNamespace(name="Failed", message="no input for 2026-11-22: ..."),
    )
    return env.from_string(template).render(flow=SimpleNamespace(name="news-dedup"), flow_run=run)


@pytest.mark.parametrize("server_ui", [None, "http://desk:4200"], ids=["server-knows-none", "server-knows"])
def test_the_alert_gives_the_runs_address_when_the_server_knows_no_ui(server_ui: str | None) -> None:
    """A server started as docs/operations.md starts it (PREFECT_API_URL exported in another terminal)
    knows no UI address: the webhook's url was null and the notification's body ended 'flow run ID: None'.
    The address is now the UI of the server the command set the alert up on, unless the server knows its
    own."""
    import flows.alerts as alerts

    ui = server_ui or "http://127.0.0.1:4200"
    run = f"{ui}/runs/flow-run/08eb9eb8-0f11-40b7-907c-d7bb8c607958"
    posted = json.loads(render(alerts.webhook_payload("http://127.0.0.1:4200"), server_ui))
    assert posted["url"] == run
    assert posted["flow_run_id"] == "08eb9eb8-0f11-40b7-907c-d7bb8c607958"
    body = render(alerts.body("http://127.0.0.1:4200"), server_ui)
    assert body.endswith(f"flow run 08eb9eb8-0f11-40b7-907c-d7bb8c607958: {run}")
    alone = render(alerts.body(None), None)  # no address anywhere: none said
    assert alone.endswith("flow run 08eb9eb8-0f11-40b7-907c-d7bb8c607958") and "None" not in alone
    assert json.loads(render(alerts.webhook_payload(None), None))["url"] is None


FLOW_COMMANDS = [
    "flows.alerts",
    "flows.serve",
    "flows.dedup",
    "flows.dedup_distributed",
    "flows.finetune",
    "flows.learning_curve",
    "flows.pipeline",
]
"""Every ``python -m flows.X`` a user runs."""


@pytest.mark.parametrize("module", FLOW_COMMANDS)
def test_the_help_says_what_the_command_does_in_whole_sentences(
    module: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`python -m flows.alerts --help` stopped mid-sentence ("a Prefect automation on the server the"): its
    description was the docstring's first line, not its first paragraph."""
    import importlib

    with pytest.raises(SystemExit) as done:
        importlib.import_module(module).main(["--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    description = " ".join(text.split("\n\n")[1].split())
    assert description.endswith("."), description


@pytest.mark.parametrize("module", FLOW_COMMANDS)
def test_the_help_says_each_option_and_its_default(module: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """`python -m flows.alerts --help` listed --webhook and --notify, `flows.finetune` --train-size and
    --silver-text-field, `flows.dedup` --window-hours and --state, not saying what leaving them out does."""
    import importlib

    from tests.help_text import parser_of, problems

    main = importlib.import_module(module).main
    assert not problems(parser_of(lambda: main(["--help"]), monkeypatch), f"python -m {module}")


def test_every_notify_example_names_a_notification_block_type_prefect_has(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The `--notify` examples of the command's help, its docstring and docs/operations.md gave `email/desk`:
    Prefect has no block type `email`, so a desk that made the block the example suggests could not (the
    e-mail notification block is `sendgrid-email`)."""
    import re

    from prefect.blocks.abstract import NotificationBlock
    from prefect.blocks.core import Block

    import flows.alerts

    with pytest.raises(SystemExit):
        flows.alerts.main(["--help"])
    help_text = capsys.readouterr().out
    docs = (Path(__file__).resolve().parents[2] / "docs" / "operations.md").read_text(encoding="utf-8")
    texts = {"--help": help_text, "flows/alerts.py": flows.alerts.__doc__ or "", "docs/operations.md": docs}
    slug = re.compile(r"(?<![\w/.-])([a-z][a-z0-9-]*)/(desk|newsroom|pager)\b")
    for where, text in texts.items():
        types = {m.group(1) for m in slug.finditer(" ".join(text.split()))}
        assert types, f"{where} gives no --notify example"
        for name in types:
            try:
                cls = Block.get_block_class_from_key(name)
            except Exception as exc:  # noqa: BLE001 - UnknownBlockType: a type Prefect does not have
                raise AssertionError(f"{where}: --notify {name}/...: {exc}") from None
            assert issubclass(cls, NotificationBlock), f"{where}: {name} is not a notification block"


def test_the_trigger_fires_once_for_each_failed_run_of_the_watched_flows() -> None:
    """The automation reacts to each flow run of the watched flows on its own, at its first Failed or
    Crashed event: not to the first of two failed runs only, nor to a task run's events."""
    from prefect.events.schemas.automations import Posture

    import flows.alerts as alerts

    trigger = alerts.alert_trigger(["news-dedup", "news-pipeline"])
    assert trigger.expect == {"prefect.flow-run.Failed", "prefect.flow-run.Crashed"}
    assert trigger.match_related.root == {
        "prefect.resource.role": "flow",
        "prefect.resource.name": ["news-dedup", "news-pipeline"],
    }
    assert trigger.for_each == {"prefect.resource.id"}
    assert (trigger.posture, trigger.threshold) == (Posture.Reactive, 1)


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--webhook", "https:///services/x"], "--webhook 'https:///services/x': not an http(s) URL"),
        (
            ["--webhook", "https://hooks.example/x", "--name", "desk_alerts"],
            "--name 'desk_alerts': with --webhook it names the Webhook block 'desk_alerts-webhook' too",
        ),
    ],
    ids=["webhook-no-host", "name-underscore"],
)
def test_a_webhook_without_a_host_and_a_block_name_the_server_refuses_are_refused(
    argv: list[str], words: str
) -> None:
    import argparse

    import flows.alerts as alerts

    args = argparse.Namespace(
        list=False, remove=False, notify=None, flow=None, webhook=None, name=alerts.NAME
    )
    for flag, value in zip(argv[::2], argv[1::2], strict=True):
        setattr(args, flag.removeprefix("--"), value)
    with pytest.raises(alerts.AlertError) as refused:
        alerts.check_options(args)
    assert words in str(refused.value)


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080/hook", "https://hooks.slack.com/services/x"])
def test_an_http_or_https_webhook_is_taken(url: str) -> None:
    import argparse

    import flows.alerts as alerts

    args = argparse.Namespace(
        list=False, remove=False, notify=None, flow=None, webhook=url, name="desk-alerts"
    )
    alerts.check_options(args)  # no AlertError


def test_the_runs_address_under_a_ui_given_with_a_trailing_slash_has_one_slash() -> None:
    import flows.alerts as alerts

    posted = json.loads(render(alerts.webhook_payload("http://127.0.0.1:4200/"), None))
    assert posted["url"] == "http://127.0.0.1:4200/runs/flow-run/08eb9eb8-0f11-40b7-907c-d7bb8c607958"


def test_without_a_ui_of_its_own_the_alert_gives_the_servers_address_for_the_run() -> None:
    import flows.alerts as alerts

    posted = json.loads(render(alerts.webhook_payload(None), "http://desk:4200"))
    assert posted["url"] == "http://desk:4200/runs/flow-run/08eb9eb8-0f11-40b7-907c-d7bb8c607958"


class FakeClient:
    """The calls :func:`flows.alerts.ensure_alert` and :func:`flows.alerts.remove_alert` make of Prefect's
    client, on automations kept in a list."""

    def __init__(self, automations: list[Any]) -> None:
        self.automations = automations
        self.calls: list[tuple[str, Any]] = []

    def __enter__(self) -> FakeClient:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def read_automations_by_name(self, name: str) -> list[Any]:
        return [a for a in self.automations if a.name == name]

    def create_automation(self, core: Any) -> str:
        self.calls.append(("create", core.name))
        return "new-id"

    def update_automation(self, automation_id: str, core: Any) -> None:
        self.calls.append(("update", automation_id))

    def delete_automation(self, automation_id: str) -> None:
        self.calls.append(("delete", automation_id))


def _client(monkeypatch: pytest.MonkeyPatch, *names: str) -> FakeClient:
    from types import SimpleNamespace

    import prefect

    client = FakeClient([SimpleNamespace(name=name, id=f"id-{i}") for i, name in enumerate(names)])
    monkeypatch.setattr(prefect, "get_client", lambda sync_client=False: client)
    return client


def test_the_alert_is_created_once_then_updated_and_a_second_of_its_name_removed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import flows.alerts as alerts

    client = _client(monkeypatch)
    assert alerts.ensure_alert("nlsim-failed-runs", ["news-dedup"], []) == ("new-id", True)
    assert client.calls == [("create", "nlsim-failed-runs")]

    client = _client(monkeypatch, "nlsim-failed-runs", "other", "nlsim-failed-runs", "nlsim-failed-runs")
    assert alerts.ensure_alert("nlsim-failed-runs", ["news-dedup"], []) == ("id-0", False)
    assert client.calls == [("delete", "id-2"), ("delete", "id-3"), ("update", "id-0")]


def test_remove_deletes_every_automation_of_the_name(monkeypatch: pytest.MonkeyPatch) -> None:
    import flows.alerts as alerts

    client = _client(monkeypatch, "nlsim-failed-runs", "other", "nlsim-failed-runs")
    assert alerts.remove_alert("nlsim-failed-runs") == 2
    assert client.calls == [("delete", "id-0"), ("delete", "id-2")]


def test_list_says_whether_the_automation_is_paused() -> None:
    from types import SimpleNamespace

    import flows.alerts as alerts

    def automation(enabled: bool) -> Any:
        return SimpleNamespace(
            name="nlsim-failed-runs",
            id="id-0",
            enabled=enabled,
            trigger=SimpleNamespace(match_related={"prefect.resource.name": ["news-dedup"]}),
            actions=[SimpleNamespace(type="call-webhook")],
        )

    assert "(id-0, enabled): failed or crashed runs of ['news-dedup'] -> call-webhook" in alerts.describe(
        automation(True)
    )
    assert "(id-0, paused)" in alerts.describe(automation(False))


def test_a_notify_block_that_sends_no_notification_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from prefect.blocks.core import Block
    from prefect.blocks.system import Secret

    import flows.alerts as alerts

    monkeypatch.setattr(Block, "load", classmethod(lambda cls, slug: Secret(value="x")))
    with pytest.raises(
        alerts.AlertError, match="--notify 'secret/desk': a Secret block sends no notification"
    ):
        alerts.notify_action("secret/desk")


def test_notify_alone_sets_up_the_alert_on_every_deployed_flow(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--notify without --webhook is an alert of its own; without --flow it watches every deployed flow."""
    import argparse
    from types import SimpleNamespace

    import flows.alerts as alerts

    made: list[tuple[str, list[str], list[Any]]] = []
    monkeypatch.setattr(alerts, "deployed_flows", lambda: ["learning-curve", "news-dedup"])
    monkeypatch.setattr(alerts, "notify_action", lambda slug: SimpleNamespace(type="send-notification"))
    monkeypatch.setattr(alerts, "ensure_alert", lambda *a: made.append(a) or ("id-0", False))
    args = argparse.Namespace(
        list=False, remove=False, webhook=None, notify="slack-webhook/newsroom", name="n", flow=None
    )
    assert alerts._act(args, argparse.ArgumentParser()) == 0
    assert [(name, flows) for name, flows, _ in made] == [("n", ["learning-curve", "news-dedup"])]
    out = capsys.readouterr().out
    assert out.startswith("updated automation n (id-0): failed or crashed runs of learning-curve, news-dedup")
