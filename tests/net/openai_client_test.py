#!/usr/bin/env python3
"""The server's OpenAI-compatible HTTP API, driven by the official openai client.

Run against a live server (tests/net/run_server_test.sh starts one):

    ACTORSERVE_URL=http://127.0.0.1:8080 .venv-test/bin/python tests/net/openai_client_test.py

Prints one line per check and a closing "N passed, N failed" line; exits
non-zero when any check fails. The expected behaviour is docs/protocol.md's.
"""

import json
import os
import re
import subprocess
import sys
import traceback
import urllib.error
import urllib.request

import openai
from openai import OpenAI

URL = os.environ.get("ACTORSERVE_URL", "http://127.0.0.1:8080").rstrip("/")
PROMTOOL = os.environ.get("PROMTOOL", "/usr/bin/promtool")
HTTP_TIMEOUT_S = 120

client = OpenAI(base_url=URL + "/v1", api_key="none", max_retries=0, timeout=HTTP_TIMEOUT_S)

CHAT_MESSAGES = [{"role": "user", "content": "What is the capital of France? Answer in one sentence."}]
COMPLETION_PROMPT = "The capital of France is"

passed = 0
failed = 0
state = {}  # results that later checks build on


def check(name):
    def run(fn):
        global passed, failed
        try:
            fn()
        except AssertionError as e:
            failed += 1
            print(f"FAIL {name}: {e}", flush=True)
        except Exception as e:  # an unexpected exception is a failure too
            failed += 1
            print(f"FAIL {name}: {type(e).__name__}: {e}", flush=True)
            traceback.print_exc(limit=3)
        else:
            passed += 1
            print(f"ok   {name}", flush=True)
        return fn
    return run


def http(method, path, body=None, headers=None):
    """(status, headers, body bytes) of a plain HTTP request; HTTP errors are answers too."""
    req = urllib.request.Request(URL + path, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=HTTP_TIMEOUT_S) as resp:
            return resp.status, resp.headers, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def model_id():
    return state.get("model")


# ------------------------------------------------------------------ models --
@check("models.list lists one model")
def _():
    page = client.models.list()
    ids = [m.id for m in page.data]
    assert len(ids) == 1, f"expected one model, got {ids}"
    assert isinstance(ids[0], str) and ids[0], f"empty model id: {ids}"
    assert page.data[0].object == "model", f"object is {page.data[0].object!r}, expected 'model'"
    state["model"] = ids[0]
    print(f"     model: {ids[0]}")


# ------------------------------------------------------ chat, non-streaming --
@check("chat.completions non-streaming, greedy")
def _():
    r = client.chat.completions.create(
        model=model_id(), messages=CHAT_MESSAGES, temperature=0, max_tokens=24)
    assert r.object == "chat.completion", f"object is {r.object!r}"
    assert len(r.choices) == 1, f"expected 1 choice, got {len(r.choices)}"
    c = r.choices[0]
    assert c.message.role == "assistant", f"role is {c.message.role!r}"
    text = c.message.content
    assert isinstance(text, str) and text.strip(), f"no text: {text!r}"
    assert c.finish_reason in ("stop", "length"), f"finish_reason is {c.finish_reason!r}"
    u = r.usage
    assert u is not None, "no usage"
    assert u.prompt_tokens > 0, f"usage.prompt_tokens = {u.prompt_tokens}"
    assert u.completion_tokens > 0, f"usage.completion_tokens = {u.completion_tokens}"
    assert u.completion_tokens <= 24, f"usage.completion_tokens = {u.completion_tokens} > max_tokens 24"
    assert u.total_tokens == u.prompt_tokens + u.completion_tokens, \
        f"usage.total_tokens = {u.total_tokens}, expected {u.prompt_tokens} + {u.completion_tokens}"
    if c.finish_reason == "length":
        assert u.completion_tokens == 24, f"finish_reason length after {u.completion_tokens} of 24 tokens"
    state["chat"] = (text, c.finish_reason, u.completion_tokens)
    print(f"     text: {text!r} ({c.finish_reason}, {u.prompt_tokens}+{u.completion_tokens} tokens)")


