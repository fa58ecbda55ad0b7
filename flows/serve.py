"""Serve every deployment declared in ``prefect.yaml`` from one process.

``prefect.yaml`` is the one place deployments are declared (names, entry points, schedules with their
time zone, parameters, concurrency limits, versions); this module reads it and serves them all with
:func:`prefect.serve`, so no work pool or worker is needed. Every key of a deployment entry that
``Flow.to_deployment`` understands is passed on (:data:`PASSED`); a key it does not know is an error,
not silently dropped. Run it from the repository root with ``PREFECT_API_URL`` pointing at a server (in the
environment or the active Prefect profile; without one it refuses to serve, :data:`NO_SERVER`: the
deployments would go with Prefect's temporary server)::

    python -m flows.serve                       # all deployments
    python -m flows.serve --only news-dedup/daily
    python -m flows.serve --list                # print what would be served, and exit

Then trigger a run ad hoc (Prefect 3 has no ``prefect run``)::

    prefect deployment run 'news-dedup/daily' --param corpus=incoming/2026-11-22.parquet --watch

Example:
    >>> specs = load_specs()  # the repository's prefect.yaml
    >>> sorted(deployment_names(specs))
    ['learning-curve/manual', 'news-dedup/daily', 'news-pipeline/weekly']
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

from flows.ephemeral import exit_on_api_failure
from nlsim.cli import to_a_reader
from nlsim.commands.options import needless
from nlsim.dedup.settings import has_date
from nlsim.environment import check_environment
from nlsim.errors import ConfigError
from nlsim.io.corpus_schema import MACHINE_ZONES, machine_zone_problem, zone_problem
from nlsim.options import options_of

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_FILE = ROOT / "prefect.yaml"


NO_SERVER = (
    "PREFECT_API_URL is not set (in the environment or the active Prefect profile): the deployments would "
    "be served on Prefect's temporary server, which goes with this process, their schedules, runs and logs "
    "with it (and python -m flows.alerts sets no alert there); start a server (prefect server start --host "
    "127.0.0.1 --port 4200), export PREFECT_API_URL=http://127.0.0.1:4200/api and run this again"
)
"""Why ``python -m flows.serve`` serves nothing without a Prefect server to serve on (``--list`` needs
none)."""


class SpecError(ValueError):
    """A ``prefect.yaml`` that cannot be read or holds a deployment entry serve cannot use."""


def load_specs(path: str | Path = DEFAULT_FILE) -> list[dict[str, Any]]:
    """The ``deployments`` entries of a ``prefect.yaml`` (a :class:`SpecError` naming the file otherwise)."""
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    except FileNotFoundError:
        raise SpecError(f"{path}: file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"{path}: cannot be read: {exc}") from None
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" (line {where.line + 1})" if where is not None else ""
        raise SpecError(f"{path}: not valid YAML{line}: {getattr(exc, 'problem', None) or exc}") from None
    specs = data.get("deployments") if isinstance(data, dict) else None
    if not isinstance(specs, list) or not all(isinstance(s, dict) for s in specs):
        raise SpecError(f"{path}: no list of deployment entries under 'deployments'")
    for spec in specs:
        for key in ("name", "entrypoint"):
            if not spec.get(key):
                raise SpecError(f"{path}: a deployment lacks {key!r}: {spec}")
        if not isinstance(spec["name"], str):  # name: 2026, a number to YAML: a traceback from Prefect
            name = spec["name"]
            raise SpecError(
                f"{path}: deployment {name}: name: give it as text, in quotes ('{name}'), got {name!r}"
            )
    return specs


def flow_name(spec: dict[str, Any]) -> str:
    """The flow name behind a deployment entry (imports its entry point)."""
    return load_flow(spec).name


def load_flow(spec: dict[str, Any]) -> Any:
    """The flow an entry's ``entrypoint`` (``FILE.py:FUNCTION``, relative to the repository) names; a
    :class:`SpecError` naming the entry when the file or the flow is not there."""
    from prefect.exceptions import PrefectException
    from prefect.flows import load_flow_from_entrypoint

    entry = str(spec["entrypoint"])
    module_file, _, func = entry.rpartition(":")
    if not module_file or not func or not module_file.endswith(".py"):
        raise SpecError(f"deployment {spec['name']!r}: entrypoint {entry!r}: give FILE.py:FUNCTION")
    path = Path(module_file)
    if not path.is_absolute():
        path = ROOT / path
    if not path.is_file():
        raise SpecError(f"deployment {spec['name']!r}: entrypoint {entry!r}: {path} does not exist")
    try:
        return load_flow_from_entrypoint(f"{path}:{func}", use_placeholder_flow=False)
    except PrefectException as exc:  # no such flow in the file, or the file fails to import
        cause = exc.__cause__ or exc
        raise SpecError(
            f"deployment {spec['name']!r}: entrypoint {entry!r} cannot be loaded: "
            f"{type(cause).__name__}: {' '.join(str(cause).split())}"
        ) from None


def deployment_names(specs: list[dict[str, Any]]) -> list[str]:
    """``FLOW/DEPLOYMENT`` of every entry, as ``prefect deployment run`` spells them."""
    return [f"{flow_name(s)}/{s['name']}" for s in specs]


def schedules_of(spec: dict[str, Any]) -> list[Any]:
    """The entry's schedules as Prefect ``Cron``/``Interval`` objects (time zone included); a
    :class:`SpecError` for a schedule serve would drop or the server would refuse only later."""
    from datetime import timedelta
    from zoneinfo import ZoneInfo

    from prefect.schedules import Cron, Interval

    where = f"deployment {spec['name']!r}: schedule"
    out = []
    for i, s in enumerate(spec.get("schedules") or [], 1):
        # by presence, not by value: ``interval: 0`` is an interval, refused as one below
        if not isinstance(s, dict) or (s.get("cron") is None) == (s.get("interval") is None):
            raise SpecError(f"{where} {i}: give either 'cron' or 'interval' (seconds), got {s!r}")
        unknown = set(s) - {"cron", "interval", "timezone", "active"}
        if unknown:
            raise SpecError(f"{where} {i}: keys not understood by serve: {', '.join(sorted(unknown))}")
        zone = s.get("timezone")
        if zone in MACHINE_ZONES:  # the zone of whichever host serves it: its runs would move with the host
            raise SpecError(f"{where} {i}: {machine_zone_problem(str(zone), 'timezone')}")
        try:
            if zone is not None:
                ZoneInfo(str(zone))
        except (KeyError, ValueError, OSError):  # ZoneInfoNotFoundError is a KeyError
            raise SpecError(f"{where} {i}: unknown time zone {zone!r} (e.g. Asia/Taipei, UTC)") from None
        # named as a newsroom names its clock, it is another: Etc/GMT+8 is UTC-08:00, EST has no summer time
        problem = (
            None if zone is None else zone_problem(str(zone), "timezone", "the schedule's runs would start")
        )
        if problem is not None:
            raise SpecError(f"{where} {i}: {problem}")
        active = s.get("active", True)
        if not isinstance(active, bool):
            raise SpecError(f"{where} {i}: 'active' must be true or false, got {active!r}")
        if s.get("cron") is not None:
            try:
                out.append(Cron(str(s["cron"]), timezone=zone, active=active))
            except ValueError as exc:
                raise SpecError(f"{where} {i}: {exc}") from None
            continue
        seconds = s["interval"]
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not seconds > 0:
            raise SpecError(f"{where} {i}: 'interval' must be a number of seconds > 0, got {seconds!r}")
        out.append(Interval(timedelta(seconds=float(seconds)), timezone=zone, active=active))
    return out


PASSED = ("description", "tags", "parameters", "version", "enforce_parameter_schema", "paused")
"""Keys of a ``prefect.yaml`` deployment entry passed on as they are."""
HANDLED = ("name", "entrypoint", "schedules", "concurrency_limit")
IGNORED = ("work_pool", "build", "push", "pull", "job_variables")
"""Keys that only matter to ``prefect deploy`` with a worker (serve runs flows in its own process)."""


def concurrency_of(spec: dict[str, Any]) -> Any:
    """The entry's ``concurrency_limit`` (a number, or ``{limit, collision_strategy}``) for
    ``to_deployment``; a :class:`SpecError` for any other value."""
    value = spec.get("concurrency_limit")
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
        return value
    from prefect.client.schemas.objects import ConcurrencyLimitConfig, ConcurrencyLimitStrategy

    strategies = [s.value for s in ConcurrencyLimitStrategy]
    limit = value.get("limit") if isinstance(value, dict) else None
    strategy = value.get("collision_strategy", "ENQUEUE") if isinstance(value, dict) else None
    if (
        not isinstance(value, dict)
        or set(value) - {"limit", "collision_strategy"}
        or isinstance(limit, bool)
        or not isinstance(limit, int)
        or limit < 1
        or strategy not in strategies
    ):
        raise SpecError(
            f"deployment {spec['name']!r}: concurrency_limit must be a whole number >= 1 or "
            f"{{limit: N, collision_strategy: {' or '.join(strategies)}}}, got {value!r}"
        )
    return ConcurrencyLimitConfig(limit=limit, collision_strategy=ConcurrencyLimitStrategy(strategy))


def check_parameters(spec: dict[str, Any], flow: Any) -> dict[str, Any]:
    """The entry's ``parameters``, each the name of a parameter of its flow (a misspelt one would make
    every run of the deployment fail, the first one hours later on its schedule), and none that does
    nothing as the others stand (``use_gpu`` with ``report: false``), as the command line refuses it, no
    ``date`` on a schedule (each scheduled run would run that one day again), and every value a run would
    refuse (:func:`check_values`)."""
    params = spec.get("parameters") or {}
    if not isinstance(params, dict):
        raise SpecError(f"deployment {spec['name']!r}: 'parameters' must be a mapping of name: value")
    known = set(flow.parameters.properties)
    unknown = sorted(set(params) - known)
    if unknown:
        raise SpecError(
            f"deployment {spec['name']!r}: {', '.join(unknown)}: not a parameter of the flow {flow.name!r} "
            "(its parameters: the settings of its configuration by their flat names, e.g. "
            f"{', '.join(sorted(known)[:6])}, ...)"
        )
    if "date" in params and params["date"] is not None and scheduled(spec):
        raise SpecError(
            f"deployment {spec['name']!r}: date: {str(params['date'])!r} on a schedule: every scheduled run "
            "would run that day again (without it, each takes its scheduled day); leave date out, and give "
            "it to a run by hand (prefect deployment run ... --param date=YYYY-MM-DD)"
        )
    for cls in getattr(flow.fn, "configurations", ()):
        values = {o.name: o.default for o in options_of(cls)} | params
        found = needless(cls, params, values.get)
        if found is not None:  # refused on the command line too: the run would ignore it
            opt, needed = found
            value = values[needed.name]
            stands = "false" if value is False else (repr(value) if value in needed.off else "not set")
            raise SpecError(
                f"deployment {spec['name']!r}: {opt.name} does nothing while {needed.name} is {stands}: "
                f"leave {opt.name} out, or set {needed.name}"
            )
        check_values(spec, flow, cls, params)
    return params


def scheduled(spec: dict[str, Any]) -> bool:
    """Whether the entry's runs start on their own (an active schedule, the deployment not paused)."""
    if spec.get("paused") is True:
        return False
    return any(
        isinstance(s, dict) and s.get("active", True) is not False for s in spec.get("schedules") or []
    )


