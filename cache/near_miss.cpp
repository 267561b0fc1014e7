#include "cache/near_miss.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace actorserve {

const char *to_string(near_miss_reason r) {
    switch (r) {
    case near_miss_reason::none: return "none";
    case near_miss_reason::negation: return "negation";
    case near_miss_reason::number: return "number";
    case near_miss_reason::direction: return "direction";
    case near_miss_reason::entity: return "entity";
    case near_miss_reason::question_kind: return "question_kind";
    case near_miss_reason::reversed_relation: return "reversed_relation";
    case near_miss_reason::antonym: return "antonym";
    case near_miss_reason::unmatched: return "unmatched";
    case near_miss_reason::unjudged: return "unjudged";
    }
    return "?";
}

namespace {

using word_set = std::unordered_set<std::string_view>;

const word_set &function_words();

// Capitalised words that commonly open a question or an instruction: not names at a sentence start.
const word_set &openers() {
    static const word_set s = {
        "what", "which", "who", "whom", "whose", "when", "where", "why", "how", "is", "are", "was", "were",
        "do", "does", "did", "can", "could", "should", "would", "will", "shall", "may", "might", "must",
        "have", "has", "had", "i", "i'm", "i've", "my", "we", "you", "your", "it", "its", "it's", "this",
        "that", "these", "those", "there", "the", "a", "an", "in", "on", "at", "for", "from", "with", "by",
        "to", "of", "and", "or", "but", "if", "so", "please", "tell", "explain", "describe", "define",
        "give", "show", "list", "write", "create", "make", "build", "convert", "calculate", "compute",
        "compare", "translate", "summarize", "summarise", "find", "name", "help", "recommend", "suggest",
        "is", "any", "some", "best", "good", "quick", "simple", "hey", "hi", "hello", "ok", "okay", "also",
        "now", "then", "yes", "no", "not", "why's", "what's", "whats", "how's", "where's", "who's",
        "difference", "meaning", "definition", "ways", "way", "steps", "fastest", "easiest", "cheapest",
        "get", "use", "using", "need", "want", "looking", "trying", "remind", "walk", "teach", "generate",
        "fix", "sort", "reverse", "check", "implement", "install", "set", "run", "start", "stop", "add",
        "remove", "delete", "read", "print", "return", "select", "declare", "concatenate", "merge", "split",
        "cook", "bake", "boil", "grow", "plant", "clean", "learn", "improve", "reduce", "increase", "count",
        "one", "two", "three", "after", "before", "without", "during", "since", "until", "roughly", "about",
        "approximately", "exactly", "typically", "usually", "generally", "normally",
    };
    return s;
}

const word_set &negations() {
    static const word_set s = {"not", "no", "never", "without", "none", "nothing", "nobody", "nowhere",
                               "neither", "nor", "cannot", "non", "lack", "lacks", "lacking"};
    return s;
}

// Number words and their values; 100 and up multiply what precedes them.
const std::unordered_map<std::string_view, double> &number_words() {
    static const std::unordered_map<std::string_view, double> m = {
        {"zero", 0}, {"one", 1}, {"two", 2}, {"three", 3}, {"four", 4}, {"five", 5}, {"six", 6},
        {"seven", 7}, {"eight", 8}, {"nine", 9}, {"ten", 10}, {"eleven", 11}, {"twelve", 12},
        {"thirteen", 13}, {"fourteen", 14}, {"fifteen", 15}, {"sixteen", 16}, {"seventeen", 17},
        {"eighteen", 18}, {"nineteen", 19}, {"twenty", 20}, {"thirty", 30}, {"forty", 40}, {"fifty", 50},
        {"sixty", 60}, {"seventy", 70}, {"eighty", 80}, {"ninety", 90}, {"hundred", 100},
        {"thousand", 1e3}, {"million", 1e6}, {"billion", 1e9}, {"trillion", 1e12}, {"dozen", 12},
        {"half", 0.5}, {"twice", 2}, {"double", 2}, {"triple", 3}, {"third", 3}, {"fourth", 4},
        {"fifth", 5}, {"sixth", 6}, {"seventh", 7}, {"eighth", 8}, {"ninth", 9}, {"tenth", 10},
        {"quarter", 0.25}, {"single", 1}, {"once", 1}, {"thrice", 3}, {"pair", 2}, {"couple", 2},
    };
    return m;
}

using scale_table = std::unordered_map<std::string_view, std::pair<std::string_view, int>>;

// Comparison words: comparatives, superlatives and order words, as (scale, +1 or -1). They
// point a question one way on a scale ("the largest planet"), so two questions that differ in
// one are different questions. "more"/"most"/"less"/"least" are modifiers (see directions()).
const scale_table &scale_words() {
    static const scale_table m = {
        {"bigger", {"size", 1}}, {"biggest", {"size", 1}}, {"larger", {"size", 1}}, {"largest", {"size", 1}},
        {"greater", {"size", 1}}, {"greatest", {"size", 1}}, {"smaller", {"size", -1}}, {"smallest", {"size", -1}},
        {"fewer", {"amount", -1}}, {"fewest", {"amount", -1}}, {"cheaper", {"price", -1}}, {"cheapest", {"price", -1}},
        {"pricier", {"price", 1}}, {"priciest", {"price", 1}}, {"faster", {"speed", 1}}, {"fastest", {"speed", 1}},
        {"quicker", {"speed", 1}}, {"quickest", {"speed", 1}}, {"slower", {"speed", -1}}, {"slowest", {"speed", -1}},
        {"higher", {"height", 1}}, {"highest", {"height", 1}}, {"taller", {"height", 1}}, {"tallest", {"height", 1}},
        {"lower", {"height", -1}}, {"lowest", {"height", -1}}, {"shorter", {"length", -1}}, {"shortest", {"length", -1}},
        {"longer", {"length", 1}}, {"longest", {"length", 1}}, {"older", {"time", -1}}, {"oldest", {"time", -1}},
        {"earlier", {"time", -1}}, {"earliest", {"time", -1}}, {"first", {"time", -1}}, {"before", {"time", -1}},
        {"previous", {"time", -1}}, {"younger", {"time", 1}}, {"youngest", {"time", 1}}, {"newer", {"time", 1}},
        {"newest", {"time", 1}}, {"later", {"time", 1}}, {"latest", {"time", 1}}, {"last", {"time", 1}},
        {"after", {"time", 1}}, {"next", {"time", 1}}, {"better", {"quality", 1}}, {"worse", {"quality", -1}},
        {"worst", {"quality", -1}}, {"hotter", {"heat", 1}}, {"hottest", {"heat", 1}}, {"warmer", {"heat", 1}},
        {"warmest", {"heat", 1}}, {"colder", {"heat", -1}}, {"coldest", {"heat", -1}}, {"cooler", {"heat", -1}},
        {"coolest", {"heat", -1}}, {"farther", {"distance", 1}}, {"farthest", {"distance", 1}},
        {"furthest", {"distance", 1}}, {"nearer", {"distance", -1}}, {"nearest", {"distance", -1}},
        {"closer", {"distance", -1}}, {"closest", {"distance", -1}}, {"stronger", {"strength", 1}},
        {"strongest", {"strength", 1}}, {"weaker", {"strength", -1}}, {"weakest", {"strength", -1}},
        {"heavier", {"weight", 1}}, {"heaviest", {"weight", 1}}, {"lighter", {"weight", -1}}, {"lightest", {"weight", -1}},
        {"maximum", {"extreme", 1}}, {"max", {"extreme", 1}}, {"maximize", {"extreme", 1}}, {"maximise", {"extreme", 1}},
        {"minimum", {"extreme", -1}}, {"min", {"extreme", -1}}, {"minimize", {"extreme", -1}}, {"minimise", {"extreme", -1}},
        {"increase", {"change", 1}}, {"increases", {"change", 1}}, {"decrease", {"change", -1}},
        {"decreases", {"change", -1}}, {"above", {"position", 1}}, {"below", {"position", -1}},
        {"richer", {"wealth", 1}}, {"richest", {"wealth", 1}}, {"poorer", {"wealth", -1}}, {"poorest", {"wealth", -1}},
        {"easier", {"difficulty", -1}}, {"easiest", {"difficulty", -1}}, {"harder", {"difficulty", 1}},
        {"hardest", {"difficulty", 1}}, {"safer", {"safety", 1}}, {"safest", {"safety", 1}}, {"deeper", {"depth", 1}},
        {"deepest", {"depth", 1}}, {"shallower", {"depth", -1}}, {"shallowest", {"depth", -1}},
    };
    return m;
}

// Plain adjectives count only after more/most/less/least ("most expensive" = pricier): alone,
// "a safe way" or "a long trip" state no comparison, and a paraphrase often drops them.
const scale_table &base_scale_words() {
    static const scale_table m = {
        {"expensive", {"price", 1}}, {"costly", {"price", 1}}, {"pricey", {"price", 1}}, {"cheap", {"price", -1}},
        {"affordable", {"price", -1}}, {"inexpensive", {"price", -1}}, {"recent", {"time", 1}}, {"popular", {"popularity", 1}},
        {"important", {"importance", 1}}, {"common", {"frequency", 1}}, {"efficient", {"efficiency", 1}},
        {"difficult", {"difficulty", 1}}, {"dangerous", {"safety", -1}}, {"likely", {"likelihood", 1}},
        {"powerful", {"strength", 1}}, {"accurate", {"accuracy", 1}}, {"reliable", {"reliability", 1}},
        {"secure", {"safety", 1}}, {"fast", {"speed", 1}}, {"slow", {"speed", -1}}, {"big", {"size", 1}},
        {"large", {"size", 1}}, {"small", {"size", -1}}, {"old", {"time", -1}}, {"young", {"time", 1}},
        {"safe", {"safety", 1}}, {"healthy", {"health", 1}}, {"productive", {"productivity", 1}},
    };
    return m;
}

// Crude English suffix stripping, the same on both sides: enough for plurals and tenses.
std::string stem(std::string_view w) {
    std::string s(w);
    auto ends = [&](std::string_view suf) { return s.size() >= suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0; };
    if (ends("'s")) s.resize(s.size() - 2);
    else if (ends("'")) s.resize(s.size() - 1);
    if (ends("ies") && s.size() > 4) s.replace(s.size() - 3, 3, "y");
    else if (ends("sses")) s.resize(s.size() - 2);
    else if (ends("s") && !ends("ss") && !ends("us") && !ends("is") && s.size() > 3) s.resize(s.size() - 1);
    if (ends("ing") && s.size() > 5) s.resize(s.size() - 3);
    else if (ends("ed") && s.size() > 4) s.resize(s.size() - 2);
    if (ends("e") && s.size() > 3) s.resize(s.size() - 1);
    if (s.size() > 3 && s[s.size() - 1] == s[s.size() - 2] && std::string_view("lsz").find(s.back()) == std::string_view::npos &&
        std::isalpha(static_cast<unsigned char>(s.back())))
        s.pop_back();
    return s;
}

struct token {
    std::string text;    // as written
    std::string lower;   // ASCII lowercase
    std::string stemmed; // stem(lower)
    bool sentence_start = false;
    int segment = 0;     // punctuation-delimited stretch of the text the word is in (see drop_fillers)
    bool has_digit = false, has_alpha = false;
};

bool is_word_byte(unsigned char c) { return std::isalnum(c) || c >= 0x80 || c == '\''; }

// Words: runs of letters, digits, apostrophes and UTF-8 bytes; '.' and ',' inside digit runs
// stay in the word (3.5, 1,000). A sentence starts at the beginning and after . ! ? : or a line break.
std::vector<token> tokenize(std::string_view in) {
    std::string s;
    s.reserve(in.size());
    for (size_t i = 0; i < in.size(); ++i) {   // typographic apostrophe (U+2019) -> '
        if (i + 2 < in.size() && static_cast<unsigned char>(in[i]) == 0xE2 && static_cast<unsigned char>(in[i + 1]) == 0x80 &&
            static_cast<unsigned char>(in[i + 2]) == 0x99) {
            s.push_back('\'');
            i += 2;
        } else {
            s.push_back(in[i]);
        }
    }
    std::vector<token> out;
    bool start = true;
    int segment = 0;
    size_t i = 0;
    while (i < s.size()) {
        unsigned char c = static_cast<unsigned char>(s[i]);
        if (!is_word_byte(c) || c == '\'') {
            if (c == '.' || c == '!' || c == '?' || c == ':' || c == '\n') start = true;
            if (c == '.' || c == '!' || c == '?' || c == ':' || c == '\n' || c == ',' || c == ';' || c == '(' || c == ')') ++segment;
            ++i;
            continue;
        }
        size_t j = i;
        while (j < s.size()) {
            unsigned char d = static_cast<unsigned char>(s[j]);
            if (is_word_byte(d)) {
                ++j;
            } else if ((d == '.' || d == ',') && j > i && j + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[j - 1])) &&
                       std::isdigit(static_cast<unsigned char>(s[j + 1]))) {
                ++j;
            } else {
                break;
            }
        }
        token t;
        t.text = s.substr(i, j - i);
        while (!t.text.empty() && t.text.back() == '\'') t.text.pop_back();
        if (!t.text.empty()) {
            t.lower = t.text;
            for (char &ch : t.lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
            for (char ch : t.text) {
                t.has_digit |= std::isdigit(static_cast<unsigned char>(ch)) != 0;
                // Letters outside ASCII count as letters: such a word is compared as written.
                t.has_alpha |= std::isalpha(static_cast<unsigned char>(ch)) != 0 || static_cast<unsigned char>(ch) >= 0x80;
            }
            t.stemmed = stem(t.lower);
            t.sentence_start = start;
            t.segment = segment;
            out.push_back(std::move(t));
            start = false;
        }
        i = j;
    }
    return out;
}

