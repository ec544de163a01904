"""End-of-stream work takes turns (`backends._turns`): one stream's per event-loop iteration, so a socket that
became readable meanwhile is served (its bytes stamped) before the next stream's work; a cancelled turn never
holds the others up. And the lean client's end stamp is the arrival of the response's last bytes."""

from __future__ import annotations

import asyncio
import socket

import pytest

from releasegate.backends._dispatch import loop_factory
from releasegate.backends._sse_client import LeanClient
from releasegate.backends._turns import my_turn
from releasegate.testing import StubBehaviour, StubServer

LOOPS = ["asyncio", "uvloop"]


def run(main, loop: str):
    with asyncio.Runner(loop_factory=loop_factory(loop)) as runner:
        return runner.run(main())


@pytest.mark.parametrize("loop", LOOPS)
def test_a_socket_readable_during_one_turn_is_served_before_the_next(loop):
    log: list[str] = []

    async def main():
        ours, theirs = socket.socketpair()
        ours.setblocking(False)
        running = asyncio.get_running_loop()
        running.add_reader(ours, lambda: log.append(f"read {ours.recv(16).decode()}"))

        async def stream(i: int) -> None:
            await my_turn()
            log.append(f"turn {i}")
            theirs.send(str(i).encode())  # bytes arrive while this turn's work runs

        try:
            await asyncio.gather(*(stream(i) for i in range(4)))
            await asyncio.sleep(0.01)
        finally:
            running.remove_reader(ours)
            ours.close()
            theirs.close()

    run(main, loop)
    assert log == ["turn 0", "read 0", "turn 1", "read 1", "turn 2", "read 2", "turn 3", "read 3"]


@pytest.mark.parametrize("loop", LOOPS)
def test_a_lone_turn_does_not_yield(loop):
    order: list[str] = []

    async def main():
        running = asyncio.get_running_loop()
        running.call_soon(order.append, "other callback")
        await my_turn()
        order.append("turn")
        await asyncio.sleep(0)
        await my_turn()  # the first turn's iteration has passed: granted at once again
        order.append("second turn")

    run(main, loop)
    assert order[0] == "turn"


@pytest.mark.parametrize("loop", LOOPS)
def test_cancelled_turns_never_hold_the_others_up(loop):
    done: list[int] = []

    async def main():
        tasks: list[asyncio.Task[None]] = []

        async def stream(i: int) -> None:
            await my_turn()
            done.append(i)
            if i == 0:
                tasks[1].cancel()  # still waiting: passed over
                asyncio.get_running_loop().call_soon(tasks[2].cancel)  # runs just after task 2 is granted its turn

        tasks += [asyncio.create_task(stream(i)) for i in range(5)]
        results = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 5)
        return [type(r).__name__ for r in results]

    got = run(main, loop)
    assert done == [0, 3, 4]
    assert got == ["NoneType", "CancelledError", "CancelledError", "NoneType", "NoneType"]


@pytest.mark.parametrize("loop", LOOPS)
def test_streams_that_end_together_all_come_back_whole(loop):
    stub = StubServer(StubBehaviour(ttft_ms=5, itl_ms=1, tokens=8))

    async def main():
        async with LeanClient(stub.base_url, None, connect_timeout=5, stall_timeout=5) as client:
            return await asyncio.gather(*(client.stream("/chat/completions", b'{"messages": [], "stream": true}')
                                          for _ in range(16)))

    with stub:
        got = run(main, loop)
    for lines, stamps, end, sent, _ in got:
        assert [ln for ln in lines if ln.startswith("data:")][-1] == "data: [DONE]"
        assert len(stamps) == len(lines) and stamps == sorted(stamps)
        assert sent < stamps[0] <= end


@pytest.mark.parametrize("loop", LOOPS)
def test_the_end_stamp_is_the_arrival_of_the_last_bytes(loop):
    stub = StubServer(StubBehaviour(ttft_ms=5, itl_ms=1, tokens=4))

    async def main():
        async with LeanClient(stub.base_url, None, connect_timeout=5, stall_timeout=5) as client:
            return await client.stream("/chat/completions", b'{"messages": [], "stream": true}')

    with stub:
        lines, stamps, end, _, _ = run(main, loop)
    # the stub writes `[DONE]` and the chunked terminator at once: they arrive in one read, stamped once; the
    # end is that read's stamp, not the moment the waiting coroutine ran again
    assert end == stamps[-1]
