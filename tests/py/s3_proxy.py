"""A TCP proxy in front of an S3 server, for the object-storage tests and benchmark.

    python3 s3_proxy.py LISTEN_PORT UPSTREAM_PORT [--delay-ms MS] [--fail-after N]

--delay-ms: every message from a client (an HTTP request on a kept-alive connection)
waits MS milliseconds before it goes upstream: a bucket's round trip, added to a
server on 127.0.0.1.
--fail-after: after N client messages, every connection is cut and new ones are
refused at once: a server that dies in the middle of a write.
Prints "ready" once listening.
"""

import argparse
import asyncio
import sys


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("listen", type=int)
    ap.add_argument("upstream", type=int)
    ap.add_argument("--delay-ms", type=float, default=0.0)
    ap.add_argument("--fail-after", type=int, default=0)
    a = ap.parse_args()
    seen = 0
    dead = asyncio.Event()
    writers = set()

    async def pipe(reader, writer, delay, counts):
        nonlocal seen
        try:
            while not dead.is_set():
                data = await reader.read(1 << 16)
                if not data:
                    break
                if counts:
                    seen += 1
                    if a.fail_after and seen > a.fail_after:
                        dead.set()
                        for w in list(writers):
                            w.close()
                        break
                    if delay:
                        await asyncio.sleep(delay)
                writer.write(data)
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    async def serve(creader, cwriter):
        if dead.is_set():
            cwriter.close()
            return
        try:
            ureader, uwriter = await asyncio.open_connection("127.0.0.1", a.upstream)
        except OSError:
            cwriter.close()
            return
        writers.update((cwriter, uwriter))
        await asyncio.gather(
            pipe(creader, uwriter, a.delay_ms / 1e3, True),
            pipe(ureader, cwriter, 0, False),
        )
        writers.discard(cwriter)
        writers.discard(uwriter)

    server = await asyncio.start_server(serve, "127.0.0.1", a.listen, backlog=1024)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
