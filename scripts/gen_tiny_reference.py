#!/usr/bin/env python3
"""Write tests/fixtures/tiny_models.json: llama.cpp's logits on the tiny random-weight models of
scripts/gen_tiny_models.py (one per architecture and tensor mix), through llama-cpp-python.

Run through scripts/gen_reference.sh scripts/gen_tiny_reference.py (its venv has
llama-cpp-python, gguf and numpy at the versions .venv-test pins for gen_tiny_models.py).

Per model: the file's sha256, a prompt of token ids evaluated as one batch and the logits of
its last token (all of them: the vocabulary is small), then 16 greedy tokens fed one at a time
and the logits after the last of them. For the models with a SentencePiece vocabulary also
llama.cpp's tokens (BOS added, special tokens parsed) of the texts below and of a chat that
llama.cpp's template renderer wrote from the file's template.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import llama_cpp
from llama_cpp import Llama

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen_tiny_models  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "tiny_models.json"
PROMPT = [5, 77, 120, 264, 3, 200, 45, 99, 150, 12, 230, 7, 258, 61]
N_GREEDY = 16
TEXTS = ["Hello world", " leading space", "the cat sat on the mat.", "  two  spaces  ", "\ttab\nnewline\n\n",
         "naïve café 日本語 🙂", "What is the capital of France?", "[INST]inside[/INST] after",
         "<|user|>\nHi<|end|>\n  x", "<start_of_turn>user\nWhat day?<end_of_turn>\n", "", "\u2581literal",
         "<unk> and <s>text</s>", "ALL CAPS 2024!"]
CHAT = [("system", "You are brief."), ("user", "What is the capital of France?"), ("assistant", "Paris."),
        ("user", "And the day?")]


def rendered_chat(llm: Llama) -> str:
    """The chat as llama.cpp's built-in renderer writes it for the file's template."""
    tmpl = llm.metadata["tokenizer.chat_template"].encode()
    msgs = (llama_cpp.llama_chat_message * len(CHAT))()
    keep = []
    for i, (role, content) in enumerate(CHAT):
        keep += [role.encode(), content.encode()]
        msgs[i].role, msgs[i].content = keep[-2], keep[-1]
    buf = ctypes.create_string_buffer(4096)
    n = llama_cpp.llama_chat_apply_template(tmpl, msgs, len(CHAT), True, buf, len(buf))
    assert 0 < n < len(buf), n
    return buf.raw[:n].decode()


def logits(llm: Llama) -> np.ndarray:
    ptr = llama_cpp.llama_get_logits_ith(llm.ctx, -1)
    return np.ctypeslib.as_array(ctypes.cast(ptr, ctypes.POINTER(ctypes.c_float)), shape=(llm.n_vocab(),)).copy()


def main() -> None:
    doc = {"generator": f"llama-cpp-python {llama_cpp.__version__}, gguf {gen_tiny_models.gguf_version()}, "
                        f"numpy {np.__version__}",
           "prompt": PROMPT, "models": []}
    with tempfile.TemporaryDirectory() as tmp:
        for s in gen_tiny_models.MODELS:
            path = Path(tmp) / f"{s.name}.gguf"
            gen_tiny_models.write_model(s, path)
            llm = Llama(model_path=str(path), n_ctx=gen_tiny_models.N_CTX, n_threads=2, n_batch=64, seed=0,
                        verbose=False, logits_all=False)
            llm.eval(PROMPT)
            batch = logits(llm)
            greedy = []
            cur = batch
            for _ in range(N_GREEDY):
                t = int(np.argmax(cur))
                greedy.append(t)
                llm.eval([t])
                cur = logits(llm)
            srt = np.sort(batch)[::-1]
            entry = {
                "name": s.name,
                "arch": s.arch,
                "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
                "batch_logits": [float(v) for v in batch],
                "greedy_ids": greedy,
                "step_logits": [float(v) for v in cur],
            }
            if s.spm:
                chat = rendered_chat(llm)
                entry["chat"] = [{"role": r, "content": c} for r, c in CHAT]
                entry["chat_text"] = chat
                entry["tokenize"] = [{"text": t, "ids": llm.tokenize(t.encode(), add_bos=True, special=True)}
                                     for t in TEXTS + [chat]]
            doc["models"].append(entry)
            print(f"  {s.name}: logits std {batch.std():.3f}, top-2 margin {srt[0] - srt[1]:.4f}, greedy {greedy}")
            del llm
    OUT.write_text(json.dumps(doc, separators=(",", ":")) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
