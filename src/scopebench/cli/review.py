"""``scopebench review …``: the expert review application (init, users, serve, export, baseline…).

FastAPI, SQLAlchemy and the rest are imported only when a review command runs (the ``review``
extra), so ``import scopebench`` and every other command work without them.
"""

from __future__ import annotations

import argparse
import getpass
import importlib.util
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from scopebench.cli.output import out_console
from scopebench.errors import DataFormatError, MissingDependencyError

__all__ = ["add_subcommands"]

console = out_console(120)


def _need_extra() -> None:
    for module, package in (
        ("fastapi", "fastapi"),
        ("sqlalchemy", "sqlalchemy"),
        ("alembic", "alembic"),
        ("argon2", "argon2-cffi"),
        ("krippendorff", "krippendorff"),
    ):
        if importlib.util.find_spec(module) is None:
            raise MissingDependencyError(package, "review", "scopebench review")


def _store(args: argparse.Namespace) -> Path:
    if args.store:
        return Path(args.store)
    if "://" in args.db:
        raise DataFormatError("with a database URL, give --store: the folder where the project images live")
    return Path(args.db + ".store")


@contextmanager
def _session(args: argparse.Namespace) -> Iterator[Any]:
    _need_extra()
    from scopebench.review.db import open_database

    sessions = open_database(args.db)
    with sessions() as db, db.begin():
        yield db


def _project(db: Any, name: str) -> Any:
    from sqlalchemy import select

    from scopebench.review.db import Project
    from scopebench.review.errors import NotFound

    project = db.scalar(select(Project).where(Project.name == name))
    if project is None:
        names = ", ".join(db.scalars(select(Project.name)).all()) or "none yet"
        raise NotFound(f"no project {name!r} in {args_db_hint(db)}; projects: {names}")
    return project


def args_db_hint(db: Any) -> str:
    """The database a session is bound to, for messages."""
    return str(db.get_bind().url.render_as_string(hide_password=True))


def _store_obj(args: argparse.Namespace) -> Any:
    from scopebench.review.store import ImageStore

    return ImageStore(_store(args))


def cmd_init(args: argparse.Namespace) -> int:
    """Load a benchmark into a new review project (upgrading the database first)."""
    from scopebench.review.projects import create_project
    from scopebench.review.rubrics import load_rubric

    rubric = load_rubric(args.rubric)
    with _session(args) as db:
        project, problems = create_project(
            db,
            _store_obj(args),
            name=args.name,
            benchmark=args.bench,
            data=args.data or "",
            rubric=rubric,
            split=args.split,
            limit=args.limit,
            n_reviewers=args.reviewers,
            seed=args.seed,
            alpha_threshold=args.alpha_threshold,
        )
        n = len(db.scalars(_items_q(project.id)).all())
    console.print(
        f"project {args.name!r}: {n} items from {args.bench}, rubric {rubric.name}, "
        f"{args.reviewers} reviewers per item; images in {_store(args)}"
    )
    _print_problems(problems, n)
    return 0


def _print_problems(problems: list[str], n_items: int, shown: int = 10) -> None:
    """The init problems: a count of missing images first, then the first ``shown`` notes.

    All of them are kept in the project's ``project_created`` event (exported in events.jsonl), so
    a benchmark whose images are all missing prints one clear line, not a screen of notes.
    """
    missing = sum(1 for p in problems if p.startswith("image "))
    if missing:
        console.print(
            f"[yellow]warning:[/yellow] {missing} image(s) could not be copied into the store "
            f"(project of {n_items} items); reviewers see a warning on those items. "
            "Check --data (the images folder) and init again if that is not intended.",
            markup=True,
            highlight=False,
        )
    for p in problems[:shown]:
        console.print(f"[yellow]note:[/yellow] {p}", markup=True, highlight=False)
    if len(problems) > shown:
        console.print(
            f"[yellow]note:[/yellow] … and {len(problems) - shown} more (all in the project's "
            "project_created event, exported in events.jsonl)",
            markup=True,
            highlight=False,
        )


def _items_q(project_id: int) -> Any:
    from sqlalchemy import select

    from scopebench.review.db import ItemRow

    return select(ItemRow.id).where(ItemRow.project_id == project_id)


def _password(args: argparse.Namespace) -> str:
    if args.password_file:
        return Path(args.password_file).read_text(encoding="utf-8").strip()
    env = os.environ.get("SCOPEBENCH_REVIEW_PASSWORD")
    if env:
        return env
    first = getpass.getpass(f"password for {args.username}: ")
    if getpass.getpass("again: ") != first:
        raise DataFormatError("the two passwords differ")
    return first


def cmd_user(args: argparse.Namespace) -> int:
    """Create an account."""
    from scopebench.review.accounts import create_user

    password = _password(args)
    with _session(args) as db:
        user = create_user(db, args.username, password, args.role)
        console.print(f"user {user.username!r} ({user.role}, pseudonym {user.pseudonym}) created")
    return 0


