#!/usr/bin/env python3
"""Idle footprint of the stack's service processes, read from /proc (Linux only).

    python3 scripts/footprint.py [DATA_DIR]          one line per service (bench.sh prints it)
    python3 scripts/footprint.py --detail [DATA_DIR] and where each one's memory is

For each service whose pid file is in DATA_DIR/run (default .data): VmRSS, RssAnon and
RssFile from /proc/PID/status, PSS from /proc/PID/smaps_rollup (the shared libraries' pages,
counted in full in each service's RSS, divided among the processes that map them), the number of threads grouped by name (/proc/PID/task/*/comm,
a trailing "-N", "_N" or ".N" dropped), and with --detail where the resident memory lies,
from /proc/PID/smaps: the main heap, glibc's malloc arenas (the secondary arenas are 64 MB
aligned reservations, one per thread that allocated while the others were busy, up to 8 per
core), thread stacks (anonymous mappings behind a guard page), other anonymous memory, and
the shared libraries and data files that pages were read from.
"""
import os
import re
import sys

SERVICES = ["registration", "authentication", "transaction", "oob", "pii"]

# Why each group of threads exists (thread names as the kernel keeps them: 15 characters).
REASONS = [
    (r"^signet-", "the main thread: runs the service group until shutdown"),
    (r"^MHD-", "libmicrohttpd: its epoll threads (SIGNET_HTTP_THREADS), where requests are received"),
    (r"^http-loop", "event loops (SIGNET_HTTP_MODE=loop, SIGNET_HTTP_THREADS of them): each receives requests on its own libmicrohttpd daemon and runs their handlers and libpq statements"),
    (r"^handler", "handler threads (BlockingExecutor), started on demand up to SIGNET_HANDLER_THREADS: "
                  "handlers that wait or block in libpq, and the event consumers' handlers"),
    (r"^rdk:main", "librdkafka: one per client (the producer, the group consumer, the broadcast listener)"),
    (r"^rdk:broker", "librdkafka: one per broker per client: the bootstrap address, each broker, the "
                     "internal queue, and each consumer's group coordinator"),
    (r"^outbox-relay", "the outbox relay's event loop: its turns, their libpq statements (non-blocking) and the wait for the broker's acknowledgements"),
    (r"^kafka-producer", "our poll thread of the producer: delivery reports"),
    (r"^kafka-consumer", "our poll thread of each consumer: fetched messages and rebalances"),
    (r"default-qos$", "Swift's cooperative pool (one per core)"),
    (r"overcommit$", "libdispatch threads serving serial queues (libpq queues off the handler threads, "
                     "the Kafka producer's blocking calls, timers); idle ones exit after a few seconds"),
    (r"background-qos$", "libdispatch's background queue (Foundation's and the runtime's own work)"),
]


def reason(group):
    for pattern, why in REASONS:
        if re.search(pattern, group):
            return why
    return "?"


