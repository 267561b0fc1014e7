#!/usr/bin/env python3
"""Generate the reference fixtures in tests/fixtures/ with llama.cpp.

Run through scripts/gen_reference.sh, which provides a venv with
llama-cpp-python. Writes:

  tests/fixtures/tokenizer_smollm2.jsonl   {"text": ..., "ids": [...]} per line
  tests/fixtures/generation_smollm2.json   prompt ids, top-5 logits after the
                                           prompt and 64 greedy tokens per prompt
"""

from __future__ import annotations

import argparse
import ctypes
import hashlib
import itertools
import json
import sys
from pathlib import Path

import numpy as np
import llama_cpp
from llama_cpp import Llama

ROOT = Path(__file__).resolve().parent.parent
MODEL_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_MODEL = ROOT / "models" / MODEL_NAME
FIXTURES = ROOT / "tests" / "fixtures"
N_CTX = 2048
N_GREEDY = 64
EOG_IDS = (0, 2)  # <|endoftext|>, <|im_end|>

DEFAULT_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"


# ------------------------------------------------------------------ tokenizer --

def tokenizer_strings() -> list[str]:
    s: list[str] = []

    # English prose.
    s += [
        "Hello world",
        "Hello, world!",
        "The quick brown fox jumps over the lazy dog.",
        "THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG",
        "the quick brown fox",
        "It was the best of times, it was the worst of times.",
        "Actors communicate only by sending messages to each other.",
        "Please summarise the following paragraph in one sentence.",
        "What is the capital of France?",
        "I think, therefore I am.",
        "She sells sea shells by the sea shore.",
        "To be, or not to be: that is the question.",
        "Mr. and Mrs. Smith arrived at 5 p.m. on Tuesday.",
        "e.g. this, i.e. that, etc.",
        "A well-known, state-of-the-art, end-to-end system.",
        "Supercalifragilisticexpialidocious",
        "antidisestablishmentarianism",
        "internationalization localization",
        "HTTPServerError XMLHttpRequest camelCaseWord snake_case_word kebab-case-word",
        "Hello\nWorld",
        "First line.\nSecond line.\n\nNew paragraph.",
        "Dear Sir or Madam,\n\nThank you for your letter.\n\nKind regards,\nAlex",
        "Q: Why?\nA: Because.",
        "(parenthetical remark) [bracketed] {braced} <angled>",
        'He said "hello" and she said \u201cgoodbye\u201d \u2014 then left\u2026',
    ]

    # Code.
    s += [
        "def add(a, b):\n    return a + b\n",
        "import numpy as np\nx = np.zeros((3, 4), dtype=np.float32)",
        "for i in range(10):\n\tprint(i)",
        "class Foo(Bar):\n    def __init__(self):\n        super().__init__()\n        self._x = None\n",
        "if __name__ == \"__main__\":\n    main()",
        "lambda x: x ** 2 if x > 0 else -x",
        "print(f\"{name!r:>10} = {value:.3f}\")",
        "    # indented comment\n        deeper\n",
        "#include <iostream>\n\nint main() {\n    std::cout << \"hi\\n\";\n    return 0;\n}\n",
        "template <typename T>\nauto clamp(T v, T lo, T hi) -> T { return v < lo ? lo : (hi < v ? hi : v); }",
        "std::vector<std::unique_ptr<Node>> children;",
        "for (int i = 0; i < n; ++i) { sum += a[i] * b[i]; }",
        "x->y = &z; p != nullptr && *p == 0; a <<= 2; b >>= 3;",
        "constexpr std::size_t kBlock = 32; // Q4_1 block size",
        '{"name": "actorserve", "version": "0.1.0", "tags": ["llm", "cpu"], "ok": true, "n": null}',
        '{\n  "a": 1,\n  "b": [1, 2, 3],\n  "c": {"d": "e"}\n}',
        '[{"id":1},{"id":2}]',
        '{"escaped": "line\\nbreak \\"quoted\\" \\u00e9"}',
        "#!/usr/bin/env bash\nset -euo pipefail\n",
        "ls -la /tmp | grep foo && echo ok || echo fail",
        "cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build -j$(nproc)",
        'for f in *.txt; do echo "$f"; done',
        "export PATH=\"$HOME/.local/bin:$PATH\"",
        "curl -fsSL https://example.com/install.sh | sh -s -- --yes",
        "SELECT id, name FROM users WHERE age >= 18 ORDER BY name;",
        "<div class=\"row\"><p>Hello</p></div>",
        "a = b + c - d * e / f % g ^ h | i & j ~ k",
        "0x1F 0xdeadbeef 0b1010 0o777",
    ]

    # Numbers: alone, with a leading space and inside text.
    numbers = [
        "0", "1", "12", "123", "1234", "12345", "1234567", "1000000",
        "3.14159", "-42", "+7", "1e10", "6.022e23", "1,234,567.89", "007",
        "50%", "$19.99", "\u20ac5", "2024-03-15", "15/03/2024", "12:34:56",
        "+1 (555) 123-4567", "555-0100", "192.168.0.1", "v1.2.3",
    ]
    s += numbers
    s += [" " + n for n in ["1", "12", "123", "1234567", "3.14159", "-42"]]
    s += [
        "I have 3 apples and 12 oranges.",
        "In 1969, 3 astronauts flew 384400 km.",
        "Pi is approximately 3.14159265358979.",
        "Call me at +44 20 7946 0958 before 9:30am.",
        "abc123def456",
        "1+1=2",
        "x1 x12 x123 x1234",
    ]

    # Whitespace runs, programmatically around a couple of words.
    pads = ["", " ", "  ", "\t", "\n", "\n\n\n", " \n ", "\t \n"]
    for pre, post in itertools.product(pads, ["", " ", "\n", "  "]):
        if pre == "" and post == "":
            continue
        s.append(f"{pre}hello world{post}")
    s += [
        " ", "  ", "   ", "    ", "        ", "\t", "\t\t", "\n", "\n\n", "\n\n\n",
        " \n ", "\r\n", "\r\n\r\n", " \t \t ", "\n \n \n",
        "hello  world", "hello   world", "hello\tworld", "hello \tworld",
        "hello\n\nworld", "hello \n world", "word \n\n  word", "a\u00a0b",
        "trailing spaces   ", "   leading spaces",
    ]

    # Accents and combining marks.
    s += [
        "caf\u00e9", "na\u00efve", "\u00c5ngstr\u00f6m", "\u00dcberm\u00e4\u00dfig",
        "fa\u00e7ade r\u00e9sum\u00e9 cr\u00e8me br\u00fbl\u00e9e",
        "se\u00f1or ni\u00f1o a\u00f1o", "S\u00e3o Paulo", "\u0141\u00f3d\u017a \u017b\u00f3\u0142\u0107",
        "cafe\u0301 (combining acute)", "Stra\u00dfe STRASSE",
        "Caf\u00e9 au lait, s'il vous pla\u00eet.",
    ]

    # Other scripts.
    s += [
        "\u0393\u03b5\u03b9\u03ac \u03c3\u03bf\u03c5 \u039a\u03cc\u03c3\u03bc\u03b5",  # Greek
        "\u03b1\u03b2\u03b3\u03b4\u03b5 \u0391\u0392\u0393\u0394\u0395",
        "\u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440!",  # Russian
        "\u041c\u043e\u0441\u043a\u0432\u0430 \u2014 \u0441\u0442\u043e\u043b\u0438\u0446\u0430 \u0420\u043e\u0441\u0441\u0438\u0438.",
        "\u0423\u043a\u0440\u0430\u0457\u043d\u0430 \u0411\u044a\u043b\u0433\u0430\u0440\u0438\u044f",
        "\u4f60\u597d\uff0c\u4e16\u754c\uff01",  # Chinese
        "\u6211\u7231\u5317\u4eac\u5929\u5b89\u95e8\u3002",
        "\u4eba\u5de5\u667a\u80fd\u662f\u672a\u6765",
        "\u3053\u3093\u306b\u3061\u306f\u4e16\u754c",  # Japanese
        "\u30ab\u30bf\u30ab\u30ca\u3068\u3072\u3089\u304c\u306a\u3068\u6f22\u5b57",
        "\u6771\u4eac\u306f\u65e5\u672c\u306e\u9996\u90fd\u3067\u3059\u3002",
        "\uc548\ub155\ud558\uc138\uc694",  # Korean
        "\ud55c\uad6d\uc5b4 \ubb38\uc7a5\uc785\ub2c8\ub2e4.",
        "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645",  # Arabic
        "\u0627\u0644\u0644\u063a\u0629 \u0627\u0644\u0639\u0631\u0628\u064a\u0629 123",
        "\u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd",  # Hebrew
        "\u0928\u092e\u0938\u094d\u0924\u0947 \u0926\u0941\u0928\u093f\u092f\u093e",  # Hindi
        "\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35\u0e0a\u0e32\u0e27\u0e42\u0e25\u0e01",  # Thai
        "English \u4e2d\u6587 \u65e5\u672c\u8a9e \ud55c\uad6d\uc5b4 \u0420\u0443\u0441\u0441\u043a\u0438\u0439 mixed",
    ]

    # Emoji, including ZWJ sequences, skin tones, flags and keycaps.
    s += [
        "\U0001f600", "\U0001f44d\U0001f3fd", "\u2764\ufe0f",
        "\U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466",  # family
        "\U0001f469\u200d\U0001f4bb",  # woman technologist
        "\U0001f3f3\ufe0f\u200d\U0001f308",  # rainbow flag
        "\U0001f1eb\U0001f1f7 \U0001f1ef\U0001f1f5 \U0001f1fa\U0001f1f8",  # flags
        "1\ufe0f\u20e3 #\ufe0f\u20e3",  # keycaps
        "I love pizza \U0001f355\U0001f355\U0001f355!",
        "\U0001f680 launch at T-10 \u2728",
        "zero\u200bwidth\u200bspace",
    ]

    # Contractions and apostrophes, in several cases.
    s += [
        "don't", "Don't", "DON'T", "I'M", "I'm", "i'm", "they'll", "THEY'LL",
        "we've", "you're", "she'd", "it's", "'s", "'t", "'re", "'ve", "'m", "'ll", "'d",
        "John's car isn't here, and they're not coming.",
        "I'd've done it if I'd known.",
        "rock 'n' roll",
        "'quoted' and ''double single''",
        "it\u2019s a curly apostrophe",
        "O'Neil's dog's bone",
    ]

    # Punctuation runs.
    s += [
        "!!!", "???", "?!?!", "...", "....", "\u2026", "---", "___", "***", "===",
        "!@#$%^&*()_+-=[]{}|;':\",./<>?`~",
        "Wait... what?!",
        "-- -> => <= >= != == === !== :: ;; ,,",
        "/* comment */ // comment # comment",
        "\u00ab\u00bb \u201e\u201c \u2018\u2019 \u2013\u2014",
    ]

    # URLs, paths, e-mail.
    s += [
        "https://www.example.com",
        "https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct",
        "http://localhost:8080/v1/chat/completions?stream=true&n=1",
        "ftp://files.example.org/pub/file.tar.gz",
        "See https://en.wikipedia.org/wiki/Actor_model for details.",
        "user.name+tag@example.co.uk",
        "/usr/local/bin/actorserve",
        "C:\\Users\\Public\\Documents\\file.txt",
        "www.example.com/path/to/page.html#section-2",
    ]

    # The empty string and single characters.
    s += [""]
    s += list("aAzZ0 9.,;:!?'\"-_()[]{}<>/\\|@#$%^&*+=~`")
    s += ["\u00e9", "\u00df", "\u4e2d", "\u3042", "\ud55c", "\u0416", "\u03a9", "\U0001f600", "\u00a0", "\u20ac"]

    # Special tokens embedded in text.
    s += [
        "<|im_start|>user\nhi<|im_end|>",
        "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n",
        "<|endoftext|>",
        "<|endoftext|><|endoftext|>",
        "Some text<|endoftext|>More text",
        "<repo_name>",
        "<repo_name>actorserve<file_sep>README.md",
        "<file_sep>",
        "hello<|im_end|>world",
        "hello <|im_end|> world",
        "foo<|endoftext|>bar baz",
        "<|im_start|>",
        "<|im_end|>",
        "<|im_start|><|im_end|>",
        "<|im_start|",  # incomplete: plain text
        "<|notatoken|>",
        "< |im_start| >",
    ]

    # De-duplicate, keep the first occurrence.
    seen: set[str] = set()
    out: list[str] = []
    for t in s:
        if t not in seen:
            seen.add(t)
            out.append(t)
    return out


