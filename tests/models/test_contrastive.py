"""Contrastive zero-shot on tiny random CLIP/SigLIP models built from configs (real code path)."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from helpers import check_keeps_freed_memory
from scopebench.engine import RunConfig, run_benchmark
from scopebench.items import ImageRef, Item
from scopebench.models import ModelOptions, load_model
from scopebench.store import load_run

pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from scopebench.testing.tiny import build_tiny_clip

    root = tmp_path_factory.mktemp("tiny")
    return {
        "clip": build_tiny_clip(root / "clip", kind="clip", seed=0),
        "siglip": build_tiny_clip(root / "siglip", kind="siglip", seed=0),
    }


def _items(tmp: Path, n: int = 6) -> list[Item]:
    rng = np.random.default_rng(0)
    paths = []
    for k in range(2):  # two unique images, each asked about n/2 times
        p = tmp / f"img{k}.png"
        Image.fromarray(rng.integers(0, 255, (40, 50, 3), dtype=np.uint8)).save(p)
        paths.append(p)
    return [
        Item(
            id=f"t/{i}", benchmark="local", split="test", task="modality", question="Which modality?",
            choices=("light microscopy", "fluorescence microscopy", "electron microscopy"), answer_index=i % 3,
            images=(ImageRef(key=paths[i % 2].name, path=paths[i % 2]),),
            captions=tuple(f"A micrograph acquired through {c} {i % 2}." for c in ("light", "fluorescence", "electron")),
        )
        for i in range(n)
    ]  # fmt: skip


@pytest.mark.parametrize("kind", ["clip", "siglip"])
def test_scores_are_probabilities_and_batch_independent(
    kind: str, tiny_models: dict[str, Path], tmp_path: Path
) -> None:
    items = _items(tmp_path)
    one = load_model(f"clip:{tiny_models[kind]}", ModelOptions(batch_size=1))
    many = load_model(f"clip:{tiny_models[kind]}", ModelOptions(batch_size=8))
    a = [r for it in items for r in one.predict([it])]
    b = many.predict(items)
    for ra, rb in zip(a, b, strict=True):
        assert ra.scores is not None and rb.scores is not None
        assert sum(ra.scores) == pytest.approx(1.0, abs=1e-6) and len(ra.scores) == 3
        assert ra.scores == pytest.approx(rb.scores, abs=1e-5)
        assert len(ra.extra["logits"]) == 3


def test_each_unique_image_and_caption_encoded_once(tiny_models: dict[str, Path], tmp_path: Path) -> None:
    backend: Any = load_model(f"clip:{tiny_models['clip']}", ModelOptions(batch_size=4))
    calls = {"images": 0, "texts": 0}
    enc_i, enc_t = backend.encode_prepared, backend.encode_texts

    def count_i(pixels: Any) -> Any:  # the processor's pixel_values: one row per image
        calls["images"] += len(pixels)
        return enc_i(pixels)

    def count_t(texts: Any) -> Any:
        calls["texts"] += len(texts)
        return enc_t(texts)

    backend.encode_prepared, backend.encode_texts = count_i, count_t
    items = _items(tmp_path, n=12)
    backend.predict(items[:5])
    backend.predict(items[5:])  # a second batch reuses the run's cache
    assert calls == {"images": 2, "texts": 6}  # 2 unique images, 2 × 3 unique captions
    assert backend.cache_sizes() == (2, 6)


def test_matches_a_naive_per_item_loop(tiny_models: dict[str, Path], tmp_path: Path) -> None:
    import torch
    from transformers import AutoModel, AutoProcessor

    items = _items(tmp_path)
    model = AutoModel.from_pretrained(tiny_models["clip"]).eval()
    proc = AutoProcessor.from_pretrained(tiny_models["clip"])
    # CPU float32 on both sides (on a GPU the backend loads float16 and differs by rounding).
    backend = load_model(f"clip:{tiny_models['clip']}", ModelOptions(device="cpu"))
    got = backend.predict(items)
    for it, resp in zip(items, got, strict=True):
        with torch.no_grad():  # the reference implementations: everything re-encoded per question
            inp = proc(
                text=list(it.captions or ()), images=[it.images[0].load()], padding=True, return_tensors="pt"
            )
            probs = model(**inp).logits_per_image.softmax(-1)[0].tolist()
        # Same prediction and the same probabilities: the cached embeddings are float32 (float16
        # storage moved them by up to 5e-4, which this tolerance would catch).
        assert resp.scores is not None
        assert max(range(3), key=lambda i: resp.scores[i]) == max(range(3), key=lambda i: probs[i])
        assert resp.scores == pytest.approx(probs, abs=1e-5)


def test_broken_image_fails_only_its_item(tiny_models: dict[str, Path], tmp_path: Path) -> None:
    items = _items(tmp_path)
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"not a png")
    items[1] = Item(**{**{f: getattr(items[1], f) for f in items[1].__dataclass_fields__},
                       "images": (ImageRef(key="bad.png", path=bad),)})  # fmt: skip
    out = load_model(f"clip:{tiny_models['clip']}", ModelOptions()).predict(items)
    assert [r.status for r in out] == ["ok", "error", "ok", "ok", "ok", "ok"]
    assert "cannot decode image" in (out[1].error or "")


def test_end_to_end_run_records_scores_and_identity(tiny_models: dict[str, Path], tmp_path: Path) -> None:
    Image.new("RGB", (20, 20), (200, 30, 30)).save(tmp_path / "a.png")
    rows = [{"question": "What colour?", "choices": ["red", "green"], "answer": i % 2, "image": "a.png", "task": "t"}
            for i in range(4)]  # fmt: skip
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = RunConfig(benchmark="local", data=str(tmp_path / "data.jsonl"), model=f"clip:{tiny_models['clip']}")
    res = run_benchmark(cfg, tmp_path / "run")
    recs = load_run(tmp_path / "run").records
    assert len(recs) == 4 and all(r.scores is not None and len(r.scores) == 2 for r in recs)
    assert res.metrics["overall"]["n"] == 4
    ident = json.loads((tmp_path / "run" / "run.json").read_text())["model_identity"]
    assert ident["mode"] == "contrastive" and len(ident["weights_sha256"]) == 16
    assert ident["model_class"] == "CLIPModel"


def test_openclip_needs_its_extra() -> None:
    try:
        import open_clip  # noqa: F401
    except ImportError:
        from scopebench.errors import MissingDependencyError

        with pytest.raises(MissingDependencyError, match=r"scopebench\[openclip\]"):
            load_model("openclip:ViT-B-32")
    else:  # pragma: no cover - only where open_clip (and torchvision) are installed
        pytest.skip("open_clip is installed; the tiny open_clip test lives in test_openclip.py")


def test_devices_are_checked_before_any_work(tmp_path: Path) -> None:
    import torch

    from scopebench.errors import ModelSpecError
    from scopebench.models.contrastive import resolve_device

    assert resolve_device("cpu") == "cpu"
    assert resolve_device("auto") == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(ModelSpecError, match="unknown --device 'gpu0'"):
        resolve_device("gpu0")
    if not torch.cuda.is_available():
        with pytest.raises(ModelSpecError, match="no CUDA GPU"):
            resolve_device("cuda")
        # Through the runner: one clear error, and no empty run folder left behind.
        from scopebench.testing.tiny import build_tiny_clip

        model = build_tiny_clip(tmp_path / "clip")
        data = Path(__file__).parents[1] / "fixtures" / "local" / "items.jsonl"
        cfg = RunConfig(benchmark="local", data=str(data), model=f"clip:{model}", device="cuda")
        with pytest.raises(ModelSpecError, match="use --device cpu"):
            run_benchmark(cfg, tmp_path / "run")
        assert not (tmp_path / "run").exists()


def test_calls_are_cut_by_images_not_items(tiny_models: dict[str, Path], tmp_path: Path) -> None:
    """Catches calls cut every ``batch_size`` items: with 5 questions per image a call of 32 items
    encodes only 6-7 images, which a CPU encodes about half as fast per image as 32."""
    backend: Any = load_model(f"clip:{tiny_models['clip']}", ModelOptions(batch_size=3))
    images = [ImageRef(key=f"img{k}.png", path=tmp_path / f"img{k}.png") for k in range(7)]
    items = [
        Item(id=f"t/{k}-{q}", benchmark="local", split="test", task="t", question="Q?", choices=("a", "b"),
             answer_index=0, images=(images[k],))
        for k in range(7) for q in range(5)
    ] + [Item(id="t/no-image", benchmark="local", split="test", task="t", question="Q?", choices=("a", "b"))]  # fmt: skip
    requests = [backend.render(it) for it in items]
    batches = backend.batches(requests, 4)
    assert [r for b in batches for r in b] == requests  # every request once, in order
    assert [len({r.item.images[0].key for r in b if r.item.images}) for b in batches] == [3, 3, 1]
    assert [len(b) for b in batches] == [15, 15, 6]  # whole images per call, whatever size says


class _Traced:
    """A contrastive backend without a model: embeds an image as its mean colour, logs each step."""

    @staticmethod
    def make(events: list[tuple[str, tuple[str, ...]]], batch: int, n_batches: int) -> Any:
        from scopebench.models.contrastive import ContrastiveBackend

        class Backend(ContrastiveBackend):
            def prepare_images(self, images: Any) -> Any:
                keys = tuple(str(np.asarray(im).mean()) for im in images)
                events.append(("prepare", keys))
                done = sum(1 for e in events if e[0] == "prepare")
                if done <= self.n_batches:
                    self.prepared[done - 1].set()
                return [np.asarray(im, dtype=np.float64).mean(axis=(0, 1)) for im in images]

            def encode_prepared(self, prepared: Any) -> np.ndarray:
                n = sum(1 for e in events if e[0] == "encode")
                if n < self.n_batches - 1:  # the next batch is prepared while this one encodes
                    assert self.prepared[n + 1].wait(60), "the next batch was not prepared meanwhile"
                events.append(("encode", tuple(str(p.mean()) for p in prepared)))
                arr = np.stack(prepared)
                return arr / np.linalg.norm(arr, axis=1, keepdims=True)

            def encode_images(self, images: Any) -> np.ndarray:
                return self.encode_prepared(self.prepare_images(images))

            def encode_texts(self, texts: Any) -> np.ndarray:
                return np.eye(3)[["xyz".index(t) for t in texts]]

            def prepares_ahead(self) -> bool:
                return True  # whatever this machine's cores

        backend = Backend("clip:traced", ModelOptions(batch_size=batch))
        backend.n_batches = n_batches
        backend.prepared = [threading.Event() for _ in range(n_batches)]
        return backend


def test_next_batch_is_prepared_while_this_one_encodes_and_never_further_ahead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scopebench.models import contrastive

    monkeypatch.setattr(contrastive, "_cores", lambda: 1)  # each batch prepared in one part
    rng = np.random.default_rng(1)
    items = []
    for k in range(7):  # 7 images in batches of 2: 4 batches, one image broken
        p = tmp_path / f"i{k}.png"
        if k == 4:
            p.write_bytes(b"not a png")
        else:
            Image.fromarray(rng.integers(1, 255, (8, 8, 3), dtype=np.uint8)).save(p)
        items.append(Item(id=f"t/{k}", benchmark="local", split="test", task="t", question="q",
                          choices=("a", "b", "c"), answer_index=0, images=(ImageRef(key=p.name, path=p),),
                          captions=("x", "y", "z")))  # fmt: skip
    events: list[tuple[str, tuple[str, ...]]] = []
    backend = _Traced.make(events, batch=2, n_batches=4)
    got = backend.predict(items)
    kinds = [e[0] for e in events]
    # Never more than one prepared batch waiting (two alive with the one being encoded), and
    # every batch prepared is encoded, in order.
    ahead = [kinds[: n + 1].count("prepare") - kinds[: n + 1].count("encode") for n in range(len(kinds))]
    assert max(ahead) == 2 and ahead[-1] == 0 and min(ahead) >= 0
    assert [e[1] for e in events if e[0] == "prepare"] == [e[1] for e in events if e[0] == "encode"]
    assert kinds.count("encode") == 4
    assert [r.status for r in got] == ["ok"] * 4 + ["error"] + ["ok"] * 2
    assert got[4].error is not None and "i4.png" in got[4].error
    # The same scores as encoding each image alone, outside any batch.
    alone = _Traced.make([], batch=1, n_batches=0).predict(items)  # no waits
    assert [r.scores for r in got] == [r.scores for r in alone]


def test_images_over_the_pixel_limit_are_refused_whatever_the_warning_filters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import warnings

    from scopebench import items as items_module
    from scopebench.errors import ImageLoadError

    path = tmp_path / "big.png"
    Image.new("RGB", (20, 20)).save(path)
    # Pillow's own guard is process-wide warning state that another thread may reset; the size
    # check of open_image does not depend on it.
    monkeypatch.setattr(items_module, "_BOMB_LIMIT", 399)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ImageLoadError, match="decompression-bomb limit"):
            items_module.open_image(path, what="big.png")
    monkeypatch.setattr(items_module, "_BOMB_LIMIT", 400)
    assert items_module.open_image(path, what="big.png").size == (20, 20)


def test_a_run_prepares_each_batch_once_ahead_and_stores_what_unhinted_batches_give(
    tiny_models: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Catches a hint that is prepared but not used (each batch decoded twice), or one that puts
    another batch's pixels under this batch's images (records differ from a run without hints)."""
    from scopebench.models import contrastive
    from scopebench.models.contrastive import HFContrastiveBackend

    monkeypatch.setattr(contrastive, "_cores", lambda: 1)  # each batch prepared in one part
    rng = np.random.default_rng(2)
    rows = []
    for k in range(7):  # 7 images, 3 per call: 3 calls
        Image.fromarray(rng.integers(0, 255, (24, 24, 3), dtype=np.uint8)).save(tmp_path / f"{k}.png")
        rows += [{"question": f"Q{q}?", "choices": ["a", "b", "c"], "answer": q % 3, "image": f"{k}.png", "task": "t"}
                 for q in range(2)]  # fmt: skip
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = RunConfig(benchmark="local", data=str(tmp_path / "data.jsonl"), model=f"clip:{tiny_models['clip']}",
                    batch_size=3)  # fmt: skip
    prepared: list[int] = []
    threads: list[bool] = []
    real = HFContrastiveBackend.prepare_images

    def counted(self: Any, images: Any) -> Any:
        prepared.append(len(images))
        threads.append(threading.current_thread() is threading.main_thread())
        return real(self, images)

    monkeypatch.setattr(HFContrastiveBackend, "prepare_images", counted)
    monkeypatch.setattr(HFContrastiveBackend, "prepares_ahead", lambda self: True)
    run_benchmark(cfg, tmp_path / "hinted")
    assert prepared == [3, 3, 1] and threads == [False] * 3  # every image once, each batch once, ahead
    # No spare core: the first two batches are prepared ahead (while the weights load), the third
    # once the second is encoded; without hints, each in turn.
    monkeypatch.setattr(HFContrastiveBackend, "prepares_ahead", lambda self: False)
    prepared.clear()
    threads.clear()
    run_benchmark(cfg, tmp_path / "in-turn")
    assert prepared == [3, 3, 1] and threads == [False] * 3
    monkeypatch.setattr(HFContrastiveBackend, "prefetch", lambda self, requests: None)
    prepared.clear()
    threads.clear()
    run_benchmark(cfg, tmp_path / "plain")
    assert prepared == [3, 3, 1] and threads == [True] * 3
    hinted = (tmp_path / "hinted" / "records.jsonl").read_text()
    assert hinted == (tmp_path / "plain" / "records.jsonl").read_text() and hinted.count("\n") == 14
    assert hinted == (tmp_path / "in-turn" / "records.jsonl").read_text()


