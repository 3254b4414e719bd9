"""``openai:`` against a real OpenAI-compatible HTTP server on 127.0.0.1 (tests/openai_server.py).

No client library is mocked: requests go through httpx over TCP to a threaded stdlib server that
answers with a tiny random-weight GPT-2 (or a scripted failure, chosen by the model name).
"""

from __future__ import annotations

import base64
import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image

from helpers import FIXTURES, make_items
from openai_server import ChatServer, request_text
from scopebench.engine import RunConfig, run_benchmark
from scopebench.errors import ModelError, ModelSpecError
from scopebench.items import ImageRef
from scopebench.models import ModelOptions, load_model
from scopebench.models.openai_api import OpenAIBackend, image_data_url, parse_retry_after
from scopebench.models.scrub import forget_secrets
from scopebench.store import load_run

KEY = "sk-test-DO-NOT-LEAK-0123456789abcdef"
FAST = {"backoff_base": 0.01, "backoff_max": 0.05}


@pytest.fixture(scope="module")
def server() -> Iterator[ChatServer]:
    with ChatServer() as srv:
        yield srv


@pytest.fixture(autouse=True)
def _fresh(server: ChatServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    server.state.reset()
    server.state.delay_s = 0.0
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("SCOPEBENCH_CACHE", str(tmp_path / "cache"))
    yield
    forget_secrets()  # the test keys must not mask text in later tests of this process


def _backend(server: ChatServer, model: str, **args: object) -> OpenAIBackend:
    backend = load_model(f"openai:{model}", ModelOptions(base_url=server.base_url, extra=dict(args)))
    assert isinstance(backend, OpenAIBackend)
    return backend


def _all_text(*roots: Path) -> str:
    return "\n".join(
        p.read_bytes().decode("utf-8", "replace") for root in roots for p in root.rglob("*") if p.is_file()
    )


def test_full_run_with_tiny_model_then_rerun_from_cache(
    server: ChatServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    data = FIXTURES / "local" / "items.jsonl"
    cfg = RunConfig(benchmark="local", data=str(data), model="openai:tiny", base_url=server.base_url)
    first = run_benchmark(cfg, tmp_path / "run1")
    recs = {r.item_id: r for r in load_run(tmp_path / "run1").records}
    # Five rows: q3's image is missing (recorded, never sent); the detection row is sent too.
    assert first.n_items == 5 and len(recs) == 5
    assert recs["local/q3"].status == "missing_image"
    sent = list(server.state.log)
    assert len(sent) == 4
    assert all(e.authorization == f"Bearer {KEY}" for e in sent)
    # Every answer is the tiny model's own greedy output for the text it received.
    tiny = server.state.tiny()
    marks = {
        "local/q1": "Which stain is shown?",
        "local/q2": "Which organelle",
        "local/items-3": "How many cells",
        "local/items-4": "Locate every nucleus",
    }
    for rid, mark in marks.items():
        [body] = [e.body for e in sent if mark in request_text(e.body)[0]]
        rec = recs[rid]
        assert rec.status in ("ok", "unparsed"), rec.error
        assert rec.extra["cached"] is False and rec.extra["attempts"] == 1
        assert rec.response == tiny.reply(request_text(body)[0], body["max_tokens"])[0]
        assert body["temperature"] == 0 and body["model"] == "tiny" and body["max_tokens"] == 1024
    assert recs["local/q1"].extra["protocol"] == "default"
    assert (
        recs["local/items-4"].kind == "detection"
        and recs["local/items-4"].extra["protocol"] == "detection-json"
    )
    # q2 has two images, sent first as data URLs holding the original PNG bytes.
    q2 = next(e.body for e in sent if "organelle" in request_text(e.body)[0])
    parts = q2["messages"][0]["content"]
    assert [p["type"] for p in parts] == ["image_url", "image_url", "text"]
    png = (FIXTURES / "local" / "images" / "cell1.png").read_bytes()
    assert parts[0]["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(png).decode()
    # Identity: model and server, never the key.
    cfg_json = json.loads((tmp_path / "run1" / "run.json").read_text())
    assert cfg_json["model_identity"]["model"] == "tiny"
    assert cfg_json["model_identity"]["base_url"] == server.base_url
    cache_root = tmp_path / "cache" / "openai"
    assert len(list(cache_root.rglob("*.json"))) == 4

    # A second run elsewhere costs no request and gives the same answers.
    second = run_benchmark(cfg, tmp_path / "run2")
    assert len(server.state.log) == 4 and second.n_new == 5
    recs2 = {r.item_id: r for r in load_run(tmp_path / "run2").records}
    assert {k: r.response for k, r in recs2.items()} == {k: r.response for k, r in recs.items()}
    assert recs2["local/q1"].extra["cached"] is True

    assert KEY not in _all_text(tmp_path / "run1", tmp_path / "run2", cache_root)
    assert KEY not in caplog.text


def test_exact_accuracy_and_concurrency_bound(server: ChatServer, tmp_path: Path) -> None:
    server.state.delay_s = 0.2
    cfg = RunConfig(
        benchmark="unit", data="12", model="openai:say:B", base_url=server.base_url,
        model_args={"concurrency": 3, "cache": False},
    )  # fmt: skip
    result = run_benchmark(cfg, tmp_path / "run")
    # Items i=0..11 have answer i % 4: B is right for i = 1, 5, 9.
    assert result.metrics["overall"]["accuracy"] == pytest.approx(3 / 12)
    assert len(server.state.log) == 12
    assert server.state.max_in_flight == 3


def test_429_with_retry_after_then_success(server: ChatServer) -> None:
    server.state.retry_after = "1"
    backend = _backend(server, "fail429:1", concurrency=1, cache=False, **FAST)
    [resp] = backend.predict(make_items(1))
    assert resp.status == "ok" and resp.text is not None
    assert resp.extra["attempts"] == 2
    t = [e.t for e in server.state.log]
    assert len(t) == 2
    # The backoff alone would wait ≤ 0.01 s: the gap shows Retry-After was honoured.
    assert t[1] - t[0] >= 0.95


def test_persistent_500_exhausts_retries_and_run_continues(
    server: ChatServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    cfg = RunConfig(
        benchmark="unit", data="2", model="openai:fail500", base_url=server.base_url,
        model_args={"max_retries": 2, "concurrency": 1, **FAST}, max_fail_fraction=1.0,
    )  # fmt: skip
    result = run_benchmark(cfg, tmp_path / "run")
    recs = load_run(tmp_path / "run").records
    assert result.n_new == 2 and [r.status for r in recs] == ["error", "error"]
    assert len(server.state.log) == 6  # 2 items × (1 attempt + 2 retries)
    for rec in recs:
        assert rec.error is not None
        assert "HTTP 500" in rec.error and "gave up after 3 attempts" in rec.error
        # The server echoed the Authorization header; the recorded error must not carry the key.
        assert "Bearer ***" in rec.error and KEY not in rec.error
    assert KEY not in _all_text(tmp_path / "run", tmp_path / "cache")
    assert KEY not in caplog.text
    assert not (tmp_path / "cache").exists()  # failures are never cached


def test_timeout_retried_then_error(server: ChatServer) -> None:
    server.state.slow_s = 0.6
    backend = _backend(server, "slow", timeout=0.15, max_retries=1, cache=False, **FAST)
    [resp] = backend.predict(make_items(1))
    assert resp.status == "error" and resp.error is not None
    assert "timed out" in resp.error and "gave up after 2 attempts" in resp.error
    assert len(server.state.log) == 2


@pytest.mark.parametrize(
    ("model", "reason"),
    [("malformed", "the body is not JSON"), ("nochoices", "no choices in the reply")],
)
def test_malformed_replies_are_item_errors(server: ChatServer, model: str, reason: str) -> None:
    backend = _backend(server, model, max_retries=3, **FAST)
    responses = backend.predict(make_items(2))
    assert [r.status for r in responses] == ["error", "error"]
    assert all(r.error is not None and reason in r.error for r in responses)
    assert len(server.state.log) == 2  # a well-formed HTTP 200 is not retried


def test_strategy_conversation_no_image_and_seeded_sampling(server: ChatServer, tmp_path: Path) -> None:
    items = make_items(2, image_dir=tmp_path)
    backend = _backend(server, "say:B", cache=False)
    from scopebench.models.strategies import StrategyBackend

    answers = StrategyBackend(backend, "ddcot").predict(items)
    assert [r.text for r in answers] == ["B", "B"]
    assert len(server.state.log) == 6  # 3 steps × 2 items
    last = server.state.log[-1].body["messages"]
    assert [m["role"] for m in last] == ["user", "assistant", "user", "assistant", "user"]
    assert last[0]["content"][0]["type"] == "image_url" and last[1]["content"] == "B"
    assert server.state.log[-1].body["max_tokens"] == 256  # the strategy's budget for the last step

    server.state.reset()
    no_img = load_model(
        "openai:say:B", ModelOptions(base_url=server.base_url, no_image=True, extra={"cache": False})
    )
    no_img.predict(items[:1])
    assert server.state.log[0].body["messages"][0]["content"].startswith("Question: Question 0?")

    # Sampling: the seed goes into the body and into the cache key, so two seeds are two samples.
    server.state.reset()
    cache = tmp_path / "c"
    for seed in (1, 2, 1):
        b = load_model(
            "openai:say:B",
            ModelOptions(
                seed=seed, base_url=server.base_url, extra={"temperature": 0.7, "cache_dir": str(cache)}
            ),
        )
        b.predict(items[:1])
    assert [e.body["seed"] for e in server.state.log] == [1, 2]
    assert server.state.log[0].body["temperature"] == 0.7


def test_api_key_env_and_missing_key(server: ChatServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTHER_KEY", "other-secret")
    _backend(server, "say:A", api_key_env="OTHER_KEY", cache=False).predict(make_items(1))
    assert server.state.log[0].authorization == "Bearer other-secret"
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(ModelError, match=r"OPENAI_API_KEY") as err:
        load_model("openai:gpt-4o", ModelOptions())
    assert "api_key_env" in str(err.value)
    # A local server needs no key: no Authorization header is sent at all.
    server.state.reset()
    _backend(server, "say:A", cache=False).predict(make_items(1))
    assert server.state.log[0].authorization is None


def test_settings_validation_and_identity(server: ChatServer) -> None:
    with pytest.raises(ModelSpecError, match="unknown --model-arg concurency"):
        _backend(server, "x", concurency=4)
    with pytest.raises(ModelSpecError, match="concurrency"):
        _backend(server, "x", concurrency=0)
    with pytest.raises(ModelSpecError, match="generate"):
        load_model("openai:x", ModelOptions(base_url=server.base_url, mode="choice-logprob"))
    b = load_model("openai:gpt-4o", ModelOptions(base_url="https://user:pw@example.org/v1?token=t"))
    assert b.identity() == {
        "spec": "openai:gpt-4o", "mode": "generate", "model": "gpt-4o",
        "base_url": "https://example.org/v1", "temperature": 0.0, "max_tokens": 1024,
    }  # fmt: skip
    assert load_model("openai:m", ModelOptions(base_url="http://localhost:8000")).base_url == (  # type: ignore[attr-defined]
        "http://localhost:8000/v1"
    )


def test_parse_retry_after() -> None:
    assert parse_retry_after({"Retry-After": "7"}) == 7.0
    assert parse_retry_after({"retry-after-ms": "250", "Retry-After": "7"}) == 0.25
    # HTTP date: 30 s after `now`.
    now = 1_700_000_000.0  # 2023-11-14 22:13:20 GMT
    assert parse_retry_after({"Retry-After": "Tue, 14 Nov 2023 22:13:50 GMT"}, now=now) == pytest.approx(30.0)
    assert parse_retry_after({"Retry-After": "Tue, 14 Nov 2023 22:13:00 GMT"}, now=now) == 0.0
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({}) is None


def test_image_data_urls_keep_png_jpeg_bytes_and_reencode_others(tmp_path: Path) -> None:
    img = Image.new("RGB", (5, 4), (10, 200, 30))
    jpg = io.BytesIO()
    img.save(jpg, format="JPEG")
    url = image_data_url(ImageRef(key="j", data=jpg.getvalue()))
    assert url == "data:image/jpeg;base64," + base64.b64encode(jpg.getvalue()).decode()
    tif = tmp_path / "x.tif"
    img.save(tif, format="TIFF")
    url = image_data_url(ImageRef(key="t", path=tif))
    assert url.startswith("data:image/png;base64,")
    back = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
    assert back.format == "PNG" and back.size == (5, 4) and back.getpixel((0, 0)) == (10, 200, 30)
    url = image_data_url(ImageRef(key="p", loader=lambda: img))
    assert Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).getpixel((4, 3)) == (10, 200, 30)


def test_unreadable_image_is_that_items_error(server: ChatServer, tmp_path: Path) -> None:
    items = make_items(2, image_dir=tmp_path)
    (tmp_path / "img1.png").write_bytes(b"not an image")
    responses = _backend(server, "say:A", cache=False).predict(items)
    assert responses[0].status == "ok" and responses[0].text == "A"
    assert responses[1].status == "error" and "cannot decode image" in (responses[1].error or "")
    assert len(server.state.log) == 1


# A key with the characters that URL- and base64-encoding change, as real keys may have.
LEAKY_KEY = "sk-Leak+Test/Key=Zq8Wv3Xr7Tn2Ym5Kp9Hd4Fs6"


def _key_pieces(key: str, n: int = 8) -> set[str]:
    return {key[i : i + n] for i in range(len(key) - n + 1)}


def test_key_echoed_in_any_form_reaches_no_file_and_no_log(
    server: ChatServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # Before: the message was cut to 200 characters and then scrubbed, so a key echoed at
    # character 190 left "sk-Leak+Te" in the record; base64/URL/hex echoes were not scrubbed at all.
    import base64
    from urllib.parse import quote

    monkeypatch.setenv("OPENAI_API_KEY", LEAKY_KEY)
    caplog.set_level(logging.DEBUG)
    runs = []
    for form in ("cut", "b64", "url", "hex", "reply"):
        cfg = RunConfig(
            benchmark="unit", data="2", model=f"openai:leak:{form}", base_url=server.base_url,
            model_args={"max_retries": 0, **FAST}, max_fail_fraction=1.0,
        )  # fmt: skip
        run_benchmark(cfg, tmp_path / form)
        runs.append(tmp_path / form)
        recs = load_run(tmp_path / form).records
        assert len(recs) == 2
        if form == "reply":
            assert [r.response for r in recs] == ["(A) my key is ***"] * 2
        else:
            assert all(r.status == "error" and r.error and "HTTP 400" in r.error for r in recs)
            assert all(r.error and "***" in r.error for r in recs), [r.error for r in recs]
    # A third-party logger that never heard of our scrubber, logging the key and its base64.
    logging.getLogger("some.library").warning("header was %s (%s)", LEAKY_KEY, "b64 " + "x")
    texts = [_all_text(*runs), caplog.text, *(r.getMessage() for r in caplog.records)]
    encoded = {
        base64.b64encode(LEAKY_KEY.encode()).decode()[4:-4],
        quote(LEAKY_KEY, safe=""),
        LEAKY_KEY.encode().hex(),
    }
    for text in texts:
        leaked = [p for p in _key_pieces(LEAKY_KEY) | encoded if p in text]
        assert not leaked, leaked
    assert "header was *** (b64 x)" in caplog.text
    # What the server really sent did contain the key (the test would prove nothing otherwise).
    assert all(entry.authorization == f"Bearer {LEAKY_KEY}" for entry in server.state.log)
