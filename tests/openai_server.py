"""A small OpenAI-compatible Chat Completions server for tests, answering with a tiny local model.

It listens on 127.0.0.1 (a free port) in a background thread and implements
``POST /v1/chat/completions``. The ``model`` field of each request picks what it does:

* ``tiny`` — a real (random-weight, untrained) GPT-2 built from a config with the project's tiny
  tokenizer generates a few tokens greedily from the request's text: deterministic, and honest
  about being a model rather than a canned string;
* ``say:TEXT`` — replies ``TEXT`` (for exact accuracy checks through the parser);
* ``cut:TEXT`` — replies ``TEXT`` with ``finish_reason: "length"``, as a reply the token limit cut;
* ``pick:A,B,…`` — replies ``Answer: X``: the first label when greedy (no ``temperature`` or 0), else
  one drawn with ``random.Random(seed)`` from the request's ``seed`` (a sampler that honours the
  seed: the same seed gives the same reply). ``n`` is answered with ``n`` choices, each drawn
  from ``seed + i``;

A request with ``response_format`` of type ``json_schema`` whose ``answer`` property is an ``enum``
(structured outputs) is answered by ``tiny`` as ``{"answer": LABEL}``, the label the model's
next-token scores rank highest among the enum: the schema is enforced, as a real server does.
* ``fail429:K`` — the first ``K`` requests get 429 with ``Retry-After: <retry_after>`` (and
  ``retry-after-ms: <retry_after_ms>`` when that is set), then ``tiny``;
* ``status:CODE`` — always HTTP ``CODE`` with an OpenAI-style error body and no ``Retry-After``;
* ``fail500`` — always 500; the error body echoes the request's ``Authorization`` header, like a
  careless proxy, so the client must scrub the key from what it records;
* ``slow`` — sleeps ``slow_s`` seconds before answering (longer than the client's timeout);
* ``malformed`` — 200 with a body that is not JSON;
* ``nochoices`` — 200 with valid JSON that has no ``choices``.
* ``leak:FORM`` — 400 whose error message echoes the request's key the way careless servers do:
  ``cut`` at character 190 of a long message (so a 200-character snippet cuts through it), ``b64``
  base64-encoded in a ``Basic`` credential, ``url`` percent-encoded in a URL, ``hex`` as hex;
  ``leak:reply`` is a 200 reply whose text quotes the key.

Every request is logged (time, model, Authorization header, body) and the server records the
highest number of requests in flight at once.
"""

from __future__ import annotations

import json
import random
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Logged:
    """One request the server received."""

    t: float
    model: str
    authorization: str | None
    body: dict[str, Any]


class TinyChatModel:
    """A random-weight GPT-2 (2 layers, width 32) with the project's tiny BPE tokenizer."""

    def __init__(self, seed: int = 0, new_tokens: int = 6) -> None:
        import torch
        from transformers import GPT2Config, GPT2LMHeadModel

        from scopebench.testing.tiny import build_tokenizer

        self.torch = torch
        self.tokenizer = build_tokenizer()
        cfg = GPT2Config(
            vocab_size=len(self.tokenizer),
            n_positions=256,
            n_embd=32,
            n_layer=2,
            n_head=2,
            bos_token_id=self.tokenizer.bos_token_id,
            eos_token_id=self.tokenizer.eos_token_id,
            pad_token_id=self.tokenizer.pad_token_id,
        )
        torch.manual_seed(seed)
        self.model = GPT2LMHeadModel(cfg).eval()
        self.new_tokens = new_tokens
        self.lock = threading.Lock()  # one forward pass at a time; requests still overlap in I/O

    def choose(self, text: str, labels: list[str]) -> str:
        """The label whose first token the model scores highest after ``text`` (greedy, enforced)."""
        ids = self.tokenizer(text, add_special_tokens=True, truncation=False)["input_ids"][-200:]
        with self.lock, self.torch.no_grad():
            logits = self.model(self.torch.tensor([ids])).logits[0, -1]
        first = [self.tokenizer(" " + lb, add_special_tokens=False)["input_ids"][0] for lb in labels]
        return max(zip(labels, first, strict=True), key=lambda p: float(logits[p[1]]))[0]

    def reply(self, text: str, max_tokens: int) -> tuple[str, int, int]:
        """Greedy continuation of ``text``: (reply, prompt tokens, completion tokens)."""
        ids = self.tokenizer(text, add_special_tokens=True, truncation=False)["input_ids"][-200:]
        with self.lock, self.torch.no_grad():
            inp = self.torch.tensor([ids])
            out = self.model.generate(
                inp,
                attention_mask=self.torch.ones_like(inp),
                max_new_tokens=min(self.new_tokens, max_tokens),
                do_sample=False,
                pad_token_id=self.tokenizer.pad_token_id,
            )
        new = out[0, len(ids) :].tolist()
        return self.tokenizer.decode(new, skip_special_tokens=True), len(ids), len(new)


def _enum_labels(body: dict[str, Any]) -> list[str] | None:
    """The labels a structured-outputs ``response_format`` restricts ``answer`` to, if it does."""
    fmt = body.get("response_format") or {}
    if fmt.get("type") != "json_schema":
        return None
    prop = fmt.get("json_schema", {}).get("schema", {}).get("properties", {}).get("answer", {})
    enum = prop.get("enum")
    return [str(x) for x in enum] if isinstance(enum, list) and enum else None


def request_text(body: dict[str, Any]) -> tuple[str, int]:
    """All text of a request's messages, and how many images it carries."""
    texts, n_images = [], 0
    for msg in body.get("messages", []):
        content = msg.get("content")
        if isinstance(content, str):
            texts.append(content)
            continue
        for part in content or []:
            if part.get("type") == "text":
                texts.append(part["text"])
            elif part.get("type") == "image_url":
                n_images += 1
    return "\n".join(texts), n_images


