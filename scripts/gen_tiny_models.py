#!/usr/bin/env python3
"""Write tiny GGUF models with random weights, one per architecture and tensor mix the engine
loads, with the PyPI package `gguf` (the writer llama.cpp's own converters use).

  python scripts/gen_tiny_models.py --out DIR     writes DIR/<name>.gguf for every model below
      [--check FIXTURE]                            and fails unless each file's sha256 is the one
                                                   in FIXTURE (tests/fixtures/tiny_models.json)

The files are made again wherever the tests run (tests/CMakeLists.txt runs this with
.venv-test/'s pinned gguf and numpy); tests/fixtures/tiny_models.json holds llama.cpp's logits on
them (scripts/gen_tiny_reference.py) and each file's sha256, so a different writer or random
stream is reported as such rather than as a wrong logit.

Weights: float matrices drawn from a seeded normal and quantized by the gguf package (Q8_0,
Q4_0, Q5_0, Q5_1), K-quant matrices (Q4_K, Q5_K, Q6_K; the package has no K quantizer) drawn as
random quants with sub-block scales and mins chosen so that each sub-block is centred near 0.
Vocabularies: GPT-2's 256 byte symbols, a few merges and ChatML's control tokens (tokenizer
"gpt2"); or a SentencePiece one (tokenizer "llama": <unk>, <s>, </s>, the 256 byte tokens, the
chat templates' control tokens and scored pieces), on which llama.cpp's tokenizations of a few
texts and of a rendered chat are fixtures too.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T
from gguf import quants

N_EMBD = 256
N_FF = 512
N_LAYER = 2
N_CTX = 256


def byte_symbols() -> list[str]:
    """GPT-2's byte-to-unicode table: the printable bytes as themselves, the rest shifted to 256+."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1)) + \
        list(range(ord("\xae"), ord("\xff") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    table = dict(zip(bs, cs))
    return [chr(table[b]) for b in range(256)]


MERGES = ["Ġ t", "h e", "Ġ a", "i n", "Ġt he", "e r", "o n", "r e"]
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHATML = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + "
          "'<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")


def vocab() -> tuple[list[str], list[int]]:
    tokens = byte_symbols()
    for m in MERGES:
        tokens.append(m.replace(" ", ""))
    types = [1] * len(tokens)
    tokens += SPECIALS
    types += [3] * len(SPECIALS)
    return tokens, types


N_VOCAB = len(vocab()[0])

# SentencePiece: scores rank the merges (higher first); letters and marks are single pieces.
SPM_CONTROLS = ["[INST]", "[/INST]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]", "<|user|>", "<|assistant|>",
                "<|system|>", "<|end|>", "<start_of_turn>", "<end_of_turn>", "<|endoftext|>"]
SPM_CHARS = ["\u2581"] + [chr(c) for c in range(ord("a"), ord("z") + 1)] + \
    [chr(c) for c in range(ord("A"), ord("Z") + 1)] + list("0123456789.,?!'")
SPM_PIECES = ["\u2581t", "he", "\u2581the", "in", "\u2581a", "er", "on", "re", "at", "\u2581w", "\u2581c", "is", "\u2581is",
              "\u2581o", "\u2581of", "an", "\u2581s", "en", "or", "it", "ou", "\u2581wh", "\u2581what", "ap", "\u2581cap",
              "al", "ital", "\u2581capital", "\u2581F", "ra", "nc", "nce", "\u2581Fra", "\u2581France", "\u2581H", "ll",
              "ello", "\u2581Hello", "\u2581wor", "ld", "\u2581world", "\u2581m", "\u2581ma", "\u2581mat", "\u2581ca",
              "\u2581cat", "\u2581sa", "\u2581sat", "\u2581on", "\u2581\u2581", "\u2581\u2581\u2581\u2581", "us", "\u2581us",
              "\u2581user", "od", "el", "\u2581model", "ay", "\u2581d", "\u2581day"]