def write_tokenizer_fixture(llm: Llama, path: Path) -> list[str]:
    """Writes one JSON line per string. Returns the strings whose round-trip failed."""
    failed: list[str] = []
    lines: list[str] = []
    for text in tokenizer_strings():
        ids = llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)
        back = llm.detokenize(ids, special=True).decode("utf-8", errors="replace")
        rec: dict = {"text": text, "ids": [int(i) for i in ids]}
        if back != text:
            rec["roundtrip"] = False
            failed.append(text)
            print(f"warning: round-trip differs for {text!r}: got {back!r}", file=sys.stderr)
        lines.append(json.dumps(rec, ensure_ascii=False))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {path.relative_to(ROOT)}: {len(lines)} strings, {len(failed)} round-trip mismatches")
    return failed


# ----------------------------------------------------------------- generation --

def chatml(messages: list[tuple[str, str]]) -> str:
    """Renders messages like the model's chat template, with the generation prompt."""
    out = ""
    if not messages or messages[0][0] != "system":
        out += f"<|im_start|>system\n{DEFAULT_SYSTEM}<|im_end|>\n"
    for role, content in messages:
        out += f"<|im_start|>{role}\n{content}<|im_end|>\n"
    return out + "<|im_start|>assistant\n"


def generation_prompts() -> list[tuple[str, str, list[tuple[str, str]] | None]]:
    """(name, prompt text, messages or None for raw completion)."""
    chats = [
        ("chat_capital_france", [("user", "What is the capital of France?")]),
        ("chat_python_function", [("user", "Write a Python function that returns the square of a number.")]),
        ("chat_photosynthesis", [("user", "Explain photosynthesis briefly.")]),
        ("chat_haiku", [("user", "Write a haiku about autumn leaves.")]),
        ("chat_math_word_problem", [("user", "Tom has 3 boxes with 12 apples in each box. He gives away 10 apples. How many apples does he have left?")]),
        ("chat_translate_custom_system", [
            ("system", "You are a translator. Reply only with the French translation of the user's text."),
            ("user", "Good morning, how are you today?"),
        ]),
        ("chat_two_turns_colours", [
            ("user", "Hi! Can you help me with something?"),
            ("assistant", "Of course! What do you need help with?"),
            ("user", "List three colours."),
        ]),
    ]
    out: list[tuple[str, str, list[tuple[str, str]] | None]] = [
        (name, chatml(msgs), msgs) for name, msgs in chats
    ]
    out += [
        ("raw_capital_france", "The capital of France is", None),
        ("raw_fibonacci", "def fibonacci(n):\n", None),
        ("raw_once_upon", "Once upon a time,", None),
    ]
    return out


