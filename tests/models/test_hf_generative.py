"""Local generative VLMs (``hf:``) on tiny random-weight models of each family, built from configs.

Every test goes through the real code path: ``save_pretrained`` folder → ``hf:<folder>`` →
AutoModelForImageTextToText + the family's processor and chat template.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from helpers import check_keeps_freed_memory
from scopebench.engine import RunConfig, run_benchmark
from scopebench.errors import ModelSpecError
from scopebench.items import ImageRef, Item
from scopebench.models import ModelOptions, load_model
from scopebench.protocols import render_prompt
from scopebench.store import load_run

pytest.importorskip("transformers")

FAMILIES = ("qwen2-vl", "qwen2.5-vl", "llava", "llava-next", "paligemma", "idefics3", "smolvlm")
# The prompt-format family each model is recorded under.
PROMPT_FAMILY = {"llava-next": "llava", "smolvlm": "idefics3"}


class _Models(dict[str, Path]):
    def __missing__(self, family: str) -> Path:
        pytest.skip(f"{family}: transformers' processor needs num2words (pip install 'scopebench[hf]')")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    import importlib.util

    from scopebench.testing.tiny import build_tiny_generative

    root = tmp_path_factory.mktemp("tiny-gen")
    models = _Models()
    for f in FAMILIES:
        if f == "smolvlm" and importlib.util.find_spec("num2words") is None:
            continue
        models[f] = build_tiny_generative(root / f, f, seed=0)  # type: ignore[arg-type]
    return models


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Six questions about two images (three each, prompts of different lengths) + one 3-image item."""
    root = tmp_path_factory.mktemp("gen-bench")
    rng = np.random.default_rng(0)
    for k, (h, w) in enumerate([(56, 56), (84, 56), (30, 30)]):  # Qwen2-VL: 4, 4 and 1 image tokens
        Image.fromarray(rng.integers(0, 255, (h, w, 3), dtype=np.uint8)).save(root / f"img{k}.png")
    rows: list[dict[str, Any]] = [
        {"id": f"q{i}", "question": "Which modality is shown" + " in this micrograph" * i + "?",
         "choices": ["light", "fluorescence", "electron"][: 2 + i % 2], "answer": i % 2,
         "image": f"img{i % 2}.png", "task": "modality"}
        for i in range(6)
    ]  # fmt: skip
    rows.append({"id": "multi", "question": "Which panel is brightest?", "choices": ["first", "second", "third"],
                 "answer": 2, "images": ["img0.png", "img1.png", "img2.png"], "task": "compare"})  # fmt: skip
    (root / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root / "data.jsonl"


def _items(bench: Path) -> list[Item]:
    from scopebench.benchmarks import get_benchmark

    return list(get_benchmark("local").load(bench).items)


class _Spy:
    """Wraps ``model.generate`` and keeps the keyword arguments of every call."""

    def __init__(self, backend: Any) -> None:
        backend._ensure_loaded()
        self.inner = backend.model.generate
        self.calls: list[dict[str, Any]] = []
        backend.model.generate = self

    def __call__(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        return self.inner(**kwargs)


# End to end ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["generate", "choice-logprob"])
@pytest.mark.parametrize("family", FAMILIES)
def test_run_end_to_end(family: str, mode: str, tiny: dict[str, Path], bench: Path, tmp_path: Path) -> None:
    cfg = RunConfig(benchmark="local", data=str(bench), model=f"hf:{tiny[family]}", mode=mode, batch_size=3,
                    model_args={"max_new_tokens": 3})  # fmt: skip
    res = run_benchmark(cfg, tmp_path / "run")
    assert res.n_items == 7 and res.n_new == 7
    recs = {r.item_id: r for r in load_run(tmp_path / "run").records}
    assert len(recs) == 7
    for rec in recs.values():
        assert rec.extra["mode"] == mode and rec.extra["protocol"] == "default"
        if mode == "generate":
            assert isinstance(rec.response, str) and rec.scores is None
            assert rec.status in ("ok", "unparsed")  # random weights write random text
            # Why it stopped is recorded; a reply that the 3-token budget cut says so.
            assert rec.finish_reason in ("stop", "length") and rec.truncated == (
                rec.finish_reason == "length"
            )
        else:
            assert rec.status == "ok" and rec.response is None and rec.scores is not None
            n = 3 if rec.item_id == "local/multi" else (2 + int(rec.item_id[-1]) % 2)
            assert len(rec.scores) == n and sum(rec.scores) == pytest.approx(1.0, abs=1e-9)
            assert rec.choice == max(range(n), key=lambda k: rec.scores[k])  # type: ignore[index]
    assert recs["local/multi"].extra["n_images"] == 3 and recs["local/q0"].extra["n_images"] == 1
    run_json = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run_json["mode"] == mode and run_json["protocol"] == "default"
    ident = run_json["model_identity"]
    assert ident["family"] == PROMPT_FAMILY.get(family, family)
    assert ident["mode"] == mode and ident["dtype"] == _default_dtype()
    assert len(ident["weights_sha256"]) == 16


def _default_dtype() -> str:
    """The dtype ``--device auto`` loads with: float32 on a CPU; bf16 (fp16 without bf16) on a GPU."""
    import torch

    if not torch.cuda.is_available():
        return "float32"
    return "bfloat16" if torch.cuda.is_bf16_supported() else "float16"


def test_bare_folder_resolves_to_hf_and_resume_loads_no_weights(
    tiny: dict[str, Path], bench: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scopebench.models.hf_generative import HFGenerativeBackend

    cfg = RunConfig(benchmark="local", data=str(bench), model=str(tiny["qwen2-vl"]), mode="choice-logprob")
    run_benchmark(cfg, tmp_path / "run")
    assert json.loads((tmp_path / "run" / "run.json").read_text())["model_identity"]["spec"].startswith("hf:")

    def refuse(self: Any) -> None:
        raise AssertionError("weights loaded for a finished run")

    monkeypatch.setattr(HFGenerativeBackend, "_ensure_loaded", refuse)
    again = run_benchmark(cfg, tmp_path / "run")
    assert again.n_new == 0 and again.metrics["overall"]["n"] == 7


def test_unknown_mode_is_refused(tiny: dict[str, Path]) -> None:
    with pytest.raises(ModelSpecError, match="generate or choice-logprob"):
        load_model(f"hf:{tiny['llava']}", ModelOptions(mode="contrastive"))


# What reaches the model ------------------------------------------------------------------------------


@pytest.mark.parametrize("family", FAMILIES)
def test_no_image_sends_no_pixels(
    family: str, tiny: dict[str, Path], bench: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    items = _items(bench)
    with_images = load_model(f"hf:{tiny[family]}", ModelOptions(mode="choice-logprob"))
    spy = _Spy(with_images)
    with_images.predict(items[:2])
    assert any(k.startswith("pixel_values") for k in spy.calls[0])  # the control: images do reach it

    loads: list[str] = []
    original = ImageRef.load
    monkeypatch.setattr(ImageRef, "load", lambda self: loads.append(self.key) or original(self))
    backend: Any = load_model(f"hf:{tiny[family]}", ModelOptions(mode="choice-logprob", no_image=True))
    spy = _Spy(backend)
    out = backend.predict(items)
    assert [r.status for r in out] == ["ok"] * 7 and [r.extra["n_images"] for r in out] == [0] * 7
    image_token = backend.model.config.image_token_id
    for call in spy.calls:
        assert not any(k.startswith("pixel") or k.startswith("image_") for k in call)
        assert image_token not in call["input_ids"].tolist()[0]
    assert loads == []  # not even decoded


def test_each_image_decoded_once_per_batch(
    tiny: dict[str, Path], bench: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loads: list[str] = []
    original = ImageRef.load
    monkeypatch.setattr(ImageRef, "load", lambda self: loads.append(self.key) or original(self))
    backend = load_model(f"hf:{tiny['qwen2-vl']}", ModelOptions(mode="choice-logprob"))
    backend.predict(_items(bench))  # 7 items, 9 image slots, 3 unique images
    assert sorted(loads) == ["img0.png", "img1.png", "img2.png"]


@pytest.mark.parametrize("mode", ["generate", "choice-logprob"])
def test_unreadable_image_fails_only_its_items(
    mode: str, tiny: dict[str, Path], bench: Path, tmp_path: Path
) -> None:
    from dataclasses import replace

    bad = tmp_path / "bad.png"
    bad.write_bytes(b"not a png")
    items = _items(bench)
    items[1] = replace(items[1], images=(ImageRef(key="bad.png", path=bad),))
    backend = load_model(f"hf:{tiny['qwen2-vl']}", ModelOptions(mode=mode, extra={"max_new_tokens": 2}))
    out = backend.predict(items)
    assert [r.item_id for r in out] == [it.id for it in items]
    assert [r.status for r in out] == ["ok", "error", "ok", "ok", "ok", "ok", "ok"]
    assert "cannot decode image" in (out[1].error or "")


def test_plan_groups_shared_images_and_sorts_by_length(tiny: dict[str, Path], bench: Path) -> None:
    items = _items(bench)
    backend = load_model(f"hf:{tiny['llava']}", ModelOptions(mode="choice-logprob"))
    order = backend.plan(items)
    assert sorted(it.id for it in order) == sorted(it.id for it in items)
    # img0 questions have prompt lengths q0 < q2 < q4; img1's q1 < q3 < q5, each longer than its pair.
    assert [it.id.removeprefix("local/") for it in order] == ["q0", "q2", "q4", "q1", "q3", "q5", "multi"]
    assert backend.model is None  # planning needs no weights


@pytest.mark.parametrize("family", FAMILIES)
def test_logprob_matches_a_manual_forward_pass(family: str, tiny: dict[str, Path], bench: Path) -> None:
    import torch
    from transformers import AutoModelForImageTextToText

    from scopebench.models.hf_generative import load_processor

    item = _items(bench)[2]  # two options, image img0.png
    # float32 on the CPU on both sides: on a GPU "auto" would load bf16 and differ by rounding.
    backend = load_model(f"hf:{tiny[family]}", ModelOptions(mode="choice-logprob", device="cpu"))
    got = backend.predict([item])[0]
    model = AutoModelForImageTextToText.from_pretrained(tiny[family]).eval()
    proc = load_processor(str(tiny[family]))
    text = render_prompt(item).text
    if family == "paligemma":
        prompt = "<image>" + text
    else:
        messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": text}]}]
        prompt = proc.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    inputs = proc(
        text=[prompt], images=[[Image.open(item.images[0].path).convert("RGB")]], return_tensors="pt"
    )
    inputs.pop("labels", None)
    with torch.no_grad():
        logp = torch.log_softmax(model(**inputs).logits[0, -1].float(), -1)
    vocab = proc.tokenizer.get_vocab()
    best = [max(float(logp[vocab[v]]) for v in (label, "Ġ" + label)) for label in ("A", "B")]
    expected = [math.exp(b) / sum(math.exp(x) for x in best) for b in best]
    assert got.scores == pytest.approx(expected, abs=1e-5)
    assert got.extra["label_logprobs"] == pytest.approx(best, abs=1e-4)


@pytest.mark.parametrize("family", FAMILIES)
def test_batched_logprob_equals_one_at_a_time(family: str, tiny: dict[str, Path], bench: Path) -> None:
    items = _items(bench)  # prompts of different lengths and image sizes: rows are left-padded
    backend = load_model(f"hf:{tiny[family]}", ModelOptions(mode="choice-logprob"))
    batched = backend.predict(items)
    plain = load_model(
        f"hf:{tiny[family]}", ModelOptions(mode="choice-logprob", extra={"share_prefix": "false"})
    )
    unshared = plain.predict(items)
    for it, b, u in zip(items, batched, unshared, strict=True):
        (single,) = backend.predict([it])
        assert b.item_id == it.id == u.item_id
        # Raw label log-probabilities: a random model's are flat, so compare them tightly (a position
        # off by the image's M-RoPE offset moves them by 1e-4; float rounding by 1e-6).
        assert b.extra["label_logprobs"] == pytest.approx(single.extra["label_logprobs"], abs=1e-5)
        assert u.extra["label_logprobs"] == pytest.approx(single.extra["label_logprobs"], abs=1e-5)
        assert b.scores == pytest.approx(single.scores, abs=1e-5)
        assert "shared_prefix_tokens" not in single.extra and "shared_prefix_tokens" not in u.extra
    # Questions about the same image share one pass over the image (not PaliGemma: its prompt is
    # attended bidirectionally, so the image tokens depend on the question).
    shared = [b.item_id for b in batched if "shared_prefix_tokens" in b.extra]
    assert shared == ([] if family == "paligemma" else [f"local/q{i}" for i in range(6)])
    if family == "qwen2-vl":  # template header + the image's 4 tokens + "Question: Which modality is shown"
        assert batched[0].extra["shared_prefix_tokens"] > 4


def test_label_spellings_best_variant_wins(tiny: dict[str, Path], bench: Path) -> None:
    import torch

    backend: Any = load_model(f"hf:{tiny['qwen2-vl']}", ModelOptions(mode="choice-logprob"))
    vocab = backend.tokenizer.get_vocab()
    assert backend.label_token_ids("A") == [vocab["A"], vocab["ĠA"]] and vocab["A"] != vocab["ĠA"]
    # A model that puts all its confidence on " B" (spelled with the space) chooses B.
    logits = torch.zeros(1, len(vocab) + 8)
    logits[0, vocab["ĠB"]] = 10.0

    class Out:
        pass

    out = Out()
    out.logits = (logits,)  # type: ignore[attr-defined]
    backend.model.generate = lambda **kw: out
    (resp,) = backend.predict([_items(bench)[1]])  # options A, B, C
    z = math.exp(10) + 2
    assert resp.scores == pytest.approx([1 / z, math.exp(10) / z, 1 / z], rel=1e-6)


def test_label_spellings_of_a_sentencepiece_vocabulary(tiny: dict[str, Path]) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<unk>": 0, "▁A": 1, "A": 2, "▁B": 3, "B": 4, "▁C": 5, "(": 6}
    sp = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    sp.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    sp.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    backend: Any = load_model(f"hf:{tiny['llava']}", ModelOptions(mode="choice-logprob"))
    backend._ensure_loaded()
    backend.processor.tokenizer = PreTrainedTokenizerFast(tokenizer_object=sp, unk_token="<unk>")
    # Word-initial "▁A" (after "ASSISTANT:") and mid-word "A" (after an answer prefix ending in "(").
    assert sorted(backend.label_token_ids("A")) == [1, 2]
    assert sorted(backend.label_token_ids("B")) == [3, 4]
    assert backend.label_token_ids("C") == [5] and backend.label_token_ids("D") == []


def test_microvqa_owner_numbers_prefix_and_unscorable_labels(tiny: dict[str, Path], bench: Path) -> None:
    img = _items(bench)[0].images
    four = Item(id="m/4", benchmark="microvqa", split="test", task="t", question="Which?",
                choices=("a", "b", "c", "d"), answer_index=0, images=img)  # fmt: skip
    ten = Item(id="m/10", benchmark="microvqa", split="test", task="t", question="Which?",
               choices=tuple("abcdefghij"), answer_index=0, images=img)  # fmt: skip
    backend = load_model(f"hf:{tiny['qwen2-vl']}", ModelOptions(mode="choice-logprob", protocol="owner"))
    backend.prepare([four, ten])
    # The request carries the labels and the owner's answer prefix (was mutable backend state).
    request = backend.render(four)
    assert request.labels == "numbers" and request.option_labels == ("1", "2", "3", "4")
    assert request.answer_prefix == "The answer is ("
    ok, bad = backend.predict([four, ten])
    assert ok.status == "ok" and len(ok.scores or []) == 4
    assert ok.extra["answer_prefix"] == "The answer is (" and ok.extra["protocol"] == "microvqa-owner"
    # "10" is two tokens ("1", "0") here: never scored by its first digit, reported instead.
    assert bad.status == "error" and "10 are not single tokens" in (bad.error or "")


# Strategies and detection ----------------------------------------------------------------------------


def test_strategy_runs_on_a_tiny_generative_model(tiny: dict[str, Path], bench: Path, tmp_path: Path) -> None:
    cfg = RunConfig(benchmark="local", data=str(bench), model=f"hf:{tiny['idefics3']}", strategy="ddcot",
                    limit=2, model_args={"max_new_tokens_cap": 2})  # fmt: skip
    run_benchmark(cfg, tmp_path / "run")
    recs = load_run(tmp_path / "run").records
    assert len(recs) == 2
    for rec in recs:
        roles = [m["role"] for m in rec.extra["messages"]]
        assert roles == ["user", "assistant"] * 3
        assert rec.extra["messages"][0]["images"] == 1
        assert rec.status in ("ok", "unparsed")
    assert json.loads((tmp_path / "run" / "run.json").read_text())["mode"] == "strategy:ddcot"


@pytest.mark.parametrize("family", ["qwen2-vl", "paligemma"])
def test_detection_items_use_the_family_prompt(family: str, tiny: dict[str, Path], tmp_path: Path) -> None:
    from helpers import FIXTURES

    data = FIXTURES / "local" / "items.jsonl"
    cfg = RunConfig(benchmark="local", data=str(data), model=f"hf:{tiny[family]}",
                    model_args={"max_new_tokens": 2, "detect_max_new_tokens": 1})  # fmt: skip
    run_benchmark(cfg, tmp_path / "run")
    recs = {r.item_id: r for r in load_run(tmp_path / "run").records}
    det = [r for r in recs.values() if r.kind == "detection"]
    assert len(det) == 1 and "boxes" in det[0].extra and det[0].status == "ok"
    if family == "qwen2-vl":
        assert det[0].extra["detection_prompt"] == "Detect nucleus"
    else:
        # One new token cannot hold PaliGemma's four <loc> tokens: detect finds no box → segment.
        assert det[0].extra["detection_prompt"] == "segment nucleus; nucleus"
        assert "detect_response" in det[0].extra
    # The fixture's item without an image is answered text-only; the one whose file is missing is not.
    statuses = sorted(r.status for r in recs.values())
    assert statuses.count("missing_image") == 1


def test_a_cpu_model_keeps_freed_memory_while_loaded(
    tiny: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    import scopebench.models.hf_generative as hf_generative

    assert check_keeps_freed_memory(monkeypatch, hf_generative, f"hf:{tiny['qwen2-vl']}").model is None
