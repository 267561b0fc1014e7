#!/usr/bin/env python3
"""Python's HTML documentation as Markdown, for the retrieval evaluation and benchmark.

    scripts/rag_corpus.py --eval [--html DIR] [--out data/rag-eval/python-docs]
    scripts/rag_corpus.py --all  [--html DIR] [--out data/rag-bench/python-docs]

Reads the Sphinx pages of the Debian package python3.11-doc (/usr/share/doc/python3.11/html)
and writes one Markdown file per page, <out>/<section>/<page>.md, keeping only the page's main
body (div class="body" role="main"): headings h1-h4 as '#'-levels without the permalink marks,
paragraphs, list items, definition lists (a signature `dt` on its own line, e.g.
"json.dumps(obj, *, skipkeys=False, ...)"), table rows as "a | b" lines, and code blocks as
text indented by four spaces (so a "# comment" line in code is not read as a heading).
Navigation, sidebars, footers, scripts and styles are dropped.

--eval converts the fixed list of library pages below (the corpus of bench/rag_eval.cpp and
tests/rag/eval_questions.jsonl: about 130,000 WordPiece tokens, two minutes to embed on two
threads); --all converts every page under library/, tutorial/, howto/ and reference/ (the corpus
of bench/rag_bench.cpp). Python 3 standard library only. A few seconds for --all.
"""
import argparse
import html.parser
import os
import re
import sys

# The evaluation pages: varied, moderately sized modules. Changing this list changes the figures
# in docs/rag.md; the questions of tests/rag/eval_questions.jsonl refer to these pages.
EVAL_PAGES = [
    "json", "csv", "pathlib", "itertools", "functools", "collections", "os.path", "shutil",
    "random", "statistics", "heapq", "bisect", "textwrap", "string", "tempfile", "glob",
    "fnmatch", "hashlib", "base64", "uuid", "secrets", "contextlib", "shlex", "urllib.parse",
    "time",
]
ALL_SECTIONS = ["library", "tutorial", "howto", "reference"]

BLOCK_TAGS = {"p", "li", "dt", "dd", "pre", "div", "section", "blockquote", "dl", "ul", "ol",
              "table", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "caption", "figure"}
HEADING_LEVEL = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 4, "h6": 4}
SKIP_TAGS = {"script", "style"}
VOID_TAGS = {"br", "img", "hr", "input", "meta", "link", "wbr", "col", "source"}


