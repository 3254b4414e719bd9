"""``openai:MODEL`` — any OpenAI-compatible Chat Completions server, over plain HTTP (httpx).

One backend for GPT-4o, Gemini and Claude through their OpenAI-compatible endpoints, OpenRouter,
and local servers (``vllm serve``, ``transformers serve``, llama.cpp): ``--base-url`` picks the
server (default ``https://api.openai.com/v1``). See ``docs/models-api.md`` for every option.

How a batch is answered: the engine calls :meth:`OpenAIBackend.predict` synchronously; inside, one
asyncio task per item sends its request, at most ``concurrency`` at a time. Each request is retried
with exponential backoff and seeded jitter (tenacity, :class:`SeededBackoff`) on 429, 5xx, timeouts
and connection errors, honouring ``Retry-After``. A successful answer is written to a per-request
disk cache first, so a re-run (or a resumed or ``--fresh`` run) of the same requests costs no
request at all.

The API key is read from an environment variable only (``OPENAI_API_KEY``, or the one named by
``--model-arg api_key_env=NAME``). It is sent in the ``Authorization`` header and nowhere else: it
is not part of the identity, the cache key or the cache files, and every error text is scrubbed of
it before it can reach a record or a log.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import email.utils
import hashlib
import io
import json
import logging
import math
import os
import random
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import tenacity
from PIL import Image

from scopebench.errors import ImageLoadError, ModelError, ModelSpecError
from scopebench.items import ImageRef
from scopebench.models.base import (
    Backend,
    ChatMessage,
    FinishReason,
    ModelOptions,
    Response,
    finish_reason,
)
from scopebench.models.constrained import label_schema
from scopebench.models.registry import ModelSpec, parse_spec
from scopebench.models.sampling import gather, sample_seeds, sampling
from scopebench.models.scrub import register_secret, scrub_secrets
from scopebench.protocols import Request

if TYPE_CHECKING:
    import httpx

__all__ = [
    "DEFAULT_BASE_URL",
    "OpenAIBackend",
    "OpenAISettings",
    "ResponseCache",
    "SeededBackoff",
    "image_data_url",
    "parse_retry_after",
]

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.openai.com/v1"

# Statuses worth retrying: rate limits, request timeouts, conflicts and every server-side failure.
_RETRY_STATUS = frozenset({408, 409, 429})
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class OpenAISettings:
    """The ``--model-arg`` options of ``openai:`` models (defaults in parentheses).

    Attributes:
        concurrency: Requests in flight at once (8).
        temperature: Sampling temperature (0); ``null`` leaves the field out of the request, for
            models that accept only their default (OpenAI reasoning models).
        max_tokens: Generation budget per reply (1024).
        max_tokens_field: Request field carrying it: ``max_tokens``, or ``max_completion_tokens``
            for OpenAI reasoning models.
        timeout: Seconds per request attempt (120).
        max_retries: Retries after the first attempt (6), on 429, 408, 409, 5xx, timeouts and
            connection errors.
        backoff_base: First backoff delay in seconds (1); doubles each retry, with jitter.
        backoff_max: Cap of one backoff delay in seconds (60).
        retry_after_max: Cap in seconds on a server's ``Retry-After`` (300).
        api_key_env: Environment variable holding the API key (``OPENAI_API_KEY``).
        cache: Use the per-request disk cache (true).
        cache_dir: Cache folder (default ``$SCOPEBENCH_CACHE/openai`` or
            ``~/.cache/scopebench/openai``).
        image_detail: OpenAI's image ``detail`` (``low``/``high``/``auto``); left out when unset.
        send_seed: Send ``seed`` (the run's ``--seed``) when sampling with temperature > 0 (true).
        extra_body: Extra fields merged into every request body (a JSON object).
    """

    concurrency: int = 8
    temperature: float | None = 0.0
    max_tokens: int = 1024
    max_tokens_field: str = "max_tokens"
    timeout: float = 120.0
    max_retries: int = 6
    backoff_base: float = 1.0
    backoff_max: float = 60.0
    retry_after_max: float = 300.0
    api_key_env: str = "OPENAI_API_KEY"
    cache: bool = True
    cache_dir: str | None = None
    image_detail: str | None = None
    send_seed: bool = True
    extra_body: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_args(cls, args: Mapping[str, Any]) -> OpenAISettings:
        """Validate ``--model-arg`` values (already JSON-decoded by the CLI where they parse).

        Raises:
            ModelSpecError: For an unknown key or a value of the wrong type or range.
        """
        fields = cls.__dataclass_fields__
        unknown = sorted(set(args) - set(fields))
        if unknown:
            raise ModelSpecError(
                f"unknown --model-arg {', '.join(unknown)} for openai: models; known: {', '.join(fields)}"
            )
        out: dict[str, Any] = {}
        for key, value in args.items():
            out[key] = _coerce(key, value)
        settings = cls(**out)
        if settings.concurrency < 1:
            raise ModelSpecError("--model-arg concurrency must be at least 1")
        if settings.max_retries < 0 or settings.max_tokens < 1 or settings.timeout <= 0:
            raise ModelSpecError("--model-arg max_retries must be ≥ 0, max_tokens ≥ 1 and timeout > 0")
        if settings.max_tokens_field not in ("max_tokens", "max_completion_tokens"):
            raise ModelSpecError("--model-arg max_tokens_field must be max_tokens or max_completion_tokens")
        return settings


_INT_KEYS = {"concurrency", "max_tokens", "max_retries"}
_FLOAT_KEYS = {"timeout", "backoff_base", "backoff_max", "retry_after_max"}
_BOOL_KEYS = {"cache", "send_seed"}


def _coerce(key: str, value: Any) -> Any:
    """Turn one ``--model-arg`` value into its field's type, with a message saying what was wrong."""
    try:
        if key in _INT_KEYS:
            if isinstance(value, bool) or float(value) != int(float(value)):
                raise ValueError
            return int(float(value))
        if key in _FLOAT_KEYS:
            return float(value)
        if key == "temperature":
            return None if value is None or str(value).lower() in ("none", "null") else float(value)
        if key in _BOOL_KEYS:
            if isinstance(value, bool):
                return value
            if str(value).lower() in ("true", "1", "yes", "on"):
                return True
            if str(value).lower() in ("false", "0", "no", "off"):
                return False
            raise ValueError
        if key == "extra_body":
            if not isinstance(value, Mapping):
                raise ValueError
            return dict(value)
        return None if value is None else str(value)
    except (TypeError, ValueError):
        raise ModelSpecError(f"--model-arg {key}={value!r} has the wrong type or value") from None


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds a server asks us to wait: ``retry-after-ms``, or ``Retry-After`` (seconds or HTTP date).

    Args:
        headers: Response headers (case-insensitive mapping, as httpx gives them).
        now: The current POSIX time (for tests); defaults to :func:`time.time`.

    Returns:
        The delay in seconds (never negative), or ``None`` when the server gave none we can read.
    """
    lower = {k.lower(): v for k, v in headers.items()}
    ms = lower.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    raw = lower.get("retry-after")
    if raw is None:
        return None
    raw = raw.strip()
    try:
        value = float(raw)
        return max(0.0, value) if math.isfinite(value) else None
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # an HTTP date is GMT by definition
        import datetime as _dt

        when = when.replace(tzinfo=_dt.UTC)
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def image_data_url(ref: ImageRef) -> str:
    """The image as a ``data:`` URL: the original bytes when they are PNG or JPEG, else re-encoded as PNG.

    Keeping the original bytes means the server sees exactly the file (no second JPEG compression)
    and we pay no decode/encode time.

    Raises:
        ImageLoadError: When the image is missing or cannot be read.
    """
    raw: bytes | None = None
    if ref.data is not None:
        raw = ref.data
    elif ref.path is not None:
        try:
            raw = ref.path.read_bytes()
        except FileNotFoundError as exc:
            raise ImageLoadError(f"image file not found: {ref.path}") from exc
        except OSError as exc:
            raise ImageLoadError(f"cannot read image {ref.path}: {exc}") from exc
    elif ref.loader is not None:
        try:
            got = ref.loader()
        except Exception as exc:  # a dataset backend can fail in many ways; keep the reason
            raise ImageLoadError(f"cannot read image {ref.key}: {exc}") from exc
        if isinstance(got, bytes):
            raw = got
    if raw is not None:
        try:
            with Image.open(io.BytesIO(raw)) as img:  # reads the header only
                fmt = img.format
        except (OSError, ValueError, SyntaxError) as exc:
            raise ImageLoadError(f"cannot decode image {ref.describe()}: {exc}") from exc
        if fmt in ("PNG", "JPEG"):
            mime = "image/png" if fmt == "PNG" else "image/jpeg"
            return f"data:{mime};base64,{base64.b64encode(raw).decode('ascii')}"
    buf = io.BytesIO()
    ref.load().save(buf, format="PNG")  # TIFF, WebP, BMP, PIL objects… → lossless PNG
    return f"data:image/png;base64,{base64.b64encode(buf.getvalue()).decode('ascii')}"


def _default_cache_dir() -> Path:
    root = os.environ.get("SCOPEBENCH_CACHE")
    return (Path(root) if root else Path.home() / ".cache" / "scopebench") / "openai"


class ResponseCache:
    """A disk cache of successful Chat Completions responses, one JSON file per request.

    The key is the SHA-256 of the model, the server (host and path, never credentials) and the
    full request body — prompt text, every image's bytes (inside the data URLs), temperature,
    token budget, seed. Files hold the server's JSON reply only, never the request headers.
    Writes go through a temporary file and an atomic rename, so a crash leaves no half entry (at
    most a ``.tmp-*`` file, never read). Kept over diskcache after measuring both
    (``bench/bench_cache.py``): diskcache pickles values and is unmaintained; see bench/RESULTS.md.
    """

    def __init__(self, root: Path) -> None:
        self.root = root

    @staticmethod
    def key(model: str, server: str, body: Mapping[str, Any]) -> str:
        """The cache key of one request."""
        blob = json.dumps({"model": model, "server": server, "body": body}, sort_keys=True)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored reply, or ``None`` (a damaged entry counts as absent)."""
        path = self._path(key)
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, json.JSONDecodeError):
            log.warning("ignoring unreadable cache entry %s", path)
            return None
        reply = entry.get("response") if isinstance(entry, dict) else None
        return reply if isinstance(reply, dict) else None

    def put(self, key: str, model: str, server: str, reply: Mapping[str, Any]) -> None:
        """Store ``reply`` under ``key`` (atomically)."""
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        entry = {"model": model, "server": server, "created": time.time(), "response": reply}
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(entry, fh)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


