"""Writes tests/fixtures/bm25_reference.json: BM25 scores that rank-bm25's BM25Okapi computes for
a fixed corpus and fixed queries, the oracle for rag/bm25.cpp (tests/rag/test_bm25.cpp).

Terms are split with the same rule as bm25_terms() in rag/bm25.cpp: runs of the bytes
[A-Za-z0-9_] and every byte >= 0x80 of the UTF-8 text, ASCII letters lowercased.

Run through scripts/gen_bm25_reference.sh, which makes the venv.
"""

import argparse
import importlib.metadata
import json
import pathlib
import platform
import re

from rank_bm25 import BM25Okapi

TERM = re.compile(rb"[A-Za-z0-9_\x80-\xff]+")


def terms(text):
    return [m.group(0).lower().decode("utf-8") for m in TERM.finditer(text.encode("utf-8"))]


# Short paragraphs on a few subjects, so that some words are shared by a handful of documents
# and a few ("the", "and", "of") by most of them: their idf is negative and the epsilon floor applies.
CORPUS = [
    "The river valley floods every spring, and the farmers move their cattle to the upper pastures.",
    "A sourdough starter needs flour, water and patience; feed it twice a day and keep it warm.",
    "The committee approved the new budget for the city library and the repair of the old bridge.",
    "Copper conducts heat and electricity well, which is why it is used in cables and cooking pans.",
    "The ferry to the island leaves at nine in the morning and returns before sunset.",
    "To bake the bread, shape the dough into a round loaf and let it rise for two hours.",
    "The museum opened a new exhibition of medieval maps, some of them drawn on sheepskin.",
    "Electric cars store energy in lithium batteries, and the range depends on the weather.",
    "The orchestra rehearsed the symphony for three weeks before the opening night of the festival.",
    "Rain fell on the valley for a week, and the river rose above the stone bridge.",
    "The library lends books, maps and music recordings, and it is open late on Thursdays.",
    "A heat pump moves heat from the cold air outside into the house, using electricity.",
    "The chef seasons the soup with salt, pepper and a little lemon juice just before serving.",
    "Migrating birds follow the coast in autumn and rest in the marshes near the estuary.",
    "The old railway line was closed in 1962 and is now a path for walkers and cyclists.",
    "Solar panels on the roof of the school produce most of the electricity it uses in summer.",
    "The bakery on the corner sells rye bread, croissants and a cake made with almonds.",
    "Historians disagree about the age of the bridge; the oldest map shows it in 1350.",
    "The city council voted to plant two thousand trees along the streets of the old town.",
    "The hikers crossed the pass in fog and reached the mountain hut after dark.",
    "Fresh pasta needs only flour and eggs; knead the dough until it is smooth and elastic.",
    "The festival brings musicians from many countries to play on a stage above the harbour.",
    "Wind turbines on the hills supply power to the valley when the weather is stormy.",
    "The island has one school, one shop and a harbour where the ferry and the fishing boats dock.",
    "A good map of the mountains shows the paths, the huts and the height of every pass.",
    "The battery of a phone wears out after a few hundred charges, and its capacity falls.",
    "Cyclists in the city ride on the new lanes, which the council built last year.",
    "The choir sings in the cathedral every Sunday, and the concerts are free in winter.",
    "Bees pollinate the almond trees in the valley in February, when the blossom opens.",
    "Caf\u00e9 owners on the harbour serve cr\u00eape and coffee to tourists off the ferry.",
    "",
]

QUERIES = [
    "river valley flood",
    "bread dough flour",
    "electricity heat",
    "the",                                # in most documents: negative idf, epsilon floor
    "the bridge",
    "ferry ferry island",                 # a repeated query term counts twice
    "map of the old bridge",
    "submarine",                          # in no document
    "submarine battery",
    "CITY Council",                       # upper case, lowercased like the corpus
    "caf\u00e9 cr\u00eape",               # non-ASCII terms
    "festival music musicians",
    "and of the a",
    "weather power_grid 1962",
]

# A second parameter set for a few queries: both k1 and b reach the score.
SECOND = {"k1": 1.2, "b": 0.5, "epsilon": 0.25}
SECOND_QUERIES = ["river valley flood", "the bridge", "ferry ferry island", "and of the a"]


def scores(bm25, queries):
    return [{"query": q, "terms": terms(q), "scores": [float(s) for s in bm25.get_scores(terms(q))]}
            for q in queries]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default="tests/fixtures/bm25_reference.json")
    args = ap.parse_args()

    corpus_terms = [terms(t) for t in CORPUS]
    first = BM25Okapi(corpus_terms, k1=1.5, b=0.75, epsilon=0.25)
    second = BM25Okapi(corpus_terms, **SECOND)
    out = {
        "generator": "scripts/gen_bm25_reference.py",
        "rank_bm25": importlib.metadata.version("rank-bm25"),
        "python": platform.python_version(),
        "corpus": [{"text": t, "terms": ts} for t, ts in zip(CORPUS, corpus_terms)],
        "settings": [
            {"k1": 1.5, "b": 0.75, "epsilon": 0.25, "average_idf": first.average_idf,
             "queries": scores(first, QUERIES)},
            {**SECOND, "average_idf": second.average_idf, "queries": scores(second, SECOND_QUERIES)},
        ],
    }
    path = pathlib.Path(args.out)
    path.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {path}: {len(CORPUS)} documents, {len(QUERIES)} + {len(SECOND_QUERIES)} queries")


if __name__ == "__main__":
    main()