def check_values(spec: dict[str, Any], flow: Any, cls: type, params: dict[str, Any]) -> None:
    """Refuse what every run of the entry would be refused for, before any is served: a value of the wrong
    type (``k: ten``) or one the configuration ``cls`` refuses (``timezone: Asia/Taipe``, ``k: 0``, a
    ``date`` that is not one), and, on a schedule, a required setting left out (each scheduled run would
    fail on it). An entry run by hand may leave required settings to each run's ``--param``: its values are
    then checked by each run."""
    from pydantic import TypeAdapter, ValidationError
    from pydantic_core import to_jsonable_python

    from nlsim.options import build

    where = f"deployment {spec['name']!r}"
    options = options_of(cls)
    missing = [o.name for o in options if o.required and o.name not in params]
    if missing:
        if scheduled(spec):
            raise SpecError(
                f"{where}: {', '.join(missing)}: required by the flow {flow.name!r} and not given: every "
                "scheduled run would fail; give it under 'parameters'"
            )
        return
    values = {}
    for opt in options:
        if opt.name not in params:
            continue
        sent = to_jsonable_python(params[opt.name])  # as the server hands it to each run
        try:
            values[opt.name] = TypeAdapter(flow.fn.__annotations__[opt.name]).validate_python(sent)
        except ValidationError as exc:
            reason = " ".join(str(exc.errors()[0]["msg"]).split())
            raise SpecError(
                f"{where}: {opt.name}: {reason[:1].lower()}{reason[1:]}, got {params[opt.name]!r} (every run "
                "would fail on it)"
            ) from None
    try:
        build(cls, values)
    except ConfigError as exc:
        raise SpecError(f"{where}: parameters: {exc} (every run would fail on it)") from None