// Negating contractions typed without their apostrophe.
const word_set &bare_negations() {
    static const word_set s = {"dont", "doesnt", "didnt", "cant", "wont", "isnt", "arent", "wasnt", "werent", "shouldnt",
                               "couldnt", "wouldnt", "havent", "hasnt", "hadnt", "mustnt", "aint"};
    return s;
}

bool is_negation(const token &t) {
    const std::string &w = t.lower;
    return negations().count(w) > 0 || bare_negations().count(w) > 0 || (w.size() > 3 && w.compare(w.size() - 3, 3, "n't") == 0);
}

// Numbers in order of appearance: digit runs ("1,000" = 1000, "3.5") and phrases of number words.
std::vector<double> numbers(const std::vector<token> &toks) {
    std::vector<double> out;
    const auto &nw = number_words();
    double total = 0, current = 0;
    bool in_phrase = false;
    auto flush = [&] {
        if (in_phrase) out.push_back(total + current);
        total = current = 0;
        in_phrase = false;
    };
    for (size_t i = 0; i < toks.size(); ++i) {
        const token &t = toks[i];
        auto it = nw.find(t.lower);
        // "which one", "this one", "each one": a pronoun, not a count.
        if (it != nw.end() && t.lower == "one" && i > 0) {
            static const word_set pron = {"which", "this", "that", "each", "any", "every", "no", "some", "the", "another", "one", "a", "other", "right", "wrong", "new", "good", "better", "best"};
            if (pron.count(toks[i - 1].lower)) it = nw.end();
        }
        if (it != nw.end() && t.lower == "one" && i + 1 < toks.size() && toks[i + 1].lower == "of") it = nw.end();   // "one of them"
        if (it != nw.end()) {
            const double v = it->second;
            if (v >= 1000) {
                total += (current == 0 ? 1 : current) * v;
                current = 0;
            } else if (v == 100) {
                current = (current == 0 ? 1 : current) * 100;
            } else if (v < 1 && in_phrase) {
                current *= v;   // "two and a half" reads as 2 * 0.5 here: rare, and the same on both sides
            } else {
                current += v;
            }
            in_phrase = true;
            continue;
        }
        if (t.lower == "and" && in_phrase) continue;
        flush();
        if (!t.has_digit) continue;
        // Every digit run in the token (so "5km" gives 5, "gpt4" gives 4).
        size_t k = 0;
        while (k < t.text.size()) {
            if (!std::isdigit(static_cast<unsigned char>(t.text[k]))) {
                ++k;
                continue;
            }
            std::string digits;
            while (k < t.text.size() && (std::isdigit(static_cast<unsigned char>(t.text[k])) || t.text[k] == ',' || t.text[k] == '.')) {
                if (t.text[k] != ',') digits.push_back(t.text[k]);
                ++k;
            }
            out.push_back(std::strtod(digits.c_str(), nullptr));
        }
    }
    flush();
    std::sort(out.begin(), out.end());
    return out;
}

