#!/usr/bin/env python3
"""Write tests/fixtures/quantizer_reference.json: float weight rows and the bytes llama.cpp's
quantizer (llama_model_quantize, through llama-cpp-python) makes of them in Q5_0, Q5_1, Q4_K,
Q5_K and Q6_K, for test_quantize.cpp to hold our weight quantizers to byte for byte.

Run through scripts/gen_reference.sh scripts/gen_quantizer_reference.py. The rows are two
random-normal matrices of a one-layer F32 model written by gen_tiny_models.py (rows of 256 and
512), quantized with pure = True (every matrix the ftype's own type, no importance matrix).
"""

from __future__ import annotations

import ctypes
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import llama_cpp
from gguf import GGMLQuantizationType as T
from gguf import GGUFReader

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen_tiny_models as g  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "quantizer_reference.json"
TENSORS = ["blk.0.ffn_gate.weight", "blk.0.ffn_down.weight"]  # rows of 256 and 512
ROWS = 2
FTYPES = {  # the type a pure quantization of each ftype gives every matrix
    "Q5_0": llama_cpp.LLAMA_FTYPE_MOSTLY_Q5_0,
    "Q5_1": llama_cpp.LLAMA_FTYPE_MOSTLY_Q5_1,
    "Q4_K": llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_K_S,
    "Q5_K": llama_cpp.LLAMA_FTYPE_MOSTLY_Q5_K_S,
    "Q6_K": llama_cpp.LLAMA_FTYPE_MOSTLY_Q6_K,
}


def tensor(path: Path, name: str):
    for t in GGUFReader(str(path)).tensors:
        if t.name == name:
            return t
    raise KeyError(name)


def main() -> None:
    g.N_LAYER = 1
    s = g.spec("f32", "llama", {k: T.F32 for k in g.K_MIX}, pre="smollm", seed=21)
    doc = {"generator": f"llama-cpp-python {llama_cpp.__version__} llama_model_quantize, pure", "cases": []}
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "f32.gguf"
        g.write_model(s, src)
        for tname, ftype in FTYPES.items():
            dst = Path(tmp) / f"{tname}.gguf"
            params = llama_cpp.llama_model_quantize_default_params()
            params.ftype = ftype
            params.pure = True
            params.nthread = 2
            rc = llama_cpp.llama_model_quantize(str(src).encode(), str(dst).encode(), ctypes.byref(params))
            assert rc == 0, f"llama_model_quantize failed for {tname}"
            for name in TENSORS:
                x = tensor(src, name)
                q = tensor(dst, name)
                assert q.tensor_type.name == tname, (name, q.tensor_type.name, tname)
                rows = np.asarray(x.data, dtype=np.float32).reshape(-1, int(x.shape[0]))[:ROWS]
                qb = np.asarray(q.data, dtype=np.uint8).reshape(-1, q.data.shape[-1])[:ROWS]
                doc["cases"].append({
                    "type": tname,
                    "tensor": name,
                    "n": int(x.shape[0]),
                    "floats": rows.astype("<f4").tobytes().hex(),
                    "bytes": qb.tobytes().hex(),
                })
    OUT.write_text(json.dumps(doc, separators=(",", ":")) + "\n")
    print(f"wrote {OUT}: {len(doc['cases'])} cases")


if __name__ == "__main__":
    main()
