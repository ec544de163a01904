"""The in-process model's own lateness: how long its generating thread waited for a CPU while it was timed.

The hf backend stamps each decoding step on the thread that computes it. When the machine is short of CPU (other
processes on a shared box, a container's CPU quota), that thread is ready to run but waits on a run queue, and
every timed interval (TTFT, TPOT, E2E) grows by that wait although the model did not get slower. It is the
in-process counterpart of an endpoint client's event-loop lag (`_lateness`), recorded in the same client summary
(`loop_lag_ms`), so the gate widens latency bounds by it the same way (`decision.criterion`).

Why the run-queue wait and not another signal of a synchronous torch loop:
- a monitor thread's wake-up lag measures the machine, not this thread, and under the GIL it waits for the
  generating thread's Python for up to the 5 ms switch interval on a quiet machine too;
- wall time minus the thread's CPU time counts every blocking wait as starvation: on CUDA the thread blocks in
  `synchronize` for the whole forward pass, with several torch threads each waits in its barriers;
- scheduled against actual step times: a synchronous loop has no schedule, each step starts when the last ends.
Linux counts per thread the time it spent runnable without a CPU (`/proc/thread-self/schedstat`, second field,
ns): the starvation itself, blocking waits left out. With one torch thread (the default) the generating thread
does all the work and its wait is the figure; with more, a starved intra-op thread delays the step too, so the
waits of every thread of the process are added: an upper bound (too wide on a busy machine, never too narrow).
Where the kernel does not say (not Linux), one thread on CPU falls back to the thread's wall time minus its CPU
time (page-fault I/O counts too: too wide, never too narrow); otherwise nothing is measured and no summary is made.

Per request, the wait within each of its timed figures: its TTFT holds the wait of the prefill (the batch's start
-> its first token), its TPOT the wait of its decode (first -> last token) over its output tokens - 1, its E2E all
of it. `loop_lag_ms` is the larger of the first two, so the one lateness every latency bound is widened by covers
TTFT and TPOT without being the whole E2E wait (tens of decode steps, which would leave a sound TPOT undecided);
E2E accrues the wait of every step, so it has its own figure, `e2e_lag_ms`, which widens E2E bounds
(`gate.health.client_lateness_ms`).
"""

from __future__ import annotations

import os
import threading
import time
from array import array
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from ._lateness import spread

if TYPE_CHECKING:
    import torch

__all__ = ["Waits", "cpu_waits", "StarvedSteps", "RequestWait", "GenerationLateness", "waited_ns"]

Waits = Callable[[], dict[int, int]]
"""A snapshot of the cumulative ns each watched thread has waited for a CPU, by thread id."""

_SCHEDSTAT = "/proc/thread-self/schedstat"


def waited_ns(before: dict[int, int], after: dict[int, int]) -> int:
    """The wait between two snapshots: each thread's growth, a thread new since `before` counted whole (it was
    made inside the window); one gone since is left out."""
    return sum(max(0, ns - before.get(tid, 0)) for tid, ns in after.items())


def cpu_waits(threads: int, device: str) -> tuple[Waits, str] | None:
    """What reads the generating thread's CPU wait on this machine, and its source ('run_queue', 'off_cpu'); None
    where neither is sound (see the module doc)."""
    if _schedstat_works():
        return _RunQueue(every_thread=threads > 1), "run_queue"
    if threads == 1 and device == "cpu":
        return _off_cpu, "off_cpu"
    return None


def _schedstat_works() -> bool:
    """Whether the kernel keeps per-thread run-queue figures: the file reads, and counts this thread's time slices
    (a kernel that does not keep them writes zeros)."""
    try:
        fd = os.open(_SCHEDSTAT, os.O_RDONLY)
        try:
            fields = os.pread(fd, 256, 0).split()
        finally:
            os.close(fd)
        return len(fields) >= 3 and int(fields[2]) > 0
    except (OSError, ValueError):
        return False


def _off_cpu() -> dict[int, int]:
    """The calling thread's wall time minus its CPU time, as a running total (differences are what count)."""
    return {threading.get_native_id(): time.perf_counter_ns() - time.thread_time_ns()}