def same_days(first: str, second: str) -> bool:
    """Whether two time zones name the same day at every moment of this year and the next (``UTC`` and
    ``Etc/UTC``, ``Asia/Taipei`` and ``Asia/Shanghai``): their offsets from UTC agree at noon UTC each day.

    Example:
        >>> same_days("UTC", "Etc/UTC"), same_days("Asia/Taipei", "UTC")
        (True, False)
    """
    import datetime as dt
    from zoneinfo import ZoneInfo

    try:
        zones = ZoneInfo(first), ZoneInfo(second)
    except (KeyError, ValueError, OSError):  # an unknown zone is refused by its own check
        return first == second
    start = dt.datetime(dt.datetime.now(dt.UTC).year, 1, 1, 12, tzinfo=dt.UTC)
    days = (start + dt.timedelta(days=n) for n in range(731))
    return all(day.astimezone(zones[0]).utcoffset() == day.astimezone(zones[1]).utcoffset() for day in days)


def check_schedule_zone(spec: dict[str, Any], flow: Any, params: dict[str, Any]) -> None:
    """Refuse a dated entry whose schedule runs on one clock and whose ``{date}`` is taken on another: a
    ``cron: '30 0 * * *'`` in Asia/Taipei with ``timezone`` left at UTC starts at 16:30 UTC the day before,
    and would read the day before's corpus. ``{date}`` is the scheduled day in the ``timezone`` parameter,
    so an entry with a ``{date}`` in ``corpus`` or ``quarantine`` must set it to its cron schedules' zone
    (an ``interval`` starts at every hour alike: its zone is not checked)."""
    for cls in getattr(flow.fn, "configurations", ()):
        values = {o.name: o.default for o in options_of(cls)} | params
        if "timezone" not in values:
            continue
        if not any(has_date(str(values.get(k) or "")) for k in ("corpus", "quarantine")):
            return
        for i, s in enumerate(spec.get("schedules") or [], 1):
            if not s.get("cron"):  # an interval starts at any hour: its zone names no day of its runs
                continue
            zone = str(s.get("timezone") or "UTC")
            if not same_days(zone, str(values["timezone"])):
                raise SpecError(
                    f"deployment {spec['name']!r}: schedule {i} is in {zone} but timezone is "
                    f"{values['timezone']!r}: {{date}} is the scheduled day in timezone, so a run "
                    f"near midnight in {zone} would read another day's corpus; set timezone: {zone}"
                )