// Scale directions as "scale+" / "scale-", sorted. "more X"/"most X" keep X's direction,
// "less X"/"least X" flip it; alone, more/most are amount+ and less/least amount-. A scale word
// right after "how" asks for a measure ("how far", "how tall"), not a direction, and is skipped.
std::vector<std::string> directions(const std::vector<token> &toks) {
    std::vector<std::string> out;
    const auto &sw = scale_words();
    const auto &bw = base_scale_words();
    auto sign = [](int s) { return s > 0 ? "+" : "-"; };
    for (size_t i = 0; i < toks.size(); ++i) {
        const std::string &w = toks[i].lower;
        if (w == "how") {
            ++i;
            continue;
        }
        int modifier = 0;
        if (w == "more" || w == "most") modifier = 1;
        if (w == "less" || w == "least") modifier = -1;
        if (modifier != 0) {
            if (i + 1 < toks.size()) {
                const std::pair<std::string_view, int> *scale = nullptr;
                if (auto it = bw.find(toks[i + 1].lower); it != bw.end()) scale = &it->second;
                else if (auto jt = sw.find(toks[i + 1].lower); jt != sw.end()) scale = &jt->second;
                if (scale) {
                    out.push_back(std::string(scale->first) + sign(scale->second * modifier));
                    ++i;
                    continue;
                }
            }
            out.push_back(std::string("amount") + sign(modifier));
            continue;
        }
        auto it = sw.find(w);
        if (it != sw.end()) out.push_back(std::string(it->second.first) + sign(it->second.second));
    }
    std::sort(out.begin(), out.end());
    return out;
}