@dataclass
class ServerState:
    """What the handler shares with the test."""

    retry_after: str = "1"
    retry_after_ms: str | None = None
    slow_s: float = 1.0
    delay_s: float = 0.0
    log: list[Logged] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0
    seen: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    model: TinyChatModel | None = None

    def tiny(self) -> TinyChatModel:
        with self.lock:
            if self.model is None:
                self.model = TinyChatModel()
            return self.model

    def reset(self) -> None:
        with self.lock:
            self.log.clear()
            self.seen.clear()
            self.max_in_flight = 0


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        return

    def _send(self, status: int, payload: bytes, headers: dict[str, str] | None = None) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout tests)
            pass

    def do_POST(self) -> None:
        state = self.server.state
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path != "/v1/chat/completions":
            self._send(404, json.dumps({"error": {"message": f"no route {self.path}"}}).encode())
            return
        body = json.loads(raw)
        model = str(body.get("model", ""))
        auth = self.headers.get("Authorization")
        with state.lock:
            state.log.append(Logged(time.time(), model, auth, body))
            state.in_flight += 1
            state.max_in_flight = max(state.max_in_flight, state.in_flight)
            n_seen = state.seen.get(model, 0)
            state.seen[model] = n_seen + 1
        try:
            self._answer(state, model, body, auth, n_seen)
        finally:
            with state.lock:
                state.in_flight -= 1

    def _answer(
        self, state: ServerState, model: str, body: dict[str, Any], auth: str | None, n_seen: int
    ) -> None:
        if state.delay_s:
            time.sleep(state.delay_s)
        if model.startswith("fail429:") and n_seen < int(model.split(":", 1)[1]):
            msg = {"error": {"message": "rate limited", "type": "rate_limit"}}
            headers = {"Retry-After": state.retry_after}
            if state.retry_after_ms is not None:
                headers["retry-after-ms"] = state.retry_after_ms
            self._send(429, json.dumps(msg).encode(), headers)
            return
        if model.startswith("status:"):
            code = int(model.split(":", 1)[1])
            self._send(code, json.dumps({"error": {"message": f"scripted status {code}"}}).encode())
            return
        if model == "fail500":
            msg = {"error": {"message": f"internal error (request had Authorization: {auth})"}}
            self._send(500, json.dumps(msg).encode())
            return
        if model.startswith("leak:"):
            self._leak(model[5:], (auth or "").removeprefix("Bearer "))
            return
        if model == "slow":
            time.sleep(state.slow_s)
        if model == "malformed":
            self._send(200, b'{"id": "x", "choices": [ {"message": ')
            return
        if model == "nochoices":
            self._send(200, json.dumps({"id": "x", "object": "chat.completion"}).encode())
            return
        text, n_images = request_text(body)
        max_tokens = int(body.get("max_tokens") or body.get("max_completion_tokens") or 16)
        finish = "stop"
        if model.startswith("pick:"):
            self._pick(model[5:].split(","), body)
            return
        if model.startswith(("say:", "cut:")):
            reply, p_tok, c_tok = model[4:], len(text.split()), 1
            finish = "length" if model.startswith("cut:") else "stop"
        elif _enum_labels(body) is not None:
            labels = _enum_labels(body) or []
            reply, p_tok, c_tok = (
                json.dumps({"answer": state.tiny().choose(text, labels)}),
                len(text.split()),
                4,
            )
        else:
            reply, p_tok, c_tok = state.tiny().reply(text, max_tokens)
            finish = "length" if c_tok >= max_tokens else "stop"
        payload = {
            "id": f"chatcmpl-{len(state.log)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": reply}, "finish_reason": finish}
            ],
            "usage": {"prompt_tokens": p_tok, "completion_tokens": c_tok, "total_tokens": p_tok + c_tok},
            "n_images_seen": n_images,
        }
        self._send(200, json.dumps(payload).encode())

    def _pick(self, labels: list[str], body: dict[str, Any]) -> None:
        greedy = not body.get("temperature")
        seed = int(body.get("seed") or 0)
        picks = [
            labels[0] if greedy else random.Random(seed + i).choice(labels)
            for i in range(int(body.get("n") or 1))
        ]
        choices = [
            {"index": i, "message": {"role": "assistant", "content": f"Answer: {p}"}, "finish_reason": "stop"}
            for i, p in enumerate(picks)
        ]
        self._send(200, json.dumps({"id": "pick", "object": "chat.completion", "choices": choices}).encode())

    def _leak(self, form: str, key: str) -> None:
        import base64
        from urllib.parse import quote

        echoes = {
            "cut": "x" * 190 + key + " was rejected",
            "b64": "bad credential Basic " + base64.b64encode(f"user:{key}".encode()).decode(),
            "url": "upstream https://proxy.example/v1/chat?api_key=" + quote(key, safe="") + "&x=1 failed",
            "hex": "token dump " + key.encode().hex(),
        }
        if form == "reply":
            payload = {"choices": [{"message": {"role": "assistant", "content": f"(A) my key is {key}"}}]}
            self._send(200, json.dumps(payload).encode())
            return
        self._send(400, json.dumps({"error": {"message": echoes[form]}}).encode())


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # a "slow" handler may still sleep when the test ends
    state: ServerState


class ChatServer:
    """Start/stop wrapper: ``with ChatServer() as srv: srv.base_url …``."""

    def __init__(self) -> None:
        self.httpd = _Server(("127.0.0.1", 0), _Handler)
        self.httpd.state = ServerState()
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def state(self) -> ServerState:
        return self.httpd.state

    @property
    def base_url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def __enter__(self) -> ChatServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
