"""Contrastive zero-shot backends (μ-Bench protocol): image vs one caption per option.

The image and each option's caption (:func:`~scopebench.protocols.caption_texts`: μ-Bench's
caption-style options where the item has them, else question + option) are embedded and
L2-normalised; the option scores are ``softmax(logit_scale · cos + logit_bias)`` over the item's
options — the model's own temperature, so the recorded ``scores`` are proper probabilities. For
SigLIP, trained with a sigmoid, the same softmax over options is reported (the argmax is the same)
and the raw logits are kept in ``extra["logits"]``.

Efficiency: benchmarks repeat images (μ-Bench asks 5–6 questions per image) and captions (the same
option sentences recur thousands of times). Each backend keeps per-run caches keyed by
:attr:`ImageRef.key` and by caption text, so each unique image and caption is encoded once per run,
in batches. While the model encodes one batch of images, a thread decodes and preprocesses the
next (:meth:`ContrastiveBackend.prepare_images`) when the model runs on an accelerator or a CPU
core is spare (:meth:`ContrastiveBackend.prepares_ahead`), so the model does not wait on Pillow;
on a CPU whose cores the model's threads take, the next batch starts once this one is encoded,
while the engine stores its answers. Each batch is prepared in one part per core. Pixels are
released right after encoding. Embeddings are kept as float32: float16 storage moves
probabilities by up to 5e-4 against the reference loop on a CPU, enough to flip a near-tie, and
would save only ~2 KB per image (35 MB for μ-Bench's 17k images).
"""

from __future__ import annotations

import hashlib
import itertools
import logging
import os
import sys
from abc import abstractmethod
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from scopebench.errors import ImageLoadError, MissingDependencyError, ModelError, ModelSpecError, reason
from scopebench.items import Item
from scopebench.models.base import Backend, ModelOptions, Response
from scopebench.models.cpu_memory import keep_freed_memory, release_freed_memory
from scopebench.models.registry import ModelSpec, parse_spec
from scopebench.protocols import Request

__all__ = ["ContrastiveBackend", "HFContrastiveBackend", "resolve_device", "weights_digest"]

log = logging.getLogger(__name__)


def resolve_device(device: str) -> str:
    """``auto`` → ``cuda`` when available, else ``cpu``; an explicit device is checked to exist.

    Raises:
        ModelSpecError: For a device torch does not know or this machine does not have.
    """
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    try:
        dev = torch.device(device)
    except (RuntimeError, ValueError) as exc:
        raise ModelSpecError(f"unknown --device {device!r}; use auto, cpu, cuda, cuda:N or mps") from exc
    if dev.type == "cuda":
        n = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if n == 0:
            raise ModelSpecError(
                f"--device {device}: this machine has no CUDA GPU usable by torch; use --device cpu"
            )
        if dev.index is not None and dev.index >= n:
            raise ModelSpecError(f"--device {device}: only {n} CUDA device(s) (cuda:0…cuda:{n - 1})")
    if dev.type == "mps" and not torch.backends.mps.is_available():
        raise ModelSpecError(f"--device {device}: MPS is not available on this machine; use --device cpu")
    return device