// Names: strong ones (capitalised mid-sentence, acronyms, mixed case, letters with digits) and
// weak ones (capitalised at a sentence start, not a common opener).
struct names {
    std::vector<const token *> strong, weak;
};

names find_names(const std::vector<token> &toks) {
    names n;
    for (const token &t : toks) {
        if (!t.has_alpha) continue;
        const unsigned char c0 = static_cast<unsigned char>(t.text[0]);
        bool upper_inside = false;
        size_t n_upper = 0, n_alpha = 0;
        for (size_t k = 0; k < t.text.size(); ++k) {
            unsigned char c = static_cast<unsigned char>(t.text[k]);
            if (std::isalpha(c)) ++n_alpha;
            if (std::isupper(c)) {
                ++n_upper;
                if (k > 0) upper_inside = true;
            }
        }
        const bool acronym = n_alpha >= 2 && n_upper == n_alpha;
        const bool mixed = upper_inside && !acronym;
        const bool alnum = t.has_digit && t.has_alpha;
        if (t.lower == "i" || t.lower == "i'm" || t.lower == "i've" || t.lower == "i'll" || t.lower == "i'd") continue;
        if (acronym || mixed || alnum) {
            n.strong.push_back(&t);
        } else if (std::isupper(c0)) {
            if (!t.sentence_start) n.strong.push_back(&t);
            else if (!openers().count(t.lower) && !function_words().count(t.lower)) n.weak.push_back(&t);
        }
    }
    return n;
}

bool typo_of(std::string_view unknown, std::string_view known);

// Whether toks hold the name, as written, with an inflection, or misspelt where WordNet knows one
// of the two spellings and not the other ("Mondys" / "Mondays").
bool mentions(const std::vector<token> &toks, const token &name, const wordnet *wn) {
    for (const token &t : toks)
        if (t.lower == name.lower || t.stemmed == name.stemmed) return true;
    if (!wn) return false;
    const bool name_known = !wn->base_forms(name.lower).empty();
    for (const token &t : toks) {
        const bool known = !wn->base_forms(t.lower).empty();
        if (known != name_known && (known ? typo_of(name.lower, t.lower) : typo_of(t.lower, name.lower))) return true;
    }
    return false;
}

std::string join(const std::vector<std::string> &v) {
    std::string s = "{";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
    return s + "}";
}

std::string fmt_numbers(const std::vector<double> &v) {
    std::vector<std::string> parts;
    for (double d : v) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%g", d);
        parts.emplace_back(buf);
    }
    return join(parts);
}

// An unmatched name on either side; weak names count only against an unmatched name opposite.
std::string unmatched_name(const std::vector<token> &a, const std::vector<token> &b, const wordnet *wn) {
    const names na = find_names(a), nb = find_names(b);
    for (const token *t : na.strong)
        if (!mentions(b, *t, wn)) return "'" + t->text + "' is not in the cached question";
    for (const token *t : nb.strong)
        if (!mentions(a, *t, wn)) return "'" + t->text + "' is not in the query";
    const token *wa = nullptr, *wb = nullptr;
    for (const token *t : na.weak)
        if (!mentions(b, *t, wn)) wa = t;
    for (const token *t : nb.weak)
        if (!mentions(a, *t, wn)) wb = t;
    if (wa && wb) return "'" + wa->text + "' vs '" + wb->text + "'";
    return {};
}

// The form a word is compared in: lowercase, with a clitic taken off ("what's" -> "what",
// "doesn't" -> "does"; the negation check counts the "n't").
std::string core(const std::string &lower) {
    static const std::pair<std::string_view, std::string_view> whole[] = {{"can't", "can"}, {"won't", "will"}, {"shan't", "shall"},
                                                                          {"cannot", "can"}, {"let's", "let"},
                                                                          // typed without the apostrophe
                                                                          {"cant", "can"}, {"wont", "will"}, {"aint", "is"},
                                                                          {"whats", "what"}, {"hows", "how"}, {"wheres", "where"},
                                                                          {"whos", "who"}, {"whens", "when"}, {"whys", "why"},
                                                                          {"thats", "that"}, {"theres", "there"}, {"im", "i"},
                                                                          {"ive", "i"}, {"youre", "you"}, {"theyre", "they"}};
    for (const auto &[w, c] : whole)
        if (lower == w) return std::string(c);
    if (bare_negations().count(lower)) return lower.substr(0, lower.size() - 2);   // "doesnt" -> "does"
    for (std::string_view clitic : {"n't", "'s", "'re", "'m", "'ve", "'ll", "'d"})
        if (lower.size() > clitic.size() && lower.compare(lower.size() - clitic.size(), clitic.size(), clitic) == 0)
            return lower.substr(0, lower.size() - clitic.size());
    return lower;
}

// Words the alignment skips: articles, auxiliaries and modals, personal pronouns, the commonest
// prepositions and conjunctions, and the words a request is wrapped in ("please tell me", "what is
// the way to"). Everything else is content and must find its counterpart, including every
// preposition that is not listed here (over, under, during, against ...), quantifiers, and verbs
// that negate or reverse (avoid, stop, prevent, refuse ...), which no list names.
const word_set &function_words() {
    static const word_set s = {
        "a", "an", "the", "this", "that", "these", "those", "is", "are", "was", "were", "be", "been", "being", "am",
        "do", "does", "did", "doing", "done", "have", "has", "had", "having", "can", "could", "should", "would",
        "will", "shall", "may", "might", "must", "i", "me", "my", "mine", "myself", "you", "your", "yours",
        "yourself", "we", "us", "our", "ourselves", "he", "him", "his", "she", "her", "they", "them", "their", "it",
        "its", "itself", "one's", "someone", "somebody", "anyone", "anybody", "there", "here", "what", "which",
        "how", "to", "of", "in", "on", "at", "by", "for", "with", "from", "into", "onto", "about", "as", "via",
        "and", "or", "but", "if", "so", "than", "then", "also", "too", "please", "kindly", "tell", "explain",
        "know", "wonder", "wondering", "curious", "thanks", "thank", "hey", "hi", "hello", "ok", "okay", "exactly",
        "actually", "really", "basically", "simply", "just", "possible", "possibly", "way", "ways", "let", "show",
        "give", "describe", "help", "anybody", "whether", "ever", "even", "like", "i'm", "i've",
        // light verbs: they take their meaning from the word they govern ("get rid of", "take a
        // screenshot", "make sense"), which is content and must match
        "get", "gets", "got", "getting", "make", "makes", "made", "making", "take", "takes", "took", "taking", "go", "goes",
        "went", "going",
        // copulas: "how long does the window stay open" = "how long is the window open"
        "stay", "stays", "stayed", "remain", "remains", "remained", "seem", "seems", "look", "looks",
        // what a definition is asked with: "what is X" = "what does X mean" = "the meaning of X"
        "mean", "means", "meaning", "definition", "define", "need", "needs",
    };
    return s;
}

