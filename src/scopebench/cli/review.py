"""``scopebench review …``: the expert review application (init, users, serve, export, baseline…).

FastAPI, SQLAlchemy and the rest are imported only when a review command runs (the ``review``
extra), so ``import scopebench`` and every other command work without them.
"""

from __future__ import annotations

import getpass
import importlib.util
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from scopebench.cli.options import Args, Group, argument, command, pass_args, seed_option
from scopebench.cli.output import out_console
from scopebench.errors import DataFormatError, MissingDependencyError

__all__ = ["register"]

console = out_console(120)


def _need_extra() -> None:
    for module, package in (
        ("fastapi", "fastapi"),
        ("sqlalchemy", "sqlalchemy"),
        ("alembic", "alembic"),
        ("argon2", "argon2-cffi"),
        ("krippendorff", "krippendorff"),
        ("zxcvbn", "zxcvbn"),
    ):
        if importlib.util.find_spec(module) is None:
            raise MissingDependencyError(package, "review", "scopebench review")


def _store(args: Args) -> Path:
    if args.store:
        return Path(args.store)
    if "://" in args.db:
        raise DataFormatError("with a database URL, give --store: the folder where the project images live")
    return Path(args.db + ".store")


@contextmanager
def _session(args: Args) -> Iterator[Any]:
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


def _store_obj(args: Args) -> Any:
    from scopebench.review.store import ImageStore

    return ImageStore(_store(args))


def cmd_init(args: Args) -> int:
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
            seniors_review=args.seniors_review,
        )
        n = len(db.scalars(_items_q(project.id)).all())
        sample = _sample_record(db, project.id)
    console.print(
        f"project {args.name!r}: {n} items from {args.bench}, rubric {rubric.name}, "
        f"{args.reviewers} reviewers per item; images in {_store(args)}"
    )
    if sample and "per_task" in sample:
        tasks = ", ".join(f"{t} {k}" for t, k in sample["per_task"].items())
        console.print(
            f"sample of {sample['items']} from {sample['from_items']} items ({sample['method']}, "
            f"seed {sample['seed']}): {tasks}; {sample['images']} distinct images",
            highlight=False,
            soft_wrap=True,
        )
    _print_problems(problems, n)
    return 0


def _sample_record(db: Any, project_id: int) -> dict[str, Any] | None:
    """The ``--limit`` sample recorded in the project's ``project_created`` event."""
    from sqlalchemy import select

    from scopebench.review.db import Event

    event = db.scalar(select(Event).where(Event.project_id == project_id, Event.kind == "project_created"))
    return None if event is None else event.payload.get("sample")


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


def _password(args: Args) -> str:
    if args.password_file:
        return Path(args.password_file).read_text(encoding="utf-8").strip()
    env = os.environ.get("SCOPEBENCH_REVIEW_PASSWORD")
    if env:
        return env
    first = getpass.getpass(f"password for {args.username}: ")
    if getpass.getpass("again: ") != first:
        raise DataFormatError("the two passwords differ")
    return first


def cmd_user(args: Args) -> int:
    """Create an account."""
    from scopebench.review.accounts import create_user

    password = _password(args)
    with _session(args) as db:
        user = create_user(db, args.username, password, args.role)
        console.print(f"user {user.username!r} ({user.role}, pseudonym {user.pseudonym}) created")
    return 0


def cmd_member(args: Args) -> int:
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


def cmd_assign(args: Args) -> int:
    """Assign every item to its reviewers."""
    from scopebench.review.projects import assign

    with _session(args) as db:
        n = assign(db, _project(db, args.project))
    console.print(f"{n} new assignment(s) in {args.project!r}")
    return 0


def cmd_serve(args: Args) -> int:
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
        forwarded_allow_ips=args.forwarded_allow_ips,
        max_uploads_per_user=args.max_uploads_per_user,
        max_upload_total_bytes=int(args.max_upload_total_mb * 2**20),
    )
    app = create_app(settings)
    console.print(f"scopebench review on http://{args.host}:{args.port}/ (database {args.db})")
    # uvicorn's own proxy-header handling trusts X-Forwarded-For from 127.0.0.1 by default, which
    # let any local client pick the address the login limits count; the app applies
    # --forwarded-allow-ips itself, and only when given.
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning", proxy_headers=False)
    return 0


def cmd_export(args: Args) -> int:
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
            balance_seed=args.seed if args.balance else None,
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