def cmd_member(args: argparse.Namespace) -> int:
    """Add users to a project in a reviewer group."""
    from sqlalchemy import select

    from scopebench.review.db import User
    from scopebench.review.errors import NotFound
    from scopebench.review.projects import add_member

    with _session(args) as db:
        project = _project(db, args.project)
        for name in args.users:
            user = db.scalar(select(User).where(User.username == name))
            if user is None:
                raise NotFound(f"no user {name!r}; create it with `scopebench review user`")
            add_member(db, project, user, args.group)
        console.print(f"{len(args.users)} member(s) in group {args.group!r} of {args.project!r}")
    return 0


def cmd_assign(args: argparse.Namespace) -> int:
    """Assign every item to its reviewers."""
    from scopebench.review.projects import assign

    with _session(args) as db:
        n = assign(db, _project(db, args.project))
    console.print(f"{n} new assignment(s) in {args.project!r}")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    """Run the web server (upgrading the database first)."""
    _need_extra()
    import uvicorn

    from scopebench.review.app import AppSettings, create_app

    settings = AppSettings(
        db=args.db,
        store=_store(args),
        session_hours=args.session_hours,
        max_upload_bytes=int(args.max_upload_mb * 2**20),
        secure_cookies=args.secure_cookies,
        model=args.model,
        base_url=args.base_url,
    )
    app = create_app(settings)
    console.print(f"scopebench review on http://{args.host}:{args.port}/ (database {args.db})")
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    """Write the accepted items, decision log, events and agreement."""
    from scopebench.review.outputs import export_project
    from scopebench.review.submissions import export_submissions

    with _session(args) as db:
        project = _project(db, args.project)
        summary = export_project(
            db,
            _store_obj(args),
            project,
            Path(args.out),
            force=args.force,
            resamples=args.resamples,
            hf=not args.no_hf,
        )
        export_submissions(db, _store_obj(args), project, Path(args.out))
        if summary["gate"]["forced"]:
            from scopebench.review.accounts import log_event

            log_event(db, project.id, "export_forced", {"failing": summary["gate"]["failing"]})
    console.print(
        f"{summary['accepted']} accepted, {summary['rejected']} rejected, {summary['pending']} pending "
        f"→ {args.out.rstrip('/')}/ (data.jsonl, {'' if args.no_hf else 'hf/, '}decisions.jsonl, "
        "pending.jsonl, events.jsonl, agreement.json, summary.json, submissions.jsonl)"
    )
    if summary["gate"]["forced"]:
        console.print(
            f"[yellow]warning:[/yellow] release gate forced: {'; '.join(summary['gate']['failing'])}"
        )
    return 0


def cmd_baseline(args: argparse.Namespace) -> int:
    """Write the experts' first answers as run directories, one per reviewer group."""
    from sqlalchemy import select

    from scopebench.review.db import Member
    from scopebench.review.outputs import write_baseline
    from scopebench.scoring import compute_metrics

    with _session(args) as db:
        project = _project(db, args.project)
        runs = write_baseline(db, project, Path(args.out), seed=args.seed)
        groups = set(db.scalars(select(Member.group).where(Member.project_id == project.id)).all())
    from scopebench.store.rundir import METRICS_FILE, load_run

    for group, run_dir in runs.items():
        run = load_run(run_dir)
        metrics = compute_metrics(run.records, benchmark=run.benchmark, items=run.items, seed=args.seed)
        (run_dir / METRICS_FILE).write_text(__import__("json").dumps(metrics, indent=2), encoding="utf-8")
        missing = sum(r.status == "missing_response" for r in run.records)
        console.print(
            f"human:{group} → {run_dir} ({len(run.records) - missing} answered, {missing} not yet"
            + ("; `scopebench report --policy exclude` leaves those out)" if missing else ")")
        )
    for group in sorted(groups - set(runs)):  # said, not silently absent
        console.print(f"[yellow]note:[/yellow] group {group!r}: no member has answered yet; no run written")
    return 0


def cmd_submissions(args: argparse.Namespace) -> int:
    """Export the expert submissions as JSONL for `scopebench build`."""
    from scopebench.review.submissions import export_submissions

    with _session(args) as db:
        path = export_submissions(db, _store_obj(args), _project(db, args.project), Path(args.out))
    console.print(f"submissions written to {path}")
    return 0


def cmd_labelstudio(args: argparse.Namespace) -> int:
    """Export tasks and a labelling config for Label Studio, or import its annotations."""
    from scopebench.review.labelstudio import export_labelstudio, import_labelstudio

    with _session(args) as db:
        project = _project(db, args.project)
        if args.action == "export":
            tasks, cfg = export_labelstudio(
                db, _store_obj(args), project, Path(args.out), image_url=args.image_url
            )
            console.print(f"Label Studio tasks {tasks} and labelling config {cfg}")
        else:
            mapping = dict(pair.split("=", 1) for pair in args.user_map)
            n = import_labelstudio(db, project, Path(args.file), user_map=mapping)
            console.print(f"{n} annotation(s) imported into {args.project!r}")
    return 0


