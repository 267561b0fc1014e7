#!/usr/bin/env python3
"""Structured output through the official openai client: response_format json_schema and
json_object, and tools, against a live server (tests/net/run_server_test.sh starts one).

    ACTORSERVE_URL=http://127.0.0.1:8080 STRUCTURED_N=1000 .venv-test/bin/python tests/net/structured_output_test.py

STRUCTURED_N random schemas (default 100; bench/structured_output.sh runs 1000) come from a
seeded generator: nested objects, arrays with item counts, enums, consts, anyOf, strings with
and without length limits, numbers, integers, booleans, nulls. Every answer must parse and
validate with Python's jsonschema, whatever the model writes: one that would run past
max_tokens (a string the small model never closes) is closed in time instead. Prints one line per check and a
closing "N passed, N failed" line; exits non-zero when any check fails.
"""

import concurrent.futures
import json
import os
import random
import sys
import time
import traceback

import jsonschema
import openai
from openai import OpenAI
from pydantic import BaseModel

URL = os.environ.get("ACTORSERVE_URL", "http://127.0.0.1:8080").rstrip("/")
N = int(os.environ.get("STRUCTURED_N", "100"))
CONCURRENCY = int(os.environ.get("STRUCTURED_CONCURRENCY", "8"))
client = OpenAI(base_url=URL + "/v1", api_key="none", max_retries=0, timeout=300)
MODEL = client.models.list().data[0].id

passed = 0
failed = 0


def check(name):
    def run(fn):
        global passed, failed
        try:
            fn()
        except Exception as e:
            failed += 1
            print(f"FAIL {name}: {type(e).__name__}: {e}", flush=True)
            traceback.print_exc(limit=3)
        else:
            passed += 1
            print(f"ok   {name}", flush=True)
        return fn
    return run


# ------------------------------------------------------------ schema generator --
WORDS = ["name", "city", "count", "tags", "color", "size", "owner", "items", "price", "kind",
         "title", "score", "level", "notes", "id", "active", "parts", "year", "unit", "code"]


def gen_schema(rng, depth=0):
    """A random schema of the server's subset."""
    kinds = ["string", "integer", "number", "boolean", "null", "enum", "const", "anyOf", "array", "object"]
    weights = [5, 4, 3, 2, 1, 3, 1, 2, 3 if depth < 3 else 0, 4 if depth < 3 else 0]
    k = rng.choices(kinds, weights)[0]
    if k == "string":
        s = {"type": "string"}
        if rng.random() < 0.8:
            s["maxLength"] = rng.randint(1, 24)
        if rng.random() < 0.3:
            s["minLength"] = rng.randint(0, s.get("maxLength", 5))
        return s
    if k in ("integer", "number", "boolean", "null"):
        return {"type": k}
    if k == "enum":
        pool = ["red", "green", "blue", 1, 2, 10, 2.5, True, None, "a b", "x\"y"]
        return {"enum": rng.sample(pool, rng.randint(1, 4))}
    if k == "const":
        return {"const": rng.choice(["fixed", 7, False, None])}
    if k == "anyOf":
        return {"anyOf": [gen_schema(rng, depth + 1) for _ in range(rng.randint(2, 3))]}
    if k == "array":
        s = {"type": "array", "items": gen_schema(rng, depth + 1)}
        lo = rng.randint(0, 2)
        s["minItems"] = lo
        s["maxItems"] = lo + rng.randint(0, 3)
        return s
    names = rng.sample(WORDS, rng.randint(1, 4))
    props = {n: gen_schema(rng, depth + 1) for n in names}
    req = [n for n in names if rng.random() < 0.7]
    return {"type": "object", "properties": props, "required": req, "additionalProperties": False}


def root_schema(rng):
    s = gen_schema(rng, 1)
    if s.get("type") != "object":
        s = {"type": "object", "properties": {"value": s}, "required": ["value"], "additionalProperties": False}
    return s


def ask(schema, seed, max_tokens=400):
    r = client.chat.completions.create(
        model=MODEL, temperature=0.7, seed=seed, max_tokens=max_tokens,
        messages=[{"role": "system", "content": "Answer with JSON only."},
                  {"role": "user", "content": "Fill in this JSON Schema with an example: " + json.dumps(schema)}],
        response_format={"type": "json_schema", "json_schema": {"name": "example", "schema": schema, "strict": True}})
    return r.choices[0]


# ---------------------------------------------------------------------- checks --
class City(BaseModel):
    name: str
    country: str
    population: int
    capital: bool


@check("chat.completions.parse with a pydantic model gives a parsed City")
def _():
    r = client.chat.completions.parse(
        model=MODEL, temperature=0, max_tokens=120, response_format=City,
        messages=[{"role": "user", "content": "Describe Paris as JSON with name, country, population, capital."}])
    c = r.choices[0].message.parsed
    assert isinstance(c, City), f"parsed is {c!r}"
    print(f"     {c!r}")


@check("json_object: the answer is one JSON object")
def _():
    r = client.chat.completions.create(model=MODEL, temperature=0, max_tokens=120,
                                       response_format={"type": "json_object"},
                                       messages=[{"role": "user", "content": "List three fruits in JSON."}])
    v = json.loads(r.choices[0].message.content)
    assert isinstance(v, dict), f"not an object: {v!r}"


@check("json_schema streamed: the chunks join to a document that validates")
def _():
    schema = City.model_json_schema()
    schema["additionalProperties"] = False
    chunks = client.chat.completions.create(
        model=MODEL, temperature=0.5, seed=3, max_tokens=120, stream=True,
        messages=[{"role": "user", "content": "Describe Rome as JSON."}],
        response_format={"type": "json_schema", "json_schema": {"name": "city", "schema": schema}})
    text = "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)
    jsonschema.validate(json.loads(text), schema)


