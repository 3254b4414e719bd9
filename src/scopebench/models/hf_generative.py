"""``hf:MODEL`` — local generative vision-language models through transformers.

The model is loaded with ``AutoModelForImageTextToText`` and its ``AutoProcessor``; prompts come
rendered in each :class:`~scopebench.protocols.Request` and are laid out with the model's own chat template
(images first, one placeholder per image, then the text). Two modes (``--mode``):

* ``generate`` — greedy decoding of free text (``--model-arg max_new_tokens=N``, default 64); the
  engine's parser maps the text to an option.
* ``choice-logprob`` — no decoding at all: one forward pass over the prompt, then the next-token
  log-probabilities of the option labels (``A``, ``B``… or MicroVQA's ``1``, ``2``…) are compared.
  The recorded ``scores`` are those probabilities renormalised over the options; the raw label
  log-probabilities and the probability mass the labels hold are kept in ``extra``.

Label tokens: tokenizers spell a label differently by context — byte-level vocabularies (GPT-2,
Qwen) have both ``"A"`` and ``"ĠA"`` (" A"), SentencePiece ones (Llama, Gemma) ``"▁A"`` and the
mid-word ``"A"``. For each label every spelling that is a *single* token is collected (the
encodings of ``"A"`` and ``" A"``, and the vocabulary entries ``A``, ``▁A``, ``ĠA``) and the
label's score is the best (maximum) log-probability among them, so whichever spelling the model
prefers after the prompt counts. A label with no single-token spelling (``"10"`` for a digit-wise
tokenizer) cannot be scored this way and its item is recorded as an error, never guessed.

Answer prefix: in ``choice-logprob`` mode a text can be appended after the chat template's
generation prompt (``--model-arg answer_prefix=…``), so the next token is the label. The default is
the request's answer prefix, which each benchmark declares for its owner protocol
(:attr:`~scopebench.benchmarks.Benchmark.answer_prefix`): none for prompts that ask for the letter
alone (default, μ-Bench, PathMMU), ``"The answer is ("`` for MicroVQA's owner protocol and
``"<ANSWER>"`` for SPUR's (no trailing space: the label variants cover ``" A"``).

Families: Qwen2-VL / Qwen2.5-VL, LLaVA-1.5 / LLaVA-NeXT, PaliGemma and Idefics3 / SmolVLM, plus any
other model whose processor has a chat template. PaliGemma has none: it gets its plain prompt
(the processor adds the image tokens, ``<bos>`` and the closing newline). On a machine without
torchvision, processors that carry a video processor (Qwen2-VL, SmolVLM) are rebuilt for images only.

Batching: :meth:`HFGenerativeBackend.plan` orders the run so that items about the same image are
adjacent and batches hold prompts of similar length (less padding); inside a batch each image is
decoded once, prompts are left-padded, and items with different image counts go through separate
forward passes. Answers come back in the order asked.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from scopebench.errors import ImageLoadError, MissingDependencyError, ModelError, ModelSpecError, reason
from scopebench.items import ImageRef, Item
from scopebench.models._shared_prefix import SHAREABLE_FAMILIES, shared_prefix_logprobs
from scopebench.models.base import Backend, ChatMessage, FinishReason, ModelOptions, Response
from scopebench.models.contrastive import resolve_device, weights_digest
from scopebench.models.cpu_memory import keep_freed_memory, release_freed_memory
from scopebench.models.hf_processor import load_processor
from scopebench.models.registry import ModelSpec, parse_spec
from scopebench.models.sampling import gather, sample_seeds
from scopebench.parsing.boxes import parse_boxes
from scopebench.protocols import DetectionStyle, Request, render_detection_prompt, render_prompt

__all__ = ["MODES", "HFGenerativeBackend", "family_of", "load_processor"]

log = logging.getLogger(__name__)

#: The modes ``hf:`` models run in.
MODES = ("generate", "choice-logprob")

Family = Literal["qwen2-vl", "qwen2.5-vl", "llava", "paligemma", "idefics3", "generic"]

_FAMILIES: dict[str, Family] = {
    "qwen2_vl": "qwen2-vl",
    "qwen2_5_vl": "qwen2.5-vl",
    "llava": "llava",
    "llava_next": "llava",
    "llava_onevision": "llava",
    "paligemma": "paligemma",
    "idefics3": "idefics3",
    "smolvlm": "idefics3",
}


def family_of(model_type: str) -> Family:
    """The prompt-format family of a transformers ``model_type`` (``generic`` when unknown)."""
    return _FAMILIES.get(model_type, "generic")


# The backend ---------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Turn:
    role: str
    text: str
    images: tuple[ImageRef, ...] = ()


@dataclass(slots=True)
class _Job:
    """One model call to make: where its answer goes, its turns, and how to read the output."""

    index: int
    turns: list[_Turn]
    prefix: str = ""
    option_labels: tuple[str, ...] = ()
    detection: bool = False
    protocol: str = ""


class HFGenerativeBackend(Backend):
    """Local transformers image-text-to-text models (``hf:MODEL_ID_OR_FOLDER``).

    Options read from ``--model-arg``: ``max_new_tokens`` (generate, default 64),
    ``detect_max_new_tokens`` (detection items, default 128), ``max_new_tokens_cap`` (an upper
    bound on every generation, strategy steps included), ``answer_prefix`` (choice-logprob,
    default per protocol), ``dtype`` (``float32``/``bfloat16``/``float16``; default bf16 or fp16 on
    GPU, fp32 on CPU) and ``revision`` (a hub revision).
    """

    model_args = frozenset(
        {"max_new_tokens", "detect_max_new_tokens", "share_prefix", "max_new_tokens_cap", "answer_prefix",
         "revision", "dtype"}
    )  # fmt: skip

    needs_images = True
    kinds = ("mcq", "detection")
    default_batch_size = 4

    takes_model_spec = True

    def __init__(self, spec: str | ModelSpec, options: ModelOptions) -> None:
        super().__init__(spec, options)
        self.model_id = parse_spec(spec).target
        mode = options.mode or "generate"
        if mode not in MODES:
            raise ModelSpecError(f"hf: models run in mode generate or choice-logprob, not {mode!r}")
        self._mode = mode
        try:
            import torch
            from transformers import AutoConfig
        except ImportError as exc:
            raise MissingDependencyError("transformers", "hf", "hf: models") from exc
        self._torch = torch
        extra = options.extra  # keys: HFGenerativeBackend.model_args
        self.max_new_tokens = int(extra.get("max_new_tokens", 64))
        self.detect_max_new_tokens = int(extra.get("detect_max_new_tokens", 128))
        self.share_prefix = str(extra.get("share_prefix", "true")).lower() not in ("false", "0", "no")
        cap = extra.get("max_new_tokens_cap")
        self.max_new_tokens_cap = int(cap) if cap is not None else None
        self.answer_prefix: str | None = extra.get("answer_prefix")
        self.revision: str | None = extra.get("revision")
        self.device = resolve_device(options.device)
        self.dtype = self._pick_dtype(str(extra.get("dtype", "auto")))
        try:
            # Only the config now: weights load on the first call, so resuming a finished run
            # (nothing to predict) never pays for them.
            self.config = AutoConfig.from_pretrained(self.model_id, revision=self.revision)
        except (OSError, ValueError) as exc:
            raise ModelError(
                f"cannot load model {self.model_id!r}: {reason(exc)}. Give a local folder (save_pretrained "
                "layout) or a hub id reachable from this machine."
            ) from exc
        self.family = family_of(str(self.config.model_type))
        self.model: Any = None
        self.processor: Any = None
        self._label_ids: dict[str, list[int]] = {}

    def _pick_dtype(self, name: str) -> Any:
        torch = self._torch
        if name != "auto":
            if name not in ("float32", "bfloat16", "float16"):
                raise ModelSpecError(f"--model-arg dtype must be float32, bfloat16 or float16, not {name!r}")
            return getattr(torch, name)
        if self.device == "cpu":
            return torch.float32
        return (
            torch.bfloat16 if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else torch.float16
        )

    # Properties the engine reads --------------------------------------------------------------

    @property
    def mode(self) -> str:  # type: ignore[override]
        """``generate`` or ``choice-logprob``."""
        return self._mode

    @property
    def box_format(self) -> Literal["auto", "qwen", "paligemma", "json"]:
        """Qwen2-VL writes ``<|box_start|>`` boxes, PaliGemma ``<loc>`` tokens, others JSON."""
        if self.family == "qwen2-vl":
            return "qwen"
        if self.family == "paligemma":
            return "paligemma"
        return "json"

    # Loading ----------------------------------------------------------------------------------

    def _ensure_loaded(self) -> None:
        if self.model is not None:
            return
        from transformers import AutoModelForImageTextToText

        keep_freed_memory(self.device)
        try:
            model: Any = AutoModelForImageTextToText.from_pretrained(
                self.model_id, dtype=self.dtype, revision=self.revision
            )
        except (OSError, ValueError) as exc:
            raise ModelError(
                f"cannot load {self.model_id!r} as an image-text-to-text model: {reason(exc)}. hf: needs a "
                "generative VLM (Qwen2-VL, LLaVA, PaliGemma, Idefics3…); use clip: for CLIP-style models."
            ) from exc
        self.model = model.to(self.device).eval()
        self.processor = load_processor(self.model_id)
        tok = self.processor.tokenizer
        tok.padding_side = "left"  # generation continues from the last position of every row
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token

    @property
    def tokenizer(self) -> Any:
        """The processor's tokenizer (loads the model on first use)."""
        self._ensure_loaded()
        return self.processor.tokenizer

    # Planning ---------------------------------------------------------------------------------

    def plan(self, items: Sequence[Item]) -> list[Item]:
        """Order the run: items about the same image together, groups by prompt length.

        Groups are keyed by the item's kind and images; groups are sorted by image count then by
        their longest prompt (so a batch holds prompts of similar length and pads little), and
        items inside a group by prompt length. Only the order of work changes; every item is kept.
        """
        groups: dict[tuple[str, tuple[str, ...]], list[tuple[int, Item]]] = {}
        for it in items:
            keys = () if self.options.no_image else tuple(ref.key for ref in it.images)
            group = (it.kind, keys) if keys else (it.kind, ("", it.id))
            groups.setdefault(group, []).append((self._prompt_chars(it), it))
        ordered = sorted(
            groups.items(), key=lambda g: (g[0][0], len(g[0][1]), max(n for n, _ in g[1]), g[0][1])
        )
        return [it for _, members in ordered for _, it in sorted(members, key=lambda m: m[0])]

    def _prompt_chars(self, item: Item) -> int:
        if item.kind == "detection":
            return len(item.question)
        try:
            return len(render_prompt(item, self.options.protocol, no_image=True).text)
        except ModelSpecError:
            return len(item.question)

    # Prediction -------------------------------------------------------------------------------

    def answer(self, requests: Sequence[Request]) -> list[Response]:
        """Answer a batch (generate or choice-logprob for MCQ items, boxes for detection items).

        Each request's text, system message, images, option labels and answer prefix are used as
        rendered; ``--model-arg answer_prefix`` replaces the protocol's prefix in choice-logprob mode.
        """
        self._ensure_loaded()
        items = [r.item for r in requests]
        out: list[Response | None] = [None] * len(items)
        jobs: list[_Job] = []
        for i, req in enumerate(requests):
            if req.kind == "detection":
                jobs.append(_Job(i, [_Turn("user", req.text, req.images)], detection=True))
                continue
            turns = [_Turn("system", req.system)] if req.system else []
            turns.append(_Turn("user", req.text, req.images))
            prefix = ""
            if self.mode == "choice-logprob":
                prefix = self.answer_prefix if self.answer_prefix is not None else req.answer_prefix
            jobs.append(_Job(i, turns, prefix=prefix, option_labels=req.option_labels, protocol=req.protocol))
        logprob = [j for j in jobs if not j.detection and self.mode == "choice-logprob"]
        text_jobs = [j for j in jobs if j.detection or self.mode == "generate"]
        for job, resp in self._run(logprob, items, kind="logprob"):
            out[job.index] = resp
        # Constrained replies are one token: never batched with detection prompts, which are not.
        split = self.options.answer_format == "constrained"
        for part in (
            ([j for j in text_jobs if not j.detection], [j for j in text_jobs if j.detection])
            if split
            else (text_jobs,)
        ):
            for job, resp in self._run(part, items, kind="generate"):
                out[job.index] = resp
        self._segment_fallback(items, jobs, out)
        answers: list[Response] = []
        for job in jobs:
            answer = out[job.index]
            assert answer is not None  # every job is answered by _run
            if answer.status == "ok":
                answer.extra["mode"] = "generate" if job.detection else self.mode
                if not job.detection:
                    answer.extra["protocol"] = job.protocol
            answers.append(answer)
        return answers

    def _images(self, item: Item) -> tuple[ImageRef, ...]:
        return () if self.options.no_image else item.images

    def _detection_text(self, item: Item, style: DetectionStyle | None = None) -> str:
        fmt = self.box_format
        return render_detection_prompt(item, style or ("json" if fmt == "auto" else fmt))

    def _segment_fallback(self, items: Sequence[Item], jobs: list[_Job], out: list[Response | None]) -> None:
        """PaliGemma: ask ``segment`` where ``detect`` gave no box (its documented fallback)."""
        if self.family != "paligemma":
            return
        retry: list[_Job] = []
        for job in jobs:
            resp = out[job.index]
            if not job.detection or resp is None or resp.status != "ok" or not items[job.index].images:
                continue
            try:
                w, h = items[job.index].images[0].size()
            except ImageLoadError:
                continue
            if not parse_boxes(resp.text, w, h, fmt="paligemma").boxes:
                it = items[job.index]
                turn = _Turn("user", self._detection_text(it, "paligemma-segment"), self._images(it))
                retry.append(_Job(job.index, [turn], detection=True))
        for job, resp in self._run(retry, items, kind="generate"):
            first = out[job.index]
            resp.extra["detect_response"] = first.text if first is not None else None
            out[job.index] = resp

    def chat(
        self,
        conversations: Sequence[Sequence[ChatMessage]],
        item_ids: Sequence[str],
        *,
        max_new_tokens: int | None = None,
    ) -> list[Response]:
        """Continue each conversation with one greedy assistant turn (chain-of-thought strategies)."""
        self._ensure_loaded()
        jobs = [
            _Job(k, [_Turn(m.role, m.text, () if self.options.no_image else m.images) for m in conv])
            for k, conv in enumerate(conversations)
        ]
        stub = [Item(id=i, benchmark="", split="", task="", question="") for i in item_ids]
        out: list[Response | None] = [None] * len(jobs)
        for job, resp in self._run(jobs, stub, kind="generate", max_new_tokens=max_new_tokens):
            out[job.index] = resp
        return [r for r in out if r is not None]

    # The model calls --------------------------------------------------------------------------

    def _run(
        self, jobs: list[_Job], items: Sequence[Item], *, kind: str, max_new_tokens: int | None = None
    ) -> list[tuple[_Job, Response]]:
        """Run jobs in forward passes of equal image count; each unique image is decoded once."""
        results: list[tuple[_Job, Response]] = []
        pixels: dict[str, Any] = {}
        errors: dict[str, str] = {}
        by_count: dict[tuple[int, str], list[_Job]] = {}
        for job in jobs:
            refs = [r for t in job.turns for r in t.images]
            for ref in refs:
                if ref.key not in pixels and ref.key not in errors:
                    try:
                        pixels[ref.key] = ref.load()
                    except ImageLoadError as exc:
                        errors[ref.key] = str(exc)
            bad = [errors[r.key] for r in refs if r.key in errors]
            if bad:
                results.append((job, Response(items[job.index].id, status="error", error=bad[0])))
            else:
                by_count.setdefault((len(refs), job.prefix), []).append(job)
        for (n_images, prefix), group in sorted(by_count.items()):
            texts = [self._render(job) for job in group]
            images = (
                [[pixels[r.key] for t in job.turns for r in t.images] for job in group] if n_images else None
            )
            if kind == "logprob":
                answers = self._logprob_group(group, texts, images, prefix)
            else:
                inputs = self._encode(texts, images, prefix)
                budget = max_new_tokens or (
                    self.detect_max_new_tokens if group[0].detection else self.max_new_tokens
                )
                if self.max_new_tokens_cap is not None:
                    budget = min(budget, self.max_new_tokens_cap)
                if self._constrained(group):
                    answers = self._constrained_answers(group, inputs)
                else:
                    answers = self._sampled(inputs, budget, group[0].detection)
            for job, resp in zip(group, answers, strict=True):
                resp.item_id = items[job.index].id
                resp.extra["n_images"] = n_images
                if job.detection:
                    resp.extra["detection_prompt"] = job.turns[-1].text
                if prefix:
                    resp.extra["answer_prefix"] = prefix
                results.append((job, resp))
        pixels.clear()  # decoded images are not kept past their batch
        return results

    def _render(self, job: _Job) -> str:
        """The prompt text of a job in the model's format, ending where the answer starts."""
        proc = self.processor
        template = getattr(proc, "chat_template", None)
        if self.family == "paligemma" or not template:
            # PaliGemma's plain format: "<image>"×n, then the processor adds <bos> and the final
            # "\n" (the answer prefix goes after it, see _encode); earlier turns (strategies) are
            # joined with newlines.
            n_images = sum(len(t.images) for t in job.turns)
            token = getattr(proc, "image_token", "<image>")
            return token * n_images + "\n".join(t.text for t in job.turns)
        messages = [self._message(t) for t in job.turns]
        try:
            text: str = proc.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        except Exception as exc:  # jinja raises its own errors; some templates refuse system turns
            if not any(t.role == "system" for t in job.turns):
                raise ModelError(f"the chat template of {self.model_id!r} failed: {exc}") from exc
            merged = _merge_system(job.turns)
            text = proc.apply_chat_template(
                [self._message(t) for t in merged], add_generation_prompt=True, tokenize=False
            )
        return text + job.prefix

    @staticmethod
    def _message(turn: _Turn) -> dict[str, Any]:
        content: list[dict[str, Any]] = [{"type": "image"} for _ in turn.images]
        content.append({"type": "text", "text": turn.text})
        return {"role": turn.role, "content": content}

    def _encode(self, texts: list[str], images: list[list[Any]] | None, prefix: str = "") -> dict[str, Any]:
        torch = self._torch
        proc = self.processor
        tok = proc.tokenizer
        if images is None and self.family == "paligemma":
            # PaliGemma's processor insists on images; without them its format is <bos> text "\n".
            enc = tok([(tok.bos_token or "") + t + "\n" for t in texts], padding=True, return_tensors="pt",
                      add_special_tokens=False)  # fmt: skip
            enc["token_type_ids"] = self._torch.zeros_like(enc["input_ids"])
        else:
            # As transformers' own apply_chat_template(tokenize=True): no second <bos> when the
            # template already starts with one.
            add_special = not (tok.bos_token and texts[0].startswith(tok.bos_token))
            kwargs: dict[str, Any] = {"text": texts, "padding": True, "return_tensors": "pt"}
            if images is not None:
                kwargs["images"] = images
            enc = proc(add_special_tokens=add_special, **kwargs)
        enc.pop("labels", None)  # PaliGemma's processor adds training labels
        if prefix and self.family == "paligemma":
            # The processor ends PaliGemma prompts with "\n"; the answer prefix follows it, as the
            # first tokens of the (causal, token type 1) answer.
            ids = torch.tensor(
                [tok.encode(prefix, add_special_tokens=False)] * len(texts), dtype=enc["input_ids"].dtype
            )
            enc["input_ids"] = torch.cat([enc["input_ids"], ids], dim=1)
            enc["attention_mask"] = torch.cat([enc["attention_mask"], torch.ones_like(ids)], dim=1)
            if "token_type_ids" in enc:
                enc["token_type_ids"] = torch.cat([enc["token_type_ids"], torch.ones_like(ids)], dim=1)
        out = {}
        for k, v in enc.items():
            if hasattr(v, "to"):
                v = v.to(self.device)
                if v.is_floating_point():
                    v = v.to(self.dtype)
            out[k] = v
        return out

    def _generation_config(self, max_new_tokens: int, *, logits: bool = False) -> Any:
        from transformers import GenerationConfig

        tok = self.processor.tokenizer
        eos = getattr(self.model.generation_config, "eos_token_id", None)
        if eos is None:
            eos = tok.eos_token_id
        temperature = float(self.options.gen_args.get("temperature", 0.0)) if not logits else 0.0
        sample = {"temperature": temperature, "top_p": self.options.gen_args.get("top_p", 1.0)}
        return GenerationConfig(
            max_new_tokens=max_new_tokens,
            do_sample=temperature > 0,
            **(sample if temperature > 0 else {}),
            num_beams=1,
            pad_token_id=tok.pad_token_id,
            eos_token_id=eos,
            output_logits=logits,
            return_dict_in_generate=logits,
        )

    def _sampled(self, inputs: dict[str, Any], budget: int, keep_special: bool) -> list[Response]:
        """Greedy replies; under ``--gen-arg`` one pass per sample, seeded ``seed + i`` first."""

        def one_pass() -> list[Response]:
            replies = self._generate(inputs, budget, keep_special)
            return [Response("", text=t, finish_reason=why) for t, why in replies]

        if not self.options.gen_args:
            return one_pass()
        seeds, passes = sample_seeds(self.options.seed, self.options.gen_args), []
        for seed in seeds:
            self._torch.manual_seed(seed)  # the batch draws from it: same seed and batch, same replies
            passes.append(one_pass())
        return [gather(list(replies), seeds) for replies in zip(*passes, strict=True)]

    def _generate(
        self, inputs: dict[str, Any], max_new_tokens: int, keep_special: bool
    ) -> list[tuple[str, FinishReason]]:
        """Greedy replies with why each stopped: ``length`` when it used the whole budget unfinished."""
        torch = self._torch
        config = self._generation_config(max_new_tokens)
        with torch.inference_mode():
            seqs = self.model.generate(**inputs, generation_config=config)
        new = seqs[:, inputs["input_ids"].shape[1] :]
        reasons = self._finish_reasons(new, config, max_new_tokens)
        tok = self.processor.tokenizer
        if not keep_special:
            texts = [str(t) for t in tok.batch_decode(new, skip_special_tokens=True)]
            return list(zip(texts, reasons, strict=True))
        # Detection: box markers such as <|box_start|> are special tokens and must survive decoding;
        # only padding and end-of-sequence markers are removed.
        drop = {t for t in (tok.pad_token, tok.eos_token, tok.bos_token) if t}
        raw = tok.batch_decode(new, skip_special_tokens=False)
        pattern = re.compile("|".join(re.escape(t) for t in drop)) if drop else None
        texts = [pattern.sub("", t) if pattern else str(t) for t in raw]
        return list(zip(texts, reasons, strict=True))

    def can_constrain(self) -> bool:
        """In ``--mode generate``: one generated token restricted to the options' label tokens."""
        return self.mode == "generate"

    def can_sample(self) -> bool:
        """In ``--mode generate`` (choice-logprob reads scores, there is nothing to sample)."""
        return self.mode == "generate"

    def _constrained(self, group: list[_Job]) -> bool:
        """Whether this group's replies are restricted to a label (constrained multiple-choice jobs)."""
        return self.options.answer_format == "constrained" and all(
            j.option_labels and not j.detection for j in group
        )

    def _constrained_answers(self, group: list[_Job], inputs: dict[str, Any]) -> list[Response]:
        """One greedy token per job, every token but its options' label spellings masked out.

        The reply is the label itself, complete by construction (``stop``); a label with no
        single-token spelling in this tokenizer cannot be enforced and is that item's error.
        """
        from transformers import LogitsProcessor, LogitsProcessorList

        allowed = [sorted({t for lb in job.option_labels for t in self.label_token_ids(lb)}) for job in group]
        missing = [i for i, ids in enumerate(allowed) if not ids]
        torch = self._torch

        class _OnlyLabels(LogitsProcessor):
            def __call__(self, input_ids: Any, scores: Any) -> Any:
                mask = torch.full_like(scores, float("-inf"))
                for row, ids in enumerate(allowed):
                    mask[row, ids or list(range(scores.shape[1]))] = 0.0
                return scores + mask

        config = self._generation_config(1)
        with torch.inference_mode():
            seqs = self.model.generate(
                **inputs, generation_config=config, logits_processor=LogitsProcessorList([_OnlyLabels()])
            )
        texts = self.processor.tokenizer.batch_decode(
            seqs[:, inputs["input_ids"].shape[1] :], skip_special_tokens=True
        )
        error = (
            "option labels are not single tokens for this tokenizer; "
            "--answer-format constrained cannot enforce them (use --answer-format free)"
        )
        return [
            Response("", status="error", error=error)
            if i in missing
            else Response(
                "", text=str(t).strip(), finish_reason="stop", extra={"answer_format": "constrained"}
            )
            for i, t in enumerate(texts)
        ]

    @staticmethod
    def _finish_reasons(new: Any, config: Any, max_new_tokens: int) -> list[FinishReason]:
        """Why each generated row stopped.

        ``stop`` for a row that holds an end-of-sequence (or the padding after one), else
        ``length`` when the rows used all ``max_new_tokens`` (the limit cut it).
        """
        eos = config.eos_token_id
        ends = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        if config.pad_token_id is not None:
            ends.add(config.pad_token_id)
        full = new.shape[1] >= max_new_tokens
        reasons: list[FinishReason] = []
        for row in new.tolist():
            reasons.append("length" if full and not ends.intersection(row) else "stop")
        return reasons

    def label_token_ids(self, label: str) -> list[int]:
        """Every single-token spelling of an option label (``"A"``, ``" A"``, ``"▁A"``, ``"ĠA"``), as ids."""
        if label in self._label_ids:
            return self._label_ids[label]
        tok = self.tokenizer
        candidates: list[int] = []
        for variant in (label, " " + label):
            enc = tok.encode(variant, add_special_tokens=False)
            if len(enc) == 1:
                candidates.append(int(enc[0]))
        vocab = tok.get_vocab()
        # The bare piece (mid-word, e.g. after "(") and the SentencePiece / byte-level word-initial forms.
        candidates += [vocab[t] for t in (label, "▁" + label, "Ġ" + label) if t in vocab]
        # A candidate must read back as the label: an unknown-token id, for one, does not.
        ids = [
            t for t in dict.fromkeys(candidates) if t != tok.unk_token_id and tok.decode([t]).strip() == label
        ]
        self._label_ids[label] = ids
        return ids

    def _logprob_group(
        self, jobs: list[_Job], texts: list[str], images: list[list[Any]] | None, prefix: str
    ) -> list[Response]:
        """Label scores for jobs of equal image count: shared-prefix passes where they share images."""
        answers: dict[int, Response] = {}
        rest: list[int] = []
        if images is not None and self.share_prefix and self.family in SHAREABLE_FAMILIES:
            by_images: dict[tuple[str, ...], list[int]] = {}
            for k, job in enumerate(jobs):
                by_images.setdefault(tuple(r.key for t in job.turns for r in t.images), []).append(k)
            tok = self.processor.tokenizer
            for members in by_images.values():
                got = None
                if len(members) > 1:
                    got = shared_prefix_logprobs(
                        self.model, self.processor, [texts[k] for k in members], images[members[0]],
                        family=self.family, device=self.device, dtype=self.dtype,
                        add_special_tokens=not (tok.bos_token and texts[0].startswith(tok.bos_token)),
                    )  # fmt: skip
                if got is None:
                    rest.extend(members)
                    continue
                logp, n_prefix = got
                scored = self._scores_from_logprobs([jobs[k] for k in members], logp)
                for k, resp in zip(members, scored, strict=True):
                    resp.extra["shared_prefix_tokens"] = n_prefix
                    answers[k] = resp
        else:
            rest = list(range(len(jobs)))
        if rest:
            inputs = self._encode(
                [texts[k] for k in rest], [images[k] for k in rest] if images is not None else None, prefix
            )
            for k, resp in zip(rest, self._label_scores([jobs[k] for k in rest], inputs), strict=True):
                answers[k] = resp
        return [answers[k] for k in range(len(jobs))]

    def _label_scores(self, jobs: list[_Job], inputs: dict[str, Any]) -> list[Response]:
        """One forward pass (``generate`` with one new token, which handles left padding per family)."""
        torch = self._torch
        with torch.inference_mode():
            out = self.model.generate(**inputs, generation_config=self._generation_config(1, logits=True))
        return self._scores_from_logprobs(jobs, torch.log_softmax(out.logits[0].float(), dim=-1).cpu())

    def _scores_from_logprobs(self, jobs: list[_Job], logp: Any) -> list[Response]:
        """Option scores from next-token log-probabilities (one row per job)."""
        responses = []
        for row, job in zip(logp, jobs, strict=True):
            label_ids = [self.label_token_ids(lb) for lb in job.option_labels]
            missing = [lb for lb, ids in zip(job.option_labels, label_ids, strict=True) if not ids]
            if missing:
                responses.append(
                    Response("", status="error", error=(
                        f"option label(s) {', '.join(missing)} are not single tokens for this tokenizer; "
                        "choice-logprob cannot score them — use --mode generate"
                    ))
                )  # fmt: skip
                continue
            best = [max(float(row[i]) for i in ids) for ids in label_ids]
            top = max(best)
            weights = [math.exp(b - top) for b in best]
            total = sum(weights)
            responses.append(
                Response(
                    "",
                    scores=[w / total for w in weights],
                    extra={
                        "label_logprobs": [round(b, 6) for b in best],
                        "label_mass": round(sum(math.exp(b) for b in best), 6),
                    },
                )
            )
        return responses

    # Provenance -------------------------------------------------------------------------------

    def identity(self) -> dict[str, Any]:
        """Spec, mode, model class, family, revision or weight hash, dtype, device, decoding settings."""
        local = Path(self.model_id).is_dir()
        return {
            "spec": self.spec,
            "mode": self.mode,
            "model_class": (self.config.architectures or [type(self.config).__name__])[0],
            "family": self.family,
            "revision": None if local else (self.revision or getattr(self.config, "_commit_hash", None)),
            "weights_sha256": weights_digest(Path(self.model_id)) if local else None,
            "dtype": str(self.dtype).removeprefix("torch."),
            "device": self.device,
            "max_new_tokens": self.max_new_tokens,
            "detect_max_new_tokens": self.detect_max_new_tokens,
            "max_new_tokens_cap": self.max_new_tokens_cap,
            "share_prefix": self.share_prefix,
            "answer_prefix": self.answer_prefix,
            **({"answer_format": "constrained"} if self.options.answer_format == "constrained" else {}),
            **({"gen_args": dict(self.options.gen_args)} if self.options.gen_args else {}),
        }

    def close(self) -> None:
        """Drop the model (frees GPU memory; on a CPU, gives the heap's free memory back)."""
        self.model = None
        self.processor = None
        release_freed_memory()


def _merge_system(turns: Sequence[_Turn]) -> list[_Turn]:
    """Fold system turns into the first user turn, for chat templates without a system role."""
    system = "\n".join(t.text for t in turns if t.role == "system")
    rest = [t for t in turns if t.role != "system"]
    if rest and system:
        rest[0] = _Turn(rest[0].role, f"{system}\n\n{rest[0].text}", rest[0].images)
    return rest