// Quantifiers are content but are compared as written: WordNet's senses for them are not the
// sense a question uses ("all" / "every").
const word_set &quantifiers() {
    static const word_set s = {"all", "every", "each", "some", "any", "many", "much", "few", "several", "most", "none", "no",
                               "both", "either", "neither", "enough", "more", "less", "least", "fewer", "half", "whole",
                               "entire", "only", "every", "another", "other", "others", "same", "different"};
    return s;
}

// Determiners and possessives: what stands between two words because of them links nothing
// ("add my partner to my policy" / "to my policy, add my partner").
const word_set &determiners() {
    static const word_set s = {"my", "your", "our", "his", "her", "their", "its", "this", "that", "these", "those", "some", "any"};
    return s;
}

// Links whose two sides can change places without changing the question.
const word_set &symmetric_links() {
    static const word_set s = {"and", "or", "nor", "vs", "versus", "between", "with", "plus", "a", "an", "the"};
    return s;
}

bool is_number_token(const token &t) { return t.has_digit || number_words().count(t.lower) > 0; }

bool is_scale_word(const std::string &w) {
    return scale_words().count(w) || w == "more" || w == "most" || w == "less" || w == "least";
}

bool is_question_word(const std::string &w) { return w == "who" || w == "whom" || w == "whose" || w == "when" || w == "where" || w == "why"; }

// "What causes X", "what makes X", "what is the reason X": why, asked with a noun or verb that
// is then part of the question word, not content.
bool asks_why(const std::vector<token> &toks, size_t i) {
    const std::string w = core(toks[i].lower);
    const std::string prev = i > 0 ? core(toks[i - 1].lower) : "";
    if ((w == "cause" || w == "causes" || w == "makes") && prev == "what") return true;
    return (w == "reason" || w == "reasons") && (prev == "the" || prev == "what");
}

// Who / when / where / why, and how with the measure it asks for ("how many", "how long") or
// alone (the manner), ask for different kinds of answer.
std::set<std::string> question_kinds(const std::vector<token> &toks) {
    static const word_set measures = {"many", "much", "long", "old", "far", "often", "big", "tall", "fast", "large",
                                      "high", "deep", "heavy", "soon", "late", "early", "hot", "cold"};
    std::set<std::string> k;
    for (size_t i = 0; i < toks.size(); ++i) {
        if (asks_why(toks, i)) k.insert("why");
        const std::string w = core(toks[i].lower);
        if (w == "who" || w == "whom" || w == "whose") k.insert("who");
        else if (w == "when" || w == "where" || w == "why") k.insert(w);
        else if (w == "how") {
            std::string m = i + 1 < toks.size() ? toks[i + 1].lower : "";
            if (m == "frequently") m = "often";
            if (m == "quickly") m = "fast";
            if (m == "large") m = "big";
            k.insert(measures.count(m) || m == "often" ? "how " + m : "how");
        }
    }
    return k;
}

// A content word of one text, with its position and WordNet base forms.
struct content_word {
    size_t pos;                        // index into the token vector
    std::string form;                  // core(lower)
    std::string stemmed;               // crude stem, for words WordNet does not know
    std::vector<std::string> bases;    // empty when WordNet does not know the word
    bool quantifier = false;
};

// The frame a how-to question is asked in: "the best way to", "the steps to", "a method for".
// These nouns (and "best"/"easiest"/"right" before them) say how the answer is wanted, not what
// it is about, and only count as frame right before to/for/of.
bool is_frame(const std::vector<token> &toks, size_t i) {
    static const word_set nouns = {"way", "ways", "steps", "method", "methods", "approach", "procedure", "instructions"};
    static const word_set before = {"best", "easiest", "right", "proper", "correct", "good", "simplest", "recommended"};
    auto frame_noun = [&](size_t k) {
        return k + 1 < toks.size() && nouns.count(core(toks[k].lower)) &&
               (toks[k + 1].lower == "to" || toks[k + 1].lower == "for" || toks[k + 1].lower == "of");
    };
    if (frame_noun(i)) return true;
    return before.count(toks[i].lower) && frame_noun(i + 1);
}

// A noun right after "which" or "what" that names the kind of answer: "which city", "which
// artist", "what year". Against a question asked with a bare question word ("what is the
// capital", "who painted", "when did") it restates what that word asks and is not content.
bool is_answer_type(const std::vector<token> &toks, size_t i, const wordnet *wn) {
    if (!wn || i == 0) return false;
    const std::string prev = core(toks[i - 1].lower);
    if (prev != "which" && prev != "what") return false;
    const std::string form = core(toks[i].lower);
    if (function_words().count(form) || is_frame(toks, i) || !toks[i].has_alpha || toks[i].has_digit) return false;
    for (const std::string &b : wn->base_forms(form))
        if (!wn->sense_words(b, 'n', 0).empty()) return true;
    return false;
}

bool has_answer_type(const std::vector<token> &toks, const wordnet *wn) {
    for (size_t i = 0; i < toks.size(); ++i)
        if (is_answer_type(toks, i, wn)) return true;
    return false;
}

bool asks_with_question_word(const std::vector<token> &toks) {
    static const word_set wh = {"who", "whom", "what", "which", "when", "where"};
    for (const token &t : toks)
        if (wh.count(core(t.lower))) return true;
    return false;
}

