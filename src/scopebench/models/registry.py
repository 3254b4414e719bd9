"""Model spec strings → backends, with lazy imports.

A spec is ``scheme:argument`` (``clip:openai/clip-vit-base-patch32``, ``replay:answers.jsonl``) or a
bare name (``random``, ``frequent``). Each scheme maps to ``module:Class``; the module is imported
only when used, so `import scopebench` never imports torch, transformers, ray or vllm.
"""

from __future__ import annotations

import importlib
import json
import os
from pathlib import Path

from scopebench.errors import ModelSpecError
from scopebench.models.base import Backend, ModelOptions
from scopebench.models.presets import resolve_preset

__all__ = ["available_schemes", "backend_class", "load_model", "register_scheme", "split_spec"]

_SCHEMES: dict[str, str] = {
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
}
# Schemes whose argument is a hub id or a local folder (a path-like argument must exist).
_LOCAL_OR_HUB = {"clip", "hf", "nsp", "vllm"}
# Schemes whose argument is required (``replay:PATH``) vs bare names (``random``).
_BARE = {"random", "frequent", "frequent-text-loo"}


def register_scheme(scheme: str, target: str, *, bare: bool = False) -> None:
    """Register ``scheme`` → ``"module:Class"`` (a :class:`Backend` subclass)."""
    _SCHEMES[scheme] = target
    if bare:
        _BARE.add(scheme)


def available_schemes() -> list[str]:
    """Every known scheme, for help texts and error messages."""
    return sorted(_SCHEMES)


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


def split_spec(spec: str) -> tuple[str, str]:
    """Split ``"scheme:arg"`` into its parts; a bare name has an empty argument.

    A spec that is an existing local folder (and not a known scheme) is resolved from the files it
    holds: ``open_clip_config.json`` → ``openclip``; a ``config.json`` of a CLIP/SigLIP/ALIGN model
    → ``clip``; any other ``config.json`` → ``hf``.

    A leading ``~`` in the argument is expanded to the home folder (``clip:~/models/plip``).

    A preset name (``biomedclip``, ``qwen2-vl-7b``…; see :mod:`scopebench.models.presets`) is first
    replaced by the spec it stands for.

    Raises:
        ModelSpecError: For an unknown scheme or a missing/superfluous argument.
    """
    spec = resolve_preset(spec)
    scheme, sep, arg = spec.partition(":")
    if scheme not in _SCHEMES and Path(spec).expanduser().is_dir():
        folder = Path(spec).expanduser()
        return _scheme_for_directory(folder), str(folder)
    if scheme not in _SCHEMES:
        raise ModelSpecError(
            f"unknown model spec {spec!r}; use one of: "
            + ", ".join(s if s in _BARE else f"{s}:…" for s in available_schemes())
            + ", or a preset name (`scopebench models` lists them)"
        )
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
    return scheme, arg


def backend_class(spec: str) -> type[Backend]:
    """The :class:`Backend` subclass ``spec`` names, without building it (no weights are loaded).

    Raises:
        ModelSpecError: For an unknown or malformed spec.
        MissingDependencyError: When the backend's optional extra is not installed.
    """
    scheme, _ = split_spec(spec)
    module_name, _, cls_name = _SCHEMES[scheme].partition(":")
    cls: type[Backend] = getattr(importlib.import_module(module_name), cls_name)
    return cls


def load_model(spec: str, options: ModelOptions | None = None) -> Backend:
    """Build the backend for ``spec``.

    Raises:
        ModelSpecError: For an unknown or malformed spec.
        MissingDependencyError: When the backend's optional extra is not installed.
    """
    spec = resolve_preset(spec)
    scheme, arg = split_spec(spec)
    if scheme not in _BARE:
        spec = f"{scheme}:{arg}"  # a bare local folder resolved to its family; ~ expanded
    module_name, _, cls_name = _SCHEMES[scheme].partition(":")
    module = importlib.import_module(module_name)
    cls = getattr(module, cls_name)
    options = options or ModelOptions()
    accepted = cls.model_args
    unknown = sorted(set(options.extra) - accepted) if accepted is not None else []
    if unknown:
        known = f"known: {', '.join(sorted(accepted))}" if accepted else "they take none"
        raise ModelSpecError(f"unknown --model-arg {', '.join(unknown)} for {scheme} models; {known}")
    backend: Backend = cls(spec, options)
    return backend
