#!/usr/bin/env python3
"""The server's OpenAI-compatible HTTP API, driven by the official openai client.

Run against a live server (tests/net/run_server_test.sh starts one):

    ACTORSERVE_URL=http://127.0.0.1:8080 .venv-test/bin/python tests/net/openai_client_test.py

Prints one line per check and a closing "N passed, N failed" line; exits
non-zero when any check fails. The expected behaviour is docs/protocol.md's.
"""

import json
import math
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


# ------------------------------------------------------------ stream resume --
STORY = [{"role": "user", "content": "Tell me a long story about a lighthouse keeper."}]


def sse_events(lines):
    """(id, data) of each server-sent event in an iterable of text lines."""
    ev_id, data = None, None
    for line in lines:
        if line.startswith("id: "):
            ev_id = line[4:]
        elif line.startswith("data: "):
            data = line[6:]
        elif line == "" and data is not None:
            yield ev_id, data
            ev_id, data = None, None


def resume(url, last_event_id=None):
    headers = {"Last-Event-ID": last_event_id} if last_event_id else {}
    status, hdrs, raw = http("GET", url, None, headers)
    return status, hdrs, raw.decode()


@check("a stream cut after 3 events resumes from Last-Event-ID with every later event exactly once")
def _():
    params = dict(model=model_id(), messages=STORY, temperature=0, max_tokens=40,
                  extra_body={"cache": False})
    whole = client.chat.completions.create(**params).choices[0].message.content
    raw = client.chat.completions.with_raw_response.create(
        stream=True, stream_options={"include_usage": True}, **params)
    url = raw.headers.get("x-resume-url")
    assert url and url.startswith("/v1/streams/chatcmpl-"), f"X-Resume-URL is {url!r}"
    got = []
    for ev_id, data in sse_events(raw.http_response.iter_lines()):
        got.append((ev_id, data))
        if len(got) == 3:
            break
    raw.http_response.close()  # the client goes away mid-stream
    status, hdrs, text = resume(url, got[-1][0])
    assert status == 200, f"resume status {status}: {text[:300]}"
    assert hdrs.get("Content-Type", "").startswith("text/event-stream"), f"resume Content-Type {hdrs.get('Content-Type')}"
    rest = list(sse_events(text.splitlines()))
    ids = [i for i, _ in got + rest]
    assert len(ids) == len(set(ids)), f"an event came twice: {ids}"
    assert rest and rest[-1][1] == "[DONE]", f"the resumed stream does not end with [DONE]: {rest[-3:]}"
    chunks = [json.loads(d) for _, d in got + rest if d != "[DONE]"]
    assert {c["id"] for c in chunks} == {url.split("/")[3].split("?")[0]}, "chunks of another response"
    content = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert content == whole, f"first part + resumed part {content!r} != the whole answer {whole!r}"
    usage = [c["usage"] for c in chunks if not c["choices"]]
    assert len(usage) == 1 and usage[0]["completion_tokens"] > 3, f"usage chunks {usage}"
    # Resuming after the usage chunk sends only [DONE]; after [DONE], nothing.
    usage_id = [i for i, d in rest if d != "[DONE]" and not json.loads(d)["choices"]][0]
    status, _, text = resume(url, usage_id)
    assert [d for _, d in sse_events(text.splitlines())] == ["[DONE]"], f"after the usage chunk: {text!r}"
    status, _, text = resume(url, rest[-1][0])
    assert status == 200 and list(sse_events(text.splitlines())) == [], f"after [DONE]: {text!r}"
    print(f"     {len(got)} events, cut, then {len(rest)} more; ids {ids[0]}..{ids[-1]}")