def test_images_are_prepared_ahead_on_an_accelerator_or_a_spare_core(
    tiny_models: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Catches a decoding thread started beside torch threads that already take every core (on 2
    cores it only takes turns with them), or none on a GPU, where it hides Pillow's time."""
    import os

    import torch

    backend: Any = load_model(f"clip:{tiny_models['clip']}", ModelOptions(device="cpu"))
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)))
    monkeypatch.setattr(torch, "get_num_threads", lambda: 8)
    assert not backend.prepares_ahead()
    monkeypatch.setattr(torch, "get_num_threads", lambda: 4)
    assert backend.prepares_ahead()
    monkeypatch.setattr(torch, "get_num_threads", lambda: 8)
    backend.device = "cuda:0"
    assert backend.prepares_ahead()


@pytest.mark.parametrize("cores", [2, 3, 8])
def test_a_batch_is_prepared_in_one_part_per_core_with_the_pixels_of_one_pass(
    tiny_models: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cores: int
) -> None:
    """Catches parts joined out of order, an image in two parts or none, a broken image's error lost,
    or keys that no longer line up with the pixels (each image would score another's captions)."""
    import torch

    from scopebench.models import contrastive

    monkeypatch.setattr(contrastive, "_cores", lambda: cores)
    rng = np.random.default_rng(3)
    refs = []
    for k in range(7):
        p = tmp_path / f"{k}.png"
        if k == 2:
            p.write_bytes(b"not a png")
        else:
            Image.fromarray(rng.integers(0, 255, (30 + k, 20 + 3 * k, 3), dtype=np.uint8)).save(p)
        refs.append(ImageRef(key=p.name, path=p))
    backend: Any = load_model(f"clip:{tiny_models['clip']}", ModelOptions(device="cpu"))
    sizes: list[int] = []
    real = backend.prepare_images

    def sized(images: Any) -> Any:
        sizes.append(len(images))
        return real(images)

    backend.prepare_images = sized
    backend._ensure_processor()
    pixels, ok, errors = backend._prepare_chunk(refs)
    assert sorted(sizes) == sorted({2: [2, 4], 3: [1, 2, 3], 8: [1] * 6}[cores])  # 7 refs, the third broken
    assert ok == [r.key for r in refs if r.key != "2.png"] and list(errors) == ["2.png"]
    whole = real([r.load() for r in refs if r.key != "2.png"])
    assert torch.equal(pixels, whole) and pixels.shape[0] == 6
    backend.close()


