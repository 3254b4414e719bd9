"""build/llm.py: the content-keyed call cache, resumption and the cost ledger."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from scopebench.curate.llm import CallCache, Ledger, LLMCall, LLMClient, Prices, call_key
from scopebench.items import Item
from scopebench.models import Backend, ChatMessage, ModelOptions, Response


class CountingBackend(Backend):
    """Replies ``reply to <id>`` and reports 10 prompt + 3 completion tokens per call; counts calls."""

    mode = "generate"
    default_batch_size = 2

    def __init__(self, *, fail_after: int | None = None, fail_ids: Sequence[str] = ()) -> None:
        super().__init__("fake:counting", ModelOptions(seed=0))
        self.sent: list[str] = []
        self.seeds: list[int] = []
        self.fail_after = fail_after
        self.fail_ids = set(fail_ids)

    def predict(self, items: Sequence[Item]) -> list[Response]:  # pragma: no cover - unused
        raise NotImplementedError

    def chat(
        self,
        conversations: Sequence[Sequence[ChatMessage]],
        item_ids: Sequence[str],
        *,
        max_new_tokens: int | None = None,
    ) -> list[Response]:
        if self.fail_after is not None and len(self.sent) >= self.fail_after:
            raise KeyboardInterrupt  # a crash: not an Exception, so nothing catches it
        self.sent += list(item_ids)
        self.seeds.append(self.options.seed)
        usage = {"prompt_tokens": 10, "completion_tokens": 3}
        return [
            Response(i, status="error", error="boom")
            if i in self.fail_ids
            else Response(i, text=f"reply to {i}", extra={"usage": usage})
            for i in item_ids
        ]


def _calls(n: int, prompt: str = "q") -> list[LLMCall]:
    return [LLMCall(f"c{i}", [ChatMessage("user", f"{prompt} {i}")], schema="v1") for i in range(n)]


def test_second_run_costs_no_request_and_the_ledger_adds_up(tmp_path: Path) -> None:
    backend = CountingBackend()
    client = LLMClient(backend, CallCache(tmp_path / "c.sqlite"), prices=Prices(2.0, 8.0))
    replies = client.chat("gen", _calls(5), seed=7)
    assert [r.text for r in replies] == [f"reply to c{i}" for i in range(5)]
    assert backend.sent == ["c0", "c1", "c2", "c3", "c4"] and backend.seeds == [7, 7, 7]  # 3 batches of ≤2
    assert backend.options.seed == 0  # restored after the call
    e = client.ledger.steps["gen"]
    # 5 calls × (10 in, 3 out); price = (50 × 2 + 15 × 8) / 1e6.
    assert (e.requests, e.cached, e.input_tokens, e.output_tokens) == (5, 0, 50, 15)
    assert e.price == pytest.approx(220 / 1e6)

    again = LLMClient(backend, CallCache(tmp_path / "c.sqlite"))
    replies = again.chat("gen", _calls(5), seed=7)
    assert len(backend.sent) == 5 and all(r.cached for r in replies)
    assert [r.text for r in replies] == [f"reply to c{i}" for i in range(5)]
    assert again.ledger.to_json()["total"] == {
        "requests": 0, "cached": 5, "failed": 0, "input_tokens": 0, "output_tokens": 0, "price": None,
    }  # fmt: skip


def test_changed_prompt_seed_or_schema_is_a_new_call(tmp_path: Path) -> None:
    backend = CountingBackend()
    ident = backend.identity()
    base = _calls(1)[0]
    key = call_key(base, ident, {}, 0)
    assert call_key(LLMCall("c0", [ChatMessage("user", "q 0")], schema="v1"), ident, {}, 0) == key
    assert call_key(LLMCall("c0", [ChatMessage("user", "q 1")], schema="v1"), ident, {}, 0) != key
    assert call_key(LLMCall("c0", [ChatMessage("user", "q 0")], schema="v2"), ident, {}, 0) != key
    assert call_key(base, ident, {}, 1) != key
    assert call_key(base, ident, {"temperature": 0.7}, 0) != key
    assert call_key(base, {**ident, "spec": "fake:other"}, {}, 0) != key


def test_failed_calls_are_not_cached_and_are_counted(tmp_path: Path) -> None:
    backend = CountingBackend(fail_ids=["c1"])
    cache = CallCache(tmp_path / "c.sqlite")
    client = LLMClient(backend, cache)
    replies = client.chat("gen", _calls(3), seed=0)
    assert [r.status for r in replies] == ["ok", "error", "ok"] and replies[1].text is None
    assert len(cache) == 2 and client.ledger.steps["gen"].failed == 1
    backend.fail_ids.clear()
    client.chat("gen", _calls(3), seed=0)
    assert backend.sent[3:] == ["c1"]  # only the failed call is asked again


def test_a_crash_mid_run_resumes_with_only_the_unanswered_calls(tmp_path: Path) -> None:
    crashing = CountingBackend(fail_after=4)
    with pytest.raises(KeyboardInterrupt):
        LLMClient(crashing, CallCache(tmp_path / "c.sqlite")).chat("gen", _calls(7), seed=0)
    assert crashing.sent == ["c0", "c1", "c2", "c3"]  # two batches committed before the crash
    fresh = CountingBackend()
    client = LLMClient(fresh, CallCache(tmp_path / "c.sqlite"))
    client.chat("gen", _calls(7), seed=0)
    assert fresh.sent == ["c4", "c5", "c6"]
    assert (client.ledger.steps["gen"].cached, client.ledger.steps["gen"].requests) == (4, 3)


def test_ledger_file(tmp_path: Path) -> None:
    ledger = Ledger()
    ledger.entry("a").requests = 2
    ledger.entry("b").cached = 3
    ledger.entry("b").price = 0.5
    ledger.write(tmp_path / "l.json")
    got = json.loads((tmp_path / "l.json").read_text())
    assert got["total"]["requests"] == 2 and got["total"]["cached"] == 3 and got["total"]["price"] == 0.5
    assert list(got["steps"]) == ["a", "b"]