@check("a stream's resume refuses a wrong token (403), an unknown id (404) and a Last-Event-ID it never sent (400)")
def _():
    raw = client.chat.completions.with_raw_response.create(
        model=model_id(), messages=CHAT_MESSAGES, temperature=0, max_tokens=4, stream=True)
    url = raw.headers.get("x-resume-url")
    for _ in sse_events(raw.http_response.iter_lines()):
        pass
    path, token = url.split("?resume_token=")
    status, _, text = resume(path + "?resume_token=t-" + "0" * 32, "1")
    assert status == 403, f"a wrong token: {status} {text[:200]}"
    status, _, text = resume(path, "1")
    assert status == 403, f"no token: {status} {text[:200]}"
    status, _, text = resume("/v1/streams/chatcmpl-" + "0" * 32 + "?resume_token=" + token, "1")
    assert status == 404, f"an unknown id: {status} {text[:200]}"
    status, _, text = resume(url, "999")
    assert status == 400 and "never sent" in text, f"Last-Event-ID 999: {status} {text[:200]}"


@check("DELETE on a stream's resume URL cancels it; its resume then ends the stream")
def _():
    raw = client.chat.completions.with_raw_response.create(
        model=model_id(), messages=STORY, temperature=0, max_tokens=400, stream=True, extra_body={"cache": False})
    url = raw.headers.get("x-resume-url")
    first = next(iter(sse_events(raw.http_response.iter_lines())))
    raw.http_response.close()
    status, _, body = http("DELETE", url)
    assert status == 200, f"DELETE: {status} {body[:200]!r}"
    assert json.loads(body)["object"] == "stream", f"DELETE answered {body!r}"
    status, _, text = resume(url, first[0])
    events = list(sse_events(text.splitlines()))
    assert status == 200 and events and events[-1][1] == "[DONE]", f"after the cancel: {status} {text[-300:]!r}"
    finish = [json.loads(d)["choices"][0]["finish_reason"] for _, d in events[:-1] if json.loads(d).get("choices")]
    assert finish and finish[-1] is not None, f"no finish_reason after the cancel: {events[-3:]}"
    n = sum(1 for _, d in events if d != "[DONE]")
    assert n < 400, f"{n} chunks: the cancel did not stop it"


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


# --------------------------------------------------------------- logprobs --
def check_token_logprobs(entries, text, n_top, greedy):
    """Each entry's bytes join to the text; alternatives sorted, at most n_top, and their
    probabilities sum like probabilities (<= 1, the chosen token among them when greedy)."""
    assert entries, "no logprobs entries"
    joined = b"".join(bytes(e.bytes) for e in entries)
    assert joined == text.encode(), f"the tokens' bytes {joined!r} are not the text {text.encode()!r}"
    for e in entries:
        assert e.logprob <= 0.0, f"logprob {e.logprob} > 0"
        assert len(e.top_logprobs) == n_top, f"{len(e.top_logprobs)} alternatives, asked {n_top}"
        lps = [a.logprob for a in e.top_logprobs]
        assert lps == sorted(lps, reverse=True), f"alternatives not most likely first: {lps}"
        total = sum(math.exp(v) for v in lps)
        assert total <= 1.0 + 1e-4, f"top {n_top} probabilities sum to {total} > 1"
        if greedy:
            top = e.top_logprobs[0]
            assert bytes(top.bytes) == bytes(e.bytes) and abs(top.logprob - e.logprob) < 1e-6, \
                f"greedy chose {e.token!r} ({e.logprob}) but the most likely is {top.token!r} ({top.logprob})"
        elif n_top:
            assert any(bytes(a.bytes) == bytes(e.bytes) for a in e.top_logprobs) or \
                e.logprob <= e.top_logprobs[-1].logprob + 1e-6, f"{e.token!r} ranks above an alternative it is not among"