# ---------------------------------------------------------- chat, streaming --
@check("chat.completions streaming with include_usage equals the non-streaming answer")
def _():
    assert "chat" in state, "needs the non-streaming check's answer"
    want_text, want_finish, want_tokens = state["chat"]
    chunks = list(client.chat.completions.create(
        model=model_id(), messages=CHAT_MESSAGES, temperature=0, max_tokens=24,
        stream=True, stream_options={"include_usage": True}))
    assert chunks, "no chunks"
    for ch in chunks:
        assert ch.object == "chat.completion.chunk", f"chunk object is {ch.object!r}"
    assert len({ch.id for ch in chunks}) == 1, f"chunks carry several ids: {sorted({ch.id for ch in chunks})}"
    content = [ch for ch in chunks if ch.choices]
    usage = [ch for ch in chunks if not ch.choices]
    assert content, "no chunk with choices"
    assert content[0].choices[0].delta.role == "assistant", \
        f"first chunk's delta.role is {content[0].choices[0].delta.role!r}"
    pieces = [ch.choices[0].delta.content for ch in content if ch.choices[0].delta.content]
    text = "".join(pieces)
    assert text == want_text, f"streamed text {text!r} != non-streaming text {want_text!r}"
    assert len(pieces) > 1, f"the text came in {len(pieces)} piece(s): not streamed"
    last = content[-1].choices[0]
    assert last.finish_reason == want_finish, \
        f"last content chunk's finish_reason is {last.finish_reason!r}, expected {want_finish!r}"
    for ch in content[:-1]:
        assert ch.choices[0].finish_reason is None, \
            f"finish_reason {ch.choices[0].finish_reason!r} before the last content chunk"
    assert len(usage) == 1, f"expected one usage chunk (choices: []), got {len(usage)}"
    assert chunks[-1] is usage[0], "the usage chunk is not the last chunk"
    u = usage[0].usage
    assert u is not None, "the chunk with choices: [] has no usage"
    assert u.completion_tokens == want_tokens, \
        f"streamed usage.completion_tokens {u.completion_tokens} != non-streaming {want_tokens}"
    assert u.prompt_tokens > 0, f"usage.prompt_tokens = {u.prompt_tokens}"
    print(f"     {len(pieces)} content pieces, usage {u.prompt_tokens}+{u.completion_tokens}")


@check("chat.completions streaming wire format: text/event-stream, data: lines, data: [DONE]")
def _():
    body = json.dumps({"model": model_id(), "messages": CHAT_MESSAGES, "temperature": 0,
                       "max_tokens": 8, "stream": True}).encode()
    status, headers, raw = http("POST", "/v1/chat/completions", body,
                                {"Content-Type": "application/json"})
    assert status == 200, f"status {status}: {raw[:300]!r}"
    ctype = headers.get("Content-Type", "")
    assert ctype.startswith("text/event-stream"), f"Content-Type is {ctype!r}"
    events = [line[len("data: "):] for line in raw.decode().splitlines() if line.startswith("data: ")]
    assert events, f"no data: lines in {raw[:300]!r}"
    assert events[-1] == "[DONE]", f"the last data: line is {events[-1]!r}, expected [DONE]"
    for e in events[:-1]:
        obj = json.loads(e)
        assert obj.get("object") == "chat.completion.chunk", f"not a chunk: {e[:200]}"
    # Without include_usage there is no usage chunk.
    assert all(json.loads(e).get("choices") for e in events[:-1]), \
        "a chunk with empty choices although stream_options.include_usage was not set"