def test_records_do_not_depend_on_the_cores_images_are_prepared_on(
    tiny_models: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scopebench.models import contrastive

    rng = np.random.default_rng(4)
    rows = []
    for k in range(9):
        Image.fromarray(rng.integers(0, 255, (20 + k, 24, 3), dtype=np.uint8)).save(tmp_path / f"{k}.png")
        rows.append(
            {"question": "Q?", "choices": ["a", "b", "c"], "answer": k % 3, "image": f"{k}.png", "task": "t"}
        )
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = RunConfig(benchmark="local", data=str(tmp_path / "data.jsonl"), model=f"clip:{tiny_models['clip']}",
                    batch_size=4)  # fmt: skip
    texts = []
    for cores in (1, 2, 5):
        monkeypatch.setattr(contrastive, "_cores", lambda cores=cores: cores)
        run_benchmark(cfg, tmp_path / f"cores-{cores}")
        texts.append((tmp_path / f"cores-{cores}" / "records.jsonl").read_text())
    assert texts[0].count("\n") == 9 and texts[0] == texts[1] == texts[2]


def test_without_a_spare_core_the_next_batch_is_prepared_only_while_the_model_is_idle(
    tiny_models: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Catches a batch prepared beside an encode on a CPU whose cores torch takes (the threads then
    take turns), or one not started until the engine asks for it (the core left idle meanwhile)."""
    from scopebench.models import contrastive
    from scopebench.models.contrastive import HFContrastiveBackend

    monkeypatch.setattr(contrastive, "_cores", lambda: 1)
    monkeypatch.setattr(HFContrastiveBackend, "prepares_ahead", lambda self: False)
    rng = np.random.default_rng(5)
    rows = []
    for k in range(9):  # 9 images, 2 per call: 5 calls
        Image.fromarray(rng.integers(0, 255, (16, 16, 3), dtype=np.uint8)).save(tmp_path / f"{k}.png")
        rows.append(
            {"question": "Q?", "choices": ["a", "b", "c"], "answer": k % 3, "image": f"{k}.png", "task": "t"}
        )
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    encoding = threading.Event()
    events: list[tuple[str, bool, bool]] = []  # (step, in the main thread, while an encode runs)
    prepare, encode = HFContrastiveBackend.prepare_images, HFContrastiveBackend.encode_prepared

    def traced_prepare(self: Any, images: Any) -> Any:
        events.append(("prepare", threading.current_thread() is threading.main_thread(), encoding.is_set()))
        return prepare(self, images)

    def traced_encode(self: Any, prepared: Any) -> Any:
        encoding.set()
        try:
            return encode(self, prepared)
        finally:
            encoding.clear()
            events.append(("encoded", True, False))

    monkeypatch.setattr(HFContrastiveBackend, "prepare_images", traced_prepare)
    monkeypatch.setattr(HFContrastiveBackend, "encode_prepared", traced_encode)
    cfg = RunConfig(benchmark="local", data=str(tmp_path / "data.jsonl"), model=f"clip:{tiny_models['clip']}",
                    batch_size=2)  # fmt: skip
    run_benchmark(cfg, tmp_path / "run")
    steps = [e[0] for e in events]
    assert steps.count("prepare") == steps.count("encoded") == 5
    # Batches 3-5 are started by the call before, after its encode, in the pixel thread.
    later = [n for n, e in enumerate(events) if e[0] == "prepare"][2:]
    assert all(not events[n][1] and not events[n][2] for n in later)
    assert [steps[: n + 1].count("encoded") for n in later] == [2, 3, 4]


def test_a_cpu_model_keeps_freed_memory_while_loaded(
    tiny_models: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    import scopebench.models.contrastive as contrastive

    assert check_keeps_freed_memory(monkeypatch, contrastive, f"clip:{tiny_models['clip']}").model is None
