"""Serve every deployment declared in ``prefect.yaml`` from one process.

``prefect.yaml`` is the one place deployments are declared (names, entry points, schedules with their
time zone, parameters, concurrency limits, versions); this module reads it and serves them all with
:func:`prefect.serve`, so no work pool or worker is needed. Every key of a deployment entry that
``Flow.to_deployment`` understands is passed on (:data:`PASSED`); a key it does not know is an error,
not silently dropped. Run it from the repository root with ``PREFECT_API_URL`` pointing at a server::

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

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_FILE = ROOT / "prefect.yaml"


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
    return specs


def flow_name(spec: dict[str, Any]) -> str:
    """The flow name behind a deployment entry (imports its entry point)."""
    return load_flow(spec).name


def load_flow(spec: dict[str, Any]) -> Any:
    from prefect.flows import load_flow_from_entrypoint

    module_file, func = spec["entrypoint"].split(":")
    path = Path(module_file)
    if not path.is_absolute():
        path = ROOT / path
    return load_flow_from_entrypoint(f"{path}:{func}", use_placeholder_flow=False)


def deployment_names(specs: list[dict[str, Any]]) -> list[str]:
    """``FLOW/DEPLOYMENT`` of every entry, as ``prefect deployment run`` spells them."""
    return [f"{flow_name(s)}/{s['name']}" for s in specs]


def schedules_of(spec: dict[str, Any]) -> list[Any]:
    """The entry's schedules as Prefect ``Cron``/``Interval`` objects (time zone included)."""
    from datetime import timedelta

    from prefect.schedules import Cron, Interval

    out = []
    for s in spec.get("schedules") or []:
        if s.get("cron"):
            out.append(Cron(s["cron"], timezone=s.get("timezone"), active=s.get("active", True)))
        elif s.get("interval"):
            out.append(
                Interval(
                    timedelta(seconds=float(s["interval"])),
                    timezone=s.get("timezone"),
                    active=s.get("active", True),
                )
            )
    return out


PASSED = ("description", "tags", "parameters", "version", "enforce_parameter_schema", "paused")
"""Keys of a ``prefect.yaml`` deployment entry passed on as they are."""
HANDLED = ("name", "entrypoint", "schedules", "concurrency_limit")
IGNORED = ("work_pool", "build", "push", "pull", "job_variables")
"""Keys that only matter to ``prefect deploy`` with a worker (serve runs flows in its own process)."""


def concurrency_of(spec: dict[str, Any]) -> Any:
    """The entry's ``concurrency_limit`` (a number, or ``{limit, collision_strategy}``) for "
    "``to_deployment``."""
    value = spec.get("concurrency_limit")
    if value is None or isinstance(value, int):
        return value
    from prefect.client.schemas.objects import ConcurrencyLimitConfig, ConcurrencyLimitStrategy

    return ConcurrencyLimitConfig(
        limit=int(value["limit"]),
        collision_strategy=ConcurrencyLimitStrategy(value.get("collision_strategy", "ENQUEUE")),
    )


def build_deployments(specs: list[dict[str, Any]], only: list[str] | None = None) -> list[Any]:
    """``RunnerDeployment`` objects for :func:`prefect.serve` (optionally only the names in ``only``)."""
    deployments = []
    for spec in specs:
        unknown = set(spec) - set(PASSED) - set(HANDLED) - set(IGNORED)
        if unknown:
            raise SystemExit(
                f"deployment {spec['name']!r}: keys not understood by serve: {', '.join(sorted(unknown))}"
            )
        flow = load_flow(spec)
        full = f"{flow.name}/{spec['name']}"
        if only and full not in only and spec["name"] not in only:
            continue
        options = {k: spec[k] for k in PASSED if k in spec}
        options["parameters"] = spec.get("parameters") or {}
        deployments.append(
            flow.to_deployment(
                name=spec["name"],
                schedules=schedules_of(spec),
                concurrency_limit=concurrency_of(spec),
                **options,
            )
        )
    if only and not deployments:
        raise SystemExit(f"no deployment named {', '.join(only)} in the file")
    return deployments


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m flows.serve", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--file", default=str(DEFAULT_FILE), help="the prefect.yaml to read (default: the repo's)"
    )
    parser.add_argument(
        "--only",
        action="append",
        default=None,
        metavar="FLOW/NAME",
        help="serve only this deployment (repeatable)",
    )
    parser.add_argument(
        "--list", action="store_true", help="print the deployments and their schedules, then exit"
    )
    args = parser.parse_args(argv)
    try:
        specs = load_specs(args.file)
    except SpecError as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2
    if args.list:
        listed = [
            s for s in specs if not args.only or {f"{flow_name(s)}/{s['name']}", s["name"]} & set(args.only)
        ]
        if args.only and not listed:
            print(
                f"{parser.prog}: error: no deployment named {', '.join(args.only)} in the file",
                file=sys.stderr,
            )
            return 1
        for spec in listed:
            sched = (
                "; ".join(
                    f"cron {s['cron']} ({s.get('timezone', 'UTC')})"
                    for s in spec.get("schedules") or []
                    if s.get("cron")
                )
                or "manual"
            )
            print(f"{flow_name(spec)}/{spec['name']}: {spec['entrypoint']} - {sched}")
        return 0
    from prefect import serve

    deployments = build_deployments(specs, args.only)
    print("serving " + ", ".join(f"{d.flow_name}/{d.name}" for d in deployments), flush=True)

    def run() -> int:
        serve(*deployments)
        return 0

    return exit_on_api_failure(parser.prog, run)


if __name__ == "__main__":
    sys.exit(main())
