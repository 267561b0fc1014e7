#!/usr/bin/env python3
"""The misbehaving part of the soak (bench/soak.sh): for DURATION seconds, one action at a time,
chosen at random with a fixed seed:

  ws_cancel      a WebSocket chat cancelled after its first tokens: done with finish_reason cancelled
  ws_resume      a WebSocket chat dropped mid-stream, resumed on a new connection with its token:
                 the events after the last one read, each once, ending in done
  sse_drop       an OpenAI stream read for a few events, then the connection closed
  rag_chat       an OpenAI chat with "rag": true: 200 with sources
  bad_json       a body that is not JSON: 400 naming it
  bad_utf8       a body with bytes that are not UTF-8: 400 naming UTF-8
  oversized      a body over server.max_message_bytes: 413
  bad_field      a field of the wrong type: 400 naming it
  long_prompt    a prompt longer than the context: 422 naming the context

Every outcome other than the one expected, or a documented refusal with Retry-After (429, 503),
counts as unexpected and is written with its reply. Prints one JSON object at the end:
{"actions": {...}, "unexpected": [...]}; exit 1 when anything was unexpected.

  bench/soak_chaos.py --url http://127.0.0.1:18080 --duration 1800 --max-message-bytes 1048576
"""
import argparse
import http.client
import json
import random
import socket
import sys
import time
import urllib.parse

import websocket  # websocket-client


def http_call(host, port, method, path, body=b"", timeout=120):
    c = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        c.request(method, path, body=body, headers={"Content-Type": "application/json"})
        r = c.getresponse()
        data = r.read()
        return r.status, dict((k.lower(), v) for k, v in r.getheaders()), data
    finally:
        c.close()


def retryable(status, headers):
    return status in (429, 503) and "retry-after" in headers


