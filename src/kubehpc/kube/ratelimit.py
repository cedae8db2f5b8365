"""A client-side token bucket, as client-go's ``flowcontrol.NewTokenBucketRateLimiter``.

Every request a client sends takes one token; tokens refill at ``qps`` per second up to
``burst``. client-go's defaults (5 qps, burst 10; kube-scheduler's 50/100) would make the client,
not the scheduler, the bottleneck of a scheduling benchmark, so cluster mode sets its own (see
:data:`CONTROLLER_QPS`) and ``qps <= 0`` turns limiting off.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

CONTROLLER_QPS = 1000.0
CONTROLLER_BURST = 2000
"""kubehpc's controller and scheduler: far above what one API server absorbs on a small machine
(about 300 binds/s on 2 cores), so the server, not the client, sets the pace; a runaway loop is
still capped."""


class TokenBucket:
    def __init__(
        self,
        qps: float,
        burst: int,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if burst < 1 and qps > 0:
            raise ValueError(f"burst must be at least 1, got {burst}")
        self.qps = qps
        self.burst = burst
        self._clock = clock
        self._sleep = sleep
        self._tokens = float(burst)
        self._last = clock()
        self._lock = threading.Lock()
        self.waited_s = 0.0
        """Seconds callers spent waiting for tokens, in total (shows a limit that bites)."""

    def _reserve(self, n: int = 1) -> float:
        """Take ``n`` tokens now (the balance may go negative); how long to wait for them."""
        with self._lock:
            now = self._clock()
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
            self._last = now
            self._tokens -= n
            if self._tokens >= 0:
                return 0.0
            delay = -self._tokens / self.qps
            self.waited_s += delay
            return delay

    def acquire(self, n: int = 1) -> None:
        """Block until ``n`` requests may be sent."""
        if self.qps <= 0:
            return
        delay = self._reserve(n)
        if delay > 0:
            self._sleep(delay)