def cmd_baseline(args: Args) -> int:
    """Write the experts' first answers as run directories, one per reviewer group."""
    from sqlalchemy import select

    from scopebench.review.db import Member, User
    from scopebench.review.outputs import write_baseline
    from scopebench.review.projects import reviewing_roles
    from scopebench.scoring import compute_metrics

    with _session(args) as db:
        project = _project(db, args.project)
        runs = write_baseline(db, project, Path(args.out), seed=args.seed)
        # Groups that review: a group of seniors who only arbitrate has no baseline to miss.
        groups = set(
            db.scalars(
                select(Member.group)
                .join(User, User.id == Member.user_id)
                .where(Member.project_id == project.id, User.role.in_(reviewing_roles(project)))
            ).all()
        )
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


def cmd_submissions(args: Args) -> int:
    """Export the expert submissions as JSONL and as the inputs of `scopebench build run`."""
    from scopebench.review.cognition import write_build_inputs
    from scopebench.review.submissions import export_submissions

    with _session(args) as db:
        project = _project(db, args.project)
        path = export_submissions(db, _store_obj(args), project, Path(args.out))
        files = write_build_inputs(
            db, _store_obj(args), project, Path(args.out), model=args.model, seed=args.seed
        )
    console.print(f"submissions written to {path}")
    console.print(
        f"build inputs: {files['manifest']}, {files['metadata']}, {files['texts']}; "
        f"run `scopebench build run {files['build']}`"
    )
    return 0


def cmd_labelstudio(args: Args) -> int:
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


def _guarded(cmd: Callable[[Args], int]) -> Callable[..., int]:
    """The click callback of ``cmd``, checking first that the review extra is installed.

    A missing extra is a message, not an ImportError.
    """

    def run(args: Args) -> int:
        _need_extra()
        return cmd(args)

    run.__doc__ = cmd.__doc__
    return pass_args(run)


_Deco = Callable[[Callable[..., int]], Callable[..., int]]


def _common(project: bool = True) -> _Deco:
    """``--db``, ``--store`` (and ``--project``) of every review action, declared once."""
    options = [
        click.option("--db", required=True, help="SQLite file, or a postgresql+psycopg:// URL"),
        click.option("--store", help="image store folder (default: DB.store next to a SQLite file)"),
    ]
    if project:
        options.append(click.option("--project", required=True, help="project name"))

    def decorate(f: Callable[..., int]) -> Callable[..., int]:
        for option in reversed(options):
            f = option(f)
        return f

    return decorate


@command("init", short_help="load a benchmark (any loader, or a build output) into a review project")
@_common(project=False)
@click.option("--name", required=True, help="project name")
@click.option("--bench", required=True, help="benchmark name (local for a build output)")
@click.option("--data", help="data location, as for `scopebench run`")
@click.option("--split", help="split to load (default: the benchmark's default)")
@click.option("--limit", type=int, help="load a seeded sample of N items, stratified by task and image")
@click.option("--rubric", default="pathmmu", help="pathmmu, spur, hle, spur-hle or a rubric JSON file")
@click.option("--reviewers", type=int, default=2, help="independent reviewers per item (default 2)")
@seed_option("seed of the --limit sample, assignment ties, arbiter order and bootstraps")
@click.option("--alpha-threshold", type=float, help="release gate: export refuses below this α")
@click.option(
    "--seniors-review",
    is_flag=True,
    help="seniors also take first-line reviews (default: seniors only arbitrate)",
)
def _init(**kwargs: object) -> int:
    """Load a benchmark (any loader, or a build output) into a review project."""
    return _guarded(cmd_init)(**kwargs)


@command(
    "user",
    short_help="create an account (password from --password-file, $SCOPEBENCH_REVIEW_PASSWORD or a prompt)",
)
@_common(project=False)
@argument("username", help="the new account's user name")
@click.option("--role", type=click.Choice(["admin", "senior", "reviewer"]), default="reviewer",
              help="admin, senior or reviewer (default reviewer)")  # fmt: skip
@click.option("--password-file", help="file holding the password")
def _user(**kwargs: object) -> int:
    """Create an account (password from --password-file, $SCOPEBENCH_REVIEW_PASSWORD or a prompt)."""
    return _guarded(cmd_user)(**kwargs)


@command("member", short_help="add users to a project in a reviewer group")
@_common()
@argument("users", nargs=-1, required=True, metavar="USERNAME...", help="users to add")
@click.option("--group", default="experts", help="reviewer group: the baseline run human:GROUP")
def _member(**kwargs: object) -> int:
    """Add users to a project in a reviewer group."""
    return _guarded(cmd_member)(**kwargs)