def deployment_of(
    spec: dict[str, Any], flow: Any, schedules: list[Any], limit: Any, options: dict[str, Any]
) -> Any:
    """``flow.to_deployment`` for the entry; a :class:`SpecError` naming the field for a value of a key
    passed on as it is (:data:`PASSED`) that Prefect cannot take (``version: 2``: a traceback), or would
    take as another (``tags: daily``, one tag without brackets: served as the tags d, a, i, l, y)."""
    from pydantic import ValidationError

    where = f"deployment {spec['name']!r}"
    tags = options["tags"] if "tags" in options else None
    if isinstance(tags, str):
        raise SpecError(f"{where}: tags: give a list of tags ([{tags}]), got {tags!r}")
    try:
        return flow.to_deployment(name=spec["name"], schedules=schedules, concurrency_limit=limit, **options)
    except ValidationError as exc:
        error = exc.errors()[0]
        key = str(error["loc"][0]) if error["loc"] else "?"
        reason = " ".join(str(error["msg"]).split())
        got = f", got {spec[key]!r}" if key in spec else ""
        raise SpecError(f"{where}: {key}: {reason[:1].lower()}{reason[1:]}{got}") from None


def build_deployments(specs: list[dict[str, Any]], only: list[str] | None = None) -> list[Any]:
    """``RunnerDeployment`` objects for :func:`prefect.serve` (optionally only the names in ``only``); a
    :class:`SpecError` for an entry that cannot be served as it is written, before any is served."""
    deployments = []
    named: set[str] = set()
    entries: dict[str, int] = {}
    for number, spec in enumerate(specs, 1):
        unknown = set(spec) - set(PASSED) - set(HANDLED) - set(IGNORED)
        if unknown:
            raise SpecError(
                f"deployment {spec['name']!r}: keys not understood by serve: {', '.join(sorted(unknown))}"
            )
        flow = load_flow(spec)
        full = f"{flow.name}/{spec['name']}"
        if full in entries:  # the second would replace the first on the server, silently
            raise SpecError(
                f"deployment {spec['name']!r}: {full} declared twice in the file (entries {entries[full]} "
                f"and {number})"
            )
        entries[full] = number
        named |= {full, spec["name"]}
        schedules, limit, params = schedules_of(spec), concurrency_of(spec), check_parameters(spec, flow)
        check_schedule_zone(spec, flow, params)
        if only and full not in only and spec["name"] not in only:
            continue
        options = {k: spec[k] for k in PASSED if k in spec}
        options["parameters"] = params
        deployments.append(deployment_of(spec, flow, schedules, limit, options))
    unknown = [name for name in only or () if name not in named]
    if unknown:  # one misspelt among several: the others would be served and that one silently not
        raise SpecError(f"no deployment named {', '.join(unknown)} in the file")
    return deployments