def _guarded(cmd: Any) -> Any:
    """``cmd`` after checking the review extra is installed (a message, not an ImportError)."""

    def run(args: argparse.Namespace) -> int:
        _need_extra()
        code: int = cmd(args)
        return code

    run.__doc__ = cmd.__doc__
    return run


def _common(p: argparse.ArgumentParser, project: bool = True) -> None:
    p.add_argument("--db", required=True, help="SQLite file, or a postgresql+psycopg:// URL")
    p.add_argument("--store", help="image store folder (default: DB.store next to a SQLite file)")
    if project:
        p.add_argument("--project", required=True, help="project name")


def add_subcommands(sub: Any) -> None:
    """Register ``scopebench review …``."""
    review = sub.add_parser(
        "review", help="expert review web app: blind double review, arbitration, baseline"
    )
    rs = review.add_subparsers(dest="review_command", metavar="ACTION")
    rs.required = True

    p = rs.add_parser("init", help="load a benchmark (any loader, or a build output) into a review project")
    _common(p, project=False)
    p.add_argument("--name", required=True, help="project name")
    p.add_argument("--bench", required=True, help="benchmark name (local for a build output)")
    p.add_argument("--data", help="data location, as for `scopebench run`")
    p.add_argument("--split")
    p.add_argument("--limit", type=int)
    p.add_argument("--rubric", default="pathmmu", help="pathmmu, spur, hle, spur-hle or a rubric JSON file")
    p.add_argument("--reviewers", type=int, default=2, help="independent reviewers per item (default 2)")
    p.add_argument(
        "--seed", type=int, default=0, help="seed of assignment ties, arbiter order and bootstraps"
    )
    p.add_argument("--alpha-threshold", type=float, help="release gate: export refuses below this α")
    p.set_defaults(func=_guarded(cmd_init))

    p = rs.add_parser(
        "user",
        help="create an account (password from --password-file, $SCOPEBENCH_REVIEW_PASSWORD or a prompt)",
    )
    _common(p, project=False)
    p.add_argument("username")
    p.add_argument("--role", choices=("admin", "senior", "reviewer"), default="reviewer")
    p.add_argument("--password-file")
    p.set_defaults(func=_guarded(cmd_user))

    p = rs.add_parser("member", help="add users to a project in a reviewer group")
    _common(p)
    p.add_argument("users", nargs="+", metavar="USERNAME")
    p.add_argument("--group", default="experts", help="reviewer group: the baseline run human:GROUP")
    p.set_defaults(func=_guarded(cmd_member))

    p = rs.add_parser("assign", help="assign each item to N reviewers, balanced")
    _common(p)
    p.set_defaults(func=_guarded(cmd_assign))

    p = rs.add_parser("serve", help="run the web server")
    _common(p, project=False)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--session-hours", type=float, default=8.0)
    p.add_argument("--max-upload-mb", type=float, default=10.0)
    p.add_argument("--secure-cookies", action="store_true", help="mark cookies Secure (behind HTTPS)")
    p.add_argument("--model", help="model spec that answers submissions in real time")
    p.add_argument("--base-url", help="server URL for openai: models")
    p.set_defaults(func=_guarded(cmd_serve))

    p = rs.add_parser("export", help="accepted items (local + HF), decision log, events, agreement")
    _common(p)
    p.add_argument("--out", required=True)
    p.add_argument("--force", action="store_true", help="export although the α release gate fails (recorded)")
    p.add_argument(
        "--resamples", type=int, default=1000, help="bootstrap resamples of the agreement intervals"
    )
    p.add_argument("--no-hf", action="store_true", help="skip the Hugging Face dataset")
    p.set_defaults(func=_guarded(cmd_export))

    p = rs.add_parser("baseline", help="the experts' first answers as run directories (human:GROUP)")
    _common(p)
    p.add_argument("--out", required=True, help="folder for one run directory per group")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed recorded in run.json")
    p.set_defaults(func=_guarded(cmd_baseline))

    p = rs.add_parser("submissions", help="export expert submissions as JSONL for `scopebench build`")
    _common(p)
    p.add_argument("--out", required=True)
    p.set_defaults(func=_guarded(cmd_submissions))

    p = rs.add_parser("labelstudio", help="Label Studio: export tasks + config, or import annotations")
    _common(p)
    p.add_argument("action", choices=("export", "import"))
    p.add_argument("--out", help="folder for tasks.json, config.xml and images/ (export)")
    p.add_argument("--image-url", default="images/", help="prefix of image URLs in the tasks (export)")
    p.add_argument("--file", help="Label Studio JSON export (import)")
    p.add_argument(
        "--user-map",
        action="append",
        default=[],
        metavar="LS_ID=USERNAME",
        help="map a Label Studio user id or email to a username (import)",
    )
    p.set_defaults(func=_guarded(cmd_labelstudio))