@dataclass(slots=True)
class _Outcome:
    """What one request came to: the reply text, or an error, plus what to record."""

    text: str | None = None
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _public_server(base_url: str) -> str:
    """``base_url`` without user info, query or fragment (what may be recorded)."""
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


def _run_sync(factory: Callable[[], Awaitable[_T]]) -> _T:
    """Run a coroutine to completion from synchronous code, even inside a running event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_as_coro(factory))
    # Called from async code (a notebook): asyncio.run refuses to nest, so use a thread of our own.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(_as_coro(factory))).result()


async def _as_coro(factory: Callable[[], Awaitable[_T]]) -> _T:
    return await factory()


def _retryable_response(resp: httpx.Response) -> bool:
    """Whether a response is worth another attempt: rate limits, timeouts, conflicts, 5xx."""
    return resp.status_code in _RETRY_STATUS or resp.status_code >= 500


class _GaveUp(Exception):
    """The last allowed attempt of a request failed; ``problem`` says how."""

    def __init__(self, problem: str, attempts: int) -> None:
        super().__init__(problem)
        self.problem = problem
        self.attempts = attempts


class SeededBackoff(tenacity.wait.wait_base):
    """tenacity ``wait``: exponential backoff with "equal jitter" from a seeded RNG, floored by Retry-After.

    Before retry ``k`` (``k`` attempts made so far) the wait is ``d/2 + rng.uniform(0, d/2)`` with
    ``d = min(cap, base · 2^(k-1))``: at least half the exponential delay, spread so that many
    clients do not retry in step. When the failed response carried ``retry-after-ms`` or
    ``Retry-After`` (:func:`parse_retry_after`), the wait is at least that, capped at
    ``retry_after_max``.

    tenacity's own ``wait_random_exponential`` draws from the global ``random`` module; this draws
    from ``rng`` (the backend's ``random.Random(seed)``), so a run's waits follow from its recorded
    seed. tenacity computes a wait before it checks ``stop``, i.e. also after the last allowed
    attempt; that wait is never slept, and drawing for it would shift every later request's
    jitter, so after attempt ``max_retries + 1`` nothing is drawn.

    Args:
        rng: The source of the jitter.
        base: First delay in seconds (before jitter).
        cap: Largest delay in seconds (before jitter).
        retry_after_max: Cap on a server's ``Retry-After``.
        max_retries: Retries allowed after the first attempt.
    """

    def __init__(
        self, rng: random.Random, base: float, cap: float, retry_after_max: float, max_retries: int
    ) -> None:
        self.rng = rng
        self.base = base
        self.cap = cap
        self.retry_after_max = retry_after_max
        self.max_retries = max_retries

    def __call__(self, retry_state: tenacity.RetryCallState) -> float:
        """Seconds to wait after the attempt ``retry_state`` describes."""
        k = retry_state.attempt_number
        if k > self.max_retries:  # no retry follows: draw nothing
            return 0.0
        delay = min(self.cap, self.base * 2 ** (k - 1))
        delay = delay / 2 + self.rng.uniform(0, delay / 2)
        outcome = retry_state.outcome
        if outcome is not None and not outcome.failed:
            hint = parse_retry_after(outcome.result().headers)
            if hint is not None:
                delay = max(delay, min(hint, self.retry_after_max))
        return float(delay)


class OpenAIBackend(Backend):
    """Generative answers from an OpenAI-compatible Chat Completions endpoint.

    Args:
        spec: ``openai:MODEL`` (the model name as the server knows it).
        options: Common options; ``base_url`` picks the server, ``extra`` holds the
            :class:`OpenAISettings` keys, ``protocol`` and ``no_image`` shape the prompts.

    Raises:
        ModelSpecError: For an unknown ``--model-arg``, a bad value or an unsupported mode.
        ModelError: When the official OpenAI endpoint is used and the key variable is unset.
    """

    model_args = None  # validated against its own option list

    mode = "generate"
    kinds = ("mcq", "detection")
    default_batch_size = 64  # enough work per engine batch to keep `concurrency` requests busy

    takes_model_spec = True

    def __init__(self, spec: str | ModelSpec, options: ModelOptions) -> None:
        super().__init__(spec, options)
        self.model = parse_spec(spec).target
        if options.mode not in (None, "generate"):
            raise ModelSpecError(
                f"openai: models answer in 'generate' mode only (got --mode {options.mode}); "
                "letter log-probabilities need a local model (hf:)"
            )
        self.settings = OpenAISettings.from_args(options.extra)
        base = (options.base_url or DEFAULT_BASE_URL).rstrip("/")
        if not urlsplit(base).path:
            # Every OpenAI-compatible server we know serves under /v1; a bare host means that.
            base += "/v1"
        if urlsplit(base).scheme not in ("http", "https"):
            raise ModelSpecError(
                f"--base-url must start with http:// or https://, got {_public_server(base)!r}"
            )
        self.base_url = base
        self.server = _public_server(base)
        # The key lives in this attribute and the request header only.
        self._api_key = os.environ.get(self.settings.api_key_env) or None
        # From here on every log record of the process, and every text we record, is scrubbed of it.
        register_secret(self._api_key)
        if self._api_key is None:
            if urlsplit(base).hostname == "api.openai.com":
                raise ModelError(
                    f"the OpenAI API needs a key: set the environment variable {self.settings.api_key_env} "
                    "(or name another variable with --model-arg api_key_env=NAME)"
                )
            log.info("no API key in $%s; sending requests without one", self.settings.api_key_env)
        self.cache: ResponseCache | None = None
        if self.settings.cache:
            root = (
                Path(self.settings.cache_dir).expanduser()
                if self.settings.cache_dir
                else _default_cache_dir()
            )
            self.cache = ResponseCache(root)
        self._rng = random.Random(options.seed)  # backoff jitter only; never touches an answer
        #: Requests sent over the network by this backend (cache hits excluded), for tests and logs.
        self.requests_sent = 0

    # ------------------------------------------------------------------ Backend interface

    def answer(self, requests: Sequence[Request]) -> list[Response]:
        """Answer a batch concurrently; a failed request is that item's ``error`` response."""
        bodies: list[dict[str, Any] | None] = []
        extras: list[dict[str, Any]] = []
        errors: list[str | None] = []
        urls: dict[str, str] = {}  # image key → data URL: each image encoded once per batch
        for req in requests:
            try:
                # A detection request sends its first image only (boxes are read in its pixels).
                images = req.images[:1] if req.kind == "detection" else req.images
                conv = [ChatMessage("system", req.system)] if req.system else []
                conv.append(ChatMessage("user", req.text, tuple(images)))
                body = self._body(conv, self.settings.max_tokens, urls)
                if self.options.answer_format == "constrained" and req.kind == "mcq":
                    body["response_format"] = label_schema(req.option_labels)
                bodies.append(body)
                extras.append({"protocol": req.protocol, "n_images": len(images)})
                errors.append(None)
            except (ImageLoadError, ModelSpecError) as exc:
                bodies.append(None)
                extras.append({})
                errors.append(self._scrub(str(exc)))
        seeds = sample_seeds(self.options.seed, self.options.gen_args)  # one request per sample
        sent = [b if b is None or len(seeds) == 1 else {**b, "seed": s} for b in bodies for s in seeds]
        outcomes = iter(_run_sync(lambda: self._send_all(sent)))
        out = []
        for req, extra, err in zip(requests, extras, errors, strict=True):
            got = [self._response(req.item_id, next(outcomes), extra, err) for _ in seeds]
            out.append(gather(got, seeds) if self.options.gen_args else got[0])
        return out

    def chat(
        self,
        conversations: Sequence[Sequence[ChatMessage]],
        item_ids: Sequence[str],
        *,
        max_new_tokens: int | None = None,
    ) -> list[Response]:
        """Continue each conversation with one assistant turn (chain-of-thought strategies)."""
        budget = max_new_tokens or self.settings.max_tokens
        bodies: list[dict[str, Any] | None] = []
        errors: list[str | None] = []
        urls: dict[str, str] = {}
        for conv in conversations:
            try:
                bodies.append(self._body(conv, budget, urls))
                errors.append(None)
            except ImageLoadError as exc:
                bodies.append(None)
                errors.append(self._scrub(str(exc)))
        outcomes = _run_sync(lambda: self._send_all(bodies))
        return [
            self._response(item_id, outcome, {}, err)
            for item_id, outcome, err in zip(item_ids, outcomes, errors, strict=True)
        ]

    def can_constrain(self) -> bool:
        """Yes: structured outputs (``response_format`` with a JSON schema of the labels)."""
        return True

    def can_sample(self) -> bool:
        """Yes: ``temperature``/``top_p`` go into each request, one request (seed) per sample."""
        return True

    def identity(self) -> dict[str, Any]:
        """Model, server (no credentials) and the request settings that change answers."""
        ident: dict[str, Any] = {
            **super().identity(),
            "model": self.model,
            "base_url": self.server,
            "temperature": self.settings.temperature,
            "max_tokens": self.settings.max_tokens,
        }
        if self.options.answer_format == "constrained":
            ident["answer_format"] = "constrained"
        if self.settings.image_detail:
            ident["image_detail"] = self.settings.image_detail
        if self.settings.extra_body:
            ident["extra_body"] = dict(self.settings.extra_body)
        if self._sampling and self.settings.send_seed:
            ident["seed"] = self.options.seed
        if self.options.gen_args:
            ident["gen_args"] = dict(self.options.gen_args)
        return ident

    # ------------------------------------------------------------------ request building

    @property
    def _sampling(self) -> bool:
        temperature = self.options.gen_args.get("temperature", self.settings.temperature)
        return (temperature is not None and temperature > 0) or sampling(self.options.gen_args)

    def _body(self, conv: Sequence[ChatMessage], max_tokens: int, urls: dict[str, str]) -> dict[str, Any]:
        messages: list[dict[str, Any]] = []
        for msg in conv:
            if not msg.images:
                messages.append({"role": msg.role, "content": msg.text})
                continue
            parts: list[dict[str, Any]] = []
            for ref in msg.images:  # images first, then the text (the protocols' convention)
                if ref.key not in urls:
                    urls[ref.key] = image_data_url(ref)
                image_url: dict[str, Any] = {"url": urls[ref.key]}
                if self.settings.image_detail:
                    image_url["detail"] = self.settings.image_detail
                parts.append({"type": "image_url", "image_url": image_url})
            parts.append({"type": "text", "text": msg.text})
            messages.append({"role": msg.role, "content": parts})
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        body[self.settings.max_tokens_field] = max_tokens
        if self.settings.temperature is not None:
            body["temperature"] = self.settings.temperature
        body.update({k: v for k, v in self.options.gen_args.items() if k != "n"})  # --gen-arg wins
        if self._sampling and self.settings.send_seed:
            # Each --seed is then its own (cached) sample: R tries with R seeds are R requests.
            body["seed"] = self.options.seed
        body.update(self.settings.extra_body)
        return body

    # ------------------------------------------------------------------ sending

    async def _send_all(self, bodies: Sequence[dict[str, Any] | None]) -> list[_Outcome]:
        import httpx

        headers = {"Content-Type": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        limits = httpx.Limits(max_connections=self.settings.concurrency)
        gate = asyncio.Semaphore(self.settings.concurrency)
        async with httpx.AsyncClient(
            headers=headers, timeout=httpx.Timeout(self.settings.timeout), limits=limits
        ) as client:

            async def one(body: dict[str, Any] | None) -> _Outcome:
                if body is None:
                    return _Outcome()
                async with gate:
                    return await self._send(client, body)

            return list(await asyncio.gather(*(one(b) for b in bodies)))

    async def _send(self, client: httpx.AsyncClient, body: dict[str, Any]) -> _Outcome:
        """One request with cache, retries and backoff; never raises for a per-item failure."""
        key = ResponseCache.key(self.model, self.server, body) if self.cache else ""
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                outcome = self._read_reply(hit)
                if outcome.error is None:
                    outcome.extra.update(cached=True, attempts=0)
                    return outcome
        url = f"{self.base_url}/chat/completions"
        start = time.perf_counter()
        try:
            resp, attempts = await self._post_with_retries(client, url, body)
        except _GaveUp as gave_up:
            return self._failed(
                f"{gave_up.problem}; gave up after {gave_up.attempts} attempts", gave_up.attempts
            )
        if resp.status_code != 200:  # not retryable
            hint = (
                f" (check the key in ${self.settings.api_key_env})" if resp.status_code in (401, 403) else ""
            )
            return self._failed(self._problem(resp) + hint, attempts)
        try:
            reply = resp.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            return self._failed(
                f"malformed response from {self.server}: the body is not JSON ({_snippet(resp.text)})",
                attempts,
            )
        outcome = self._read_reply(reply)
        if outcome.error is None:
            if self.cache is not None:
                try:
                    self.cache.put(key, self.model, self.server, reply)
                except OSError as exc:  # a full disk must not lose the answer itself
                    log.warning("cannot write the response cache (%s): %s", self.cache.root, exc)
            outcome.extra.update(
                cached=False, attempts=attempts, latency_s=round(time.perf_counter() - start, 3)
            )
        else:
            outcome.extra["attempts"] = attempts
        return outcome

    async def _post_with_retries(
        self, client: httpx.AsyncClient, url: str, body: dict[str, Any]
    ) -> tuple[httpx.Response, int]:
        """POST ``body`` until an answer not worth retrying; tenacity drives the loop.

        Retried: 429, 408, 409 and 5xx responses, timeouts and connection errors, at most
        ``max_retries`` times, waiting as :class:`SeededBackoff` says.

        Returns:
            The last response (200, or a status not worth retrying) and the attempts it took.

        Raises:
            _GaveUp: When the last allowed attempt failed too.
        """
        import httpx

        s = self.settings
        attempts = 0

        async def post() -> httpx.Response:
            nonlocal attempts
            attempts += 1
            self.requests_sent += 1
            return await client.post(url, json=body)

        def log_retry(state: tenacity.RetryCallState) -> None:
            wait = state.next_action.sleep if state.next_action is not None else 0.0
            problem = self._describe(state.outcome) if state.outcome is not None else "?"
            log.info(
                "request to %s: %s; retry %d in %.2f s", self.server, self._scrub(problem), attempts, wait
            )

        retrying = tenacity.AsyncRetrying(
            # httpx's TimeoutException is a TransportError; any other exception (a bug) propagates.
            retry=tenacity.retry_if_exception_type(httpx.TransportError)
            | tenacity.retry_if_result(_retryable_response),
            stop=tenacity.stop_after_attempt(s.max_retries + 1),
            wait=SeededBackoff(self._rng, s.backoff_base, s.backoff_max, s.retry_after_max, s.max_retries),
            sleep=asyncio.sleep,
            before_sleep=log_retry,
        )
        try:
            resp: httpx.Response = await retrying(post)
        except tenacity.RetryError as err:
            raise _GaveUp(self._describe(err.last_attempt), attempts) from None
        return resp, attempts

    def _describe(self, attempt: concurrent.futures.Future[Any]) -> str:
        """What went wrong in one failed attempt (tenacity's outcome: a response or an exception)."""
        import httpx

        exc = attempt.exception()
        if isinstance(exc, httpx.TimeoutException):
            return f"timed out ({type(exc).__name__}, timeout {self.settings.timeout:g} s per attempt)"
        if exc is not None:
            return f"connection failed ({type(exc).__name__}: {exc})"
        return self._problem(attempt.result())

    def _problem(self, resp: httpx.Response) -> str:
        return f"HTTP {resp.status_code} from {self.server}: {_server_message(resp)}"

    def _failed(self, reason: str, attempts: int) -> _Outcome:
        return _Outcome(error=self._scrub(reason), extra={"attempts": attempts})

    def _read_reply(self, reply: Any) -> _Outcome:
        """The text of a Chat Completions reply, or why there is none."""
        choices = reply.get("choices") if isinstance(reply, dict) else None
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            return _Outcome(error=f"malformed response from {self.server}: no choices in the reply")
        first = choices[0]
        message = first.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):  # some servers return content parts
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        extra: dict[str, Any] = {"finish_reason": first.get("finish_reason")}
        usage = reply.get("usage")
        if isinstance(usage, dict):
            extra["usage"] = {
                k: usage[k] for k in ("prompt_tokens", "completion_tokens") if isinstance(usage.get(k), int)
            }
        if not isinstance(content, str):
            refusal = message.get("refusal") if isinstance(message, dict) else None
            if refusal:
                return _Outcome(error=f"the model refused: {_snippet(str(refusal))}", extra=extra)
            return _Outcome(error=f"malformed response from {self.server}: no choices[0].message.content")
        return _Outcome(text=scrub_secrets(content), extra=extra)

    def _response(self, item_id: str, outcome: _Outcome, extra: dict[str, Any], err: str | None) -> Response:
        if err is not None:
            return Response(item_id, status="error", error=err, extra=extra)
        merged = {**extra, **outcome.extra}
        if outcome.error is not None:
            # A reply the provider withheld says so; any other failure is an ``error``.
            why: FinishReason | None = (
                "content_filter" if finish_reason(merged.get("finish_reason")) == "content_filter" else None
            )
            return Response(item_id, status="error", error=outcome.error, extra=merged, finish_reason=why)
        return Response(
            item_id, text=outcome.text, extra=merged, finish_reason=finish_reason(merged.get("finish_reason"))
        )

    def _scrub(self, text: str) -> str:
        """Remove the API key from a text that may reach a record or a log (a server may echo it).

        Also its base64/URL/hex forms and any 8+-character piece of them (see
        :mod:`scopebench.models.scrub`).
        """
        return scrub_secrets(text)


def _snippet(text: str, limit: int = 200) -> str:
    # Scrub the whole text first: a key echoed across the cut would otherwise leave its first
    # characters behind, too short for the scrubber to recognise after the cut.
    text = " ".join(scrub_secrets(text).split())
    return text if len(text) <= limit else text[:limit] + "…"


def _server_message(resp: httpx.Response) -> str:
    """The error message a server sent (OpenAI's ``{"error": {"message": …}}`` or the raw body)."""
    try:
        data = resp.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return _snippet(resp.text) or resp.reason_phrase
    if isinstance(data, dict):
        err = data.get("error")
        if isinstance(err, dict) and err.get("message"):
            return _snippet(str(err["message"]))
        if isinstance(err, str):
            return _snippet(err)
    return _snippet(json.dumps(data))
