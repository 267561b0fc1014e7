#!/usr/bin/env python3
"""Write tests/fixtures/quant_blocks.json: random blocks of the 5-bit and K-quant formats and
their values as the PyPI package `gguf` (the GGUF library llama.cpp maintains) dequantizes them.

Run through scripts/gen_reference.sh --quant-blocks (its venv has gguf and numpy). The blocks
are random bytes with the scale fields set to finite halves, so every bit of the layout is
exercised; test_kquants.cpp checks our dequantization against these values bit for bit and
checks that the dot kernels agree with them.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import quants

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "quant_blocks.json"

# (type, blocks, byte offsets of the half-precision scale fields within a block)
FORMATS = [
    (T.Q5_0, 8, [0]),
    (T.Q5_1, 8, [0, 2]),
    (T.Q4_K, 3, [0, 2]),
    (T.Q5_K, 3, [0, 2]),
    (T.Q6_K, 3, [208]),
]


def main() -> None:
    rng = np.random.default_rng(20261203)
    out = {"generator": "scripts/gen_quant_reference.py", "formats": []}
    for t, n_blocks, half_offsets in FORMATS:
        block_elems, block_bytes = quants.GGML_QUANT_SIZES[t]
        raw = rng.integers(0, 256, size=(n_blocks, block_bytes), dtype=np.uint8)
        for off in half_offsets:
            # scales of either sign in [2^-12, 2^-4): finite, normal halves
            h = (rng.choice([-1.0, 1.0], n_blocks) * 2.0 ** rng.uniform(-12, -4, n_blocks)).astype(np.float16)
            raw[:, off:off + 2] = h.view(np.uint8).reshape(n_blocks, 2)
        values = quants.dequantize(raw, t).reshape(-1).astype(np.float32)
        out["formats"].append({
            "type": t.name,
            "bytes": raw.tobytes().hex(),
            "values": [float(v) for v in values],
        })
    OUT.write_text(json.dumps(out, separators=(",", ":")) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