# ------------------------------------------------------------ completions --
@check("completions (raw prompt) non-streaming and streaming")
def _():
    r = client.completions.create(model=model_id(), prompt=COMPLETION_PROMPT,
                                  temperature=0, max_tokens=16)
    assert r.object == "text_completion", f"object is {r.object!r}"
    assert len(r.choices) == 1, f"expected 1 choice, got {len(r.choices)}"
    text = r.choices[0].text
    finish = r.choices[0].finish_reason
    assert isinstance(text, str) and text.strip(), f"no text: {text!r}"
    assert finish in ("stop", "length"), f"finish_reason is {finish!r}"
    assert r.usage is not None and r.usage.prompt_tokens > 0 and r.usage.completion_tokens > 0, \
        f"usage is {r.usage}"
    print(f"     text: {text!r} ({finish})")

    chunks = list(client.completions.create(
        model=model_id(), prompt=COMPLETION_PROMPT, temperature=0, max_tokens=16,
        stream=True, stream_options={"include_usage": True}))
    content = [ch for ch in chunks if ch.choices]
    usage = [ch for ch in chunks if not ch.choices]
    assert content, "no streamed chunk with choices"
    for ch in chunks:
        assert ch.object == "text_completion", f"chunk object is {ch.object!r}"
    streamed = "".join(ch.choices[0].text or "" for ch in content)
    assert streamed == text, f"streamed text {streamed!r} != non-streaming text {text!r}"
    assert content[-1].choices[0].finish_reason == finish, \
        f"last chunk's finish_reason is {content[-1].choices[0].finish_reason!r}, expected {finish!r}"
    assert len(usage) == 1 and usage[0].usage is not None, \
        f"expected one usage chunk, got {len(usage)}"
    assert usage[0].usage.completion_tokens == r.usage.completion_tokens, \
        f"streamed completion_tokens {usage[0].usage.completion_tokens} != {r.usage.completion_tokens}"


# ----------------------------------------------------------------- errors --
@check("an unknown model: 404 NotFoundError")
def _():
    try:
        client.chat.completions.create(model="no-such-model", messages=CHAT_MESSAGES, max_tokens=4)
    except openai.NotFoundError as e:
        assert e.status_code == 404, f"status {e.status_code}"
        assert e.code == "not_found", f"error.code is {e.code!r}, expected 'not_found' ({e.body})"
        print(f"     {e.body}")
    else:
        raise AssertionError("no error for model 'no-such-model'")


@check("temperature -1: 422 UnprocessableEntityError naming temperature")
def _():
    try:
        client.chat.completions.create(model=model_id(), messages=CHAT_MESSAGES,
                                       max_tokens=4, temperature=-1)
    except openai.UnprocessableEntityError as e:
        assert e.status_code == 422, f"status {e.status_code}"
        assert e.code == "unprocessable", f"error.code is {e.code!r}, expected 'unprocessable' ({e.body})"
        assert e.param == "temperature" or "temperature" in str(e.body), \
            f"the error does not name temperature: {e.body}"
        print(f"     {e.body}")
    except openai.APIStatusError as e:
        raise AssertionError(f"status {e.status_code} ({type(e).__name__}), expected 422: {e.body}")
    else:
        raise AssertionError("no error for temperature -1")


@check("n=2: 400 BadRequestError naming n")
def _():
    try:
        client.chat.completions.create(model=model_id(), messages=CHAT_MESSAGES, max_tokens=4, n=2)
    except openai.BadRequestError as e:
        assert e.status_code == 400, f"status {e.status_code}"
        msg = e.body.get("message", "") if isinstance(e.body, dict) else str(e.body)
        assert e.param == "n" or re.search(r"(^|[^A-Za-z_])['\"`]?n['\"`]?([^A-Za-z_]|$)", msg), \
            f"the error does not name the field n: {e.body}"
        print(f"     {e.body}")
    except openai.APIStatusError as e:
        raise AssertionError(f"status {e.status_code} ({type(e).__name__}), expected 400: {e.body}")
    else:
        raise AssertionError("no error for n=2")


@check("malformed JSON body: 400 with a JSON error naming the problem")
def _():
    body = b'{"model": "x", "messages": [{"role": "user", "content": "hi"}'
    status, headers, raw = http("POST", "/v1/chat/completions", body,
                                {"Content-Type": "application/json"})
    assert status == 400, f"status {status}, expected 400: {raw[:300]!r}"
    try:
        obj = json.loads(raw)
    except ValueError:
        raise AssertionError(f"the error body is not JSON: {raw[:300]!r}")
    err = obj.get("error") if isinstance(obj, dict) else None
    assert isinstance(err, dict), f"no error object: {obj}"
    msg = err.get("message")
    assert isinstance(msg, str) and msg, f"no error.message: {obj}"
    assert re.search(r"json|pars|syntax", msg, re.I), f"the message does not name the problem: {msg!r}"
    assert isinstance(err.get("type"), str) and err.get("type"), f"no error.type: {obj}"
    print(f"     {obj}")


