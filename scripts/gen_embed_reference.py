"""Writes tests/fixtures/embeddings_minilm.json: for each test sentence, the token ids and the
sentence embedding that sentence-transformers computes with all-MiniLM-L6-v2 (PyTorch, CPU,
float32), read from the same local folder the C++ engine loads.

Run through scripts/gen_embed_reference.sh, which makes the venv and sets HF_HUB_OFFLINE=1.
"""

import argparse
import json
import pathlib
import platform

import sentence_transformers
import tokenizers
import torch
import transformers
from sentence_transformers import SentenceTransformer

# A long passage: well over 256 word pieces, so the reference truncates it.
LONG = (
    "The history of the river valley begins long before written records, when seasonal floods "
    "laid down thick layers of silt that made the plain unusually fertile. Farmers arrived in "
    "small groups, built terraces along the eastern slopes, and learned to read the colour of "
    "the water as a forecast of the coming harvest. Over centuries the villages grew into market "
    "towns connected by ferries, footpaths and, much later, a narrow-gauge railway whose timetable "
    "was printed every spring in the regional newspaper. Merchants traded wool, salted fish, "
    "pottery and copper tools; travelling scribes recorded disputes about grazing rights and the "
    "maintenance of dykes. When the industrial mills opened upstream, the population doubled "
    "within a generation, and the old guild halls were converted into schools, libraries and "
    "cooperative banks. Today the valley is known for its vineyards, its cycling routes and an "
    "annual festival where musicians from neighbouring countries perform on floating stages. "
    "Historians still argue about the origin of the name, which appears in three different "
    "spellings on medieval maps, and archaeologists continue to excavate the remains of a bridge "
    "that may be the oldest stone crossing in the province. Visitors are encouraged to explore "
    "the museum, taste the local cheese, and walk the embankment at sunset when the light turns "
    "the water the colour of copper. Guided tours leave from the station every morning."
)

SENTENCES = [
    # short and empty-ish
    "Hello world",
    "ok",
    "A.",
    "",
    "   ",
    "\t\n",
    "...",
    "?",
    # ordinary sentences on different subjects
    "The cat sat quietly on the warm windowsill.",
    "A quick brown fox jumps over the lazy dog.",
    "Interest rates rose for the third consecutive quarter.",
    "Photosynthesis converts light energy into chemical energy.",
    "How do I reset my password if I forgot my email address?",
    "The orchestra rehearsed the symphony until midnight.",
    "Tokenization splits text into subword units such as ##ing.",
    "Unbelievably, the antidisestablishmentarianism debate continued.",
    # mixed case
    "ThIs SeNtEnCe HaS mIxEd CaSe",
    "NASA launched the iPhone-sized CubeSat from the ISS.",
    "McDonald's and O'Reilly's are NOT the same THING",
    # accents and other Latin letters
    "Café crème brûlée à la française",
    "Ångström, Ørsted and Łódź walk into a naïve façade.",
    "São Paulo, Ñandú, Straße, İstanbul, ılık",
    "Tiếng Việt có dấu rất phức tạp",
    "Cafe\u0301 with a combining acute accent",
    "ﬁnance and ﬂower with ligatures",
    "ＦＵＬＬＷＩＤＴＨ ｌｅｔｔｅｒｓ １２３",
    # other scripts
    "Καλημέρα κόσμε, ΣΟΦΙΑ",
    "Привет, мир! Как дела?",
    "مرحبا بالعالم",
    "שָׁלוֹם עוֹלָם",
    "नमस्ते दुनिया",
    "สวัสดีครับ ยินดีต้อนรับ",
    # CJK
    "日本語のテキストです。",
    "中文句子，包含标点符号！",
    "한국어 문장입니다.",
    "Tokyo 東京 and Beijing 北京 are capitals",
    # punctuation
    "Wait... what?! Really???",
    "e-mail: someone@example.com; (see §3.2) [draft] {v2}",
    "“Smart quotes” and ‘single ones’ — with an em dash – and an en dash",
    "https://example.com/path/to/page?query=1&lang=en#section",
    "def square(x): return x ** 2  # the square",
    "<div class=\"note\">Hello &amp; welcome</div>",
    # numbers
    "3.14159 is approximately pi",
    "In 2023, 1,234,567 people visited the park.",
    "The price dropped from $19.99 to €14.50 (−27%).",
    "10^6 × 2 ÷ 3 ≈ 666,666.67",
    "Call +1 (555) 010-9999 before 09:30 on 2024-02-29.",
    # emoji
    "I love pizza 🍕🍕!",
    "Thumbs up 👍🏽 for the team",
    "Family: 👨‍👩‍👧 (zero width joiners)",
    "Flags 🇫🇷 🇯🇵 and hearts ❤️",
    "Newer emoji 🥰 🫨 🪿",
    # control characters and odd whitespace
    "tab\tseparated\tvalues\nand a newline",
    "null\u0000byte and replacement\ufffdchar",
    "zero\u200bwidth space and co\u00adoperate",
    "\ufeffstarts with a byte order mark",
    "  lots   of    spaces   between  words  ",
    "non\u00a0breaking\u2003em\u3000ideographic spaces",
    # long words and long text
    "supercalifragilisticexpialidocious",
    "a" * 150,
    "pneumonoultramicroscopicsilicovolcanoconiosis is a long word",
    LONG,
    LONG.upper() + " " + LONG,
    ", ".join(str(i) for i in range(1, 201)),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model-dir", default="models/all-MiniLM-L6-v2")
    ap.add_argument("--out", default="tests/fixtures/embeddings_minilm.json")
    args = ap.parse_args()

    torch.manual_seed(0)
    model = SentenceTransformer(args.model_dir, device="cpu", local_files_only=True)
    assert model.max_seq_length == 256, model.max_seq_length
    vecs = model.encode(SENTENCES, batch_size=1, convert_to_numpy=True, normalize_embeddings=False)
    assert vecs.shape == (len(SENTENCES), 384), vecs.shape

    cases = []
    for text, vec in zip(SENTENCES, vecs):
        ids = model.tokenize([text])["input_ids"][0].tolist()
        cases.append({
            "text": text,
            "ids": ids,
            "embedding": [round(float(x), 6) for x in vec],
        })
    doc = {
        "model": "sentence-transformers/all-MiniLM-L6-v2",
        "generator": "scripts/gen_embed_reference.sh",
        "versions": {
            "sentence_transformers": sentence_transformers.__version__,
            "transformers": transformers.__version__,
            "tokenizers": tokenizers.__version__,
            "torch": torch.__version__,
            "python": platform.python_version(),
        },
        "max_seq_length": model.max_seq_length,
        "dim": int(vecs.shape[1]),
        "cases": cases,
    }
    # One case per line keeps the file small and its diffs readable.
    head = {k: v for k, v in doc.items() if k != "cases"}
    lines = [json.dumps(head, ensure_ascii=False)[:-1] + ', "cases": [']
    lines += [json.dumps(c, ensure_ascii=False) + ("," if i + 1 < len(cases) else "") for i, c in enumerate(cases)]
    lines += ["]}"]
    out = pathlib.Path(args.out)
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    n_trunc = sum(1 for c in cases if len(c["ids"]) == model.max_seq_length)
    print(f"gen_embed_reference: wrote {out}: {len(cases)} sentences, {n_trunc} truncated to "
          f"{model.max_seq_length} tokens")


if __name__ == "__main__":
    main()