def status(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            out[key] = value.strip()
    return out


def kb(value):
    return int(value.split()[0]) if value else 0


def rollup(pid):
    """/proc/PID/smaps_rollup in kB (Pss: shared pages divided among the processes mapping them)."""
    out = {}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                key, _, value = line.partition(":")
                if value.strip().endswith("kB"):
                    out[key] = kb(value.strip())
    except OSError:
        pass
    return out


def thread_groups(pid):
    groups = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = re.sub(r"[-_.]?[0-9]+$", "", f.read().strip())
            # libdispatch's names ("com.apple.root.default-qos.overcommit") keep their tail.
            m = re.search(r"(default|background|utility|user-initiated|user-interactive|maintenance)?-?qos(\.overcommit)?$", name)
            if m and "qos" in name:
                name = "…" + (m.group(1) + "-qos" if m.group(1) else "qos") + (m.group(2) or "")
        except OSError:
            continue
        groups[name] = groups.get(name, 0) + 1
    return sorted(groups.items(), key=lambda kv: (-kv[1], kv[0]))


def mappings(pid):
    """(start, end, perms, path, rss_kb, anon_kb) per mapping of /proc/PID/smaps."""
    maps = []
    header = re.compile(r"^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$")
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            m = header.match(line)
            if m:
                maps.append([int(m.group(1), 16), int(m.group(2), 16), m.group(3), m.group(4), 0, 0])
            elif line.startswith("Rss:"):
                maps[-1][4] = kb(line.split(":", 1)[1])
            elif line.startswith("Anonymous:"):
                maps[-1][5] = kb(line.split(":", 1)[1])
    return maps


def where(pid):
    """Resident kB by place: heap, arenas (count), stacks (count), other anon, files."""
    maps = mappings(pid)
    places = {"main heap [heap]": 0, "malloc arenas": 0, "thread stacks": 0, "other anonymous": 0}
    arenas = stacks = 0
    files = {}
    arena_size = 64 << 20
    for i, (start, end, perms, path, rss, anon) in enumerate(maps):
        if path == "[heap]":
            places["main heap [heap]"] += rss
        elif path.startswith("/"):
            name = os.path.basename(path)
            files[name] = files.get(name, 0) + rss
            if anon:  # private copies of a library's data (relocations, .data, .bss)
                places["other anonymous"] += anon
                files[name] -= anon
        elif path in ("[stack]",):
            places["thread stacks"] += rss
        elif path == "" and perms.startswith("rw"):
            # A malloc arena: a 64 MB aligned reservation, its used part read-write and the
            # rest PROT_NONE right after it. A thread stack: read-write right after a guard
            # page (PROT_NONE) of its own.
            nxt = maps[i + 1] if i + 1 < len(maps) else None
            prev = maps[i - 1] if i > 0 else None
            if start % arena_size == 0 and (end - start == arena_size or (nxt and nxt[0] == end and nxt[2].startswith("---") and nxt[1] - start == arena_size)):
                places["malloc arenas"] += rss
                arenas += 1
            elif prev and prev[1] == start and prev[2].startswith("---") and prev[3] == "" and prev[1] - prev[0] <= 64 << 10:
                places["thread stacks"] += rss
                stacks += 1
            else:
                places["other anonymous"] += rss
    return places, arenas, stacks, files


def main():
    seen = {}
    args = sys.argv[1:]
    detail = "--detail" in args
    args = [a for a in args if a != "--detail"]
    data = args[0] if args else ".data"
    for service in SERVICES:
        try:
            with open(f"{data}/run/{service}.pid") as f:
                pid = int(f.read().strip())
            st = status(pid)
        except (OSError, ValueError):
            continue
        tg = thread_groups(pid)
        for n, _ in tg:
            seen.setdefault(reason(n), []).append(n)
        groups = ", ".join(f"{n} {c}" for n, c in tg)
        pss = rollup(pid).get("Pss", 0)
        print(f"{service:<16} {kb(st.get('VmRSS')) / 1024:5.1f} MB (anon {kb(st.get('RssAnon')) / 1024:4.1f}, file {kb(st.get('RssFile')) / 1024:4.1f}; PSS {pss / 1024:4.1f})"
              f" {st.get('Threads', '?'):>3} threads   {groups}")
        if not detail:
            continue
        places, arenas, stacks, files = where(pid)
        print(f"    {'':<2}" + "  ".join(
            f"{name} {rss / 1024:.1f}" + (f" ({arenas})" if name == "malloc arenas" else f" ({stacks})" if name == "thread stacks" else "")
            for name, rss in places.items()))
        top = sorted(files.items(), key=lambda kv: -kv[1])[:8]
        print("      files: " + ", ".join(f"{n} {r / 1024:.1f}" for n, r in top if r >= 256))
    if seen:
        print("threads, why:")
        for why, names in seen.items():
            print(f"  {', '.join(sorted(set(names)))}: {why}")


if __name__ == "__main__":
    main()