def _task_ids() -> list[int]:
    """The process's thread ids; the calling thread's alone where /proc/self/task cannot be listed (a /proc
    mounted hidepid, a sandbox) or lists a name that is no thread id: a wait read short, never a failed run."""
    try:
        return [int(t) for t in os.listdir("/proc/self/task")]
    except (OSError, ValueError):
        return [threading.get_native_id()]


class _RunQueue:
    """The run-queue wait of the calling thread, or of every thread of the process (`every_thread`), from
    schedstat; each thread's file is kept open and read from its start (about 2 us a read)."""

    def __init__(self, every_thread: bool) -> None:
        self.every_thread = every_thread
        self._files: dict[int, int] = {}

    def __call__(self) -> dict[int, int]:
        tids = _task_ids() if self.every_thread else [threading.get_native_id()]
        out = {}
        for tid in tids:
            ns = self._read(tid)
            if ns is not None:
                out[tid] = ns
        return out

    def _read(self, tid: int) -> int | None:
        try:
            fd = self._files.get(tid)
            if fd is None:
                fd = self._files[tid] = os.open(f"/proc/self/task/{tid}/schedstat", os.O_RDONLY)
            return int(os.pread(fd, 256, 0).split()[1])
        except (OSError, ValueError, IndexError):  # the thread has ended
            fd = self._files.pop(tid, None)
            if fd is not None:
                os.close(fd)
            return None

    def __del__(self) -> None:
        for fd in self._files.values():
            os.close(fd)


class StarvedSteps:
    """A LogitsProcessor beside the step clock: a wait snapshot at the start and after every decoding step."""

    def __init__(self, waits: Waits) -> None:
        self.waits = waits
        self.start = waits()
        self.steps: list[dict[int, int]] = []

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        self.steps.append(self.waits())
        return scores

    def until(self, step: int | None) -> float:
        """The ms waited from the start to the end of `step` (None: to now)."""
        return waited_ns(self.start, self.waits() if step is None else self.steps[step]) / 1e6

    def request(self, output_tokens: int, last: int | None) -> RequestWait:
        """The waits of a request of `output_tokens` whose last token closed step `last` (None: ended now)."""
        prefill, whole = self.until(0), self.until(last)
        per_token = (whole - prefill) / (output_tokens - 1) if output_tokens >= 2 else 0.0
        return RequestWait(max(prefill, per_token), whole)


class RequestWait(NamedTuple):
    """One request's CPU wait (ms): the most its TTFT or its TPOT holds (`timed`), and its E2E's (`e2e`)."""

    timed: float
    e2e: float


class GenerationLateness:
    """The in-process model's lateness over every batch it generated, as a client summary (`summary`)."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.timed_ms, self.e2e_ms = array("d"), array("d")
        self.window_s = self.thread_cpu_s = self.process_cpu_s = 0.0

    def add(self, waits: list[RequestWait], *, window_s: float, thread_cpu_s: float, process_cpu_s: float) -> None:
        """One batch: each request's waits; the batch's wall time and CPU times."""
        self.timed_ms.extend(w.timed for w in waits)
        self.e2e_ms.extend(w.e2e for w in waits)
        self.window_s += window_s
        self.thread_cpu_s += thread_cpu_s
        self.process_cpu_s += process_cpu_s

    def summary(self) -> dict[str, Any] | None:
        """The endpoint clients' summary shape (`_lateness.LatenessProbe.summary`): `loop_lag_ms` is the spread of
        the requests' waits within TTFT or TPOT, `e2e_lag_ms` within E2E, `cpu_share` the generating thread's;
        what has no meaning here is None."""
        if not self.window_s:
            return None
        return {
            "client": "hf", "event_loop": None, "window_s": self.window_s, "loop_lag_ms": spread(self.timed_ms),
            "tick_ms": None, "cpu_share": self.thread_cpu_s / self.window_s,
            "process_cpu_share": self.process_cpu_s / self.window_s, "loop_busy_share": None,
            "rx_dispatch_ms": None, "itl_batched_share": None, "itl_gaps": 0, "connect_ms": None,
            "preconnect_ms": None, "e2e_lag_ms": spread(self.e2e_ms), "lag_source": self.source,
            "reads_long_only": True,  # a wait for a CPU only lengthens a timed interval (`decision.latency`)
        }
