"""The API emulator (`trainops.cluster.emulator`) served from a thread of its own: the
cluster tests are synchronous, and so is `trainops sandbox`'s foreground."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import kmock
from kmock._internal import rendering

from trainops.cluster.emulator import ApiEmulator


class RunningEmulator:
    """The emulator served on 127.0.0.1 from a thread of its own (the tests are sync)."""

    def __init__(self, emulator: ApiEmulator, server: Any, loop: asyncio.AbstractEventLoop):
        self.emulator = emulator
        self.url = str(server.url).rstrip("/")
        self._loop = loop

    def call(self, fn: Callable[[ApiEmulator], Any]) -> Any:
        """Run `fn(emulator)` on the server's event loop (where its state lives)."""
        done: concurrent.futures.Future[Any] = concurrent.futures.Future()

        def apply() -> None:
            try:
                done.set_result(fn(self.emulator))
            except Exception as err:  # handed back to the test
                done.set_exception(err)

        self._loop.call_soon_threadsafe(apply)
        return done.result(timeout=10)

    def add(self, *objects: dict[str, Any]) -> None:
        def store(emulator: ApiEmulator) -> None:
            for obj in objects:
                emulator.add(obj)

        self.call(store)

    @property
    def requests(self) -> list[rendering.Request]:
        return list(self.call(lambda e: list(iter(e))))


@contextmanager
def serve(kinds: dict[tuple[str, str], tuple[str, bool]]) -> Iterator[RunningEmulator]:
    """Start the emulator serving `kinds` on a free loopback port; stop it afterwards."""
    started = threading.Event()
    holder: dict[str, Any] = {}

    async def main() -> None:
        async with ApiEmulator() as emulator, kmock.Server(emulator) as server:
            for (api_version, kind), (plural, namespaced) in kinds.items():
                emulator.declare(api_version, kind, plural, namespaced)
            stop = asyncio.Event()
            holder.update(
                running=RunningEmulator(emulator, server, asyncio.get_running_loop()), stop=stop
            )
            started.set()
            await stop.wait()

    def thread_main() -> None:
        try:
            asyncio.run(main())
        except BaseException as err:  # reported by the waiting test
            holder["error"] = err
            started.set()

    thread = threading.Thread(target=thread_main, name="k8s-api-emulator", daemon=True)
    thread.start()
    if not started.wait(timeout=30) or "error" in holder:
        raise RuntimeError(f"the API emulator did not start: {holder.get('error')}")
    running: RunningEmulator = holder["running"]
    try:
        yield running
    finally:
        running._loop.call_soon_threadsafe(holder["stop"].set)
        thread.join(timeout=10)