def _cores() -> int:
    """CPU cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


_WEIGHT_SUFFIXES = {".safetensors", ".bin", ".pt", ".pth"}


def weights_digest(path: Path) -> str | None:
    """A fingerprint (16 hex) of a local model's weight files, for provenance.

    SHA-256 over each file's name, size, first and last MiB — not the whole file: hashing 15 GB of
    a 7B model on every invocation would make resuming a finished run cost seconds. Any retrained
    or re-saved checkpoint changes its safetensors header (first MiB) or its size.
    """
    files = [path] if path.is_file() else sorted(p for p in path.glob("*") if p.suffix in _WEIGHT_SUFFIXES)
    files = [p for p in files if p.is_file()]
    if not files:
        return None
    h = hashlib.sha256()
    for p in files:
        size = p.stat().st_size
        h.update(f"{p.name}:{size}".encode())
        with open(p, "rb") as fh:
            h.update(fh.read(1 << 20))
            if size > 2 << 20:
                fh.seek(-(1 << 20), 2)
                h.update(fh.read(1 << 20))
    return h.hexdigest()[:16]


class ContrastiveBackend(Backend):
    """Shared caching and scoring for contrastive image–text models.

    Subclasses load a model and implement :meth:`encode_images` and :meth:`encode_texts` (both
    returning L2-normalised float32 arrays) and set :attr:`logit_scale` / :attr:`logit_bias`.
    """

    model_args = frozenset({"encode_batch_size"})

    mode = "contrastive"
    needs_images = True
    default_batch_size = 64

    takes_model_spec = True

    def __init__(self, spec: str | ModelSpec, options: ModelOptions) -> None:
        super().__init__(spec, options)
        self.logit_scale = 1.0
        self.logit_bias = 0.0
        self._image_cache: dict[str, np.ndarray] = {}
        self._image_errors: dict[str, str] = {}
        self._text_cache: dict[str, np.ndarray] = {}
        self.encode_batch = int(options.extra.get("encode_batch_size", options.batch_size or 32))
        self._pool: ThreadPoolExecutor | None = None
        self._parts: ThreadPoolExecutor | None = None
        # The batches :meth:`prefetch` is preparing, by their image keys.
        self._ahead: dict[tuple[str, ...], Future[tuple[Any, list[str], dict[str, str]]]] = {}
        # A hinted batch to start preparing once this call's encoding is done (no spare core).
        self._deferred: tuple[tuple[str, ...], list[Any]] | None = None

    @abstractmethod
    def encode_images(self, images: Sequence[Any]) -> np.ndarray:
        """Embed PIL images → (n, d) L2-normalised."""

    @abstractmethod
    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts → (n, d) L2-normalised."""

    def batches(self, requests: Sequence[Request], size: int) -> list[list[Request]]:
        """Cut calls by images, not items: each call holds every item of ``encode_batch`` images.

        The model's work is encoding images (an item's scoring is a dot product), and a CPU
        encodes images about twice as fast per image in batches of 32 as of 8: a call of ``size``
        items would hold only ``size / questions per image`` images (μ-Bench asks 5–6 per image).
        Items without an image ride along with the batch they fall in.
        """
        out: list[list[Request]] = []
        current: list[Request] = []
        images: set[str] = set()
        for req in requests:
            key = req.item.images[0].key if req.item.images else None
            if key is not None and key not in images and len(images) >= self.encode_batch:
                out.append(current)
                current, images = [], set()
            if key is not None:
                images.add(key)
            current.append(req)
        if current:
            out.append(current)
        return out

    def prepare_images(self, images: Sequence[Any]) -> Any:
        """The model's input for decoded images (resized, normalised…), made ahead of the model.

        The default hands the images on as they are and :meth:`encode_prepared` encodes them with
        :meth:`encode_images`. A backend that splits its preprocessing from its forward pass
        overrides both, so the next batch is prepared while the model encodes this one.
        """
        return list(images)

    def encode_prepared(self, prepared: Any) -> np.ndarray:
        """Embed what :meth:`prepare_images` made → (n, d) L2-normalised."""
        return self.encode_images(prepared)

    def join_prepared(self, parts: Sequence[Any]) -> Any:
        """One model input from :meth:`prepare_images` of consecutive parts of a batch, in order.

        The default joins lists (what the default :meth:`prepare_images` makes); a backend whose
        prepared input is a tensor concatenates along the batch axis.
        """
        return [x for part in parts for x in part]

    def prefetch(self, requests: Sequence[Request]) -> None:
        """Start decoding and preparing the first batch of images ``requests`` need, not yet encoded.

        The engine hints each batch before it answers the one before, so Pillow and the processor
        work while the model encodes. At most two batches are prepared ahead; further hints are
        ignored until one is used. With no spare core the batch starts only once the current call
        has encoded its images, while the engine parses and stores their answers (:meth:`answer`).
        """
        refs = self._uncached([r.item for r in requests])
        keys = tuple(list(refs)[: self.encode_batch])
        if not keys or keys in self._ahead:
            return
        # Loading keeps one core busy: the first two batches are decoded on another meanwhile.
        if self.prepares_ahead() or self.loading():
            if len(self._ahead) < 2:
                self._ahead[keys] = self._pixel_pool().submit(self._prepare_chunk, [refs[k] for k in keys])
        else:
            self._deferred = (keys, [refs[k] for k in keys])

    def _start_deferred(self) -> None:
        """Start preparing the batch :meth:`prefetch` put off, unless a call already encoded it."""
        if self._deferred is None:
            return
        keys, refs = self._deferred
        self._deferred = None
        done = any(k in self._image_cache or k in self._image_errors for k in keys)
        if not done and keys not in self._ahead and len(self._ahead) < 2:
            self._ahead[keys] = self._pixel_pool().submit(self._prepare_chunk, refs)

    def loading(self) -> bool:
        """Whether the weights are still to be loaded.

        The first batch is then prepared in a thread whatever the cores: loading keeps one core
        busy and leaves the others idle.
        """
        return False

    def prepares_ahead(self) -> bool:
        """Whether images are prepared in a thread ahead of the model.

        On an accelerator, always. On a CPU only when a core is left beside the model's own
        threads: torch uses every core by default, and a preparing thread would then take turns
        with them instead of filling idle time (measured on 2 cores: no faster, at times slower).
        """
        device = str(getattr(self, "device", "cpu"))
        if not device.startswith("cpu"):
            return True
        torch = sys.modules.get("torch")
        threads = torch.get_num_threads() if torch is not None else 1
        return _cores() > threads

    def _pixel_pool(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="scopebench-pixels")
        return self._pool

    def _part_pool(self) -> ThreadPoolExecutor | None:
        """Threads that decode and prepare the parts of one batch (``None`` on a single core)."""
        if self._parts is None and _cores() > 1:
            self._parts = ThreadPoolExecutor(_cores(), thread_name_prefix="scopebench-decode")
        return self._parts

    def _uncached(self, items: Sequence[Item]) -> dict[str, Any]:
        """The first image reference of each item whose image is neither encoded nor failed, by key."""
        todo: dict[str, Any] = {}
        for it in items:
            for ref in it.images[:1]:
                if ref.key not in self._image_cache and ref.key not in self._image_errors:
                    todo.setdefault(ref.key, ref)
        return todo

    def _fill_image_cache(self, items: Sequence[Item]) -> None:
        todo = self._uncached(items)
        keys = list(todo)
        chunks = [tuple(keys[k : k + self.encode_batch]) for k in range(0, len(keys), self.encode_batch)]
        if not chunks:
            return
        # The next batch is decoded and prepared in a thread while the model encodes this one
        # (Pillow and the processors release the GIL for most of it); each batch's pixels are
        # released right after it is encoded.
        in_thread = self.prepares_ahead()
        pending = self._ahead.pop(chunks[0], None)
        for n, chunk in enumerate(chunks):
            if pending is None:  # not hinted (a direct call, or no spare core), or hinted for others
                pending = self._start([todo[k] for k in chunk], in_thread)
            prepared, ok, errors = pending.result()
            pending = None
            if in_thread and n + 1 < len(chunks):
                pending = self._start([todo[k] for k in chunks[n + 1]], in_thread)
            self._image_errors.update(errors)
            if ok:
                emb = self.encode_prepared(prepared)
                for k, e in zip(ok, emb, strict=True):
                    self._image_cache[k] = e.astype(np.float32)
            del prepared
        # A hint that named any image done now can no longer match a batch: drop it.
        done = set(keys)
        for stale in [k for k in self._ahead if done.intersection(k)]:
            del self._ahead[stale]

    def _start(self, refs: Sequence[Any], in_thread: bool) -> Future[tuple[Any, list[str], dict[str, str]]]:
        """Prepare ``refs`` in the pixel thread, or here and now (a finished future)."""
        if in_thread:
            return self._pixel_pool().submit(self._prepare_chunk, refs)
        done: Future[tuple[Any, list[str], dict[str, str]]] = Future()
        done.set_result(self._prepare_chunk(refs))
        return done

    def _prepare_chunk(self, refs: Sequence[Any]) -> tuple[Any, list[str], dict[str, str]]:
        """``(prepared pixels, keys prepared, errors by key)`` of one batch of image references.

        The batch is cut into one consecutive part per core, decoded and prepared in threads
        (Pillow and the processors' array work release the GIL) and joined in order, so the
        result is the same as one pass: a CPU whose cores all encode would otherwise leave all
        but one idle while the next batch is prepared (32 CLIP images on 2 cores: 0.16–0.20 s in
        one pass, 0.10–0.12 s in two).
        """
        n = min(_cores(), len(refs))
        pool = self._part_pool() if n > 1 else None
        if pool is None:
            parts = [self._prepare_part(refs)]
        else:
            bounds = [len(refs) * k // n for k in range(n + 1)]
            parts = list(pool.map(self._prepare_part, [refs[a:b] for a, b in itertools.pairwise(bounds)]))
        prepared = [p for p, _, _ in parts if p is not None]
        ok = [k for _, keys, _ in parts for k in keys]
        errors = {k: v for _, _, errs in parts for k, v in errs.items()}
        return (self.join_prepared(prepared) if prepared else None), ok, errors

    def _prepare_part(self, refs: Sequence[Any]) -> tuple[Any, list[str], dict[str, str]]:
        """``(prepared pixels or None, keys prepared, errors by key)`` of consecutive references."""
        pixels, ok, errors = [], [], {}
        for ref in refs:
            try:
                pixels.append(ref.load())
                ok.append(ref.key)
            except ImageLoadError as exc:
                errors[ref.key] = str(exc)
        return (self.prepare_images(pixels) if pixels else None), ok, errors

    def _fill_text_cache(self, texts: Sequence[str]) -> None:
        todo = list(dict.fromkeys(t for t in texts if t not in self._text_cache))
        for start in range(0, len(todo), self.encode_batch):
            chunk = todo[start : start + self.encode_batch]
            for t, e in zip(chunk, self.encode_texts(chunk), strict=True):
                self._text_cache[t] = e.astype(np.float32)

    def answer(self, requests: Sequence[Request]) -> list[Response]:
        """Score every option of every item; unique images and captions are encoded once per run."""
        items = [r.item for r in requests]
        captions = {r.item_id: list(r.captions) for r in requests}
        self._fill_image_cache([it for it in items if it.images])
        self._fill_text_cache([c for cs in captions.values() for c in cs])
        self._start_deferred()  # the model is idle until the next call
        out = []
        for it in items:
            if not it.images:
                out.append(Response(it.id, status="error", error="contrastive models need an image"))
                continue
            key = it.images[0].key
            if key in self._image_errors:
                out.append(Response(it.id, status="error", error=self._image_errors[key]))
                continue
            img = self._image_cache[key]
            txt = np.stack([self._text_cache[c] for c in captions[it.id]])
            logits = self.logit_scale * (txt @ img) + self.logit_bias
            e = np.exp(logits - logits.max())
            probs = e / e.sum()
            extra: dict[str, Any] = {"logits": [round(x, 6) for x in logits.tolist()]}
            if len(it.images) > 1:
                extra["note"] = "contrastive models see only the first image"
            out.append(Response(it.id, scores=probs.tolist(), extra=extra))
        return out

    def close(self) -> None:
        """Stop preparing images ahead and drop the caches."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        if self._parts is not None:
            self._parts.shutdown(wait=True)
            self._parts = None
        self._ahead.clear()
        self._deferred = None
        self._image_cache.clear()
        self._text_cache.clear()

    def cache_sizes(self) -> tuple[int, int]:
        """Unique images and captions encoded so far (for tests and logs)."""
        return len(self._image_cache), len(self._text_cache)


class HFContrastiveBackend(ContrastiveBackend):
    """``clip:MODEL`` — transformers CLIPModel / SiglipModel / AlignModel (hub id or local folder).

    Covers OpenAI CLIP, PLIP (``vinid/plip``), ALIGN (``kakaobrain/align-base``) and SigLIP.
    """

    def __init__(self, spec: str | ModelSpec, options: ModelOptions) -> None:
        super().__init__(spec, options)
        self.model_id = parse_spec(spec).target
        try:
            import torch
            from transformers import AutoConfig
        except ImportError as exc:
            raise MissingDependencyError("transformers", "hf", "clip: models") from exc
        self._torch = torch
        self.device = resolve_device(options.device)
        self.dtype = torch.float32 if self.device == "cpu" else torch.float16
        try:
            # Only the config now: weights load on the first predict(), so resuming a finished
            # run (nothing to predict) never pays for them.
            self.config = AutoConfig.from_pretrained(self.model_id)
        except (OSError, ValueError) as exc:
            raise ModelError(
                f"cannot load contrastive model {self.model_id!r}: {reason(exc)}. Give a local folder "
                "(save_pretrained layout) or a hub id reachable from this machine."
            ) from exc
        self.model: Any = None
        self.processor: Any = None
        text_cfg = getattr(self.config, "text_config", None)
        self.max_length = int(getattr(text_cfg, "max_position_embeddings", 77) or 77)

    def _ensure_processor(self) -> None:
        if self.processor is not None:
            return
        from transformers import AutoProcessor

        try:
            self.processor = AutoProcessor.from_pretrained(self.model_id)
        except OSError as exc:
            raise ModelError(f"cannot load contrastive model {self.model_id!r}: {exc}") from exc

    def _ensure_loaded(self) -> None:
        if self.model is not None:
            return
        torch = self._torch
        from transformers import AutoModel

        self._ensure_processor()
        keep_freed_memory(self.device)
        try:
            self.model = AutoModel.from_pretrained(self.model_id, dtype=self.dtype).to(self.device).eval()
        except OSError as exc:
            raise ModelError(f"cannot load contrastive model {self.model_id!r}: {exc}") from exc
        if not hasattr(self.model, "get_image_features"):
            raise ModelError(
                f"{self.model_id!r} is not a contrastive image–text model (no get_image_features)"
            )
        with torch.no_grad():
            self.logit_scale = float(self.model.logit_scale.exp().item())
            bias = getattr(self.model, "logit_bias", None)
            self.logit_bias = float(bias.item()) if bias is not None else 0.0

    def loading(self) -> bool:
        """Whether the weights load on the next :meth:`answer` (they load on first use)."""
        return self.model is None

    def prefetch(self, requests: Sequence[Request]) -> None:
        """Load the processor, then prepare ``requests``' images (the first batch's as weights load)."""
        try:
            self._ensure_processor()
        except ModelError:
            return  # answer() reports it
        super().prefetch(requests)

    def answer(self, requests: Sequence[Request]) -> list[Response]:
        """Load the weights on first use, then score (see :class:`ContrastiveBackend`)."""
        self._ensure_loaded()
        return super().answer(requests)

    @staticmethod
    def _features(out: Any) -> Any:
        # transformers v5 returns a model output whose pooler_output holds the projected
        # features; v4 returned the tensor itself.
        return out.pooler_output if hasattr(out, "pooler_output") else out

    def _normalise(self, feats: Any) -> np.ndarray:
        feats = feats.float()
        feats = feats / feats.norm(dim=-1, keepdim=True).clamp_min(1e-12)
        arr: np.ndarray = feats.cpu().numpy()
        return arr

    def encode_images(self, images: Sequence[Any]) -> np.ndarray:
        """Embed images with the model's vision tower and projection."""
        return self.encode_prepared(self.prepare_images(images))

    def prepare_images(self, images: Sequence[Any]) -> Any:
        """The processor's ``pixel_values`` (resized, normalised) of PIL images."""
        return self.processor(images=list(images), return_tensors="pt")["pixel_values"]

    def join_prepared(self, parts: Sequence[Any]) -> Any:
        """``pixel_values`` of consecutive parts of a batch, concatenated in order."""
        return parts[0] if len(parts) == 1 else self._torch.cat(list(parts))

    def encode_prepared(self, prepared: Any) -> np.ndarray:
        """Embed ``pixel_values`` with the model's vision tower and projection."""
        pixel_values = prepared.to(self.device, self.dtype)
        with self._torch.inference_mode():
            return self._normalise(self._features(self.model.get_image_features(pixel_values=pixel_values)))

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts (truncated to the model's context length, e.g. 77 for CLIP)."""
        torch = self._torch
        # SigLIP was trained on max_length padding; CLIP pools at EOS, so either padding works there.
        padding = "max_length" if "siglip" in str(self.config.model_type).lower() else True
        inputs = self.processor(
            text=list(texts),
            padding=padding,
            truncation=True,
            max_length=self.max_length,
            return_tensors="pt",
        )
        inputs = {k: v.to(self.device) for k, v in inputs.items() if k in ("input_ids", "attention_mask")}
        with torch.inference_mode():
            return self._normalise(self._features(self.model.get_text_features(**inputs)))

    def identity(self) -> dict[str, Any]:
        """Spec, model class, revision or weight hash, dtype, device, logit scale."""
        local = Path(self.model_id).is_dir()
        return {
            "spec": self.spec,
            "mode": self.mode,
            "model_class": (self.config.architectures or [type(self.config).__name__])[0],
            "revision": None if local else getattr(self.config, "_commit_hash", None),
            "weights_sha256": weights_digest(Path(self.model_id)) if local else None,
            "dtype": str(self.dtype).removeprefix("torch."),
            "device": self.device,
        }

    def close(self) -> None:
        """Drop the model and caches."""
        super().close()
        self.model = None
        release_freed_memory()