class chaos:
    def __init__(self, url, max_message_bytes, seed):
        u = urllib.parse.urlparse(url)
        self.host, self.port = u.hostname, u.port
        self.ws_url = f"ws://{self.host}:{self.port}/v1/ws"
        self.max_message_bytes = max_message_bytes
        self.rng = random.Random(seed)
        self.actions = {}
        self.unexpected = []

    def note(self, name, ok, detail=""):
        a = self.actions.setdefault(name, {"ok": 0, "refused_retryable": 0, "unexpected": 0})
        if ok is True:
            a["ok"] += 1
        elif ok == "retry":
            a["refused_retryable"] += 1
        else:
            a["unexpected"] += 1
            if len(self.unexpected) < 50:
                self.unexpected.append({"action": name, "detail": str(detail)[:500]})

    def expect_error(self, name, body, status, needle):
        st, h, data = http_call(self.host, self.port, "POST", "/v1/chat/completions", body)
        if retryable(st, h):
            return self.note(name, "retry")
        try:
            msg = json.loads(data)["error"]["message"]
        except Exception:
            return self.note(name, False, f"{st} not an error object: {data[:200]!r}")
        ok = st == status and needle.lower() in msg.lower()
        self.note(name, ok, f"{st} {msg}")

    def chat_body(self, content, max_tokens=16, **extra):
        return json.dumps({"messages": [{"role": "user", "content": content}], "max_tokens": max_tokens, **extra}).encode()

    # -- WebSocket ------------------------------------------------------------------------------
    def ws_start(self, message, max_tokens):
        ws = websocket.create_connection(self.ws_url, timeout=120)
        ws.send(json.dumps({"type": "chat", "message": message, "max_tokens": max_tokens, "cache": False}))
        return ws

    def ws_cancel(self):
        ws = self.ws_start("Tell me a long story about a lighthouse keeper.", 200)
        try:
            start, n, finish = None, 0, None
            while True:
                ev = json.loads(ws.recv())
                if ev["type"] == "error":
                    return self.note("ws_cancel", "retry" if ev.get("retry_after_ms") else False, ev)
                if ev["type"] == "start":
                    start = ev
                elif ev["type"] == "token":
                    n += 1
                    if n == 3:
                        ws.send(json.dumps({"type": "cancel", "request_id": start["request_id"]}))
                elif ev["type"] == "done":
                    finish = ev.get("finish_reason")
                    break
            self.note("ws_cancel", finish in ("cancelled", "length", "stop"), f"finish_reason {finish}")
        finally:
            ws.close()

    def ws_resume(self):
        ws = self.ws_start("Describe a walk through a forest in autumn.", 48)
        start, seen = None, []
        try:
            while len(seen) < self.rng.randint(1, 6):
                ev = json.loads(ws.recv())
                if ev["type"] == "error":
                    return self.note("ws_resume", "retry" if ev.get("retry_after_ms") else False, ev)
                if ev["type"] == "start":
                    start = ev
                seen.append(ev)
                if ev["type"] == "done":
                    break
        finally:
            ws.sock.shutdown(socket.SHUT_RDWR)  # abrupt: no close frame
            ws.sock.close()
        if seen[-1]["type"] == "done":
            return self.note("ws_resume", True)
        ws = websocket.create_connection(self.ws_url, timeout=120)
        try:
            ws.send(json.dumps({"type": "resume", "request_id": start["request_id"],
                                "last_event_id": seen[-1]["event_id"], "resume_token": start["resume_token"]}))
            ids = [e["event_id"] for e in seen]
            while True:
                ev = json.loads(ws.recv())
                if ev["type"] == "error":
                    return self.note("ws_resume", False, ev)
                if "event_id" in ev:
                    ids.append(ev["event_id"])
                if ev["type"] == "done":
                    break
            ok = ids == list(range(ids[0], ids[0] + len(ids)))
            self.note("ws_resume", ok, f"event ids {ids}")
        finally:
            ws.close()

    # -- HTTP -----------------------------------------------------------------------------------
    def sse_drop(self):
        c = http.client.HTTPConnection(self.host, self.port, timeout=120)
        try:
            c.request("POST", "/v1/chat/completions", body=self.chat_body("Write a poem about rivers.", 120, stream=True),
                      headers={"Content-Type": "application/json"})
            r = c.getresponse()
            if retryable(r.status, dict((k.lower(), v) for k, v in r.getheaders())):
                return self.note("sse_drop", "retry")
            if r.status != 200:
                return self.note("sse_drop", False, f"{r.status} {r.read()[:200]!r}")
            got = 0
            while got < self.rng.randint(1, 5):
                line = r.fp.readline()
                if not line:
                    break
                got += line.startswith(b"data: ")
            self.note("sse_drop", got > 0, f"{got} events before the drop")
        finally:
            c.sock and c.sock.close()
            c.close()

    def rag_chat(self):
        body = self.chat_body("How long does a house cat sleep?", 16, rag=True, cache=False)
        st, h, data = http_call(self.host, self.port, "POST", "/v1/chat/completions", body)
        if retryable(st, h):
            return self.note("rag_chat", "retry")
        try:
            ok = st == 200 and len(json.loads(data).get("sources", [])) > 0
        except Exception:
            ok = False
        self.note("rag_chat", ok, f"{st} {data[:200]!r}")

    def run_one(self):
        name = self.rng.choice(["ws_cancel", "ws_resume", "sse_drop", "rag_chat", "bad_json", "bad_utf8",
                                "oversized", "bad_field", "long_prompt"])
        try:
            if name == "bad_json":
                self.expect_error(name, b'{"messages": [', 400, "malformed JSON")
            elif name == "bad_utf8":
                self.expect_error(name, b'{"messages": [{"role": "user", "content": "caf\xc3\x28"}]}', 400, "UTF-8")
            elif name == "oversized":
                body = self.chat_body("x" * (self.max_message_bytes + 10))
                try:
                    st, h, data = http_call(self.host, self.port, "POST", "/v1/chat/completions", body)
                    self.note(name, st == 413, f"{st} {data[:200]!r}")
                except (ConnectionError, OSError) as e:  # closed while we still wrote: allowed
                    self.note(name, True, e)
            elif name == "bad_field":
                self.expect_error(name, json.dumps({"messages": [{"role": "user", "content": "hi"}],
                                                    "max_tokens": "many"}).encode(), 400, "max_tokens")
            elif name == "long_prompt":
                self.expect_error(name, self.chat_body("word " * 20000), 422, "context")
            else:
                getattr(self, name)()
        except Exception as e:  # a reset, a timeout, a protocol error: all unexpected
            self.note(name, False, f"{type(e).__name__}: {e}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", required=True)
    ap.add_argument("--duration", type=float, default=1800)
    ap.add_argument("--max-message-bytes", type=int, default=1 << 20)
    ap.add_argument("--seed", type=int, default=23)
    a = ap.parse_args()
    c = chaos(a.url, a.max_message_bytes, a.seed)
    t_end = time.monotonic() + a.duration
    while time.monotonic() < t_end:
        c.run_one()
    print(json.dumps({"actions": c.actions, "unexpected": c.unexpected}, indent=1))
    return 1 if c.unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