def check_template(llm: Llama, prompts) -> None:
    """Cross-checks chatml() against the chat template stored in the GGUF."""
    template = llm.metadata.get("tokenizer.chat_template")
    if not template:
        print("warning: no tokenizer.chat_template in the model; ChatML rendering not cross-checked",
              file=sys.stderr)
        return
    import jinja2

    env = jinja2.Environment(loader=jinja2.BaseLoader())
    tmpl = env.from_string(template)
    for name, text, msgs in prompts:
        if msgs is None:
            continue
        rendered = tmpl.render(messages=[{"role": r, "content": c} for r, c in msgs],
                               add_generation_prompt=True)
        if rendered != text:
            raise SystemExit(f"{name}: prompt differs from the model's chat template:\n"
                             f"{rendered!r}\nvs\n{text!r}")
    print("chat prompts match the model's chat template")


def last_logits(llm: Llama) -> np.ndarray:
    # With logits_all=False, Llama.eval() does not copy logits into llm.scores,
    # so read the output row of the last evaluated token from the context.
    n_vocab = llm.n_vocab()
    ptr = llama_cpp.llama_get_logits_ith(llm.ctx, -1)
    arr = np.ctypeslib.as_array(ctypes.cast(ptr, ctypes.POINTER(ctypes.c_float)), shape=(n_vocab,))
    return arr.astype(np.float32, copy=True)