class PageToMarkdown(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.body_depth = 0        # open <div>s since the main body div opened; 0 = outside
        self.skip_depth = 0        # inside <script>/<style>/permalink anchors
        self.pre_depth = 0
        self.stack = []            # (tag, skipped) of the open tags inside the body
        self.blocks = []           # finished Markdown blocks
        self.inline = []           # text of the block being read
        self.heading = 0           # level of the open heading, 0 = none
        self.list_item = False
        self.row = None            # cells of the open table row
        self.title = ""

    # -- structure --
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if self.body_depth == 0:
            if tag == "div" and a.get("role") == "main" or (tag == "div" and "body" in (a.get("class") or "").split()):
                self.body_depth = 1
                self.stack = [("div", False)]
            return
        if tag in VOID_TAGS:
            if tag == "br":
                self.inline.append("\n" if self.pre_depth else " ")
            return
        skip = tag in SKIP_TAGS or (tag == "a" and "headerlink" in (a.get("class") or "").split())
        self.stack.append((tag, skip))
        if tag == "div":
            self.body_depth += 1
        if skip:
            self.skip_depth += 1
            return
        if self.skip_depth:
            return
        if tag == "tr":
            self.flush()
            self.row = []
            return
        if tag in ("td", "th") and self.row is not None:
            self.flush_cell()
            return
        if tag in BLOCK_TAGS:
            self.flush()
        if tag in HEADING_LEVEL:
            self.heading = HEADING_LEVEL[tag]
        elif tag == "li":
            self.list_item = True
        elif tag == "pre":
            self.pre_depth += 1

    def handle_endtag(self, tag):
        if self.body_depth == 0 or tag in VOID_TAGS:
            return
        # pop up to the matching tag (tolerates unclosed <p> and <li>)
        if not any(t == tag for t, _ in self.stack):
            return
        while self.stack:
            top, skip = self.stack.pop()
            if skip:
                self.skip_depth -= 1
            if top == "div":
                self.body_depth -= 1
            if top == tag:
                break
        if self.skip_depth:
            return
        if self.body_depth == 0:
            self.flush()
            return
        if tag in ("td", "th") and self.row is not None:
            self.flush_cell()
            return
        if tag == "tr" and self.row is not None:
            self.flush_cell()
            cells = [c for c in self.row if c]
            if cells:
                self.blocks.append(" | ".join(cells))
            self.row = None
            return
        if tag == "pre":
            self.flush()
            self.pre_depth = max(0, self.pre_depth - 1)
            return
        if tag in BLOCK_TAGS:
            self.flush()
        if tag in HEADING_LEVEL:
            self.heading = 0

    def handle_data(self, data):
        if self.body_depth == 0 or self.skip_depth:
            return
        self.inline.append(data)

    # -- output --
    def flush_cell(self):
        text = clean_inline("".join(self.inline))
        self.inline = []
        if text:
            self.row.append(text)

    def flush(self):
        raw = "".join(self.inline)
        self.inline = []
        if self.row is not None:   # text between cells
            text = clean_inline(raw)
            if text:
                self.row.append(text)
            return
        if self.pre_depth:
            lines = raw.replace("\r", "").strip("\n").split("\n")
            code = "\n".join(("    " + ln).rstrip() for ln in lines)
            if code.strip():
                self.blocks.append(code)
            return
        text = clean_inline(raw)
        if not text:
            return
        if self.heading:
            if not self.title:
                self.title = text
            self.blocks.append("#" * self.heading + " " + text)
            self.heading = 0   # text after the heading's first part is a paragraph
        elif self.list_item:
            self.blocks.append("- " + text)
            self.list_item = False
        else:
            if text.startswith("#"):
                text = "\\" + text  # never a heading by accident
            self.blocks.append(text)

    def markdown(self):
        self.flush()
        return "\n\n".join(self.blocks) + "\n"


def clean_inline(s):
    s = s.replace("\u00b6", "")
    return re.sub(r"\s+", " ", s).strip()


def convert(src, dst):
    with open(src, encoding="utf-8") as f:
        page = f.read()
    p = PageToMarkdown()
    p.feed(page)
    p.close()
    md = p.markdown()
    if len(md.strip()) == 0:
        return 0
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    tmp = dst + ".part"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(md)
    os.replace(tmp, dst)
    return len(md)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--eval", action="store_true", help="the evaluation pages (EVAL_PAGES)")
    mode.add_argument("--all", action="store_true", help="every page of " + ", ".join(ALL_SECTIONS))
    ap.add_argument("--html", default="/usr/share/doc/python3.11/html", help="the Sphinx HTML tree")
    ap.add_argument("--out", default=None, help="output folder")
    args = ap.parse_args()
    out = args.out or ("data/rag-eval/python-docs" if args.eval else "data/rag-bench/python-docs")
    if not os.path.isdir(args.html):
        sys.exit(f"rag_corpus: {args.html}: no such folder (apt-get install python3.11-doc)")

    pages = []  # (source html, relative name without extension)
    if args.eval:
        for name in EVAL_PAGES:
            pages.append((os.path.join(args.html, "library", name + ".html"), "library/" + name))
    else:
        for section in ALL_SECTIONS:
            root = os.path.join(args.html, section)
            for dirpath, _, files in os.walk(root):
                for fn in sorted(files):
                    if fn.endswith(".html"):
                        rel = os.path.relpath(os.path.join(dirpath, fn), args.html)
                        pages.append((os.path.join(dirpath, fn), rel[: -len(".html")]))
    pages.sort(key=lambda p: p[1])

    n, total = 0, 0
    for src, rel in pages:
        if not os.path.isfile(src):
            sys.exit(f"rag_corpus: {src}: missing page")
        size = convert(src, os.path.join(out, rel + ".md"))
        if size:
            n += 1
            total += size
    print(f"rag_corpus: {n} pages, {total / 1e6:.2f} MB of Markdown in {out}")


if __name__ == "__main__":
    main()
