"""A two-node Ray cluster on loopback that loses its second node in the middle of a `scopebench run`,
then, with a fresh second node, in the middle of a `scopebench build ingest`.

Run as ``unshare -n python ray_cluster.py SPEC.json`` (a fresh network namespace where only ``lo``
exists: Ray 2.60 advertises the machine's interface address otherwise, even when told
``--node-ip-address 127.0.0.1``). SPEC holds ``temp`` (Ray's temp folder), ``cmd`` (the
``scopebench run`` command line), ``out`` (its run directory), ``kill_after`` (records stored before
the node is killed), ``timeout`` (seconds for any one wait) and optionally ``ingest`` (a
``build ingest`` command line, ``cmd``, and its working folder, ``cwd``). It prints one JSON line:
the node addresses, what was seen when the node was killed (``at_kill``), the command's exit code
and stderr; under ``ingest`` the same for the ingest.

The ingest's node is killed while it converts: the second node's temporary folder (its ``TMPDIR``)
is watched for the folder a conversion task makes there, so the node dies holding a batch.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

_PORT = 6399
_ADDRESS = f"127.0.0.1:{_PORT}"
_RAY_ENV = {
    # A lost node is noticed after (period × threshold); Ray's defaults take about 15 s.
    "RAY_health_check_period_ms": "500",
    "RAY_health_check_failure_threshold": "4",
    # Ray 2.60 turns token authentication on when ~/.ray/auth_token exists, which another user of
    # the machine may have written or replaced; this cluster lives in a network namespace nothing
    # else can reach, so it needs none and must not depend on that file.
    "RAY_AUTH_MODE": "disabled",
}


def _wait(what: str, check: Any, timeout: float, interval: float = 0.1) -> Any:
    """Poll ``check`` until it returns something truthy; fail with ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(interval)
    raise SystemExit(f"timed out waiting for {what}")


def _stored(out: Path) -> int:
    db_path = out / "records.sqlite"
    if not db_path.exists():  # connecting would create it empty, which the run then refuses
        return 0
    try:
        with sqlite3.connect(f"file:{db_path}?mode=ro", uri=True) as db:
            return int(db.execute("SELECT COUNT(*) FROM records").fetchone()[0])
    except sqlite3.Error:  # not created yet, or being created
        return 0