# ---------------------------------------------------------------- retrieval --
@check("chat with extra_body rag: the answer carries the posted document as its source")
def _():
    doc = {"id": "etna", "source": "etna.md", "tags": ["geo"],
           "text": "Mount Etna is an active stratovolcano on the east coast of Sicily."}
    status, _, raw = http("POST", "/v1/rag/documents", json.dumps({"documents": [doc]}).encode(),
                          {"Content-Type": "application/json"})
    assert status == 200, f"POST /v1/rag/documents: status {status}: {raw[:300]!r}"
    results = json.loads(raw)["results"]
    assert [x["status"] for x in results] in (["added"], ["unchanged"]), f"results {results}"
    r = client.chat.completions.create(
        model=model_id(), messages=[{"role": "user", "content": "Where is Mount Etna?"}],
        temperature=0, max_tokens=8, extra_body={"rag": {"top_k": 2}})
    sources = (r.model_extra or {}).get("sources")
    assert isinstance(sources, list) and sources, f"no sources in the response: {r.model_dump()}"
    assert sources[0]["number"] == 1 and sources[0]["doc_id"] == "etna", f"sources {sources}"
    assert sources[0]["source"] == "etna.md", f"sources {sources}"
    print(f"     {len(sources)} sources; text: {r.choices[0].message.content!r}")


# -------------------------------------------------------------- embeddings --
FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures")


def fixture_embeddings(n):
    """The first n (text, vector) cases sentence-transformers computed (scripts/gen_reference.py)."""
    with open(os.path.join(FIXTURES, "embeddings_minilm.json")) as f:
        cases = json.load(f)["cases"]
    return [(c["text"], c["embedding"]) for c in cases[:n]]


def cosine(a, b):
    dot = sum(x * y for x, y in zip(a, b))
    na = sum(x * x for x in a) ** 0.5
    nb = sum(y * y for y in b) ** 0.5
    return dot / (na * nb)


@check("embeddings.create (base64, the client's default) matches sentence-transformers, in input order")
def _():
    cases = fixture_embeddings(16)
    r = client.embeddings.create(model="all-MiniLM-L6-v2", input=[t for t, _ in cases])
    assert r.model == "all-MiniLM-L6-v2", f"model is {r.model!r}"
    assert [d.index for d in r.data] == list(range(len(cases))), f"indexes {[d.index for d in r.data]}"
    worst = 1.0
    for (text, ref), d in zip(cases, r.data):
        assert len(d.embedding) == 384, f"{len(d.embedding)} dimensions for {text!r}"
        c = cosine(d.embedding, ref)
        worst = min(worst, c)
        assert c >= 0.999, f"cosine {c:.5f} against sentence-transformers for {text!r}"
    assert r.usage.prompt_tokens > 2 * len(cases), f"usage.prompt_tokens = {r.usage.prompt_tokens}"
    assert r.usage.total_tokens == r.usage.prompt_tokens, f"usage {r.usage}"
    state["embeddings"] = [d.embedding for d in r.data]
    print(f"     {len(cases)} texts, worst cosine {worst:.6f}, {r.usage.prompt_tokens} tokens")


@check("embeddings.create float format: the same float32 values as base64, one text alone as in a batch")
def _():
    cases = fixture_embeddings(3)
    r = client.embeddings.create(model="all-MiniLM-L6-v2", input=cases[1][0], encoding_format="float")
    assert len(r.data) == 1, f"{len(r.data)} embeddings for one text"
    got = r.data[0].embedding
    want = state["embeddings"][1]
    diff = max(abs(a - b) for a, b in zip(got, want))
    assert diff < 1e-6, f"float and base64 (batched) vectors differ by {diff}"