def spm_vocab() -> tuple[list[str], list[float], list[int]]:
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)] + SPM_CONTROLS
    scores = [0.0] * len(tokens)
    types = [2, 3, 3] + [6] * 256 + [3] * len(SPM_CONTROLS)
    for i, c in enumerate(SPM_CHARS):
        tokens.append(c)
        scores.append(-100.0 - i)
        types.append(1)
    for i, piece in enumerate(SPM_PIECES):
        tokens.append(piece)
        scores.append(-1.0 - i)
        types.append(1)
    assert len(set(tokens)) == len(tokens)
    return tokens, scores, types


# minimal templates of each family, detected as the real ones are (engine/chat_template.h)
MISTRAL_V7 = ("{{ bos_token }}{% for m in messages %}{% if m['role'] == 'system' %}[SYSTEM_PROMPT]{{ m['content'] }}"
              "[/SYSTEM_PROMPT]{% elif m['role'] == 'user' %}[INST]{{ m['content'] }}[/INST]{% else %}"
              "{{ m['content'] }}{{ eos_token }}{% endif %}{% endfor %}")
PHI3 = ("{% for message in messages %}{{'<|' + message['role'] + '|>' + '\n' + message['content'] + '<|end|>\n' }}"
        "{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif %}")
GEMMA = ("{{ bos_token }}{% for message in messages %}{% set role = 'model' if message['role'] == 'assistant' "
         "else message['role'] %}{{ '<start_of_turn>' + role + '\n' + message['content'] | trim + "
         "'<end_of_turn>\n' }}{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model\n'}}{% endif %}")


# ---- weights --------------------------------------------------------------------------------

def k_pack_scales(sc: np.ndarray, m: np.ndarray) -> np.ndarray:
    """(n, 8) scales and mins, 6-bit -> (n, 12) bytes in the Q4_K / Q5_K layout."""
    q = np.zeros((sc.shape[0], 12), dtype=np.uint8)
    for j in range(4):
        q[:, j] = sc[:, j] | ((sc[:, j + 4] >> 4) << 6)
        q[:, j + 4] = m[:, j] | ((m[:, j + 4] >> 4) << 6)
        q[:, j + 8] = (sc[:, j + 4] & 0x0F) | ((m[:, j + 4] & 0x0F) << 4)
    return q


def half_bytes(v: np.ndarray) -> np.ndarray:
    return v.astype(np.float16).view(np.uint8).reshape(-1, 2)


def k_quant_blocks(rng: np.random.Generator, t: T, n_blocks: int, sigma: float) -> np.ndarray:
    """n_blocks random super-blocks of type t whose values have about standard deviation sigma."""
    if t in (T.Q4_K, T.Q5_K):
        levels = 16 if t == T.Q4_K else 32
        q_std = np.sqrt((levels ** 2 - 1) / 12.0)
        sc = rng.integers(24, 64, size=(n_blocks, 8)).astype(np.uint8)
        d = np.full(n_blocks, sigma / (44 * q_std))
        dmin = d * (levels / 2)
        # centre: d * sc * (levels - 1) / 2 == dmin * m
        m = np.clip(np.rint(sc * (levels - 1) / 2 / (levels / 2)), 0, 63).astype(np.uint8)
        parts = [half_bytes(d), half_bytes(dmin), k_pack_scales(sc, m)]
        if t == T.Q5_K:
            parts.append(rng.integers(0, 256, size=(n_blocks, 32), dtype=np.uint8))
        parts.append(rng.integers(0, 256, size=(n_blocks, 128), dtype=np.uint8))
        return np.concatenate(parts, axis=1)
    assert t == T.Q6_K
    sc = (rng.integers(24, 64, size=(n_blocks, 16)) * rng.choice([-1, 1], size=(n_blocks, 16))).astype(np.int8)
    d = np.full(n_blocks, sigma / (44 * 18.5))
    return np.concatenate([rng.integers(0, 256, size=(n_blocks, 192), dtype=np.uint8), sc.view(np.uint8),
                           half_bytes(d)], axis=1)