def _nodes() -> list[dict[str, Any]]:
    """The alive nodes as the head's GCS lists them (read by a short-lived driver; [] if it fails)."""
    code = (
        "import json, ray\n"
        f"ray.init(address={_ADDRESS!r}, log_to_driver=False, logging_level='ERROR')\n"
        "print(json.dumps([{'ip': n['NodeManagerAddress'], 'resources': n['Resources']}"
        " for n in ray.nodes() if n['Alive']]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if done.returncode:  # a head still starting (or a loaded machine) refuses a driver now and then
        print(f"listing nodes failed: {done.stderr[-1500:]}", file=sys.stderr)
        return []
    nodes: list[dict[str, Any]] = json.loads(done.stdout.strip().splitlines()[-1])
    return nodes


def _start(name: str, args: list[str], temp: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """``ray start ARGS --block`` in its own process group, its output in ``temp/NAME.log``.

    Its own group so that this node alone can be killed (a lost machine) and cleaned up: ``ray stop``
    would stop every Ray process on the machine, other users' clusters included.
    """
    exe = str(Path(sys.executable).with_name("ray"))
    with open(temp / f"{name}.log", "wb") as log:
        return subprocess.Popen([exe, "start", *args, "--block"], env=env, start_new_session=True,
                                stdout=log, stderr=subprocess.STDOUT)  # fmt: skip


def _alive(name: str, node: subprocess.Popen[bytes], temp: Path) -> None:
    if node.poll() is not None:
        raise SystemExit(f"ray start ({name}) exited: {(temp / f'{name}.log').read_text()[-3000:]}")


def _cleanup(nodes: list[subprocess.Popen[bytes]], temp: Path) -> None:
    """Kill this cluster's processes: the node groups, then its workers (their own groups)."""
    for node in nodes:
        if node.poll() is None:
            os.killpg(node.pid, signal.SIGKILL)
            node.wait()
    import psutil

    for proc in psutil.process_iter(["cmdline"]):
        if any(str(temp) in arg for arg in proc.info["cmdline"] or ()):
            proc.kill()


_COMMON = ["--node-ip-address", "127.0.0.1", "--num-cpus", "1", "--disable-usage-stats"]


def _join(
    name: str, temp: Path, env: dict[str, str], timeout: float
) -> tuple[subprocess.Popen[bytes], list[str]]:
    """Start a second node, wait until the head lists two nodes; the node and both addresses."""
    node = _start(name, ["--address", _ADDRESS, "--resources", json.dumps({"second_node": 1}), *_COMMON],
                  temp, env)  # fmt: skip
    listed = _wait("two nodes", lambda: _alive(name, node, temp) or (n if len(n := _nodes()) == 2 else None),
                   timeout)  # fmt: skip
    return node, sorted(n["ip"] for n in listed)


def main(spec_path: str) -> None:
    spec = json.loads(Path(spec_path).read_text())
    timeout, temp = float(spec["timeout"]), Path(spec["temp"])
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    env = {**os.environ, **_RAY_ENV}
    head = _start("head", ["--head", "--port", str(_PORT), "--include-dashboard", "false",
                           "--temp-dir", str(temp), *_COMMON], temp, env)  # fmt: skip
    nodes = [head]
    try:
        _wait("the head node", lambda: _alive("head", head, temp) or len(_nodes()) == 1, timeout)
        out, enough = Path(spec["out"]), int(spec["kill_after"])
        result = _run_phase(
            spec, "worker", env, env, nodes, lambda: n if (n := _stored(out)) >= enough else None
        )
        if "ingest" in spec and result["addresses"] == ["127.0.0.1", "127.0.0.1"]:
            result["ingest"] = _ingest_phase(spec, env, nodes)
        print(json.dumps(result))
    finally:
        _cleanup(nodes, temp)


def _ingest_phase(
    spec: dict[str, Any], env: dict[str, str], nodes: list[subprocess.Popen[bytes]]
) -> dict[str, Any]:
    """A fresh second node (the same cluster, the same head) and the ingest, killing the node while
    it converts (a conversion task's folder appears in its ``TMPDIR``)."""
    tmpdir = Path(spec["temp"]) / "second-node-tmp"
    tmpdir.mkdir()

    def converting() -> str | None:
        return next((p.name for p in tmpdir.iterdir() if p.name.startswith("scopebench-ingest-")), None)

    ingest = {**spec, **spec["ingest"]}
    return _run_phase(ingest, "worker-ingest", {**env, "TMPDIR": str(tmpdir)}, env, nodes, converting)


def _run_phase(spec: dict[str, Any], name: str, node_env: dict[str, str], env: dict[str, str],
               nodes: list[subprocess.Popen[bytes]], ready: Any) -> dict[str, Any]:  # fmt: skip
    """Join a second node, start ``spec["cmd"]``, kill the node once ``ready()`` says something
    (reported as ``at_kill``), wait for the command.

    Refuses (returns only the addresses) when a node advertises anything but loopback.
    """
    timeout, temp = float(spec["timeout"]), Path(spec["temp"])
    worker, addresses = _join(name, temp, node_env, timeout)
    nodes.append(worker)
    result: dict[str, Any] = {"addresses": addresses}
    if any(ip != "127.0.0.1" for ip in addresses):  # never talk to anything but loopback
        return result
    log = temp / f"{name}.stderr"
    # A file, not a pipe: nobody reads a pipe while we wait, and a full one would stall the run.
    with open(log, "w") as err:
        run = subprocess.Popen(
            spec["cmd"], cwd=spec.get("cwd"), env=env, stdout=subprocess.DEVNULL, stderr=err
        )
    try:
        # Polled often: a conversion's folder lives a fraction of a second.
        seen = _wait(f"the moment to kill {name}", lambda: ready() or run.poll() is not None, timeout, 0.01)
        result["at_kill"] = seen if seen is not True else None  # None: the command ended first
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()
        result["finished_before_kill"] = run.poll() is not None
        run.wait(timeout=timeout)
    finally:
        if run.poll() is None:
            run.kill()
            print(log.read_text()[-4000:], file=sys.stderr)
    result.update(rc=run.returncode, stderr=log.read_text()[-4000:])
    return result


if __name__ == "__main__":
    main(sys.argv[1])