def top_k(logits: np.ndarray, k: int) -> list[tuple[int, float]]:
    # Stable sort on the negated logits: ties keep the lower id first, which
    # matches np.argmax.
    order = np.argsort(-logits, kind="stable")[:k]
    return [(int(i), float(logits[i])) for i in order]


def run_prompt(llm: Llama, name: str, text: str) -> dict:
    prompt_ids = [int(t) for t in llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)]
    llm.reset()
    llm.eval(prompt_ids)
    logits = last_logits(llm)
    top5 = [[i, round(v, 5)] for i, v in top_k(logits, 5)]

    greedy: list[int] = []
    margins: list[float] = []
    for step in range(N_GREEDY):
        (t, v1), (_, v2) = top_k(logits, 2)
        assert t == int(np.argmax(logits))
        greedy.append(t)
        margins.append(round(v1 - v2, 4))
        if step + 1 < N_GREEDY:
            llm.eval([t])
            logits = last_logits(llm)

    eog_at = next((i for i, t in enumerate(greedy) if t in EOG_IDS), None)
    return {
        "name": name,
        "prompt": text,
        "prompt_ids": prompt_ids,
        "greedy_ids": greedy,
        "greedy_text": llm.detokenize(greedy, special=True).decode("utf-8", errors="replace"),
        "top5": top5,
        "eog_at": eog_at,
        "greedy_margins": margins,
    }