@check("chat logprobs with top_logprobs=20: bytes join to the answer, probabilities sum to at most 1, streamed the same")
def _():
    r = client.chat.completions.create(model=model_id(), messages=CHAT_MESSAGES, temperature=0,
                                       max_tokens=16, logprobs=True, top_logprobs=20)
    c = r.choices[0]
    assert c.logprobs is not None and c.logprobs.content, f"no logprobs: {c.logprobs}"
    check_token_logprobs(c.logprobs.content, c.message.content, 20, greedy=True)
    assert len(c.logprobs.content) <= r.usage.completion_tokens, \
        f"{len(c.logprobs.content)} entries for {r.usage.completion_tokens} tokens"
    mass = [sum(math.exp(a.logprob) for a in e.top_logprobs) for e in c.logprobs.content]
    print(f"     {len(mass)} tokens, top-20 mass min {min(mass):.3f} max {max(mass):.3f}")

    chunks = list(client.chat.completions.create(model=model_id(), messages=CHAT_MESSAGES, temperature=0,
                                                 max_tokens=16, logprobs=True, top_logprobs=20, stream=True))
    streamed = [e for ch in chunks if ch.choices and ch.choices[0].logprobs for e in ch.choices[0].logprobs.content]
    text = "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)
    assert text == c.message.content, f"streamed {text!r} != {c.message.content!r}"
    assert [(e.token, round(e.logprob, 4)) for e in streamed] == \
        [(e.token, round(e.logprob, 4)) for e in c.logprobs.content], "streamed logprobs differ from the whole answer's"

    s = client.chat.completions.create(model=model_id(), messages=CHAT_MESSAGES, temperature=1.0, seed=5,
                                       max_tokens=16, logprobs=True, top_logprobs=3)
    check_token_logprobs(s.choices[0].logprobs.content, s.choices[0].message.content, 3, greedy=False)
    plain = client.chat.completions.create(model=model_id(), messages=CHAT_MESSAGES, temperature=0, max_tokens=16)
    assert plain.choices[0].logprobs is None, "logprobs given unasked"
    assert plain.choices[0].message.content == c.message.content, "asking for logprobs changed the answer"


@check("completions logprobs=5: tokens, token_logprobs, top_logprobs, text_offset as OpenAI's legacy shape")
def _():
    r = client.completions.create(model=model_id(), prompt=COMPLETION_PROMPT, temperature=0,
                                  max_tokens=8, logprobs=5)
    lp = r.choices[0].logprobs
    text = r.choices[0].text
    assert lp is not None and lp.tokens, f"no logprobs: {lp}"
    n = len(lp.tokens)
    assert len(lp.token_logprobs) == n and len(lp.top_logprobs) == n and len(lp.text_offset) == n, \
        f"lengths differ: {len(lp.tokens)} {len(lp.token_logprobs)} {len(lp.top_logprobs)} {len(lp.text_offset)}"
    assert lp.text_offset[0] == 0, f"text_offset starts at {lp.text_offset[0]}"
    for i in range(n):
        top = lp.top_logprobs[i]
        assert 1 <= len(top) <= 5, f"token {i}: {len(top)} alternatives"
        best = max(top.values())
        assert abs(best - lp.token_logprobs[i]) < 1e-6, f"greedy token {i} is not the most likely: {lp.token_logprobs[i]} vs {best}"
        assert sum(math.exp(v) for v in top.values()) <= 1.0 + 1e-4, f"token {i}: top probabilities sum past 1"
    if all(not t.startswith("bytes:") for t in lp.tokens):
        assert "".join(lp.tokens) == text, f"tokens {lp.tokens} do not join to {text!r}"
    chunks = list(client.completions.create(model=model_id(), prompt=COMPLETION_PROMPT, temperature=0,
                                            max_tokens=8, logprobs=5, stream=True))
    offsets = [o for ch in chunks if ch.choices and ch.choices[0].logprobs for o in ch.choices[0].logprobs.text_offset]
    assert offsets == lp.text_offset, f"streamed text_offset {offsets} != {lp.text_offset}"


@check("logprobs refusals: top_logprobs 21 and top_logprobs without logprobs are 400s naming top_logprobs")
def _():
    for kwargs in ({"logprobs": True, "top_logprobs": 21}, {"top_logprobs": 3}):
        try:
            client.chat.completions.create(model=model_id(), messages=CHAT_MESSAGES, max_tokens=4, **kwargs)
        except openai.BadRequestError as e:
            assert e.param == "top_logprobs", f"param {e.param!r}: {e.body}"
        else:
            raise AssertionError(f"no error for {kwargs}")


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


