#include "cache/wordnet.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>

namespace actorserve {

namespace {

constexpr const char *kPosNames[4] = {"noun", "verb", "adj", "adv"};

int pos_index(char c) {
    switch (c) {
    case 'n': return 0;
    case 'v': return 1;
    case 'a':
    case 's': return 2;
    case 'r': return 3;
    }
    return -1;
}

std::string read_file(const std::filesystem::path &p) {
    std::ifstream f(p, std::ios::binary);
    if (!f) throw std::runtime_error(p.string() + ": cannot open");
    std::ostringstream s;
    s << f.rdbuf();
    return s.str();
}

// Splits a line on single spaces into fields; the database never uses other separators.
struct fields {
    explicit fields(std::string_view line) : rest(line) {}
    bool next(std::string_view &out) {
        while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
        if (rest.empty()) return false;
        size_t sp = rest.find(' ');
        out = rest.substr(0, sp);
        rest = sp == std::string_view::npos ? std::string_view{} : rest.substr(sp + 1);
        return true;
    }
    std::string_view rest;
};

[[noreturn]] void bad_line(const std::filesystem::path &p, size_t line, const char *what) {
    throw std::runtime_error(p.string() + ":" + std::to_string(line) + ": " + what);
}

uint32_t parse_uint(std::string_view s, int base, const std::filesystem::path &p, size_t line) {
    uint32_t v = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
    if (ec != std::errc() || ptr != s.data() + s.size()) bad_line(p, line, "expected a number");
    return v;
}

std::string lower(std::string_view w) {
    std::string s(w);
    for (char &c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

// morphy's detachment rules: (suffix, ending) per part of speech; adverbs have none.
struct rule {
    std::string_view suffix, ending;
};
constexpr rule kNounRules[] = {{"s", ""}, {"ses", "s"}, {"xes", "x"}, {"zes", "z"}, {"ches", "ch"}, {"shes", "sh"}, {"men", "man"}, {"ies", "y"}};
constexpr rule kVerbRules[] = {{"s", ""}, {"ies", "y"}, {"es", "e"}, {"es", ""}, {"ed", "e"}, {"ed", ""}, {"ing", "e"}, {"ing", ""}};
constexpr rule kAdjRules[] = {{"er", ""}, {"est", ""}, {"er", "e"}, {"est", "e"}};

} // namespace

std::shared_ptr<const wordnet> wordnet::load(const std::filesystem::path &dir) {
    std::shared_ptr<wordnet> wn(new wordnet());
    auto intern = [&](std::string name) -> uint32_t {
        auto [it, inserted] = wn->ids_.try_emplace(name, static_cast<uint32_t>(wn->names_.size()));
        if (inserted) {
            wn->names_.push_back(std::move(name));
            wn->lemmas_.emplace_back();
        }
        return it->second;
    };

    // Pass 1: synsets and their pointers (targets kept as offsets until every file is read).
    struct raw_pointer {
        size_t synset;
        int pos;
        uint32_t offset;
    };
    std::vector<raw_pointer> raw;
    std::unordered_map<uint32_t, uint32_t> by_offset[4];
    for (int p = 0; p < 4; ++p) {
        const auto path = dir / (std::string("data.") + kPosNames[p]);
        const std::string text = read_file(path);
        size_t line_no = 0;
        for (size_t at = 0; at < text.size();) {
            size_t end = text.find('\n', at);
            if (end == std::string::npos) end = text.size();
            std::string_view line(text.data() + at, end - at);
            at = end + 1;
            ++line_no;
            if (line.empty() || line.front() == ' ') continue;   // the licence header
            if (size_t bar = line.find(" | "); bar != std::string_view::npos) line = line.substr(0, bar);
            fields f(line);
            std::string_view off, lexfile, type, count;
            if (!f.next(off) || !f.next(lexfile) || !f.next(type) || !f.next(count) || type.size() != 1 || pos_index(type[0]) != p)
                bad_line(path, line_no, "malformed synset header");
            synset s;
            s.pos = static_cast<uint8_t>(p);
            s.satellite = type[0] == 's';
            const uint32_t n_words = parse_uint(count, 16, path, line_no);
            for (uint32_t i = 0; i < n_words; ++i) {
                std::string_view word, lex_id;
                if (!f.next(word) || !f.next(lex_id)) bad_line(path, line_no, "synset ends inside its word list");
                if (size_t paren = word.find('('); paren != std::string_view::npos) word = word.substr(0, paren);   // "galore(ip)"
                s.words.push_back(intern(lower(word)));
            }
            std::string_view pcount;
            if (!f.next(pcount)) bad_line(path, line_no, "synset has no pointer count");
            const uint32_t n_ptrs = parse_uint(pcount, 10, path, line_no);
            const size_t index = wn->synsets_.size();
            for (uint32_t i = 0; i < n_ptrs; ++i) {
                std::string_view sym, target, tpos, st;
                if (!f.next(sym) || !f.next(target) || !f.next(tpos) || !f.next(st) || st.size() != 4 || tpos.size() != 1 ||
                    pos_index(tpos[0]) < 0)
                    bad_line(path, line_no, "malformed pointer");
                char kind = 0;
                if (sym == "!") kind = '!';
                else if (sym == "+") kind = '+';
                else if (sym == "&") kind = '&';
                else if (sym == "\\") kind = '\\';
                else if (sym == "=") kind = '=';
                if (kind == 0) continue;
                pointer ptr{kind, static_cast<uint8_t>(parse_uint(st.substr(0, 2), 16, path, line_no)),
                            static_cast<uint8_t>(parse_uint(st.substr(2, 2), 16, path, line_no)), 0};
                s.pointers.push_back(ptr);
                raw.push_back({index, pos_index(tpos[0]), parse_uint(target, 10, path, line_no)});
            }
            by_offset[p].emplace(parse_uint(off, 10, path, line_no), static_cast<uint32_t>(index));
            wn->synsets_.push_back(std::move(s));
        }
    }
    // Resolve pointer targets in the order they were read.
    std::vector<size_t> next(wn->synsets_.size(), 0);
    for (const raw_pointer &r : raw) {
        auto it = by_offset[r.pos].find(r.offset);
        if (it == by_offset[r.pos].end())
            throw std::runtime_error((dir / (std::string("data.") + kPosNames[r.pos])).string() + ": a pointer names offset " +
                                     std::to_string(r.offset) + ", which is not a synset");
        wn->synsets_[r.synset].pointers[next[r.synset]++].synset = it->second;
    }

    // Pass 2: each lemma's senses in order.
    for (int p = 0; p < 4; ++p) {
        const auto path = dir / (std::string("index.") + kPosNames[p]);
        const std::string text = read_file(path);
        size_t line_no = 0;
        for (size_t at = 0; at < text.size();) {
            size_t end = text.find('\n', at);
            if (end == std::string::npos) end = text.size();
            std::string_view line(text.data() + at, end - at);
            at = end + 1;
            ++line_no;
            if (line.empty() || line.front() == ' ') continue;
            fields f(line);
            std::string_view name, pos, n_synsets, n_ptrs, skip;
            if (!f.next(name) || !f.next(pos) || !f.next(n_synsets) || !f.next(n_ptrs)) bad_line(path, line_no, "malformed index entry");
            const uint32_t ns = parse_uint(n_synsets, 10, path, line_no), np = parse_uint(n_ptrs, 10, path, line_no);
            for (uint32_t i = 0; i < np + 2; ++i)   // pointer symbols, sense_cnt, tagsense_cnt
                if (!f.next(skip)) bad_line(path, line_no, "index entry ends early");
            lemma &l = wn->lemmas_[intern(std::string(name))];
            for (uint32_t i = 0; i < ns; ++i) {
                std::string_view off;
                if (!f.next(off)) bad_line(path, line_no, "index entry lists fewer synsets than it says");
                auto it = by_offset[p].find(parse_uint(off, 10, path, line_no));
                if (it == by_offset[p].end()) bad_line(path, line_no, "index entry names a synset that is not in the data file");
                l.senses[p].push_back(it->second);
            }
        }
    }

    // Irregular inflections.
    for (int p = 0; p < 4; ++p) {
        const auto path = dir / (std::string(p == 2 ? "adj" : kPosNames[p]) + ".exc");
        const std::string text = read_file(path);
        std::istringstream in(text);
        std::string line;
        while (std::getline(in, line)) {
            fields f(line);
            std::string_view inflected, base;
            if (!f.next(inflected)) continue;
            auto &bases = wn->exceptions_[p][std::string(inflected)];
            while (f.next(base)) bases.emplace_back(base);
        }
    }
    return wn;
}

std::shared_ptr<const wordnet> wordnet::system(std::string *reason) {
    static std::once_flag once;
    static std::shared_ptr<const wordnet> shared;
    static std::string why;
    std::call_once(once, [] {
        const char *env = std::getenv("ACTORSERVE_WORDNET");
        const std::filesystem::path dir = env && *env ? env : "/usr/share/wordnet";
        if (!std::filesystem::exists(dir / "index.noun")) {
            why = "WordNet not found in " + dir.string() + " (Debian package wordnet-base, or set ACTORSERVE_WORDNET)";
            return;
        }
        try {
            shared = load(dir);
        } catch (const std::exception &e) {
            why = std::string("WordNet not loaded: ") + e.what();
        }
    });
    if (reason) *reason = why;
    return shared;
}

const wordnet::lemma *wordnet::find(std::string_view w) const {
    auto it = ids_.find(std::string(w));
    return it == ids_.end() ? nullptr : &lemmas_[it->second];
}

int32_t wordnet::id_of(std::string_view w) const {
    auto it = ids_.find(std::string(w));
    return it == ids_.end() ? -1 : static_cast<int32_t>(it->second);
}

std::vector<std::string> wordnet::base_forms(std::string_view word) const {
    std::vector<std::string> out;
    auto add = [&](std::string s, int p) {
        const lemma *l = find(s);
        if (!l || l->senses[p].empty()) return;
        if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(std::move(s));
    };
    for (int p = 0; p < 4; ++p) {
        add(std::string(word), p);
        if (auto it = exceptions_[p].find(std::string(word)); it != exceptions_[p].end())
            for (const std::string &b : it->second) add(b, p);
        const rule *rules = p == 0 ? kNounRules : p == 1 ? kVerbRules : kAdjRules;
        const size_t n = p == 0 ? std::size(kNounRules) : p == 1 ? std::size(kVerbRules) : p == 2 ? std::size(kAdjRules) : 0;
        for (size_t i = 0; i < n; ++i) {
            const rule &r = rules[i];
            if (word.size() <= r.suffix.size() || word.substr(word.size() - r.suffix.size()) != r.suffix) continue;
            add(std::string(word.substr(0, word.size() - r.suffix.size())) + std::string(r.ending), p);
        }
    }
    return out;
}

bool wordnet::synonyms(std::string_view a, std::string_view b, int senses) const {
    const lemma *la = find(a), *lb = find(b);
    if (!la || !lb) return false;
    for (int p = 0; p < 4; ++p) {
        const size_t na = std::min<size_t>(senses, la->senses[p].size()), nb = std::min<size_t>(senses, lb->senses[p].size());
        for (size_t i = 0; i < na; ++i)
            for (size_t j = 0; j < nb; ++j)
                if (la->senses[p][i] == lb->senses[p][j]) return true;
    }
    return false;
}

// Whether synset s has a `symbol` pointer from word_id (or from the whole synset) to target_word_id.
bool wordnet::word_points_to(uint32_t s, uint32_t word_id, char symbol, uint32_t target_word_id) const {
    const synset &ss = synsets_[s];
    for (const pointer &p : ss.pointers) {
        if (p.symbol != symbol) continue;
        if (p.source != 0 && (p.source > ss.words.size() || ss.words[p.source - 1] != word_id)) continue;
        const synset &t = synsets_[p.synset];
        if (p.target != 0) {
            if (p.target <= t.words.size() && t.words[p.target - 1] == target_word_id) return true;
        } else if (std::find(t.words.begin(), t.words.end(), target_word_id) != t.words.end()) {
            return true;
        }
    }
    return false;
}

bool wordnet::antonyms(std::string_view a, std::string_view b) const {
    const int32_t ia = id_of(a), ib = id_of(b);
    if (ia < 0 || ib < 0) return false;
    const lemma &la = lemmas_[ia];
    auto holds = [&](uint32_t s, uint32_t w) {
        const auto &ws = synsets_[s].words;
        return std::find(ws.begin(), ws.end(), w) != ws.end();
    };
    for (int p = 0; p < 4; ++p) {
        for (uint32_t s : la.senses[p]) {
            if (word_points_to(s, ia, '!', ib)) return true;
            if (p != 2) continue;
            // Indirect: a's cluster head has an antonym head whose cluster holds b.
            std::vector<uint32_t> heads;
            if (synsets_[s].satellite) {
                for (const pointer &ptr : synsets_[s].pointers)
                    if (ptr.symbol == '&') heads.push_back(ptr.synset);
            } else {
                heads.push_back(s);
            }
            for (uint32_t h : heads)
                for (const pointer &ant : synsets_[h].pointers) {
                    if (ant.symbol != '!') continue;
                    if (holds(ant.synset, ib)) return true;
                    for (const pointer &sat : synsets_[ant.synset].pointers)
                        if (sat.symbol == '&' && holds(sat.synset, ib)) return true;
                }
        }
    }
    return false;
}

bool wordnet::derived(std::string_view a, std::string_view b, int senses) const {
    const int32_t ia = id_of(a), ib = id_of(b);
    if (ia < 0 || ib < 0) return false;
    const lemma &la = lemmas_[ia];
    for (int p = 0; p < 4; ++p) {
        const size_t n = std::min<size_t>(senses, la.senses[p].size());
        for (size_t i = 0; i < n; ++i)
            for (char kind : {'+', '\\', '='})
                if (word_points_to(la.senses[p][i], ia, kind, ib)) return true;
    }
    return false;
}

std::vector<std::string> wordnet::sense_words(std::string_view lemma_name, char pos, size_t n) const {
    const lemma *l = find(lemma_name);
    const int p = pos_index(pos);
    if (!l || p < 0 || n >= l->senses[p].size()) return {};
    std::vector<std::string> out;
    for (uint32_t w : synsets_[l->senses[p][n]].words) out.push_back(names_[w]);
    return out;
}

} // namespace actorserve