// Measures asked with "how" whose WordNet attribute is a noun ("how tall" / "the height of"):
// they are also content, so that the noun finds them.
const word_set &attribute_measures() {
    static const word_set s = {"tall", "far", "old", "long", "big", "large", "high", "deep", "heavy", "fast", "hot", "cold"};
    return s;
}

// A WordNet verb collocation starting at toks[i] ("get rid of", "set up", "turn off", "check in"),
// its lemma and the number of words it spans; {"", 0} when there is none.
std::pair<std::string, size_t> collocation(const std::vector<token> &toks, size_t i, const wordnet *wn) {
    if (!wn || !toks[i].has_alpha || toks[i].has_digit) return {"", 0};
    for (size_t n : {3, 2}) {
        if (i + n > toks.size()) continue;
        bool content = false, ok = true;
        std::string rest;
        for (size_t k = i; k < i + n; ++k) {
            const token &t = toks[k];
            const std::string form = core(t.lower);
            if (!t.has_alpha || t.has_digit || is_negation(t) || is_question_word(form) || form == "what" || form == "how" ||
                t.segment != toks[i].segment) {
                ok = false;
                break;
            }
            if (!function_words().count(form)) content = true;
            if (k > i) rest += "_" + form;
        }
        if (!ok || !content) continue;
        for (const std::string &b : wn->base_forms(core(toks[i].lower)))
            if (!wn->sense_words(b + rest, 'v', 0).empty()) return {b + rest, n};
    }
    return {"", 0};
}

// "How much" followed by a verb or preposition ("how much is", "how much does", "how much for"),
// not by a noun ("how much water").
bool asks_price(const std::vector<token> &toks, size_t i) {
    return core(toks[i].lower) == "much" && i > 0 && core(toks[i - 1].lower) == "how" && i + 1 < toks.size() &&
           (function_words().count(core(toks[i + 1].lower)) || toks[i + 1].lower == "for");
}

std::vector<content_word> content_words(const std::vector<token> &toks, const wordnet *wn, bool drop_answer_type) {
    std::vector<content_word> out;
    for (size_t i = 0; i < toks.size(); ++i) {
        const token &t = toks[i];
        if (is_frame(toks, i) || asks_why(toks, i)) continue;
        if (drop_answer_type && is_answer_type(toks, i, wn)) continue;
        if (auto [lemma, n] = collocation(toks, i, wn); n > 0) {
            out.push_back(content_word{i, lemma, lemma, {lemma}, false});
            i += n - 1;
            continue;
        }
        if (!t.has_alpha || is_number_token(t) || is_negation(t)) continue;
        std::string form = core(t.lower);
        if (form.empty() || function_words().count(form) || is_scale_word(form) || is_question_word(form)) continue;
        if (i > 0 && core(toks[i - 1].lower) == "how" && question_kinds({toks[i - 1], t}).size() == 1 &&
            question_kinds({toks[i - 1], t}).begin()->size() > 3 && !attribute_measures().count(form) && !asks_price(toks, i))
            continue;
        // "what are some", "give me some": a plural asked for, not a quantity
        if (form == "some" && i > 0 && (core(toks[i - 1].lower) == "are" || core(toks[i - 1].lower) == "me")) continue;
        content_word c{i, form, stem(form), {}, quantifiers().count(form) > 0};
        if (wn && !c.quantifier) c.bases = wn->base_forms(form);
        // An adverb made with -ly stands for its adjective where WordNet lacks the pertainym
        // ("safely" / "safe", "easily" / "easy").
        if (wn && form.size() > 4 && form.compare(form.size() - 2, 2, "ly") == 0) {
            std::string adj = form.substr(0, form.size() - 2);
            if (adj.back() == 'i') adj.back() = 'y';
            if (!wn->sense_words(adj, 'a', 0).empty() && std::find(c.bases.begin(), c.bases.end(), adj) == c.bases.end())
                c.bases.push_back(adj);
        }
        // "how much is X" / "how much does X cost" asks for its price: "much" stands for the noun.
        if (asks_price(toks, i)) {
            c.quantifier = false;
            c.bases = {"price", "cost"};
        }
        out.push_back(std::move(c));
    }
    return out;
}

enum class match_kind { none, same, inflection, synonym, derivation, typo };