@check("n=17: 400 BadRequestError naming n")
def _():
    try:
        client.chat.completions.create(model=model_id(), messages=CHAT_MESSAGES, max_tokens=4, n=17)
    except openai.BadRequestError as e:
        assert e.status_code == 400, f"status {e.status_code}"
        msg = e.body.get("message", "") if isinstance(e.body, dict) else str(e.body)
        assert e.param == "n" or re.search(r"(^|[^A-Za-z_])['\"`]?n['\"`]?([^A-Za-z_]|$)", msg), \
            f"the error does not name the field n: {e.body}"
        print(f"     {e.body}")
    except openai.APIStatusError as e:
        raise AssertionError(f"status {e.status_code} ({type(e).__name__}), expected 400: {e.body}")
    else:
        raise AssertionError("no error for n=17")


@check("n=3 choices equal three requests alone with seeds seed, seed+1, seed+2 (whole and streamed)")
def _():
    kw = dict(model=model_id(), messages=CHAT_MESSAGES, temperature=1.0, max_tokens=16)
    r = client.chat.completions.create(n=3, seed=40, logprobs=True, **kw)
    assert [c.index for c in r.choices] == [0, 1, 2], f"indexes {[c.index for c in r.choices]}"
    alone = [client.chat.completions.create(seed=40 + i, **kw) for i in range(3)]
    for i in range(3):
        assert r.choices[i].message.content == alone[i].choices[0].message.content, \
            f"choice {i}: {r.choices[i].message.content!r} != alone {alone[i].choices[0].message.content!r}"
        assert r.choices[i].finish_reason == alone[i].choices[0].finish_reason, f"choice {i}: finish_reason differs"
        check_token_logprobs(r.choices[i].logprobs.content, r.choices[i].message.content, 0, greedy=False)
    want = sum(a.usage.completion_tokens for a in alone)
    assert r.usage.completion_tokens == want, f"usage.completion_tokens {r.usage.completion_tokens}, choices alone {want}"
    assert r.usage.prompt_tokens == alone[0].usage.prompt_tokens, "prompt_tokens counted more than once"
    texts = {c.message.content for c in r.choices}
    print(f"     {len(texts)} distinct answers of 3")

    chunks = list(client.chat.completions.create(n=3, seed=40, stream=True, stream_options={"include_usage": True}, **kw))
    streamed = {0: "", 1: "", 2: ""}
    finishes, roles = {}, {}
    for ch in chunks:
        for c in ch.choices:
            streamed[c.index] += c.delta.content or ""
            if c.delta.role: roles[c.index] = c.delta.role
            if c.finish_reason: finishes[c.index] = c.finish_reason
    for i in range(3):
        assert streamed[i] == alone[i].choices[0].message.content, f"streamed choice {i}: {streamed[i]!r}"
        assert finishes.get(i) == alone[i].choices[0].finish_reason, f"streamed choice {i} finish {finishes.get(i)!r}"
        assert roles.get(i) == "assistant", f"choice {i} has no role chunk"
    usage = [ch for ch in chunks if not ch.choices]
    assert len(usage) == 1 and usage[0].usage.completion_tokens == want, "streamed usage differs"

    c = client.completions.create(model=model_id(), prompt=COMPLETION_PROMPT, temperature=1.0, max_tokens=8, n=2, seed=7)
    one = client.completions.create(model=model_id(), prompt=COMPLETION_PROMPT, temperature=1.0, max_tokens=8, seed=8)
    assert [x.index for x in c.choices] == [0, 1] and c.choices[1].text == one.choices[0].text, \
        f"completions n=2: {[x.text for x in c.choices]} vs seed 8 alone {one.choices[0].text!r}"


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


