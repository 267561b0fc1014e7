// The in-memory WordNet reader (cache/wordnet.h) against Princeton's own library, libwordnet
// (Debian's wordnet-dev), on the same database files: base forms, the words of each sense, and
// direct antonyms, for every word of the cache's evaluation sets and a list of irregular forms.
#include "tests/support/paths.h"
#include <doctest/doctest.h>

#include "cache/wordnet.h"
#include "tests/support/temp_dir.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>
#include <string>
#include <vector>

extern "C" {
#include <wn.h>
}

using namespace actorserve;

namespace {

const char *kDir = "/usr/share/wordnet";

std::vector<std::string> words_to_check() {
    std::set<std::string> out = {"geese", "mice", "children", "went", "ran", "better", "best", "worse", "feet", "swam", "leaves",
                                 "studies", "boxes", "churches", "wolves", "happier", "biggest", "larger", "hotter", "running",
                                 "stopped", "denied", "axes", "data", "women", "quickly", "safely", "inventor"};
    for (const char *f : {"/tests/cache/eval_set.jsonl", "/tests/cache/eval_holdout.jsonl"}) {
        std::ifstream in(test_paths::source() + f);
        std::string w;
        char c;
        while (in.get(c)) {
            if (std::isalpha(static_cast<unsigned char>(c))) {
                w.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
            } else {
                if (w.size() > 1) out.insert(w);
                w.clear();
            }
        }
    }
    return {out.begin(), out.end()};
}

std::string clean(const char *w) {
    std::string s(w);
    if (size_t p = s.find('('); p != std::string::npos) s.resize(p);
    for (char &c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

} // namespace

TEST_CASE("wordnet: base forms, senses and antonyms agree with libwordnet") {
    std::shared_ptr<const wordnet> wn;
    REQUIRE_NOTHROW(wn = wordnet::load(kDir));
    REQUIRE_MESSAGE(wninit() == 0, "libwordnet found no database in its default place");
    CHECK(wn->lemma_count() > 140000);
    CHECK(wn->synset_count() == 117659);   // WordNet 3.0

    const char pos_letter[] = {0, 'n', 'v', 'a', 'r'};
    size_t compared_bases = 0, compared_senses = 0, compared_antonyms = 0;
    for (const std::string &w : words_to_check()) {
        const std::vector<std::string> ours = wn->base_forms(w);
        for (int pos = NOUN; pos <= ADV; ++pos) {
            std::vector<char> buf(w.begin(), w.end());
            buf.push_back('\0');
            for (char *m = morphstr(buf.data(), pos); m; m = morphstr(nullptr, pos)) {
                CHECK_MESSAGE(std::find(ours.begin(), ours.end(), clean(m)) != ours.end(),
                              "'" << w << "': libwordnet gives base form '" << std::string(m) << "' (pos " << pos << ")");
                ++compared_bases;
            }
            IndexPtr idx = index_lookup(buf.data(), pos);
            if (!idx) continue;
            for (int i = 0; i < std::min(idx->off_cnt, 3); ++i) {
                SynsetPtr ss = read_synset(pos, static_cast<long>(idx->offset[i]), buf.data());
                REQUIRE(ss);
                std::vector<std::string> theirs;
                for (int k = 0; k < ss->wcount; ++k) theirs.push_back(clean(ss->words[k]));
                CHECK_MESSAGE(wn->sense_words(w, pos_letter[pos], static_cast<size_t>(i)) == theirs, "'" << w << "' sense " << i);
                ++compared_senses;
                for (int k = 0; k < ss->ptrcount; ++k) {
                    if (ss->ptrtyp[k] != ANTPTR || (ss->pfrm[k] != 0 && ss->pfrm[k] != ss->whichword)) continue;
                    SynsetPtr t = read_synset(ss->ppos[k], ss->ptroff[k], nullptr);
                    REQUIRE(t);
                    if (ss->pto[k] > 0 && ss->pto[k] <= t->wcount) {
                        const std::string target = clean(t->words[ss->pto[k] - 1]);
                        CHECK_MESSAGE(wn->antonyms(w, target), "'" << w << "' / '" << target << "'");
                        ++compared_antonyms;
                    }
                    free_synset(t);
                }
                free_synset(ss);
            }
            free_index(idx);
        }
    }
    MESSAGE(compared_bases << " base forms, " << compared_senses << " senses, " << compared_antonyms << " antonyms compared");
    CHECK(compared_senses > 500);
    CHECK(compared_antonyms > 20);
}

TEST_CASE("wordnet: what the guard asks of it") {
    auto wn = wordnet::load(kDir);
    CHECK(wn->synonyms("buy", "purchase", 1));
    CHECK(wn->synonyms("car", "automobile", 1));
    CHECK_FALSE(wn->synonyms("boil", "poach", 4));
    CHECK(wn->antonyms("hot", "cold"));
    CHECK(wn->antonyms("increase", "decrease"));
    CHECK_FALSE(wn->antonyms("buy", "purchase"));
    CHECK(wn->derived("inventor", "invent", 2));
    CHECK(wn->derived("tall", "height", 2));   // attribute
    const auto b = wn->base_forms("geese");
    CHECK(std::find(b.begin(), b.end(), "goose") != b.end());
    CHECK(wn->base_forms("zorblax").empty());
}

TEST_CASE("wordnet: a damaged database is refused with the file and line") {
    namespace fs = std::filesystem;
    const test_support::temp_dir tmp("wordnet_bad");
    const fs::path &dir = tmp.path;
    for (const char *f : {"index.noun", "index.verb", "index.adj", "index.adv", "data.verb", "data.adj", "data.adv", "noun.exc",
                          "verb.exc", "adj.exc", "adv.exc"})
        fs::copy_file(fs::path(kDir) / f, dir / f, fs::copy_options::overwrite_existing);
    {
        std::ofstream bad(dir / "data.noun");
        bad << "00001740 03 n 01 entity 0 003 ~ 00001930 n 0000\n";   // says 3 pointers, has 1
    }
    try {
        wordnet::load(dir);
        FAIL("a damaged data.noun loaded");
    } catch (const std::runtime_error &e) {
        CHECK(std::string(e.what()).find("data.noun:1: malformed pointer") != std::string::npos);
    }
    fs::remove(dir / "data.noun");
    try {
        wordnet::load(dir);
        FAIL("a missing data.noun loaded");
    } catch (const std::runtime_error &e) {
        CHECK(std::string(e.what()).find("data.noun: cannot open") != std::string::npos);
    }
}