// Optimal string alignment distance (Levenshtein with adjacent transpositions), up to a cap.
size_t edit_distance(std::string_view x, std::string_view y) {
    std::vector<std::vector<size_t>> d(x.size() + 1, std::vector<size_t>(y.size() + 1));
    for (size_t i = 0; i <= x.size(); ++i) d[i][0] = i;
    for (size_t j = 0; j <= y.size(); ++j) d[0][j] = j;
    for (size_t i = 1; i <= x.size(); ++i)
        for (size_t j = 1; j <= y.size(); ++j) {
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (x[i - 1] != y[j - 1])});
            if (i > 1 && j > 1 && x[i - 1] == y[j - 2] && x[i - 2] == y[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
    return d[x.size()][y.size()];
}

// A misspelling: one word is unknown to WordNet, the other is a word it knows, both are letters
// only, at least 4 long, start with the same letter, and are one edit apart (two from 8 letters).
// Two real words are never typos of each other ("debt" / "debit"), nor two unknown ones (names).
bool typo_of(std::string_view unknown, std::string_view known) {
    auto letters = [](std::string_view w) {
        return std::all_of(w.begin(), w.end(), [](char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; });
    };
    if (unknown.size() < 4 || known.size() < 4 || unknown[0] != known[0] || !letters(unknown) || !letters(known)) return false;
    const size_t len = std::min(unknown.size(), known.size());
    const size_t cap = len >= 8 ? 2 : 1;
    if (unknown.size() > known.size() + cap || known.size() > unknown.size() + cap) return false;
    return edit_distance(unknown, known) <= cap;
}

// How x can stand for y: the same word, an inflection of it, a synonym in one of the first
// `senses` senses of each, or a derived form; never when WordNet calls them opposites.
match_kind match(const content_word &x, const content_word &y, const wordnet *wn, int senses) {
    if (x.form == y.form) return match_kind::same;
    if (x.quantifier || y.quantifier) {
        auto universal = [](const std::string &w) { return w == "all" || w == "every"; };
        return universal(x.form) && universal(y.form) ? match_kind::synonym : match_kind::none;
    }
    for (const auto &bx : x.bases)
        for (const auto &by : y.bases)
            if (bx == by) return match_kind::inflection;
    if (x.bases.empty() && y.bases.empty() && x.stemmed == y.stemmed) return match_kind::inflection;
    if (!wn) return match_kind::none;
    for (const auto &bx : x.bases)
        for (const auto &by : y.bases)
            if (wn->antonyms(bx, by) || wn->antonyms(by, bx)) return match_kind::none;
    // A collocation's particle carries meaning ("opt out" / "opt in"): it matches only a synonym.
    const bool phrase = x.form.find('_') != std::string::npos || y.form.find('_') != std::string::npos;
    if (phrase) {
        for (const auto &bx : x.bases)
            for (const auto &by : y.bases)
                if (wn->synonyms(bx, by, senses)) return match_kind::synonym;
        return match_kind::none;
    }
    for (const auto &bx : x.bases)
        for (const auto &by : y.bases)
            if (wn->synonyms(bx, by, senses)) return match_kind::synonym;
    for (const auto &bx : x.bases)
        for (const auto &by : y.bases)
            if (wn->derived(bx, by, senses) || wn->derived(by, bx, senses)) return match_kind::derivation;
    if (x.bases.empty() != y.bases.empty()) {
        const content_word &unknown = x.bases.empty() ? x : y, &known = x.bases.empty() ? y : x;
        if (typo_of(unknown.form, known.form)) return match_kind::typo;
    }
    return match_kind::none;
}

std::string quoted(const token &t) { return "'" + t.text + "'"; }

// A content word as the text has it: the token, or the words of a collocation ("'check in'").
std::string quoted(const content_word &c, const std::vector<token> &toks) {
    if (c.form.find('_') == std::string::npos) return quoted(toks[c.pos]);
    const size_t n = static_cast<size_t>(std::count(c.form.begin(), c.form.end(), '_')) + 1;
    std::string s = "'";
    for (size_t k = c.pos; k < c.pos + n && k < toks.size(); ++k) s += (k > c.pos ? " " : "") + toks[k].text;
    return s + "'";
}

// The first pair of words that WordNet calls opposites, one from each list.
std::string opposites(const std::vector<const content_word *> &xs, const std::vector<content_word> &ys,
                      const std::vector<token> &tx, const std::vector<token> &ty, const wordnet *wn) {
    if (!wn) return {};
    for (const content_word *x : xs)
        for (const content_word &y : ys)
            for (const auto &bx : x->bases)
                for (const auto &by : y.bases)
                    if (wn->antonyms(bx, by) || wn->antonyms(by, bx)) return quoted(*x, tx) + " vs " + quoted(y, ty);
    return {};
}

constexpr int kLightVerbSenses = 8;

bool stands_for_light_verb(const content_word &w, const std::vector<token> &other, const wordnet *wn) {
    static const word_set light = {"get", "gets", "got", "getting", "make", "makes", "made", "making", "take", "takes",
                                   "took", "taking", "have", "has", "had", "having"};
    if (!wn || w.bases.empty()) return false;
    for (const token &t : other) {
        if (!light.count(t.lower)) continue;
        for (const std::string &lb : wn->base_forms(t.lower))
            for (const std::string &b : w.bases) {
                if (wn->sense_words(b, 'v', 0).empty()) continue;
                if (wn->synonyms(b, lb, kLightVerbSenses)) return true;
            }
    }
    return false;
}

struct alignment {
    std::vector<std::pair<size_t, size_t>> pairs;    // (token index in a, token index in b) of matched words
    std::vector<const content_word *> only_a, only_b;   // words with no counterpart
};

alignment align(const std::vector<content_word> &ca, const std::vector<content_word> &cb, const wordnet *wn, int senses) {
    alignment al;
    std::vector<bool> b_matched(cb.size(), false);
    for (const content_word &x : ca) {
        bool found = false;
        for (size_t j = 0; j < cb.size(); ++j) {
            if (match(x, cb[j], wn, senses) == match_kind::none) continue;
            if (!found) al.pairs.emplace_back(x.pos, cb[j].pos);
            found = true;
            b_matched[j] = true;
        }
        if (!found) al.only_a.push_back(&x);
    }
    for (size_t j = 0; j < cb.size(); ++j) {
        if (b_matched[j]) continue;
        bool found = false;
        for (const content_word &x : ca)
            if (match(x, cb[j], wn, senses) != match_kind::none) found = true;
        if (!found) al.only_b.push_back(&cb[j]);
    }
    return al;
}

// Two matched words that change places around a word both texts have between them: "celsius to
// fahrenheit" / "fahrenheit to celsius", "Google acquire YouTube" / "YouTube acquire Google". The
// links whose sides may swap (and, or, vs, between, with) and articles do not count, so "TCP and
// UDP" / "UDP and TCP" passes, and so does a phrase moved as a whole ("in Python, sort a list" /
// "sort a list in Python": nothing stands between the two words in both texts).
std::string reversed_relation(const std::vector<token> &a, const std::vector<token> &b, const alignment &al) {
    for (size_t p = 0; p < al.pairs.size(); ++p)
        for (size_t q = 0; q < al.pairs.size(); ++q) {
            const auto [i1, j1] = al.pairs[p];
            const auto [i2, j2] = al.pairs[q];
            if (!(i1 < i2 && j2 < j1)) continue;
            for (size_t r = i1 + 1; r < i2; ++r) {
                const std::string link = core(a[r].lower);
                if (symmetric_links().count(link) || determiners().count(link)) continue;
                for (size_t s = j2 + 1; s < j1; ++s)
                    if (core(b[s].lower) == link)
                        return "'" + a[i1].text + " " + a[r].text + " " + a[i2].text + "' vs '" + b[j2].text + " " + b[s].text +
                               " " + b[j1].text + "'";
            }
        }
    return {};
}

// Social words and hesitations, which say nothing about what is asked: "Hi team, quick
// question:", "Sorry to bother you, but", "Thanks in advance", "um", "er".
const word_set &hesitations() {
    static const word_set s = {"um", "umm", "uh", "uhh", "er", "erm", "hmm", "ah", "eh"};
    return s;
}

const word_set &social_words() {
    static const word_set s = {"hi", "hiya", "hey", "hello", "cheers", "thanks", "thank", "ta", "sorry", "apologies",
                               "quick", "silly", "stupid", "dumb", "question", "one", "bother", "team", "advance", "many",
                               "lot", "lots", "much", "folks", "guys", "everyone", "there", "again", "yeah", "yes", "ok",
                               "okay", "well", "right", "appreciated", "morning", "afternoon", "evening", "good"};
    return s;
}

// Takes hesitations out anywhere, and the punctuation-delimited stretches at either end of a
// text that hold only social words and function words ("Hi team,", "Many thanks"). A stretch
// with a digit, or the last stretch left, stays.
void drop_fillers(std::vector<token> &toks) {
    std::erase_if(toks, [](const token &t) { return hesitations().count(t.lower) > 0; });
    // Discourse words that open a text without a comma: "yeah can i order", "so how do i".
    static const word_set openers = {"yeah", "yes", "so", "well", "ok", "okay", "hi", "hey", "hello", "right", "and"};
    while (toks.size() > 1 && openers.count(toks.front().lower)) {
        toks.erase(toks.begin());
        toks.front().sentence_start = true;
    }
    auto filler_segment = [&](int seg) {
        bool social = false, any = false;
        for (const token &t : toks) {
            if (t.segment != seg) continue;
            any = true;
            if (t.has_digit) return false;
            if (social_words().count(t.lower)) social = true;
            else if (!function_words().count(core(t.lower))) return false;
        }
        return any && social;
    };
    while (!toks.empty() && toks.front().segment != toks.back().segment && filler_segment(toks.front().segment)) {
        const int seg = toks.front().segment;
        std::erase_if(toks, [&](const token &t) { return t.segment == seg; });
        if (!toks.empty()) toks.front().sentence_start = true;
    }
    while (!toks.empty() && toks.front().segment != toks.back().segment && filler_segment(toks.back().segment)) {
        const int seg = toks.back().segment;
        std::erase_if(toks, [&](const token &t) { return t.segment == seg; });
    }
}

} // namespace