def matrix(rng: np.random.Generator, t: T, n_out: int, n_in: int, sigma: float) -> np.ndarray:
    """A weight matrix stored as t, as the writer takes it: float rows, or raw quantized bytes."""
    if t in (T.Q4_K, T.Q5_K, T.Q6_K):
        blocks = k_quant_blocks(rng, t, n_out * n_in // 256, sigma)
        return blocks.reshape(n_out, -1)
    w = (rng.standard_normal((n_out, n_in)) * sigma).astype(np.float32)
    if t == T.F32:
        return w
    if t == T.F16:
        return w.astype(np.float16)
    return quants.quantize(w, t)


# ---- models ---------------------------------------------------------------------------------

@dataclass
class spec:
    name: str
    arch: str
    types: dict[str, T]              # tensor kind -> type ("embd", "q", "k", "v", "o", "gate", "up", "down", "out")
    pre: str = "qwen2"
    n_head: int = 4
    n_head_kv: int = 2
    head_dim: int | None = None      # key_length; None: n_embd / n_head
    tied: bool = True
    biases: bool = False             # qwen2: q, k, v biases
    qk_norm: bool = False            # qwen3: per-head q and k norms
    rope_freqs: bool = False         # llama 3: frequency divisors
    seed: int = 1
    per_layer: dict[str, list[T]] = field(default_factory=dict)  # kind -> type of each layer
    spm: bool = False                # SentencePiece vocabulary (tokenizer "llama")
    space_prefix: bool = True        # spm: tokenizer.ggml.add_space_prefix
    template: str = CHATML
    n_layer: int = N_LAYER
    n_embd: int = N_EMBD
    fused: bool = False              # phi3: attn_qkv and a 2 * n_ff ffn_up (gate rows first)
    post_norms: bool = False         # gemma2/3: post_attention_norm, post_ffw_norm
    softcaps: tuple[float, float] | None = None  # gemma2: attention and final logit soft-capping
    n_swa: int = 0                   # attention.sliding_window
    rope_linear: float | None = None  # rope.scaling linear factor


K_MIX = {"embd": T.Q6_K, "q": T.Q4_K, "k": T.Q4_K, "v": T.Q5_0, "o": T.Q5_K, "gate": T.Q4_K, "up": T.Q4_K,
         "down": T.Q6_K, "out": T.Q6_K}
Q8 = {k: T.Q8_0 for k in K_MIX} | {"embd": T.F16}

MODELS = [
    # LLaMA layout, the K-quant mix of a Q4_K_M file (and a Q5_1 layer), tied output
    spec("llama-kquants", "llama", K_MIX, pre="smollm", seed=11, per_layer={"v": [T.Q5_0, T.Q5_1]}),
    # Llama 3: rope_freqs divisors, llama-bpe pre-tokenizer, a separate output matrix
    spec("llama3", "llama", Q8 | {"out": T.Q6_K}, pre="llama-bpe", tied=False, rope_freqs=True, seed=12),
    # Qwen 2 / 2.5: q, k, v biases, NeoX RoPE
    spec("qwen2", "qwen2", Q8 | {"q": T.Q4_0, "up": T.Q5_0}, biases=True, seed=13),
    # Qwen 3: per-head q/k RMS norms, key_length 64 with 8 heads of a 256-wide model, K-quants
    spec("qwen3", "qwen3", K_MIX | {"v": T.Q8_0}, n_head=8, n_head_kv=2, head_dim=64, qk_norm=True, seed=14),
    # LLaMA with a SentencePiece vocabulary and a Mistral v7 template (Mistral, Llama 2 files)
    spec("llama-spm", "llama", Q8 | {"gate": T.Q4_K}, spm=True, template=MISTRAL_V7, seed=15),
    # Phi-3: fused q/k/v and gate/up matrices, NeoX RoPE, q scaled before the scores
    # (heads of 96, as Phi-3 mini's: 1/sqrt(96) is no power of 2, so where q is scaled shows)
    spec("phi3", "phi3", Q8 | {"up": T.Q5_0}, n_head=2, n_head_kv=2, n_embd=192, spm=True, template=PHI3,
         fused=True, tied=False, seed=16),
    # Gemma 2: embeddings scaled by sqrt(n_embd), GeGLU, post-norms, soft-capped attention and logits,
    # a sliding window on every other layer; no space prefix
    spec("gemma2", "gemma2", Q8 | {"down": T.Q4_K}, n_head=4, n_head_kv=2, head_dim=128, spm=True,
         space_prefix=False, template=GEMMA, post_norms=True, softcaps=(20.0, 15.0), n_swa=8, seed=17),
    # Gemma 3: q/k norms, a window on five layers of six (their RoPE base 10000, unscaled), the
    # global layer's RoPE scaled linearly
    spec("gemma3", "gemma3", Q8 | {"q": T.Q4_K, "o": T.Q5_K}, n_head=4, n_head_kv=1, head_dim=64, qk_norm=True,
         spm=True, space_prefix=False, template=GEMMA, post_norms=True, n_swa=8, n_layer=6, rope_linear=4.0,
         seed=18),
]


def write_model(s: spec, path: Path) -> None:
    rng = np.random.default_rng(s.seed)
    E = s.n_embd
    hd = s.head_dim or E // s.n_head
    n_q, n_kv = s.n_head * hd, s.n_head_kv * hd
    w = gguf.GGUFWriter(str(path), s.arch)
    w.add_name(f"tiny-{s.name}")
    w.add_context_length(N_CTX)
    w.add_embedding_length(E)
    w.add_block_count(s.n_layer)
    w.add_feed_forward_length(N_FF)
    w.add_head_count(s.n_head)
    w.add_head_count_kv(s.n_head_kv)
    if s.head_dim:
        w.add_key_length(hd)
        w.add_value_length(hd)
    w.add_rope_dimension_count(hd)
    w.add_rope_freq_base(10000.0 if s.arch == "llama" else 1000000.0)
    w.add_layer_norm_rms_eps(1e-6 if s.arch != "llama" else 1e-5)
    if s.n_swa:
        w.add_sliding_window(s.n_swa)
    if s.softcaps:
        w.add_attn_logit_softcapping(s.softcaps[0])
        w.add_final_logit_softcapping(s.softcaps[1])
    if s.rope_linear:
        w.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
        w.add_rope_scaling_factor(s.rope_linear)
    if s.spm:
        tokens, scores, types = spm_vocab()
        w.add_tokenizer_model("llama")
        w.add_tokenizer_pre("default")
        w.add_token_list(tokens)
        w.add_token_scores(scores)
        w.add_token_types(types)
        w.add_bos_token_id(1)
        w.add_eos_token_id(2)
        w.add_unk_token_id(0)
        w.add_add_bos_token(True)
        w.add_add_space_prefix(s.space_prefix)
    else:
        tokens, types = vocab()
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre(s.pre)
        w.add_token_list(tokens)
        w.add_token_types(types)
        w.add_token_merges(MERGES)
        w.add_bos_token_id(tokens.index("<|endoftext|>"))
        w.add_eos_token_id(tokens.index("<|im_end|>"))
        w.add_add_bos_token(False)
    w.add_chat_template(s.template)
    n_vocab = len(tokens)

    def add(name: str, arr: np.ndarray, t: T) -> None:
        if t in (T.F32, T.F16):
            w.add_tensor(name, arr)
        else:
            w.add_tensor(name, arr, raw_dtype=t)

    def mat(name: str, kind: str, n_out: int, n_in: int, sigma: float, layer: int = 0) -> None:
        t = s.per_layer[kind][layer] if kind in s.per_layer else s.types[kind]
        add(name, matrix(rng, t, n_out, n_in, sigma), t)

    def vec(name: str, n: int, mean: float, sigma: float) -> None:
        w.add_tensor(name, (mean + sigma * rng.standard_normal(n)).astype(np.float32))

    # gemma scales the embeddings by sqrt(n_embd): smaller rows keep the activations alike
    mat("token_embd.weight", "embd", n_vocab, E, 4.0 / np.sqrt(E) if s.post_norms else 1.0)
    vec("output_norm.weight", E, 1.0, 0.1)
    if not s.tied:
        mat("output.weight", "out", n_vocab, E, 3.0 / np.sqrt(E))
    if s.rope_freqs:
        w.add_tensor("rope_freqs.weight", (1.0 + 7.0 * rng.random(hd // 2)).astype(np.float32))
    for i in range(s.n_layer):
        b = f"blk.{i}."
        vec(b + "attn_norm.weight", E, 1.0, 0.1)
        if s.fused:
            mat(b + "attn_qkv.weight", "q", n_q + 2 * n_kv, E, 1.0 / np.sqrt(E), i)
        else:
            mat(b + "attn_q.weight", "q", n_q, E, 1.0 / np.sqrt(E), i)
            mat(b + "attn_k.weight", "k", n_kv, E, 1.0 / np.sqrt(E), i)
            mat(b + "attn_v.weight", "v", n_kv, E, 1.0 / np.sqrt(E), i)
        if s.biases:
            vec(b + "attn_q.bias", n_q, 0.0, 0.5)
            vec(b + "attn_k.bias", n_kv, 0.0, 0.5)
            vec(b + "attn_v.bias", n_kv, 0.0, 0.5)
        if s.qk_norm:
            vec(b + "attn_q_norm.weight", hd, 1.0, 0.2)
            vec(b + "attn_k_norm.weight", hd, 1.0, 0.2)
        mat(b + "attn_output.weight", "o", E, n_q, 1.0 / np.sqrt(n_q), i)
        if s.post_norms:
            vec(b + "post_attention_norm.weight", E, 1.0, 0.1)
        vec(b + "ffn_norm.weight", E, 1.0, 0.1)
        if s.fused:
            mat(b + "ffn_up.weight", "up", 2 * N_FF, E, 1.0 / np.sqrt(E), i)
        else:
            mat(b + "ffn_gate.weight", "gate", N_FF, E, 1.0 / np.sqrt(E), i)
            mat(b + "ffn_up.weight", "up", N_FF, E, 1.0 / np.sqrt(E), i)
        mat(b + "ffn_down.weight", "down", E, N_FF, 1.0 / np.sqrt(N_FF), i)
        if s.post_norms:
            vec(b + "post_ffw_norm.weight", E, 1.0, 0.1)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--check", type=Path, help="fixture whose sha256 each file must have")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    want = {}
    if args.check:
        want = {m["name"]: m["sha256"] for m in json.loads(args.check.read_text())["models"]}
    bad = 0
    for s in MODELS:
        path = args.out / f"{s.name}.gguf"
        write_model(s, path)
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        print(f"wrote {path} ({path.stat().st_size} bytes, sha256 {digest[:16]})")
        if args.check and want.get(s.name) != digest:
            print(f"error: {path.name}: sha256 {digest} is not the fixture's {want.get(s.name)}: the file differs "
                  f"from the one llama.cpp's logits were taken on (gguf {gguf_version()} / numpy {np.__version__} "
                  f"not the pinned ones?); rerun scripts/gen_reference.sh scripts/gen_tiny_reference.py", file=sys.stderr)
            bad += 1
    sys.exit(1 if bad else 0)


def gguf_version() -> str:
    try:
        from importlib.metadata import version
        return version("gguf")
    except Exception:  # noqa: BLE001
        return "?"


if __name__ == "__main__":
    main()