# ----------------------------------------------------------- responses API --
@check("responses.create: whole and streamed give the same text, streamed events numbered 0, 1, 2, ...")
def _():
    params = dict(model=model_id(), input="Name three colours of the rainbow.", temperature=0,
                  max_output_tokens=24, extra_body={"cache": False})
    r = client.responses.create(**params)
    assert r.object == "response" and r.id.startswith("resp_"), f"object {r.object!r}, id {r.id!r}"
    assert r.status in ("completed", "incomplete"), f"status {r.status!r}"
    assert r.output_text.strip(), f"no text: {r.output_text!r}"
    assert r.usage.output_tokens > 0 and r.usage.input_tokens > 0, f"usage {r.usage}"
    if r.status == "incomplete":
        assert r.incomplete_details.reason == "max_output_tokens" and r.usage.output_tokens == 24, f"{r.incomplete_details} {r.usage}"
    seqs, text, final = [], "", None
    for ev in client.responses.create(stream=True, **params):
        seqs.append(ev.sequence_number)
        if ev.type == "response.output_text.delta":
            text += ev.delta
        if ev.type in ("response.completed", "response.incomplete"):
            final = ev.response
    assert seqs == list(range(len(seqs))), f"sequence numbers {seqs}"
    assert final is not None and final.output_text == text == r.output_text, \
        f"streamed {text!r}, final {final and final.output_text!r}, whole {r.output_text!r}"
    print(f"     {r.status}: {r.output_text!r}, {len(seqs)} events")


@check("responses background: retrieve while it runs, cut its event stream, resume with starting_after: each event once")
def _():
    b = client.responses.create(model=model_id(), input="Tell me a long story about a lighthouse keeper.",
                                temperature=0, max_output_tokens=60, background=True, extra_body={"cache": False})
    assert b.status in ("queued", "in_progress"), f"a background response is {b.status!r} at once"
    now = client.responses.retrieve(b.id)
    assert now.id == b.id and now.status in ("queued", "in_progress", "completed", "incomplete"), f"retrieved {now.status}"
    first, text = [], ""
    stream = client.responses.retrieve(b.id, stream=True)
    for ev in stream:
        first.append(ev.sequence_number)
        if ev.type == "response.output_text.delta":
            text += ev.delta
        if len(first) == 8:
            break
    stream.close()  # a deliberate disconnect
    rest, final = [], None
    for ev in client.responses.retrieve(b.id, stream=True, starting_after=first[-1]):
        rest.append(ev.sequence_number)
        if ev.type == "response.output_text.delta":
            text += ev.delta
        if ev.type in ("response.completed", "response.incomplete"):
            final = ev.response
    assert first + rest == list(range(len(first) + len(rest))), f"sequence numbers {first} then {rest}"
    done = client.responses.retrieve(b.id)
    assert final is not None and done.output_text == text == final.output_text, \
        f"events give {text!r}, the object {done.output_text!r}"
    assert done.status in ("completed", "incomplete") and done.usage.output_tokens > 0, f"{done.status} {done.usage}"
    print(f"     {len(first)} events, cut, then {len(rest)}; {done.status}, {done.usage.output_tokens} tokens")


@check("responses cancel, and refusals: tools 400, another model 404, an unknown id 404")
def _():
    b = client.responses.create(model=model_id(), input="Tell me a long story about a dragon.", temperature=0,
                                max_output_tokens=400, background=True, extra_body={"cache": False})
    c = client.responses.cancel(b.id)
    assert c.status in ("cancelled", "completed", "incomplete"), f"cancel answered {c.status!r}"
    r = client.responses.retrieve(b.id)
    assert r.status in ("cancelled", "completed", "incomplete"), f"after cancel: {r.status!r}"
    assert r.status != "cancelled" or (r.usage is None or r.usage.output_tokens < 400), f"cancelled after {r.usage}"
    for kwargs, exc, word in ((dict(tools=[{"type": "function", "name": "f", "parameters": {}}]), openai.BadRequestError, "tools"),
                              (dict(model="gpt-5"), openai.NotFoundError, "model")):
        args = dict(model=model_id(), input="hi", max_output_tokens=4)
        args.update(kwargs)
        try:
            client.responses.create(**args)
            raise AssertionError(f"{kwargs} was accepted")
        except exc as e:
            assert word in str(e), f"the error does not name {word}: {e}"
    try:
        client.responses.retrieve("resp_" + "0" * 32)
        raise AssertionError("an unknown response was found")
    except openai.NotFoundError:
        pass


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