near_miss_verdict check_near_miss(std::string_view query, std::string_view cached_question, const wordnet *lexicon,
                                  int synonym_senses) {
    near_miss_verdict v;
    std::vector<token> a = tokenize(query), b = tokenize(cached_question);
    drop_fillers(a);
    drop_fillers(b);
    if (a.size() > kMaxGuardWords || b.size() > kMaxGuardWords) {
        v.reason = near_miss_reason::unjudged;
        v.detail = "too long to compare word by word: " + std::to_string(std::max(a.size(), b.size())) + " words (at most " +
                   std::to_string(kMaxGuardWords) + ")";
        return v;
    }

    size_t neg_a = 0, neg_b = 0;
    for (const auto &t : a) neg_a += is_negation(t);
    for (const auto &t : b) neg_b += is_negation(t);
    if (neg_a != neg_b) {
        v.reason = near_miss_reason::negation;
        v.detail = "negations differ: " + std::to_string(neg_a) + " vs " + std::to_string(neg_b);
        return v;
    }
    const auto na = numbers(a), nb = numbers(b);
    if (na != nb) {
        v.reason = near_miss_reason::number;
        v.detail = "numbers differ: " + fmt_numbers(na) + " vs " + fmt_numbers(nb);
        return v;
    }
    const auto da = directions(a), db = directions(b);
    if (da != db) {
        v.reason = near_miss_reason::direction;
        v.detail = "directions differ: " + join(da) + " vs " + join(db);
        return v;
    }
    if (std::string d = unmatched_name(a, b, lexicon); !d.empty()) {
        v.reason = near_miss_reason::entity;
        v.detail = "names differ: " + d;
        return v;
    }
    const auto qa = question_kinds(a), qb = question_kinds(b);
    if (!qa.empty() && !qb.empty() && qa != qb) {
        std::vector<std::string> va(qa.begin(), qa.end()), vb(qb.begin(), qb.end());
        v.reason = near_miss_reason::question_kind;
        v.detail = "question words differ: " + join(va) + " vs " + join(vb);
        return v;
    }
    // An answer type ("which city") counts as content unless only one side has one and the
    // other asks with a bare question word.
    const bool type_a = has_answer_type(a, lexicon), type_b = has_answer_type(b, lexicon);
    const std::vector<content_word> ca = content_words(a, lexicon, type_a && !type_b && asks_with_question_word(b)),
                                    cb = content_words(b, lexicon, type_b && !type_a && asks_with_question_word(a));
    alignment al = align(ca, cb, lexicon, synonym_senses);
    // A verb left over on one side may be what a light verb of the other stands for: "receive"
    // / "get", "obtain" / "get". The light verb's senses are many, so its first kLightVerbSenses
    // count, and only a verb in one of them.
    std::erase_if(al.only_a, [&](const content_word *w) { return stands_for_light_verb(*w, b, lexicon); });
    std::erase_if(al.only_b, [&](const content_word *w) { return stands_for_light_verb(*w, a, lexicon); });
    std::string opp = opposites(al.only_a, cb, a, b, lexicon);
    if (opp.empty()) {
        opp = opposites(al.only_b, ca, b, a, lexicon);
        // Keep the query's word first in the detail.
        if (size_t vs = opp.find(" vs "); vs != std::string::npos) opp = opp.substr(vs + 4) + " vs " + opp.substr(0, vs);
    }
    if (!opp.empty()) {
        v.reason = near_miss_reason::antonym;
        v.detail = "opposites: " + opp;
        return v;
    }
    if (!al.only_a.empty() || !al.only_b.empty()) {
        v.reason = near_miss_reason::unmatched;
        v.detail = !al.only_a.empty() ? quoted(*al.only_a.front(), a) + " has no counterpart in the cached question"
                                      : quoted(*al.only_b.front(), b) + " has no counterpart in the query";
        return v;
    }
    if (std::string d = reversed_relation(a, b, al); !d.empty()) {
        v.reason = near_miss_reason::reversed_relation;
        v.detail = "relation reversed: " + d;
        return v;
    }
    return v;
}

} // namespace actorserve
