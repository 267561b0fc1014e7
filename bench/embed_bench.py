"""sentence-transformers' side of bench/embed_bench.sh: the same texts, the same model folder,
torch on CPU with the given threads; prints one JSON line per workload, and the embeddings of the
first texts of each for the cosine check.

usage: embed_bench.py MODEL_DIR THREADS QUESTIONS_FILE CHUNKS_FILE OUT_NPY_PREFIX
"""
import json, sys, time

import numpy as np
import torch
from sentence_transformers import SentenceTransformer

model_dir, threads, qfile, cfile, prefix = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
torch.set_num_threads(threads)
model = SentenceTransformer(model_dir, device="cpu")
for name, path, batch in (("question", qfile, 1), ("ingest", cfile, 32)):
    texts = [l.rstrip("\n") for l in open(path) if l.strip()]
    if not texts:
        continue
    model.encode(texts[:4], batch_size=batch)  # warm-up
    t0 = time.perf_counter()
    vecs = model.encode(texts, batch_size=batch, normalize_embeddings=True)
    dt = time.perf_counter() - t0
    np.save(f"{prefix}-{name}.npy", vecs)
    print(json.dumps({"who": "sentence-transformers", "test": name, "threads": threads, "texts": len(texts),
                      "texts_per_s": len(texts) / dt, "ms_per_text": 1000 * dt / len(texts)}))
