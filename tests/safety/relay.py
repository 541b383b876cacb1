"""A delaying TCP relay in front of a Redis node: `python relay.py LISTEN_ADDR PORT TO_ADDR
TO_PORT`, a child of the run (this kernel has no netem qdisc). Every chunk read from either side
is written to the other `delay` seconds later, in order (a byte stream stays a stream). The
delay is read from stdin, one line each time it changes (seconds, one way); it starts at 0.
It prints "ready" once it listens."""

import asyncio
import sys
from typing import Optional, Tuple


class Delay:
    seconds = 0.0


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    loop = asyncio.get_running_loop()
    queue: "asyncio.Queue[Tuple[float, Optional[bytes]]]" = asyncio.Queue()

    async def pump() -> None:
        # FIFO: a chunk waits for its own due time and for every chunk before it, so a delay
        # that shrinks never reorders bytes
        while True:
            due, data = await queue.get()
            await asyncio.sleep(max(0.0, due - loop.time()))
            if data is None:
                writer.close()
                return
            writer.write(data)
            await writer.drain()

    task = asyncio.create_task(pump())
    try:
        while True:
            data = await reader.read(65536)
            queue.put_nowait((loop.time() + Delay.seconds, data or None))
            if not data:
                break
        await task
    except (ConnectionError, OSError):
        task.cancel()
        writer.close()


async def main(listen: str, port: int, to: str, to_port: int) -> None:
    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(to, to_port)
        except OSError:
            writer.close()
            return
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer),
                             return_exceptions=True)

    server = await asyncio.start_server(serve, listen, port)
    loop = asyncio.get_running_loop()

    def control() -> None:
        line = sys.stdin.readline()
        if not line:  # the run closed our stdin: it is gone
            loop.stop()
            return
        Delay.seconds = float(line)

    loop.add_reader(sys.stdin.fileno(), control)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    a = sys.argv[1:]
    try:
        asyncio.run(main(a[0], int(a[1]), a[2], int(a[3])))
    except RuntimeError:  # the loop stopped by control()
        pass