def dump_generation(doc: dict) -> str:
    """JSON with one key per line and every value on one line, so diffs stay readable."""
    def enc(v) -> str:
        return json.dumps(v, ensure_ascii=False)

    out = ["{"]
    for key in ("generator", "model", "model_sha256", "n_ctx"):
        out.append(f" {enc(key)}: {enc(doc[key])},")
    out.append(' "prompts": [')
    for n, rec in enumerate(doc["prompts"]):
        fields = [f"  {enc(k)}: {enc(v)}" for k, v in rec.items()]
        out.append("  {")
        out.append(",\n".join(" " + f for f in fields))
        out.append("  }" + ("," if n + 1 < len(doc["prompts"]) else ""))
    out.append(" ]")
    out.append("}")
    text = "\n".join(out) + "\n"
    assert json.loads(text) == doc
    return text


def write_generation_fixture(llm: Llama, model_sha256: str, path: Path) -> list[dict]:
    prompts = generation_prompts()
    check_template(llm, prompts)
    records = []
    for name, text, _ in prompts:
        rec = run_prompt(llm, name, text)
        records.append(rec)
        print(f"  {name}: {len(rec['prompt_ids'])} prompt tokens, eog_at={rec['eog_at']}, "
              f"min margin (first 32) {min(rec['greedy_margins'][:32]):.4f}")
    doc = {
        "generator": f"llama-cpp-python {llama_cpp.__version__}",
        "model": MODEL_NAME,
        "model_sha256": model_sha256,
        "n_ctx": N_CTX,
        "prompts": records,
    }
    path.write_text(dump_generation(doc), encoding="utf-8")
    print(f"wrote {path.relative_to(ROOT)}: {len(records)} prompts")
    return records


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    ap.add_argument("--out", type=Path, default=FIXTURES)
    args = ap.parse_args()

    model_sha256 = hashlib.sha256(args.model.read_bytes()).hexdigest()
    args.out.mkdir(parents=True, exist_ok=True)

    llm = Llama(model_path=str(args.model), n_ctx=N_CTX, n_threads=2, n_batch=512, seed=0,
                verbose=False, logits_all=False)

    failed = write_tokenizer_fixture(llm, args.out / "tokenizer_smollm2.jsonl")
    records = write_generation_fixture(llm, model_sha256, args.out / "generation_smollm2.json")

    if failed:
        print(f"note: {len(failed)} strings do not round-trip through llama.cpp's detokenizer")
    for rec in records:
        close = [(i, m) for i, m in enumerate(rec["greedy_margins"][:32]) if m < 0.05]
        if close:
            print(f"note: {rec['name']}: near-tie greedy steps in the first 32: {close}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