@check("max_tokens near: the answer is closed in time and still validates (finish_reason length)")
def _():
    schema = {"type": "object", "properties": {"title": {"type": "string"}, "story": {"type": "string"}},
              "required": ["title", "story"], "additionalProperties": False}
    for mt in (8, 12, 20):
        r = client.chat.completions.create(
            model=MODEL, temperature=0, max_tokens=mt, messages=[{"role": "user", "content": "Write a long story as JSON."}],
            response_format={"type": "json_schema", "json_schema": {"name": "story", "schema": schema}})
        c = r.choices[0]
        jsonschema.validate(json.loads(c.message.content), schema)
        assert r.usage.completion_tokens <= mt, f"{r.usage.completion_tokens} tokens for max_tokens {mt}"
        print(f"     max_tokens {mt}: {c.finish_reason} {c.message.content!r}")


@check("a schema outside the subset: 400 naming the keyword")
def _():
    for schema, keyword in (({"type": "string", "format": "email"}, "format"),
                            ({"type": "object", "properties": {"a": {"$ref": "#/defs/a"}}}, "$ref"),
                            ({"type": "integer", "maximum": 3}, "maximum")):
        try:
            client.chat.completions.create(model=MODEL, max_tokens=4, messages=[{"role": "user", "content": "x"}],
                                           response_format={"type": "json_schema",
                                                            "json_schema": {"name": "x", "schema": schema}})
        except openai.BadRequestError as e:
            assert e.param == keyword, f"param {e.param!r} for {keyword}: {e.body}"
        else:
            raise AssertionError(f"no error for {keyword}")


WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 40},
                                                    "unit": {"enum": ["celsius", "fahrenheit"]}},
                   "required": ["city", "unit"], "additionalProperties": False}}}
TIME = {"type": "function", "function": {
    "name": "get_time", "parameters": {"type": "object", "properties": {"zone": {"type": "string", "maxLength": 20}},
                                       "required": ["zone"], "additionalProperties": False}}}
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]


@check("tools with tool_choice required: one tool_call whose arguments validate, finish_reason tool_calls")
def _():
    r = client.chat.completions.create(model=MODEL, messages=ASK, temperature=0, max_tokens=80,
                                       tools=[WEATHER, TIME], tool_choice="required")
    c = r.choices[0]
    assert c.finish_reason == "tool_calls", f"finish_reason {c.finish_reason!r}"
    assert c.message.content is None and c.message.tool_calls and len(c.message.tool_calls) == 1, f"{c.message}"
    call = c.message.tool_calls[0]
    assert call.type == "function" and call.id.startswith("call_"), f"{call}"
    tool = {"get_weather": WEATHER, "get_time": TIME}[call.function.name]
    jsonschema.validate(json.loads(call.function.arguments), tool["function"]["parameters"])
    print(f"     {call.function.name}({call.function.arguments})")


@check("tools with a named function, streamed: the call arrives in the chunks as the client accumulates them")
def _():
    chunks = list(client.chat.completions.create(
        model=MODEL, messages=ASK, temperature=0, max_tokens=80, stream=True, tools=[WEATHER, TIME],
        tool_choice={"type": "function", "function": {"name": "get_time"}}))
    name, args, finish = "", "", None
    for ch in chunks:
        for c in ch.choices:
            for tc in c.delta.tool_calls or []:
                name += tc.function.name or ""
                args += tc.function.arguments or ""
            finish = c.finish_reason or finish
    assert name == "get_time", f"called {name!r}"
    assert finish == "tool_calls", f"finish_reason {finish!r}"
    jsonschema.validate(json.loads(args), TIME["function"]["parameters"])


@check("tools refusals: auto (the default) 400 saying the template renders no tools; an unknown function 400")
def _():
    for kwargs, param in (({"tools": [WEATHER]}, "tool_choice"),
                          ({"tools": [WEATHER], "tool_choice": {"type": "function", "function": {"name": "nope"}}}, "tool_choice"),
                          ({"tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"a": {"type": "string", "format": "date"}}}}}],
                            "tool_choice": "required"}, "format")):
        try:
            client.chat.completions.create(model=MODEL, messages=ASK, max_tokens=4, **kwargs)
        except openai.BadRequestError as e:
            assert e.param == param, f"param {e.param!r}, expected {param!r}: {e.body}"
        else:
            raise AssertionError(f"no error for {kwargs}")


@check(f"{N} random schemas: every answer parses and validates with jsonschema, max_tokens or not")
def _():
    rng = random.Random(2026)
    schemas = [root_schema(rng) for _ in range(N)]
    for s in schemas:
        jsonschema.Draft202012Validator.check_schema(s)
    t0 = time.time()
    bad, cut, tokens = [], 0, 0

    def one(i):
        return i, ask(schemas[i], seed=i)

    with concurrent.futures.ThreadPoolExecutor(CONCURRENCY) as pool:
        for i, c in pool.map(one, range(N)):
            text = c.message.content
            cut += c.finish_reason == "length"  # closed early: max_tokens was near
            try:
                jsonschema.validate(json.loads(text), schemas[i])
            except Exception as e:
                bad.append((i, c.finish_reason, text[:200], str(e)[:200]))
    dt = time.time() - t0
    print(f"     {N} schemas in {dt:.0f} s, {len(bad)} invalid, {cut} closed early by max_tokens")
    for b in bad[:5]:
        print(f"     invalid #{b[0]} ({b[1]}): {b[2]!r}: {b[3]}")
    assert not bad, f"{len(bad)} of {N} answers do not validate"


print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