@command("assign", short_help="assign each item to N reviewers, balanced")
@_common()
def _assign(**kwargs: object) -> int:
    """Assign each item to N reviewers, balanced."""
    return _guarded(cmd_assign)(**kwargs)


@command("serve", short_help="run the web server")
@_common(project=False)
@click.option("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
@click.option("--port", type=int, default=8765, help="port (default 8765)")
@click.option("--session-hours", type=float, default=8.0, help="login session length (default 8)")
@click.option("--max-upload-mb", type=float, default=10.0, help="largest upload (default 10)")
@click.option("--secure-cookies", is_flag=True, help="mark cookies Secure (behind HTTPS)")
@click.option("--model", help="model spec that answers submissions in real time")
@click.option("--base-url", help="server URL for openai: models")
@click.option(
    "--forwarded-allow-ips",
    help="reverse proxies (comma-separated addresses) whose X-Forwarded-For names the client "
    "(default: none; the header is ignored)",
)
@click.option(
    "--max-uploads-per-user", type=int, default=200, help="uploads per user and project (default 200)"
)
@click.option(
    "--max-upload-total-mb", type=float, default=500.0, help="upload MB per user and project (default 500)"
)
def _serve(**kwargs: object) -> int:
    """Run the web server (upgrading the database first)."""
    return _guarded(cmd_serve)(**kwargs)


@command("export", short_help="accepted items (local + HF), decision log, events, agreement")
@_common()
@click.option("--out", required=True, help="output folder")
@click.option("--force", is_flag=True, help="export although the α release gate fails (recorded)")
@click.option("--resamples", type=int, default=1000, help="bootstrap resamples of the agreement intervals")
@click.option("--no-hf", is_flag=True, help="skip the Hugging Face dataset")
@click.option(
    "--balance", is_flag=True, help="place the accepted items' answers balanced over the letters, per task"
)
@seed_option("seed of --balance, recorded in summary.json")
def _export(**kwargs: object) -> int:
    """Accepted items (local + HF), decision log, events, agreement."""
    return _guarded(cmd_export)(**kwargs)


@command("baseline", short_help="the experts' first answers as run directories (human:GROUP)")
@_common()
@click.option("--out", required=True, help="folder for one run directory per group")
@seed_option("bootstrap seed recorded in run.json")
def _baseline(**kwargs: object) -> int:
    """The experts' first answers as run directories (human:GROUP)."""
    return _guarded(cmd_baseline)(**kwargs)


@command("submissions", short_help="export expert submissions (JSONL) and the inputs of `scopebench build`")
@_common()
@click.option("--out", required=True, help="output folder")
@click.option(
    "--model",
    default="openai:gpt-4o",
    help="model that build.yaml's open_to_mcq step asks (default openai:gpt-4o)",
)
@seed_option("the seed build.yaml records")
def _submissions(**kwargs: object) -> int:
    """Export expert submissions as JSONL for `scopebench build`."""
    return _guarded(cmd_submissions)(**kwargs)


@command("labelstudio", short_help="Label Studio: export tasks + config, or import annotations")
@_common()
@argument("action", type=click.Choice(["export", "import"]), metavar="ACTION", help="export or import")
@click.option("--out", help="folder for tasks.json, config.xml and images/ (export)")
@click.option("--image-url", default="images/", help="prefix of image URLs in the tasks (export)")
@click.option("--file", help="Label Studio JSON export (import)")
@click.option(
    "--user-map",
    multiple=True,
    metavar="LS_ID=USERNAME",
    help="map a Label Studio user id or email to a username (import)",
)
def _labelstudio(**kwargs: object) -> int:
    """Label Studio: export tasks + config, or import annotations."""
    return _guarded(cmd_labelstudio)(**kwargs)


def register(group: click.Group) -> None:
    """Add ``scopebench review …`` to the ``scopebench`` group."""
    review = Group(
        "review",
        short_help="expert review web app: blind double review, arbitration, baseline",
        help="Expert review web app: blind double review, arbitration, baseline.",
        subcommand_metavar="ACTION [ARGS]...",
    )
    for cmd in (_init, _user, _member, _assign, _serve, _export, _baseline, _submissions, _labelstudio):
        review.add_command(cmd)
    group.add_command(review)
