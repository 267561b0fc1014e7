#!/usr/bin/env python3
"""A full disk during saves (issue 23's faults). Needs root: it mounts a small tmpfs and keeps the
answer caches (saved every second) and the knowledge base there. With documents ingested and
answers cached, the disk is filled; then

  - chats go on being answered (200), from the caches and generated,
  - an ingest is refused with 500 naming the unsaved change (not acknowledged),
  - the log says so and /metrics counts it (actorserve_rag_save_errors_total,
    actorserve_cache_save_errors_total),
  - the knowledge-base file on disk is the one saved before the disk filled, byte for byte;
and once the disk has room again, the same ingest is saved (200), and after a kill -9 and a
restart every acknowledged document is back.

Prints a JSON summary; exit 1 when a check fails.

  sudo bench/fault_disk.py            # about a minute
"""
import argparse
import hashlib
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fault_kill import ROOT, call, listed_ids, start, write_config  # noqa: E402


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def metric(port, name):
    st, body = call(port, "GET", "/metrics")
    for line in body.decode().splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            return float(line.rsplit(" ", 1)[1])
    return None


def ingest(port, doc_id, text):
    st, body = call(port, "POST", "/v1/rag/documents", json.dumps({"id": doc_id, "text": text}).encode(), timeout=60)
    return st, json.loads(body)


def chat(port, n):
    q = {"messages": [{"role": "user", "content": f"Say the number {n}."}], "max_tokens": 16, "temperature": 0}
    st, body = call(port, "POST", "/v1/chat/completions", json.dumps(q).encode(), timeout=120)
    return st, json.loads(body)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/bin"))
    ap.add_argument("--out", default=os.path.join(ROOT, "bench/out/fault-disk-" + time.strftime("%Y%m%d-%H%M%S")))
    ap.add_argument("--port", type=int, default=18091)
    ap.add_argument("--size", default="2m", help="the tmpfs's size")
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("fault_disk: needs root (it mounts a tmpfs)", file=sys.stderr)
        return 2
    disk = os.path.join(a.out, "disk")
    os.makedirs(disk, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={a.size}", "tmpfs", disk], check=True)
    checks, notes = {}, {}
    p = None
    try:
        config = write_config(disk, a.port)  # the caches and the knowledge base on the tmpfs
        p, ready = start(a.bin, config, os.path.join(a.out, "server-1.log"), a.port)
        assert ready, "the server did not start"
        acked = set()
        for i in range(5):
            st, r = ingest(a.port, f"before-{i}", f"Before the disk filled, box {i} held {i * 7} marbles.")
            if st == 200:
                acked.add(f"before-{i}")
        for i in range(5):
            chat(a.port, i)
        time.sleep(2.5)  # a cache save or two
        kb = os.path.join(disk, "knowledge.rag")
        kb_before = sha(kb)

        filler = os.path.join(disk, "filler")
        with open(filler, "wb") as f:
            try:
                while True:
                    f.write(b"\0" * 65536)
                    f.flush()
            except OSError as e:
                notes["fill"] = str(e)
        # ENOSPC may come at the flush or at close: either way the disk is full now
        st, r = ingest(a.port, "during-0", "While the disk was full, box 99 held nothing.")
        checks["ingest_refused_500"] = st == 500 and "not saved" in r.get("error", {}).get("message", "")
        notes["ingest_reply"] = r
        answered = [chat(a.port, n)[0] for n in (1, 2, 100, 101)]  # two cached, two generated
        checks["chats_served"] = answered == [200, 200, 200, 200]
        time.sleep(2.5)
        checks["rag_save_errors_counted"] = (metric(a.port, "actorserve_rag_save_errors_total") or 0) >= 1
        checks["cache_save_errors_counted"] = (metric(a.port, "actorserve_cache_save_errors_total") or 0) >= 1
        checks["kb_file_kept"] = sha(kb) == kb_before
        log = open(os.path.join(a.out, "server-1.log")).read()
        checks["log_says_so"] = "No space left on device" in log and "not saved" in log

        os.remove(filler)
        st, r = ingest(a.port, "during-0", "While the disk was full, box 99 held nothing.")
        checks["ingest_saved_after"] = st == 200
        if st == 200:
            acked.add("during-0")
        checks["kb_file_updated"] = sha(kb) != kb_before
        os.kill(p.pid, signal.SIGKILL)
        p.wait()

        p, ready = start(a.bin, config, os.path.join(a.out, "server-2.log"), a.port)
        checks["restarted"] = ready
        ids = listed_ids(a.port) if ready else set()
        checks["acknowledged_documents_back"] = acked <= ids
        notes["acknowledged"] = sorted(acked)
    finally:
        if p and p.poll() is None:
            p.terminate()
            p.wait()
        subprocess.run(["umount", disk])
    summary = {"checks": checks, "notes": notes, "passed": all(checks.values())}
    json.dump(summary, open(os.path.join(a.out, "summary.json"), "w"), indent=1)
    print(json.dumps(summary, indent=1))
    return 0 if summary["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
