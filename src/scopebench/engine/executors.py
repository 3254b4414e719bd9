"""Executors: where the backend calls happen (the execute stage: batches of Requests → Responses).

* :class:`LocalExecutor` — in this process, batch after batch.
* :class:`RayExecutor` — over Ray actors, one model replica each (one GPU each when the cluster has
  GPUs). Actors load the benchmark themselves and receive *item ids*, not requests, so no pixels or
  dataset handles cross the wire; each actor renders its items with its own backend (the same
  deterministic :meth:`~scopebench.models.Backend.render` as the driver's). Results stream back to
  the driver, which parses them with its own requests and alone writes the run store — so resume
  semantics are the same as local runs. On a cluster the data must be readable at the same
  ``--data`` path on every node.
"""

from __future__ import annotations

import logging
import signal
import socket
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from scopebench.errors import MissingDependencyError, ScopebenchError
from scopebench.items import Item
from scopebench.models import Backend, Response
from scopebench.protocols import Request

if TYPE_CHECKING:
    from scopebench.config import RunConfig
    from scopebench.engine.runner import ItemHook

__all__ = [
    "AutoBatchExecutor",
    "Executor",
    "LocalExecutor",
    "RayExecutor",
    "WorkerSetup",
    "answer_batch",
    "connect_ray",
    "is_oom",
]

#: How an actor rebuilds the run's items and backend from its configuration: the runner's
#: ``load_items`` and ``build_backend``, handed in so that this module does not import the runner
#: (which imports it).
WorkerSetup = tuple[
    Callable[["RunConfig", "ItemHook | None"], tuple[Any, list[Item]]],
    Callable[["RunConfig"], Backend],
]

log = logging.getLogger(__name__)


def answer_batch(
    backend: Backend, batch: Sequence[Request], *, reraise: Callable[[BaseException], bool] | None = None
) -> list[Response]:
    """Call the backend on one batch of requests; a failing call becomes one error response per item.

    Args:
        backend: The model.
        batch: The requests.
        reraise: Failures to raise rather than record (the out-of-memory errors that
            :class:`AutoBatchExecutor` answers with a smaller batch).
    """
    try:
        responses = backend.answer(batch)
        if len(responses) != len(batch):
            raise RuntimeError(f"backend returned {len(responses)} responses for {len(batch)} items")
        return responses
    except ScopebenchError as exc:
        return [Response(r.item_id, status="error", error=str(exc)) for r in batch]
    except (RuntimeError, ValueError, OSError, MemoryError) as exc:
        if reraise is not None and reraise(exc):
            raise
        # A model failure must not take down the run: record it per item and carry on.
        log.debug("batch failed", exc_info=True)
        return [Response(r.item_id, status="error", error=f"{type(exc).__name__}: {exc}") for r in batch]


class Executor(Protocol):
    """Runs batches and yields ``(batch, responses)`` as each finishes (any order)."""

    def run(self, batches: Sequence[Sequence[Request]]) -> Iterator[tuple[Sequence[Request], list[Response]]]:
        """Answer every batch."""
        ...

    def close(self) -> None:
        """Release workers."""
        ...


