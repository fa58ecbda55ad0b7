"""An alert when a run of the project's flows fails or crashes: a Prefect automation on the server the
deployments run on.

The automation reacts to a flow run of the deployed flows (``prefect.yaml``'s: ``news-dedup``,
``news-pipeline``, ``learning-curve``) entering ``Failed`` or ``Crashed``, once per run, with the actions
asked for:

* ``--webhook URL``: an HTTP POST of a JSON object (``text``, ``flow``, ``flow_run``, ``state``,
  ``message``: the run's one-line reason, ``flow_run_id``, ``url``) to ``URL`` (Slack, Teams or
  Mattermost incoming webhooks read ``text``), through a Webhook block this command saves as
  ``<name>-webhook``;
* ``--notify BLOCK``: a notification through a block already on the server (``slack-webhook/newsroom``,
  ``sendgrid-email/desk``, ``custom-webhook/pager``: made in the UI or with the block's ``save``), subject
  and body saying the same.

Run it once per server (it creates the automation, or updates the one of that name: running it again
changes nothing twice)::

    export PREFECT_API_URL=http://127.0.0.1:4200/api
    python -m flows.alerts --webhook https://hooks.slack.com/services/...
    python -m flows.alerts --list          # what is set up
    python -m flows.alerts --remove        # the automation goes (the blocks stay)

The server does the rest: its triggers service sees the flow run's state event and runs the actions, with
or without ``python -m flows.serve`` running.

Example:
    >>> alert_trigger(["news-dedup"]).expect == set(FAILED_EVENTS)
    True
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from typing import Any

from flows.ephemeral import exit_on_api_failure
from nlsim.cli import to_a_reader

NAME = "nlsim-failed-runs"
FAILED_EVENTS = ("prefect.flow-run.Failed", "prefect.flow-run.Crashed")
RUN = "flow_run.name"
TEXT = (
    '("nlsim: " ~ flow.name ~ " run " ~ flow_run.name ~ " " ~ flow_run.state.name ~ ": " ~ '
    '(flow_run.state.message or "no message"))'
)
SUBJECT = "nlsim: {{ flow.name }} run {{ flow_run.name }} {{ flow_run.state.name }}"


def run_address(ui: str | None) -> str:
    """A Jinja expression for the failed run's page in the UI: the server's own address for it when the
    server knows its UI (its ``PREFECT_UI_URL``, or its ``PREFECT_API_URL``), else the page under ``ui``
    (the UI of the server this command set the alert up on); a server started as docs/operations.md
    starts it knows none."""
    if not ui:
        return "(flow_run | ui_url)"
    return f"((flow_run | ui_url) or ({json.dumps(ui.rstrip('/') + '/runs/flow-run/')} ~ flow_run.id))"


def webhook_payload(ui: str | None) -> str:
    """The JSON the webhook receives (a Jinja template the server renders for each failed run)."""
    return (
        "{"
        f'"text": {{{{ {TEXT} | tojson }}}}, '
        '"flow": {{ flow.name | tojson }}, '
        '"flow_run": {{ flow_run.name | tojson }}, '
        '"state": {{ flow_run.state.name | tojson }}, '
        '"message": {{ (flow_run.state.message or "") | tojson }}, '
        '"flow_run_id": "{{ flow_run.id }}", '
        f'"url": {{{{ {run_address(ui)} | tojson }}}}'
        "}"
    )


def body(ui: str | None) -> str:
    """The notification's body: the run's reason, its id and its page (when an address is known)."""
    address = run_address(ui)
    return (
        "{{ flow_run.state.message or 'no message' }}\n\nflow run {{ flow_run.id }}"
        f"{{% if {address} %}}: {{{{ {address} }}}}{{% endif %}}"
    )


def ui_address() -> str | None:
    """The UI of the server this command talks to (``PREFECT_UI_URL``, else ``PREFECT_API_URL`` without
    its ``/api``)."""
    from prefect.settings import PREFECT_UI_URL

    return PREFECT_UI_URL.value()


def deployed_flows() -> list[str]:
    """The flows ``prefect.yaml`` deploys, by name (each entry point imported once)."""
    from flows.serve import flow_name, load_specs

    return sorted({flow_name(spec) for spec in load_specs()})


def project_flows() -> list[str]:
    """Every flow the project defines (the modules of ``flows/``), by name: what ``--flow`` may watch."""
    import importlib
    import pkgutil

    from prefect import Flow

    import flows as package

    names: set[str] = set()
    for module in pkgutil.iter_modules(package.__path__):
        found = vars(importlib.import_module(f"{package.__name__}.{module.name}")).values()
        names |= {f.name for f in found if isinstance(f, Flow)}
    return sorted(names)


def check_flows(asked: Sequence[str]) -> None:
    """Refuse a ``--flow`` that names no flow of the project: the automation would watch it for good and
    never fire (a misspelt ``news-dedupe`` alerts on nothing)."""
    known = project_flows()
    for name in asked:
        if name not in known:
            raise AlertError(
                f"--flow {name!r}: no flow of this project is called that (its flows: {', '.join(known)})"
            )


def alert_trigger(flows: Sequence[str]) -> Any:
    """A flow run of one of ``flows`` entering Failed or Crashed, each run on its own."""
    from prefect.events.schemas.automations import EventTrigger, Posture

    return EventTrigger(
        expect=set(FAILED_EVENTS),
        match_related={"prefect.resource.role": "flow", "prefect.resource.name": list(flows)},
        for_each={"prefect.resource.id"},
        posture=Posture.Reactive,
        threshold=1,
    )


def webhook_action(name: str, url: str) -> Any:
    """Save the Webhook block ``<name>-webhook`` calling ``url`` (replaced when it exists) and the action
    that calls it with :func:`webhook_payload`."""
    from prefect.automations import CallWebhook
    from prefect.blocks.webhook import Webhook

    block = Webhook(method="POST", url=url, headers={"Content-Type": "application/json"})
    block_id = block.save(f"{name}-webhook", overwrite=True)
    return CallWebhook(block_document_id=block_id, payload=webhook_payload(ui_address()))


class AlertError(ValueError):
    """An option of ``python -m flows.alerts`` that cannot work (said in one line, exit status 2)."""


def check_slug(slug_name: str) -> None:
    """Refuse a ``--notify`` block that is not written ``TYPE/NAME``: one slash, text on both sides."""
    kind, slash, name = slug_name.partition("/")
    if not (slash and kind.strip() and name.strip()) or "/" in name:
        raise AlertError(f"--notify {slug_name!r}: give the block as TYPE/NAME, e.g. slack-webhook/newsroom")


def notify_action(slug_name: str) -> Any:
    """The action sending :data:`SUBJECT` and :func:`body` through the notification block ``TYPE/NAME``
    already saved on the server."""
    from prefect.automations import SendNotification
    from prefect.blocks.abstract import NotificationBlock
    from prefect.blocks.core import Block

    check_slug(slug_name)
    try:
        block = Block.load(slug_name)
    except ValueError as exc:
        raise AlertError(f"--notify {slug_name!r}: no such block on the server ({exc})") from None
    if not isinstance(block, NotificationBlock):
        raise AlertError(f"--notify {slug_name!r}: a {type(block).__name__} block sends no notification")
    return SendNotification(
        block_document_id=block._block_document_id, subject=SUBJECT, body=body(ui_address())
    )


def check_options(args: argparse.Namespace) -> None:
    """Refuse, before the server is asked anything, options that cannot work together or at all: an action
    or a ``--flow`` beside ``--list`` or ``--remove`` (it was ignored: ``--remove --flow`` removed the alert
    on every flow), a blank ``--name``, a ``--notify`` that is not ``TYPE/NAME``, a
    ``--webhook`` that is not an http(s) URL (the server would call it at the first failed run only), a
    ``--name`` its Webhook block cannot be named after, a ``--flow`` that names no flow of the project."""
    from urllib.parse import urlsplit

    modes = [flag for flag, on in (("--list", args.list), ("--remove", args.remove)) if on]
    actions = [
        flag
        for flag, on in (("--webhook", args.webhook), ("--notify", args.notify), ("--flow", args.flow))
        if on
    ]
    if len(modes) > 1 or (modes and actions):
        raise AlertError(f"{' and '.join(modes + actions)} do not go together: give one of them")
    if not args.name.strip():  # an unset variable: an automation no --list of the default name shows
        raise AlertError(f"--name {args.name!r}: give the automation a name (default: {NAME})")
    if args.notify is not None:
        check_slug(args.notify)
    if args.webhook is not None:
        url = urlsplit(args.webhook)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise AlertError(f"--webhook {args.webhook!r}: not an http(s) URL (https://hooks.example/...)")
        if not re.fullmatch(r"[a-z0-9-]+", args.name or ""):  # the server refuses the block's name
            raise AlertError(
                f"--name {args.name!r}: with --webhook it names the Webhook block '{args.name}-webhook' too, "
                "which may hold only lowercase letters, digits and dashes (e.g. newsroom-alerts)"
            )
    if args.flow:
        check_flows(args.flow)


def existing(name: str) -> list[Any]:
    """The automations called ``name`` on the server."""
    from prefect import get_client

    with get_client(sync_client=True) as client:
        return list(client.read_automations_by_name(name))


def ensure_alert(name: str, flows: Sequence[str], actions: list[Any]) -> tuple[Any, bool]:
    """Create the automation ``name``, or update the one of that name (the first; any other of the name is
    removed): returns its id and whether it was created."""
    from prefect import get_client
    from prefect.events.schemas.automations import AutomationCore

    core = AutomationCore(
        name=name,
        description=(
            f"A run of the nlsim flows ({', '.join(flows)}) failed or crashed: "
            "created by python -m flows.alerts"
        ),
        enabled=True,
        trigger=alert_trigger(flows),
        actions=actions,
    )
    found = existing(name)
    with get_client(sync_client=True) as client:
        if not found:
            return client.create_automation(core), True
        for extra in found[1:]:
            client.delete_automation(extra.id)
        client.update_automation(found[0].id, core)
        return found[0].id, False


def remove_alert(name: str) -> int:
    """Delete every automation called ``name``; returns how many."""
    from prefect import get_client

    found = existing(name)
    with get_client(sync_client=True) as client:
        for automation in found:
            client.delete_automation(automation.id)
    return len(found)


def api_url() -> str | None:
    """The Prefect server the command talks to (``PREFECT_API_URL``, or the active profile's)."""
    from prefect.settings import PREFECT_API_URL

    return PREFECT_API_URL.value()


def describe(automation: Any) -> str:
    """One automation in a few lines: its trigger and its actions."""
    names = automation.trigger.match_related.get("prefect.resource.name")
    acts = ", ".join(a.type for a in automation.actions)
    state = "enabled" if automation.enabled else "paused"
    return f"{automation.name} ({automation.id}, {state}): failed or crashed runs of {names} -> {acts}"


def main(argv: list[str] | None = None) -> int:
    summary = " ".join(__doc__.split("\n\n")[0].split())  # the first paragraph
    parser = argparse.ArgumentParser(prog="python -m flows.alerts", description=summary)
    parser.add_argument(
        "--webhook",
        metavar="URL",
        help="POST a JSON object to this URL for each failed run (default: none; give --webhook, --notify "
        "or both, unless --list or --remove)",
    )
    parser.add_argument(
        "--notify",
        metavar="TYPE/NAME",
        help="send through this notification block of the server, e.g. sendgrid-email/desk (default: none)",
    )
    parser.add_argument("--name", default=NAME, help=f"the automation's name (default: {NAME})")
    parser.add_argument(
        "--flow",
        action="append",
        metavar="NAME",
        help="watch this flow (repeatable; default: every flow prefect.yaml deploys)",
    )
    parser.add_argument("--list", action="store_true", help="print the automation, and exit")
    parser.add_argument("--remove", action="store_true", help="delete the automation, and exit")
    args = parser.parse_args(argv)
    try:
        check_options(args)
    except AlertError as exc:
        parser.error(str(exc))
    if not api_url():
        parser.error(
            "set PREFECT_API_URL to the server the deployments run on (an alert on Prefect's temporary "
            "server would go with it)"
        )
    try:
        return exit_on_api_failure(parser.prog, lambda: _act(args, parser), temporary=False)
    except AlertError as exc:  # a --notify block that is not on the server, or sends nothing
        parser.error(str(exc))


def _act(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """What ``main`` was asked: list, remove, or create or update the automation."""
    if args.list:
        found = existing(args.name)
        print("\n".join(describe(a) for a in found) if found else f"no automation called {args.name}")
        return 0
    if args.remove:
        print(f"removed {remove_alert(args.name)} automation(s) called {args.name}")
        return 0
    if not (args.webhook or args.notify):
        parser.error("give --webhook URL and/or --notify TYPE/NAME (or --list, --remove)")
    flows = args.flow or deployed_flows()
    notify = [notify_action(args.notify)] if args.notify else []  # checked before the webhook block is saved
    actions = ([webhook_action(args.name, args.webhook)] if args.webhook else []) + notify
    automation_id, created = ensure_alert(args.name, flows, actions)
    what = ", ".join(a.type for a in actions)
    print(
        f"{'created' if created else 'updated'} automation {args.name} ({automation_id}): failed or crashed "
        f"runs of {', '.join(flows)} -> {what}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(to_a_reader(main))  # `... --list | head -1`: ends quietly, 141, as `nlsim` does
