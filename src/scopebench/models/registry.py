"""Model spec strings → backends, with lazy imports.

A spec is ``scheme:argument`` (``clip:openai/clip-vit-base-patch32``, ``replay:answers.jsonl``) or a
bare name (``random``, ``frequent``). Each scheme maps to ``module:Class``; the module is imported
only when used, so `import scopebench` never imports torch, transformers, ray or vllm.

A scheme may also come from a ``scopebench.models`` entry point of an installed distribution
(:mod:`scopebench.plugins`); its argument is optional (``mylab`` or ``mylab:ARG``) and the backend
decides what it means.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from scopebench.errors import ModelSpecError
from scopebench.models.base import Backend, ModelOptions
from scopebench.models.presets import PRESETS, resolve_preset
from scopebench.models.sampling import check_gen_args
from scopebench.plugins import MODEL_GROUP, PluginEntry, discover, load_entry
from scopebench.registry import Registry

__all__ = [
    "ModelSpec",
    "available_schemes",
    "backend_class",
    "load_model",
    "model_plugins",
    "parse_spec",
    "register_scheme",
    "scheme_origin",
    "split_spec",
]

_SCHEMES: Registry[type[Backend]] = Registry("model spec", ModelSpecError)
for _scheme, _target in {
    "random": "scopebench.models.baselines:RandomBackend",
    "frequent": "scopebench.models.baselines:FrequentBackend",
    "frequent-text-loo": "scopebench.models.baselines:FrequentTextLOOBackend",
    "replay": "scopebench.models.replay:ReplayBackend",
    "clip": "scopebench.models.contrastive:HFContrastiveBackend",
    "nsp": "scopebench.models.nsp:NSPBackend",
    "openclip": "scopebench.models.openclip:OpenClipBackend",
    "embed": "scopebench.models.embed:EmbeddingBackend",
    "hf": "scopebench.models.hf_generative:HFGenerativeBackend",
    "vllm": "scopebench.models.vllm_backend:VLLMBackend",
    "openai": "scopebench.models.openai_api:OpenAIBackend",
}.items():
    _SCHEMES.add(_scheme, _target)
# Schemes whose argument is a hub id or a local folder (a path-like argument must exist).
_LOCAL_OR_HUB = {"clip", "hf", "nsp", "vllm"}
# Schemes whose argument is required (``replay:PATH``) vs bare names (``random``).
_BARE = {"random", "frequent", "frequent-text-loo"}


def register_scheme(scheme: str, target: str, *, bare: bool = False) -> None:
    """Register ``scheme`` → ``"module:Class"`` (a :class:`Backend` subclass)."""
    _SCHEMES.add(scheme, target)
    if bare:
        _BARE.add(scheme)


def available_schemes() -> list[str]:
    """Every known scheme (built-in, registered and from entry points), for help texts and errors."""
    return sorted(set(_SCHEMES) | {n for n, e in _entry_points().items() if e.problem is None})


def _entry_points() -> dict[str, PluginEntry]:
    # Presets are names too: a plugin scheme called like one would never be reached.
    return discover(MODEL_GROUP, set(_SCHEMES) | set(PRESETS), "model scheme")


def model_plugins() -> list[PluginEntry]:
    """Every ``scopebench.models`` entry point, usable or not (for listings)."""
    return list(_entry_points().values())


def scheme_origin(spec: str | ModelSpec) -> dict[str, str] | None:
    """Where a plugin model scheme comes from (for a run's provenance); ``None`` for the others."""
    scheme = spec.scheme if isinstance(spec, ModelSpec) else resolve_preset(spec).partition(":")[0]
    entry = _plugin(scheme)
    return None if entry is None else {"entry_point": entry.value, "distribution": entry.distribution}


def _plugin(scheme: str) -> PluginEntry | None:
    """The usable entry point of ``scheme``, when it is no built-in or registered scheme."""
    if scheme in _SCHEMES:
        return None
    entry = _entry_points().get(scheme)
    return entry if entry is not None and entry.problem is None else None


def _class(scheme: str) -> type[Backend]:
    """Import the backend class of a known ``scheme``."""
    entry = _plugin(scheme)
    if entry is not None:
        plugin: type[Backend] = load_entry(entry, Backend, "model scheme")
        return plugin
    return _SCHEMES.load(scheme)


def _scheme_for_directory(path: Path) -> str:
    """Pick the backend family of a local model folder from the files it holds."""
    if (path / "open_clip_config.json").is_file():
        return "openclip"
    cfg_path = path / "config.json"
    if not cfg_path.is_file():
        raise ModelSpecError(
            f"{path} is a folder but holds no config.json or open_clip_config.json; "
            "point --model at a saved model folder or use a scheme such as hf:, clip:, openclip:"
        )
    try:
        cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ModelSpecError(f"{cfg_path} is not valid JSON: {exc.msg}") from exc
    archs = " ".join(cfg.get("architectures") or []) + " " + str(cfg.get("model_type", ""))
    if any(
        k in archs
        for k in ("CLIPModel", "SiglipModel", "Siglip2Model", "AlignModel", "clip", "siglip", "align")
    ):
        return "clip"
    return "hf"


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """A model spec string, parsed once at the boundary (CLI, :func:`scopebench.load_model`).

    Attributes:
        raw: The spec as the user wrote it (``biomedclip``, ``~/models/plip``), for display.
        scheme: The backend family (``hf``, ``clip``, ``random``, a plugin scheme…), after presets
            and local folders were resolved.
        target: The scheme's argument (a hub id, a path with ``~`` expanded, a file); ``""`` for a
            bare name such as ``random``.
    """

    raw: str
    scheme: str
    target: str

    @property
    def spec(self) -> str:
        """The resolved spec a backend is built with (``scheme:target``, or just ``scheme``)."""
        if self.scheme not in _BARE and (self.target or _plugin(self.scheme) is None):
            return f"{self.scheme}:{self.target}"  # a local folder resolved to its family; ~ expanded
        return self.scheme

    @property
    def display_name(self) -> str:
        """The name shown to users: the spec as written."""
        return self.raw


def parse_spec(spec: str | ModelSpec) -> ModelSpec:
    """Parse ``"scheme:arg"`` into a :class:`ModelSpec`; a bare name has an empty target.

    A :class:`ModelSpec` is returned as it is (it was parsed already).

    A spec that is an existing local folder (and not a known scheme) is resolved from the files it
    holds: ``open_clip_config.json`` → ``openclip``; a ``config.json`` of a CLIP/SigLIP/ALIGN model
    → ``clip``; any other ``config.json`` → ``hf``.

    A leading ``~`` in the argument is expanded to the home folder (``clip:~/models/plip``).

    A preset name (``biomedclip``, ``qwen2-vl-7b``…; see :mod:`scopebench.models.presets`) is first
    replaced by the spec it stands for.

    Raises:
        ModelSpecError: For an unknown scheme or a missing/superfluous argument.
    """
    if isinstance(spec, ModelSpec):
        return spec
    return _parse(spec)


def _parse(text: str) -> ModelSpec:
    """Parse a spec string (:func:`parse_spec`'s work; the one place a spec string is read)."""
    raw, spec = text, resolve_preset(text)
    scheme, sep, arg = spec.partition(":")
    if _plugin(scheme) is not None:
        return ModelSpec(raw, scheme, arg)  # a plugin's argument is the plugin's business
    if scheme not in _SCHEMES and Path(spec).expanduser().is_dir():
        folder = Path(spec).expanduser()
        return ModelSpec(raw, _scheme_for_directory(folder), str(folder))
    if scheme not in _SCHEMES:
        clash = _entry_points().get(scheme)
        error = _SCHEMES.unknown(
            spec,
            [*available_schemes(), *PRESETS],
            "use one of: "
            + ", ".join(s if s in _BARE else f"{s}:…" for s in available_schemes())
            + ", or a preset name (`scopebench models` lists them)",
            compare=scheme,
        )
        if clash is not None and clash.problem:
            error = ModelSpecError(f"{clash.problem}. {error}")
        raise error
    if scheme in _BARE and sep:
        raise ModelSpecError(f"model {scheme!r} takes no argument; write just {scheme!r}")
    if scheme not in _BARE and not arg:
        raise ModelSpecError(f"model spec {spec!r} needs an argument after '{scheme}:'")
    if arg.startswith("~"):
        # The shell expands ~ only at the start of a word, not after "clip:".
        arg = os.path.expanduser(arg)
    if scheme in _LOCAL_OR_HUB and arg.startswith(("/", "./", "../")) and not Path(arg).exists():
        # Otherwise the hub client reports "Repo id must be in the form 'repo_name'…".
        raise ModelSpecError(f"model folder {arg} not found (spec {spec!r}); check the path")
    return ModelSpec(raw, scheme, arg)


def split_spec(spec: str | ModelSpec) -> tuple[str, str]:
    """``(scheme, target)`` of a spec: :func:`parse_spec` as a pair.

    Deprecated: scopebench itself no longer calls it (a spec is parsed once, and its
    :class:`ModelSpec` handed on); it stays for plugins (docs/extending.md). Prefer
    ``parse_spec(spec).scheme`` / ``.target``.

    Raises:
        ModelSpecError: For an unknown scheme or a missing/superfluous argument.
    """
    parsed = parse_spec(spec)
    return parsed.scheme, parsed.target


def backend_class(spec: str | ModelSpec) -> type[Backend]:
    """The :class:`Backend` subclass ``spec`` names, without building it (no weights are loaded).

    Raises:
        ModelSpecError: For an unknown or malformed spec.
        MissingDependencyError: When the backend's optional extra is not installed.
        PluginError: When an entry-point backend fails to import.
    """
    return _class(parse_spec(spec).scheme)


def load_model(spec: str | ModelSpec, options: ModelOptions | None = None) -> Backend:
    """Build the backend for ``spec``.

    Raises:
        ModelSpecError: For an unknown or malformed spec.
        MissingDependencyError: When the backend's optional extra is not installed.
        PluginError: When an entry-point backend fails to import.
    """
    parsed = parse_spec(spec)  # once: a ModelSpec passes through unparsed
    scheme = parsed.scheme
    cls = _class(scheme)
    options = options or ModelOptions()
    accepted = cls.model_args
    unknown = sorted(set(options.extra) - accepted) if accepted is not None else []
    if unknown:
        known = f"known: {', '.join(sorted(accepted))}" if accepted else "they take none"
        raise ModelSpecError(f"unknown --model-arg {', '.join(unknown)} for {scheme} models; {known}")
    # Built-in backends take the ModelSpec (and read its target); a plugin gets the resolved string,
    # the contract docs/extending.md documents.
    backend: Backend = cls(parsed if cls.takes_model_spec else parsed.spec, options)
    backend.model_spec = parsed  # so a run handed this backend need not parse its spec again
    if options.answer_format == "constrained" and not backend.can_constrain():
        raise ModelSpecError(
            f"model {parsed.spec!r} ({backend.mode}) cannot enforce a label-only answer; "
            "--answer-format constrained works with openai: (structured outputs), vllm: (guided choice) "
            "and hf: in --mode generate (a logits restriction); use --answer-format free"
        )
    _check_sampling(backend, parsed.spec, options)
    return backend


def _check_sampling(backend: Backend, spec: str, options: ModelOptions) -> None:
    """Refuse ``--gen-arg`` for a backend that cannot sample, and check its values."""
    if not options.gen_args:
        return
    check_gen_args(options.gen_args)
    if not backend.can_sample():
        raise ModelSpecError(
            f"model {spec!r} ({backend.mode}) cannot sample; --gen-arg works with openai:, vllm: "
            "and hf: in --mode generate; leave --gen-arg out for this model"
        )
