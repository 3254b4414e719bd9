"""The Request stage: one rendering per item that every backend and the parser share.

Before, five backends rendered prompts themselves and the option labels reached the parser through
mutable backend state (``Backend._labels``): a backend that never rendered (replay, a third-party
plugin) had its numbered answers read as letters. Now :func:`render` makes a :class:`Request` and
:func:`parse` reads the reply with that request's labels.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from openai_server import ChatServer, request_text
from scopebench.engine.parse import parse
from scopebench.items import Item
from scopebench.models import ModelOptions, Response, load_model
from scopebench.models.scrub import forget_secrets
from scopebench.models.vllm_backend import request_messages
from scopebench.protocols import Request, render

SRC = Path(__file__).parents[2] / "src" / "scopebench"


def _microvqa(n: int = 4) -> Item:
    return Item(id="microvqa/q1", benchmark="microvqa", split="test", task="1", question="Which organelle?",
                choices=tuple(f"option {k}" for k in range(n)), answer_index=1)  # fmt: skip


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[ChatServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-request-stage")
    monkeypatch.setenv("SCOPEBENCH_CACHE", str(tmp_path / "cache"))
    with ChatServer() as srv:
        yield srv
    forget_secrets()


def test_render_carries_labels_prefix_and_captions() -> None:
    req = render(_microvqa(), "owner")
    assert isinstance(req, Request) and req.item_id == "microvqa/q1" and req.kind == "mcq"
    assert (req.protocol, req.labels, req.option_labels) == (
        "microvqa-owner",
        "numbers",
        ("1", "2", "3", "4"),
    )
    assert req.answer_prefix == "The answer is ("  # MicroVQA's own, declared by its benchmark module
    assert req.captions == tuple(f"Which organelle? option {k}" for k in range(4))
    default = render(_microvqa(), "default")
    assert (default.protocol, default.labels, default.answer_prefix) == ("default", "letters", "")


def test_two_backends_given_the_same_request_see_the_same_labels(server: ChatServer, tmp_path: Path) -> None:
    request = render(_microvqa(), "owner")  # MicroVQA numbers its options
    replay_file = tmp_path / "replies.jsonl"
    replay_file.write_text('{"item_id": "microvqa/q1", "response": "The answer is (2)"}\n')
    # Neither backend is built with the owner protocol: the request alone says how options are labelled.
    api = load_model("openai:say:The answer is (2)", ModelOptions(base_url=server.base_url))
    replay = load_model(f"replay:{replay_file}", ModelOptions())
    choices = []
    for backend in (api, replay):
        [response] = backend.answer([request])
        assert response.status == "ok" and response.text == "The answer is (2)"
        record = parse(request, response, model=backend.spec)
        choices.append((record.status, record.choice, record.correct))
    # Read with letters (the old default of a backend that had not rendered) it is unparsed.
    assert choices == [("ok", 1, True), ("ok", 1, True)]
    # What the API received, and what vLLM would send, is the request's text, byte for byte.
    assert request_text(server.state.log[-1].body) == (request.text, 0)
    chat = request_messages(request)
    assert chat.labels == request.labels == "numbers" and chat.protocol == "microvqa-owner"
    content = chat.messages[-1]["content"]
    assert (content if isinstance(content, str) else content[-1]["text"]) == request.text


def test_parse_uses_the_requests_labels_not_the_backends() -> None:
    request = render(_microvqa(), "owner")
    lettered = render(_microvqa(), "default")
    reply = Response("microvqa/q1", text="The answer is (2)")
    assert parse(request, reply, model="m").choice == 1
    assert parse(lettered, reply, model="m").status == "unparsed"


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return names


@pytest.mark.parametrize("module", ["runner.py", "executors.py"])
def test_the_engine_imports_no_detection_scoring_and_no_probes(module: str) -> None:
    # The engine runs plan → render → execute → parse → store; GRIT and probe transforms are not its own
    # (function-local imports included: ast.walk sees them too).
    imported = _imports(SRC / "engine" / module)
    assert not {
        m
        for m in imported
        if m.startswith(("scopebench.experiments", "scopebench.transforms", "scopebench.scoring.grit"))
    }
    # The runner calls the parse stage; the choice parser itself is not the runner's.
    assert "scopebench.parsing.choice" not in imported


def test_no_per_benchmark_branches_left_in_scoring_or_backends() -> None:
    # Owner prompts, answer prefixes and aggregations live in the benchmark modules now.
    for rel in (
        "scoring/aggregate.py",
        "scoring/metrics.py",
        "models/hf_generative.py",
        "protocols/prompts.py",
    ):
        text = (SRC / rel).read_text(encoding="utf-8")
        for name in ("ubench", "pathmmu", "spur", "microvqa"):
            assert f'benchmark == "{name}"' not in text and f'"{name}-owner"' not in text, (rel, name)


def test_an_item_based_backend_still_answers_requests_and_an_empty_one_is_refused() -> None:
    from collections.abc import Sequence

    from scopebench.errors import ModelSpecError
    from scopebench.models import Backend

    class Legacy(Backend):  # written against the older contract: items in, responses out
        def predict(self, items: Sequence[Item]) -> list[Response]:
            return [Response(it.id, text="The answer is (2)") for it in items]

    class Empty(Backend):
        pass

    request = render(_microvqa(), "owner")
    [response] = Legacy("legacy", ModelOptions()).answer([request])
    assert parse(request, response, model="legacy").choice == 1  # read with the request's labels
    with pytest.raises(ModelSpecError, match="implements neither answer"):
        Empty("empty", ModelOptions())