class LocalExecutor:
    """Answer batches in this process with the run's backend."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    def run(self, batches: Sequence[Sequence[Request]]) -> Iterator[tuple[Sequence[Request], list[Response]]]:
        """Answer batches in order, telling the backend which batches come next."""
        if batches:
            self.backend.prefetch(batches[0])
        for n, batch in enumerate(batches):
            if n + 1 < len(batches):
                self.backend.prefetch(batches[n + 1])
            yield batch, answer_batch(self.backend, batch)

    def close(self) -> None:
        """Nothing to release (the runner closes the backend)."""


def is_oom(exc: BaseException) -> bool:
    """Whether ``exc`` says the accelerator ran out of memory.

    ``torch.cuda.OutOfMemoryError`` (and torch's device-generic ``OutOfMemoryError``) by name, so
    this module needs no torch; older torch and other libraries raise a ``RuntimeError`` whose
    message says "out of memory".
    """
    if type(exc).__name__ == "OutOfMemoryError":
        return True
    return isinstance(exc, RuntimeError) and "out of memory" in str(exc).lower()


def _free_accelerator_memory() -> None:
    """Return the failed batch's cached blocks to the device before a smaller try (when torch is in use)."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()


class AutoBatchExecutor:
    """Answer in this process with the largest batch that fits (``--batch-size auto``).

    It starts at ``start`` items per call; a call that runs out of accelerator memory
    (:func:`is_oom`) is retried with half as many items as it had, and the smaller size is kept
    for the rest of the run. Only at one item per call does an out-of-memory failure become that item's error
    record, as every other failure does at once (:func:`answer_batch`).

    Attributes:
        size: The batch size in use (after the run: the size the run ended with).
        backoffs: The sizes of the calls that ran out of memory, in order.
    """

    def __init__(self, backend: Backend, start: int) -> None:
        self.backend = backend
        self.size = max(1, start)
        self.backoffs: list[int] = []

    def run(self, batches: Sequence[Sequence[Request]]) -> Iterator[tuple[Sequence[Request], list[Response]]]:
        """Answer every request of ``batches`` in order, in batches of the current size."""
        todo = [r for batch in batches for r in batch]
        k = 0
        while k < len(todo):
            batch = todo[k : k + self.size]
            self.backend.prefetch(batch)
            self.backend.prefetch(todo[k + self.size : k + 2 * self.size])
            responses = self._try(batch)
            if responses is None:
                continue  # ran out of memory: the same requests again, in a smaller batch
            k += len(batch)
            yield batch, responses

    def _try(self, batch: Sequence[Request]) -> list[Response] | None:
        """The batch's responses; ``None`` after an out-of-memory failure that halved the size."""
        try:
            return answer_batch(self.backend, batch, reraise=is_oom if len(batch) > 1 else None)
        except (RuntimeError, MemoryError):
            self.backoffs.append(len(batch))
            # Half of what failed: a short last batch says more than the nominal size.
            self.size = max(1, len(batch) // 2)
            log.info("out of memory at %d items per call; retrying with %d", self.backoffs[-1], self.size)
            _free_accelerator_memory()
            return None

    def close(self) -> None:
        """Nothing to release (the runner closes the backend)."""


class _Worker:
    """A Ray actor body: loads the benchmark and one model replica, answers batches of item ids."""

    def __init__(
        self,
        config: RunConfig,
        item_ids: Sequence[str],
        setup: WorkerSetup,
        item_hook: ItemHook | None = None,
    ) -> None:
        load_items, build_backend = setup
        _, items = load_items(config, item_hook)
        wanted = set(item_ids)
        self.items = {it.id: it for it in items if it.id in wanted}
        self.backend = build_backend(config)
        # Same view of the run as the driver's backend (e.g. frequent-choice counts).
        self.backend.prepare([self.items[i] for i in item_ids])

    def answer(self, ids: Sequence[str]) -> list[Response]:
        return answer_batch(self.backend, [self.backend.render(self.items[i]) for i in ids])


def _check_reachable(address: str, timeout: float = 5.0) -> None:
    """Fail fast on a cluster address nothing answers at (``ray.init`` would retry forever).

    ``auto`` and ``local`` are Ray's own lookups and are left to it; ``HOST:PORT`` and
    ``ray://HOST:PORT`` are tried with one TCP connection.
    """
    target = address.removeprefix("ray://")
    host, sep, port = target.rpartition(":")
    if address in ("auto", "local") or not sep or not port.isdigit():
        return
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout):
            return
    except OSError as exc:
        raise ScopebenchError(
            f"no Ray cluster answers at --ray-address {address} ({exc}); check the address and that the "
            "cluster is up (`ray status` on its head node), or leave --ray-address out for a local instance"
        ) from exc


def connect_ray(address: str | None, *, local_cpus: int) -> tuple[Any, bool]:
    """Join the Ray cluster at ``address`` (``None``: start a local instance), once per process.

    The one place where scopebench starts Ray, for evaluation (:class:`RayExecutor`) and for the
    build's image conversion alike.

    Args:
        address: ``HOST:PORT``, ``ray://HOST:PORT``, ``auto`` or ``None`` (a local instance).
        local_cpus: CPUs of a local instance (ignored when joining a cluster).

    Returns:
        The ``ray`` module and whether this call started Ray (the caller then shuts it down).

    Raises:
        MissingDependencyError: Ray is not installed.
        ScopebenchError: Nothing answers at ``address``.
    """
    try:
        import ray
    except ImportError as exc:
        raise MissingDependencyError("ray", "ray", "--executor ray") from exc
    if ray.is_initialized():
        return ray, False
    if address:
        _check_reachable(address)
    init_kwargs: dict[str, Any] = {"address": address, "include_dashboard": False}
    if address is None:
        init_kwargs["num_cpus"] = local_cpus
    # Ray's own log lines follow scopebench's level (-q: errors only).
    level = max(logging.getLogger("scopebench").getEffectiveLevel(), logging.WARNING)
    previous = signal.getsignal(signal.SIGTERM)
    ray.init(**init_kwargs, log_to_driver=False, logging_level=level)
    if callable(previous) and threading.current_thread() is threading.main_thread():
        # ray.init makes SIGTERM a bare sys.exit; the CLI's handler stops the run like
        # Ctrl-C instead (finished records exported, exit 143).
        signal.signal(signal.SIGTERM, previous)
    return ray, True


class RayExecutor:
    """Shard batches over Ray actors and stream results back.

    Args:
        config: The run configuration (each actor rebuilds benchmark and backend from it).
        item_ids: Ids of the items the backend will be asked about (what ``prepare`` saw).
        setup: How each actor loads the items and builds the backend (:data:`WorkerSetup`).
        num_workers: Actors to start (default: one per GPU, else 2).
        address: Ray cluster address (``None`` starts or joins a local instance).
        gpus_per_worker: GPUs per actor (default 1 when the cluster has GPUs, else 0).
        item_hook: The run's item transform (each actor applies it after loading, as the driver did).
    """

    def __init__(
        self,
        config: RunConfig,
        item_ids: Sequence[str],
        *,
        setup: WorkerSetup,
        num_workers: int | None = None,
        address: str | None = None,
        gpus_per_worker: float | None = None,
        item_hook: ItemHook | None = None,
    ) -> None:
        ray, self._owns_ray = connect_ray(address, local_cpus=max(2, num_workers or 2))
        self._ray = ray
        n_gpus = float(ray.cluster_resources().get("GPU", 0))
        gpus = gpus_per_worker if gpus_per_worker is not None else (1.0 if n_gpus >= 1 else 0.0)
        n = num_workers or (int(n_gpus) if n_gpus >= 1 else 2)
        actor_cls = ray.remote(num_cpus=1, num_gpus=gpus)(_Worker)
        # Ray's actor handles are dynamically typed; Any keeps mypy out of its stubs' gaps.
        self.workers: list[Any] = [
            actor_cls.remote(config, list(item_ids), setup, item_hook) for _ in range(n)
        ]
        #: Workers lost during the run (a node that left the cluster, a killed process).
        self.lost = 0
        log.info("ray executor: %d workers, %.1f GPU each", n, gpus)

    def run(self, batches: Sequence[Sequence[Request]]) -> Iterator[tuple[Sequence[Request], list[Response]]]:
        """Keep every worker busy with one batch at a time; yield batches as they finish.

        A worker that dies (its node lost, its process killed) takes no result with it: the driver
        writes records only from results it received, so the batch it held goes back to the front
        of the queue and the workers left redo it, once. Only when every worker is lost does the
        run stop (:class:`~scopebench.errors.ScopebenchError`); its finished batches are kept.
        """
        ray = self._ray
        queue = deque(batches)
        idle = list(self.workers)
        pending: dict[Any, tuple[Any, Sequence[Request]]] = {}

        def dispatch() -> None:
            while idle and queue:
                worker, batch = idle.pop(0), queue.popleft()
                pending[worker.answer.remote([r.item_id for r in batch])] = (worker, batch)

        dispatch()
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            worker, batch = pending.pop(done[0])
            try:
                responses: list[Response] = ray.get(done[0])
            except ray.exceptions.RayActorError as exc:
                self._lose(worker, exc, len(batch))
                queue.appendleft(batch)
                dispatch()
                continue
            except ray.exceptions.RayError as exc:  # the call failed, its worker lives on
                responses = [
                    Response(r.item_id, status="error", error=f"ray worker failed: {exc}") for r in batch
                ]
            idle.append(worker)
            dispatch()
            yield batch, responses

    def _lose(self, worker: Any, exc: Exception, n_items: int) -> None:
        """Drop a dead worker from the pool; raise when none is left to redo its batch."""
        self.workers.remove(worker)
        self.lost += 1
        try:  # it may still be restarting somewhere: it must not come back and hold a slot
            self._ray.kill(worker, no_restart=True)
        except Exception:  # an actor already gone may refuse to be killed again
            log.debug("killing a lost worker failed", exc_info=True)
        if not self.workers:
            raise ScopebenchError(
                f"every Ray worker was lost (the last: {type(exc).__name__}: {exc}); the batches "
                "finished so far are stored: check the cluster (`ray status` on its head node) and "
                "run the same command again to resume"
            )
        log.warning(
            "ray worker lost (%s); its batch of %d items is redone by the %d workers left",
            type(exc).__name__,
            n_items,
            len(self.workers),
        )

    def close(self) -> None:
        """Stop the actors (and the local Ray instance if this executor started it)."""
        for w in self.workers:
            self._ray.kill(w)
        if self._owns_ray:
            self._ray.shutdown()
