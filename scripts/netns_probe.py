#!/usr/bin/env python3
"""The effective link between two hosts (network namespaces) of scripts/netns.sh.

    netns_probe.py serve --address A --port P          in the far host: answers one `measure`
    netns_probe.py measure --address A --port P [--rate-bits R] [--json]

`measure` opens one TCP connection (TCP_NODELAY, as Gloo's pairs) and reports
  - the round trip: the median of 200 one-byte ping-pongs after 20 untimed ones, and the one-way
    latency taken as half of it (what a simulated link's latency_us stands for);
  - the throughput of one bulk transfer: 0.5 s worth of data at the configured rate (at least
    1 MB, at most 256 MB), timed from the first byte sent to the far host's acknowledgement of
    the last, the way an all-reduce's chunk is timed.
"""
import argparse
import json
import socket
import statistics
import sys
import time

PINGS, WARMUP_PINGS = 200, 20
CHUNK = 1 << 20


def read_exactly(sock, count):
    data = bytearray()
    while len(data) < count:
        part = sock.recv(min(count - len(data), CHUNK))
        if not part:
            raise ConnectionError("the far host closed the connection")
        data += part
    return bytes(data)


def serve(args):
    listener = socket.create_server((args.address, args.port))
    listener.settimeout(30)
    conn, _ = listener.accept()
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    with conn:
        for _ in range(WARMUP_PINGS + PINGS):
            conn.sendall(read_exactly(conn, 1))
        total = int.from_bytes(read_exactly(conn, 8), "big")
        left = total
        while left > 0:
            part = conn.recv(min(left, CHUNK))
            if not part:
                raise ConnectionError("the measuring host closed the connection")
            left -= len(part)
        conn.sendall(b"k")


def connect(args):
    deadline = time.monotonic() + 10
    while True:
        try:
            sock = socket.create_connection((args.address, args.port), timeout=30)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return sock
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def measure(args):
    sock = connect(args)
    rtts_s = []
    for i in range(WARMUP_PINGS + PINGS):
        start = time.perf_counter()
        sock.sendall(b"p")
        read_exactly(sock, 1)
        if i >= WARMUP_PINGS:
            rtts_s.append(time.perf_counter() - start)
    rtt_s = statistics.median(rtts_s)
    rate = args.rate_bits if args.rate_bits > 0 else 1e9
    total = int(min(max(rate / 8 * 0.5, 1 << 20), 256 << 20))
    block = b"\0" * CHUNK
    start = time.perf_counter()
    sock.sendall(total.to_bytes(8, "big"))
    left = total
    while left > 0:
        n = min(left, CHUNK)
        sock.sendall(block[:n])
        left -= n
    read_exactly(sock, 1)
    elapsed_s = time.perf_counter() - start
    sock.close()
    result = {
        "rtt_us": rtt_s * 1e6,
        "one_way_latency_us": rtt_s * 1e6 / 2,
        "throughput_bits_per_s": total * 8 / elapsed_s,
        "bytes": total,
        "configured_rate_bits_per_s": args.rate_bits,
    }
    if args.json:
        print(json.dumps(result))
        return
    configured = (f" (tbf rate {args.rate_bits / 1e6:g} Mbit/s)" if args.rate_bits > 0 else "")
    print(f"round trip   {result['rtt_us']:.1f} us (median of {PINGS} TCP ping-pongs); "
          f"one-way latency {result['one_way_latency_us']:.1f} us")
    print(f"throughput   {result['throughput_bits_per_s'] / 1e6:.1f} Mbit/s"
          f"{configured}: {total / 1e6:.1f} MB in {elapsed_s * 1e3:.1f} ms")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("mode", choices=["serve", "measure"])
    parser.add_argument("--address", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--rate-bits", type=float, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    try:
        serve(args) if args.mode == "serve" else measure(args)
    except (OSError, ConnectionError) as e:
        print(f"netns_probe.py {args.mode}: {e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
