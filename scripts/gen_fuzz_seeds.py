#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (fuzz/corpus/<target>/), small valid inputs that
each reach deep into its parser; libFuzzer mutates from them. The cache and knowledge-base seeds
are the payloads of real saved files, written by the targets themselves (scripts/fuzz.sh --seeds).

    .venv-test/bin/python scripts/gen_fuzz_seeds.py      # needs the gguf package (scripts/test_venv.sh)

The same output every run (no randomness), so the committed files change only when this does.
"""
import json
import pathlib
import struct

import numpy as np
import gguf

ROOT = pathlib.Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fuzz" / "corpus"


def write(target, name, data):
    d = CORPUS / target
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))


def tiny_gguf(path, with_vocab, tensor_types):
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_block_count(1)
    w.add_context_length(64)
    w.add_embedding_length(32)
    w.add_head_count(2)
    w.add_string("general.name", "fuzz-seed")
    w.add_array("fuzz.numbers", [1, 2, 3])
    if with_vocab:
        # a byte-level BPE vocabulary: the 256 byte symbols, a few merges, two control tokens
        byte_syms = [chr(c) for c in range(ord("!"), ord("~") + 1)] + [chr(c) for c in range(0xA1, 0xAD)] + \
            [chr(c) for c in range(0xAE, 0x100)]
        n = 0
        for b in range(256):
            if chr(b) not in byte_syms:
                byte_syms.append(chr(256 + n))
                n += 1
        tokens = byte_syms + ["he", "ll", "hell", "hello", "<|im_start|>", "<|im_end|>"]
        types = [1] * (len(tokens) - 2) + [3, 3]
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre("smollm")
        w.add_token_list(tokens)
        w.add_token_types(types)
        w.add_token_merges(["h e", "l l", "he ll", "hell o"])
        w.add_bos_token_id(len(tokens) - 2)
        w.add_eos_token_id(len(tokens) - 1)
    rng = np.random.default_rng(7)
    for i, t in enumerate(tensor_types):
        a = rng.standard_normal((4, 32)).astype(np.float32)
        if t == "f16":
            w.add_tensor(f"t{i}.weight", a.astype(np.float16))
        elif t == "q8_0":
            q = gguf.quants.quantize(a, gguf.GGMLQuantizationType.Q8_0)
            w.add_tensor(f"t{i}.weight", q, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
        else:
            w.add_tensor(f"t{i}.weight", a)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def safetensors_bytes(tensors, metadata=None):
    header, data = {}, b""
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    if metadata:
        header["__metadata__"] = metadata
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + data


def main():
    tmp = CORPUS / "gguf"
    tmp.mkdir(parents=True, exist_ok=True)
    tiny_gguf(tmp / "vocab_f32_f16.gguf", True, ["f32", "f16"])
    tiny_gguf(tmp / "no_vocab_q8_0.gguf", False, ["q8_0"])

    f32 = np.arange(6, dtype=np.float32).tobytes()
    write("safetensors", "two.safetensors", safetensors_bytes(
        [("a.weight", "F32", [2, 3], f32), ("b.bias", "F16", [3], np.ones(3, np.float16).tobytes())],
        {"format": "pt"}))
    write("safetensors", "bf16.safetensors", safetensors_bytes([("x", "BF16", [2, 2], b"\x80\x3f" * 4)]))

    for i, text in enumerate([
        "Hello, world! What is the capital of France?",
        "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
        "naïve café — 東京 😀 \u200b tabs\tand\nnewlines  ",
        "def f(x):\n    return x ** 2  # 123456789\n",
        "\xff\xfe broken \xc3",
    ]):
        write("tokenizer", f"text{i}", text.encode("utf-8", "surrogateescape") if i < 4 else b"\xff\xfe broken \xc3")

    chat = {"model": "m", "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
            "max_tokens": 16, "temperature": 0, "stream": True, "stream_options": {"include_usage": True},
            "stop": ["\n\n"], "seed": 3, "top_p": 0.9}
    write("openai_request", "chat.json", json.dumps(chat))
    write("openai_request", "completion.json", json.dumps({"model": "m", "prompt": "Once upon", "max_tokens": 8,
                                                            "logprobs": 2, "echo": False, "n": 2}))
    write("openai_request", "schema.json", json.dumps({"messages": [{"role": "user", "content": "JSON"}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "x", "strict": True, "schema": {
            "type": "object", "properties": {"a": {"type": "integer"}, "b": {"enum": ["x", "y"]}},
            "required": ["a"], "additionalProperties": False}}}}))
    write("openai_request", "tools.json", json.dumps({"messages": [{"role": "user", "content": "weather?"}],
        "tools": [{"type": "function", "function": {"name": "get_weather", "description": "d",
                   "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}],
        "tool_choice": "required", "logprobs": True, "top_logprobs": 3}))
    write("openai_request", "responses.json", json.dumps({"model": "m", "input": [{"role": "user", "content": "Hi"}],
        "instructions": "Be brief.", "max_output_tokens": 16, "stream": True, "rag": {"top_k": 3, "mode": "bm25"}}))

    write("ws_message", "chat.json", json.dumps({"type": "chat", "session_id": "s-1", "message": "And its river?",
        "max_tokens": 128, "temperature": 0, "stream": True, "stop": ["x"], "cache": True,
        "rag": {"top_k": 2, "mode": "hybrid", "filters": {"tags": ["a"], "since": "2024-01-01"}}}))
    write("ws_message", "messages.json", json.dumps({"type": "chat", "messages": [
        {"role": "system", "content": "s"}, {"role": "user", "content": "u"}], "top_k": 5, "min_p": 0.1}))
    write("ws_message", "cancel.json", json.dumps({"type": "cancel", "request_id": "r-1"}))
    write("ws_message", "resume.json", json.dumps({"type": "resume", "request_id": "r-1", "last_event_id": 7,
                                                    "resume_token": "t-1"}))

    write("config", "actorserve.toml", (ROOT / "configs" / "actorserve.toml").read_text())
    write("config", "small.toml", '[server]\nhost = "127.0.0.1"\nport = 8080\n[scheduler]\nmax_batch = 8\n'
                                  '[policy]\nguard = "block"\n[request_log]\npath = "-"\n')

    write("rag_document", "docs.jsonl", "\n".join(json.dumps(d) for d in [
        {"id": "a", "text": "Paris is the capital of France.", "source": "wiki", "title": "Paris",
         "tags": ["geo"], "timestamp": 1700000000},
        {"text": "# Title\n\nSome text.\n\n## Part\n\nMore text here.", "format": "markdown",
         "timestamp": "2024-05-01T10:00:00Z"},
    ]) + "\n")

    write("json_schema", "object", json.dumps({"type": "object", "properties": {
        "name": {"type": "string", "maxLength": 8}, "n": {"type": "integer"}, "tags": {"type": "array",
        "items": {"type": "string"}, "maxItems": 3}}, "required": ["name"], "additionalProperties": False})
        + "\0" + '{"name": "ab", "n": -12, "tags": ["x"]}')
    write("json_schema", "anyof", json.dumps({"anyOf": [{"type": "number"}, {"type": "null"},
        {"enum": ["a", 1, True]}, {"const": {"k": [1, 2]}}]}) + "\0" + "1.5e3")


if __name__ == "__main__":
    main()