def describe(deployment: Any, entrypoint: str) -> str:
    """One line of ``--list``: the deployment, its entry point and its schedules; a schedule written
    ``active: false`` and a deployment written ``paused: true`` start no run, and the line says so."""
    said = []
    for entry in deployment.schedules:
        s = entry.schedule
        when = f"cron {s.cron}" if getattr(s, "cron", None) else f"every {s.interval}"
        said.append(f"{when} ({s.timezone or 'UTC'})" + ("" if entry.active is not False else " inactive"))
    line = f"{deployment.flow_name}/{deployment.name}: {entrypoint} - {'; '.join(said) or 'manual'}"
    return line + (" - paused: no scheduled run starts" if deployment.paused else "")


def main(argv: list[str] | None = None) -> int:
    summary = __doc__.split("\n\n")[0].replace("``", "")  # the first paragraph, without its markup
    parser = argparse.ArgumentParser(prog="python -m flows.serve", description=summary)
    parser.add_argument(
        "--file", default=str(DEFAULT_FILE), help="the prefect.yaml to read (default: the repo's)"
    )
    parser.add_argument(
        "--only",
        action="append",
        default=None,
        metavar="FLOW/NAME",
        help="serve only this deployment (repeatable; default: every deployment of --file)",
    )
    parser.add_argument(
        "--list", action="store_true", help="print the deployments and their schedules, then exit"
    )
    args = parser.parse_args(argv)
    from flows.orchestration import task_timeout  # deferred: it loads prefect

    try:  # every entry is checked before any is served: a refusal serves nothing (exit status 2)
        specs = load_specs(args.file)
        deployments = build_deployments(specs, args.only)
        check_environment()  # what every served run would read: a bad value would fail each of them
        task_timeout()
    except SpecError as exc:  # named by the file, the entry and the field
        said = str(exc) if str(exc).startswith(f"{args.file}: ") else f"{args.file}: {exc}"
        print(f"{parser.prog}: error: {said}", file=sys.stderr)
        return 2
    except ConfigError as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2
    if args.list:
        entries = {s["name"]: s["entrypoint"] for s in specs}
        print("\n".join(describe(d, entries[d.name]) for d in deployments))
        return 0
    from flows.alerts import api_url  # deferred: it loads prefect

    if not api_url():  # before Prefect starts its temporary server to serve on
        print(f"{parser.prog}: error: {NO_SERVER}", file=sys.stderr)
        return 2
    from prefect import serve
    from prefect.client.orchestration import get_client

    def run() -> int:
        with get_client(sync_client=True) as client:
            client.hello()  # a server that does not answer (or is not one) raises here, before "serving"
        print("serving " + ", ".join(f"{d.flow_name}/{d.name}" for d in deployments), flush=True)
        serve(*deployments)
        return 0

    return exit_on_api_failure(parser.prog, run, temporary=False)  # served deployments would go with it


if __name__ == "__main__":
    sys.exit(to_a_reader(main))  # `... --list | head -1`: ends quietly, 141, as `nlsim` does
