from __future__ import annotations

import base64
import logging
from collections.abc import Iterator
from urllib.parse import quote, quote_plus

import pytest

from scopebench.models.scrub import forget_secrets, register_secret, scrub_secrets

KEY = "sk-proj-Zq8Wv+3Xr/7Tn2Ym5Kp9Hd4Fs6Lc"


@pytest.fixture(autouse=True)
def _registered() -> Iterator[None]:
    register_secret(KEY)
    yield
    forget_secrets()


def _pieces(text: str, n: int = 8) -> set[str]:
    return {text[i : i + n] for i in range(len(text) - n + 1)}


@pytest.mark.parametrize("prefix", ["", "a", "ab", "abc:"])  # every base64 alignment
@pytest.mark.parametrize("encode", [base64.b64encode, base64.urlsafe_b64encode])
def test_base64_echo_at_any_offset_is_removed(prefix: str, encode: object) -> None:
    blob = encode(f"{prefix}{KEY} trailing".encode()).decode()  # type: ignore[operator]
    head, tail = "Authorization: Basic ", " rejected"
    out = scrub_secrets(head + blob + tail)
    assert out.count("***") == 1 and out.startswith(head) and out.endswith(tail)
    # The characters carrying the key's bits span [first, last) of the blob; the mask may leave at
    # most 2 of them on each side (12 bits: not even two characters of the key).
    first = len(prefix) * 8 // 6
    last = -(-(len(prefix) + len(KEY)) * 8 // 6)
    left = out.index("***") - len(head)
    right = len(blob) - (len(out) - out.index("***") - 3 - len(tail))
    assert left <= first + 2 and right >= last - 2, (left, first, right, last)
    assert out == head + blob[:left] + "***" + blob[right:] + tail


def test_verbatim_url_hex_and_pieces() -> None:
    for form in (KEY, quote(KEY, safe=""), quote_plus(KEY), KEY.encode().hex(), KEY.encode().hex().upper()):
        out = scrub_secrets(f"see https://x.example/?k={form}&y=1 now")
        assert out == "see https://x.example/?k=***&y=1 now", (form, out)
    # A piece of the key that someone else cut off (e.g. a proxy's own 200-character limit).
    assert scrub_secrets("key was sk-proj-Zq8Wv+3X…") == "key was ***…"
    # Seven characters are not a piece: ordinary text stays as it is.
    assert scrub_secrets("Zq8Wv+3 and sk-proj") == "Zq8Wv+3 and sk-proj"
    assert scrub_secrets("nothing to see") == "nothing to see"


def test_short_key_removed_whole_only() -> None:
    register_secret("EMPTY")
    register_secret("ab")  # too short to mask without masking ordinary words
    assert scrub_secrets("key EMPTY sent; abc") == "key *** sent; abc"


def test_every_log_record_is_scrubbed(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    log = logging.getLogger("third.party")
    log.info("header Bearer %s", KEY)
    try:
        raise ValueError(f"server said {KEY}")
    except ValueError:
        log.exception("request failed")
    assert caplog.records[0].getMessage() == "header Bearer ***"
    assert KEY[:8] not in caplog.text and "server said ***" in caplog.text
