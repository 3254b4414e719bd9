"""Login throttling: growing delays per address and per username, never a lockout of the owner.

Failed logins are counted (over a sliding window) per client address across all usernames (password
spraying from one place) and per username across all addresses (guessing one account from many).
Past a few free failures, each key must wait a delay that doubles with every further failure, up to
a cap; an attempt made during the wait is refused *before* the password is checked (429 with
``Retry-After``), so waiting out the delays is the only way to go on guessing.

Delays, not lockouts: once the wait is over the right password gets in. And an owner does not wait
for an attacker's failures on their account at all: a successful login leaves a *device cookie* (a
signed token naming the username, OWASP's "device cookie" defence), and an attempt carrying a valid
one for that username skips the per-username delay — its own failures count under the cookie
instead, so a stolen cookie does not lift the limit either. Attempts are still limited per address.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass

from itsdangerous import BadSignature, URLSafeSerializer

from scopebench.review.errors import ReviewError

__all__ = ["DEVICE_COOKIE", "LoginThrottle", "ThrottleSettings", "TooManyAttempts"]

DEVICE_COOKIE = "scopebench_device"


class TooManyAttempts(ReviewError):
    """A login attempt made while a delay applies (answered 429 with ``Retry-After``)."""

    status = 429

    def __init__(self, retry_after: float, why: str) -> None:
        self.retry_after = max(1, math.ceil(retry_after))
        super().__init__(f"too many failed logins {why}; try again in {self.retry_after} s")


@dataclass(frozen=True)
class ThrottleSettings:
    """How failed logins slow down the next attempts.

    Attributes:
        free_per_address: Failures from one address (any usernames) before delays start.
        free_per_user: Failures on one username (any addresses) before delays start.
        base_delay: The first delay (seconds); each further failure doubles it.
        max_delay: The longest delay (seconds).
        window: Failures older than this (seconds) are forgotten.
    """

    free_per_address: int = 10
    free_per_user: int = 5
    base_delay: float = 1.0
    max_delay: float = 300.0
    window: float = 3600.0


class LoginThrottle:
    """The failure counts and delays of one server process (thread-safe).

    Args:
        settings: The limits.
        secret: Key that signs device cookies (random per process: a restart forgets them).
        clock: Seconds on a monotonic clock (tests pass a fake one).
        max_keys: Most addresses and usernames remembered (the least recent are forgotten first).
    """

    def __init__(
        self,
        settings: ThrottleSettings,
        secret: bytes,
        *,
        clock: Callable[[], float] = time.monotonic,
        max_keys: int = 100_000,
    ) -> None:
        self.settings = settings
        self._signer = URLSafeSerializer(secret, salt="scopebench-review-device")
        self._clock = clock
        self._max_keys = max_keys
        self._failures: OrderedDict[tuple[str, str], deque[float]] = OrderedDict()
        self._lock = threading.Lock()

    def device_cookie(self, username: str) -> str:
        """The device cookie a successful login of ``username`` leaves."""
        return str(self._signer.dumps(username))

    def _owns(self, device: str | None, username: str) -> bool:
        if not device:
            return False
        try:
            return bool(self._signer.loads(device) == username)
        except BadSignature:
            return False

    def _keys(self, address: str, username: str, device: str | None) -> list[tuple[tuple[str, str], int]]:
        s = self.settings
        user_key = ("device", device) if device and self._owns(device, username) else ("user", username)
        return [(("address", address), s.free_per_address), (user_key, s.free_per_user)]

    def _wait(self, key: tuple[str, str], free: int, now: float) -> float:
        times = self._failures.get(key)
        if not times:
            return 0.0
        while times and now - times[0] > self.settings.window:
            times.popleft()
        if len(times) < free:
            return 0.0
        delay = min(self.settings.max_delay, self.settings.base_delay * 2 ** (len(times) - free))
        return float(times[-1] + delay - now)

    def check(self, address: str, username: str, device: str | None) -> None:
        """Refuse the attempt while a delay applies to its address or its username (or device).

        Raises:
            TooManyAttempts: With the seconds left to wait.
        """
        now = self._clock()
        with self._lock:
            for key, free in self._keys(address, username, device):
                wait = self._wait(key, free, now)
                if wait > 0:
                    why = "from this address" if key[0] == "address" else "for this account"
                    raise TooManyAttempts(wait, why)

    def failed(self, address: str, username: str, device: str | None) -> None:
        """Count one failed login."""
        now = self._clock()
        with self._lock:
            for key, _free in self._keys(address, username, device):
                # Past ~20 failures over the free ones the delay is at its cap: older ones can go.
                self._failures.setdefault(key, deque(maxlen=64)).append(now)
                self._failures.move_to_end(key)
            while len(self._failures) > self._max_keys:
                self._failures.popitem(last=False)
