"""The settings of a run, one typed, frozen object per concept, defined here and nowhere else.

* :class:`ModelConfig` — how a model runs (device, batch size, mode, server, backend options, and
  the seed, protocol and text-only flag it answers under): what every backend is built with.
* :class:`EngineConfig` — where the model calls run (in this process, or on Ray actors).
* :class:`RunConfig` — what a run evaluates: benchmark, data, model, selection, seed, protocol,
  transform, strategy, judge; it derives its :class:`ModelConfig` and holds its
  :class:`EngineConfig`.
* :class:`ReportConfig` — how a finished run is reported (bootstrap seed and resamples, the policy
  for unscorable records, published numbers).

Each is built once, where the settings come in — the CLI's option groups
(:mod:`scopebench.cli.options`), an eval config file (:mod:`scopebench.paper.grid`) or the Python
API (:func:`scopebench.evaluate`), all through :meth:`RunConfig.from_options` — and handed down
unchanged; a variant is a :func:`dataclasses.replace` copy, never an edit in place. The module
imports nothing of scopebench's own, so every layer may use it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "DEFAULT_RESAMPLES",
    "AnswerFormat",
    "EngineConfig",
    "ModelConfig",
    "Policy",
    "ReportConfig",
    "RunConfig",
    "UnknownOptionError",
]

#: How a generative backend is asked to answer: ``free`` text (read by the parser), or
#: ``constrained`` to one option label by the backend itself (structured outputs, guided choice,
#: a logits restriction; refused where the backend cannot enforce it).
AnswerFormat = Literal["free", "constrained"]

#: What unscorable records (unparsed, errors, missing images or responses) count as.
Policy = Literal["wrong", "exclude"]

#: Bootstrap resamples per interval unless a report asks for others.
DEFAULT_RESAMPLES = 1000


class UnknownOptionError(TypeError):
    """An option name that no configuration has (raised by :meth:`RunConfig.from_options`).

    A :class:`TypeError`, as Python raises for an unexpected keyword argument; callers turn it
    into their own message (the API's :class:`~scopebench.errors.UsageError`).
    """

    def __init__(self, unknown: list[str], known: list[str]) -> None:
        super().__init__(f"unknown option(s) {', '.join(unknown)}; options: {', '.join(known)}")
        self.unknown = unknown
        self.known = known


@dataclass(frozen=True)
class ModelConfig:
    """How a model runs; what every backend is built with (a backend ignores what it has no use for).

    Attributes:
        seed: Seed for any random choice (recorded in the run).
        device: ``"auto"``, ``"cpu"``, ``"cuda"``, ``"cuda:1"``…
        batch_size: Items per backend call; ``None`` lets the backend choose a safe default.
        no_image: Send prompts without images (text-only baselines).
        protocol: Prompt protocol name (``"default"`` or a benchmark's owner protocol).
        mode: Backend mode (``"generate"``, ``"choice-logprob"``…), when the backend has several.
        base_url: Server address for API backends.
        extra: Backend-specific options from ``--model-arg key=value``.
        answer_format: ``free`` or ``constrained`` (``--answer-format``, :data:`AnswerFormat`).
        gen_args: Generation beyond greedy (``--gen-arg``): ``temperature``, ``top_p`` and ``n``
            samples per item, each sample seeded ``seed + i``; empty: greedy, one reply.
    """

    seed: int = 0
    device: str = "auto"
    batch_size: int | None = None
    no_image: bool = False
    protocol: str = "default"
    mode: str | None = None
    base_url: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    answer_format: AnswerFormat = "free"
    gen_args: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class EngineConfig:
    """Where a run's model calls run.

    Attributes:
        executor: ``local`` (this process) or ``ray`` (Ray actors, one backend each).
        ray_address: Ray cluster address for ``ray``; ``None``: a local Ray instance.
        workers: Ray actors; ``None``: one per GPU, else 2.
    """

    executor: str = "local"
    ray_address: str | None = None
    workers: int | None = None


@dataclass(frozen=True)
class RunConfig:
    """Everything that defines a run (``run.json`` records it; resuming checks it).

    Attributes:
        benchmark: Registered benchmark name.
        data: Data location (folder, file or dataset id), as the loader takes it.
        model: Model spec string.
        split: Split to evaluate (``None``: the benchmark's default).
        limit: Evaluate only the first ``limit`` items (in the loader's order), or, as a fraction
            between 0 and 1, a sample of that share drawn with ``seed`` (``--limit 0.1``).
        tasks: Evaluate only the items of these tasks (or subsets); ``None``: all.
        seed: Seed for every random choice (recorded).
        batch_size: Items per backend call — images per call for a contrastive backend, whose
            model work is per image (``None``: backend default; ``"auto"``: the largest that
            fits, halved after each out-of-memory failure, the size used recorded in ``run.json``).
        protocol: Prompt protocol (``default`` or a benchmark's ``owner`` protocol).
        mode: Backend mode (``generate``/``choice-logprob``…), if the backend has several.
        no_image: Send prompts without images.
        device: Device for local models.
        base_url: Server for API backends.
        model_args: Extra backend options (``--model-arg k=v``).
        exclude_ids: Item ids to leave out (``--exclude FILE``).
        max_fail_fraction: Stop when more than this fraction of processed items failed.
        engine: Where the model calls run (:class:`EngineConfig`); not part of the run's identity.
        transform: An item transform ``NAME[:ARG]`` applied after loading (probes: corruptions,
            noise images, question swap, option rotation…), seeded with ``seed``.
        strategy: A chain-of-thought strategy (``direct``, ``step-by-step``, ``vot``, ``ddcot``,
            ``cantor``) run over the generative backend; ``None`` asks the backend directly.
        box_repair: Swap reversed box corners and clip boxes to the image before GRIT scoring
            (``--box-repair``). Off by default: the official metric scores boxes as written.
        judge: An answer-extraction judge (any generative model spec) asked about the responses
            the parser leaves unparsed (:mod:`scopebench.engine.judging`); ``None``: no judge.
        judge_args: The judge's options (``--judge-arg k=v``): ``device``, ``base_url``,
            ``batch_size`` and backend options.
        label: The run's display name in tables and reports (``run --label``, an eval config's
            model ``name``); recorded in ``run.json``, not part of the run's identity.
        log_samples: Store each record's :class:`~scopebench.items.Sample` (the prompt as sent,
            question, options, answer key); ``False`` (``--log-samples false``) for very large
            runs. Not part of the run's identity.
        answer_format: ``free`` text read by the parser, or ``constrained`` to one option label by
            the backend (``--answer-format``; refused for backends that cannot enforce it);
            recorded in ``run.json`` and, when constrained, in the model's identity.
        gen_args: Generation beyond greedy (``--gen-arg temperature=0.7 top_p=0.9 n=5``), refused
            for backends that cannot sample; recorded in ``run.json`` and part of the run's
            identity. With ``n`` > 1 each record keeps every sample and the majority choice.
    """

    benchmark: str
    data: str
    model: str
    split: str | None = None
    limit: int | float | None = None
    tasks: tuple[str, ...] | None = None
    seed: int = 0
    batch_size: int | Literal["auto"] | None = None
    protocol: str = "default"
    mode: str | None = None
    no_image: bool = False
    device: str = "auto"
    base_url: str | None = None
    model_args: dict[str, Any] = field(default_factory=dict)
    exclude_ids: frozenset[str] = frozenset()
    max_fail_fraction: float = 0.5
    engine: EngineConfig = field(default_factory=EngineConfig)
    transform: str | None = None
    strategy: str | None = None
    box_repair: bool = False
    judge: str | None = None
    judge_args: dict[str, Any] = field(default_factory=dict)
    label: str | None = None
    log_samples: bool = True
    answer_format: AnswerFormat = "free"
    gen_args: dict[str, Any] = field(default_factory=dict)

    def model_options(self) -> ModelConfig:
        """The :class:`ModelConfig` the run's backend is built with (the one place it is derived)."""
        return ModelConfig(
            seed=self.seed,
            device=self.device,
            # Under "auto" the engine sizes each call; a backend's own chunking then follows it.
            batch_size=None if self.batch_size == "auto" else self.batch_size,
            no_image=self.no_image,
            protocol=self.protocol,
            mode=self.mode,
            base_url=self.base_url,
            extra=dict(self.model_args),
            answer_format=self.answer_format,
            gen_args=dict(self.gen_args),
        )

    @classmethod
    def option_names(cls) -> list[str]:
        """Every name :meth:`from_options` takes besides benchmark, data and model, sorted."""
        own = {f.name for f in dataclasses.fields(cls)} - {"benchmark", "data", "model", "engine"}
        return sorted(own | {f.name for f in dataclasses.fields(EngineConfig)})

    @classmethod
    def from_options(
        cls,
        benchmark: str,
        data: str,
        model: str,
        **options: Any,
    ) -> RunConfig:
        """The run of ``model`` on ``benchmark``, from settings named as ``scopebench run``'s flags.

        The one constructor of the CLI, the eval configs and the API: ``options`` are the fields
        of this class and of :class:`EngineConfig` (``executor``, ``ray_address``, ``workers``)
        by name; ``exclude_ids`` may be any iterable of ids, the ``*_args`` any mapping.

        Raises:
            UnknownOptionError: For a name that is neither.
        """
        unknown = sorted(set(options) - set(cls.option_names()))
        if unknown:
            raise UnknownOptionError(unknown, cls.option_names())
        engine_names = {f.name for f in dataclasses.fields(EngineConfig)}
        engine = EngineConfig(**{k: options.pop(k) for k in list(options) if k in engine_names})
        if options.get("tasks") is not None:
            options["tasks"] = tuple(options["tasks"]) or None
        if "exclude_ids" in options:
            options["exclude_ids"] = frozenset(options["exclude_ids"])
        for name in ("model_args", "judge_args", "gen_args"):
            if isinstance(options.get(name), Mapping):
                options[name] = dict(options[name])
        return cls(benchmark=benchmark, data=data, model=model, engine=engine, **options)


@dataclass(frozen=True)
class ReportConfig:
    """How runs are reported: the numbers ``report``, ``compare`` and the HTML report compute.

    Attributes:
        seed: Seed of every bootstrap interval; ``None``: each run's own seed.
        resamples: Bootstrap resamples per interval.
        policy: What unscorable records count as: ``wrong`` (default) or ``exclude`` them from
            the denominator.
        published: Add the published numbers (not reproduced here) beside the measured ones.
    """

    seed: int | None = None
    resamples: int = DEFAULT_RESAMPLES
    policy: Policy = "wrong"
    published: bool = False