@check("embeddings errors: another model 404, token ids 400, too many texts 400, dimensions 400")
def _():
    try:
        client.embeddings.create(model="text-embedding-3-small", input="hi")
        raise AssertionError("another model was accepted")
    except openai.NotFoundError as e:
        assert "all-MiniLM-L6-v2" in str(e), f"message does not name the served model: {e}"
    for body, param in ((["ok", [1, 2, 3]], "input[1]"), (["x"] * 257, "input")):
        try:
            client.embeddings.create(model="all-MiniLM-L6-v2", input=body)
            raise AssertionError(f"input {body!r} was accepted")
        except openai.BadRequestError as e:
            assert e.body and e.body.get("param") == param, f"param {e.body!r}, expected {param}"
    try:
        client.embeddings.create(model="all-MiniLM-L6-v2", input="hi", dimensions=128)
        raise AssertionError("dimensions=128 was accepted")
    except openai.BadRequestError as e:
        assert "384" in str(e), f"message does not say the model's dimensions: {e}"


# -------------------------------------------------------- tokenize, detokenize --
def post_json(path, obj):
    status, _, raw = http("POST", path, json.dumps(obj).encode(), {"Content-Type": "application/json"})
    return status, json.loads(raw)


@check("POST /tokenize gives llama.cpp's ids and /detokenize gives the text back")
def _():
    with open(os.path.join(FIXTURES, "tokenizer_smollm2.jsonl")) as f:
        cases = [json.loads(line) for line in f][:40]
    for c in cases:
        status, body = post_json("/tokenize", {"content": c["text"]})
        assert status == 200, f"status {status}: {body}"
        assert body["tokens"] == c["ids"], f"{c['text']!r}: {body['tokens']} != llama.cpp's {c['ids']}"
        status, body = post_json("/detokenize", {"tokens": c["ids"]})
        assert status == 200, f"status {status}: {body}"
        assert body["content"] == c["text"], f"detokenize gave {body['content']!r}, expected {c['text']!r}"
    print(f"     {len(cases)} texts")


@check("POST /tokenize with_pieces: each piece is its text, or its bytes inside a character")
def _():
    status, body = post_json("/tokenize", {"content": "<|im_start|>héllo 😀", "with_pieces": True})
    assert status == 200, f"status {status}: {body}"
    toks = body["tokens"]
    assert toks[0]["piece"] == "<|im_start|>", f"first piece {toks[0]}"
    joined = b""
    for t in toks:
        p = t["piece"]
        joined += p.encode() if isinstance(p, str) else bytes(p)
    assert joined.decode() == "<|im_start|>héllo 😀", f"pieces join to {joined!r}"
    status, body = post_json("/tokenize", {"content": "<|im_start|>", "parse_special": False})
    assert status == 200 and len(body["tokens"]) > 1, f"parse_special false kept the control token: {body}"


@check("POST /detokenize and /tokenize refuse bad bodies naming the field")
def _():
    status, body = post_json("/detokenize", {"tokens": [1, 99999999]})
    assert status == 400 and "tokens[1]" in body["error"]["message"], f"{status}: {body}"
    status, body = post_json("/tokenize", {"text": "hi"})
    assert status == 400 and body["error"]["param"] == "text", f"{status}: {body}"
    status, body = post_json("/tokenize", {})
    assert status == 400 and body["error"]["param"] == "content", f"{status}: {body}"


# ------------------------------------------------------- health, metrics --
@check("GET /health: 200 {\"status\": \"ok\"}")
def _():
    status, _, raw = http("GET", "/health")
    assert status == 200, f"status {status}: {raw[:200]!r}"
    assert json.loads(raw) == {"status": "ok"}, f"body {raw[:200]!r}"


@check("GET /metrics passes promtool check metrics")
def _():
    status, headers, raw = http("GET", "/metrics")
    assert status == 200, f"status {status}: {raw[:200]!r}"
    ctype = headers.get("Content-Type", "")
    assert ctype.startswith("text/plain"), f"Content-Type is {ctype!r}"
    text = raw.decode()
    names = set()
    for line in text.splitlines():
        if line and not line.startswith("#"):
            names.add(re.split(r"[{\s]", line, 1)[0])
    assert names, "no samples"
    bad = sorted(n for n in names if not n.startswith("actorserve_"))
    assert not bad, f"metric names without the actorserve_ prefix: {bad}"
    p = subprocess.run([PROMTOOL, "check", "metrics"], input=raw, capture_output=True, timeout=60)
    out = (p.stdout + p.stderr).decode(errors="replace").strip()
    assert p.returncode == 0, f"promtool check metrics exited with {p.returncode}: {out}"
    print(f"     {len(names)} metric names")


print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
