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
    case near_miss_reason::substitution: return "substitution";
    }
    return "?";
}

namespace {

using word_set = std::unordered_set<std::string_view>;

// Function words and chat filler: neither content nor names.
const word_set &stopwords() {
    static const word_set s = {
        "a", "an", "the", "is", "are", "was", "were", "be", "been", "being", "am", "do", "does", "did",
        "doing", "done", "have", "has", "had", "having", "i", "me", "my", "mine", "you", "your", "yours",
        "we", "us", "our", "he", "him", "his", "she", "her", "they", "them", "their", "it", "its", "this",
        "that", "these", "those", "there", "here", "what", "which", "who", "whom", "whose", "when", "where",
        "why", "how", "can", "could", "should", "would", "will", "shall", "may", "might", "must", "to", "of",
        "in", "on", "at", "by", "for", "with", "from", "into", "onto", "about", "as", "and", "or", "but", "if",
        "then", "so", "than", "too", "very", "just", "also", "please", "kindly", "tell", "explain", "know",
        "want", "need", "help", "thanks", "thank", "someone", "anyone", "something", "anything", "way",
        "ways", "exactly", "actually", "really", "possible", "some", "any", "all", "each", "every", "other",
        "another", "such", "own", "same", "one's", "get", "got", "go", "going", "make", "let", "lets", "let's",
        "i'm", "what's", "whats", "how's", "where's", "who's", "it's", "that's", "there's", "i've", "you're",
        "say", "mean", "means", "meaning", "give", "show", "describe", "define", "definition", "example",
        "examples", "quick", "simple", "simply", "basically", "correct", "correctly", "properly", "good",
        "right", "best", "way", "step", "steps", "guide", "difference", "between", "vs", "versus", "like",
        "out", "up", "over", "under", "again", "still", "yet", "ever", "even", "only", "both", "either",
        "whether", "during", "via", "using", "use", "used", "thing", "things", "kind", "type",
        "many", "much", "per", "called", "call", "name", "named", "find", "out", "work", "works", "happen", "happens",
    };
    return s;
}

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

// Asymmetric relation words, each variant mapped to one name: the order of what they link matters.
const std::unordered_map<std::string_view, std::string_view> &relation_words() {
    static const std::unordered_map<std::string_view, std::string_view> m = {
        {"than", "than"}, {"to", "to"}, {"into", "to"}, {"from", "from"}, {"before", "before"},
        {"after", "after"}, {"above", "above"}, {"below", "below"}, {"by", "by"}, {"of", "of"},
        {"for", "for"}, {"over", "over"}, {"under", "under"}, {"cause", "cause"}, {"causes", "cause"},
        {"caused", "cause"}, {"causing", "cause"}, {"beat", "beat"}, {"beats", "beat"}, {"defeat", "beat"},
        {"defeats", "beat"}, {"defeated", "beat"}, {"affect", "affect"}, {"affects", "affect"},
        {"precede", "precede"}, {"precedes", "precede"}, {"follow", "follow"}, {"follows", "follow"},
        {"owe", "owe"}, {"owes", "owe"}, {"pay", "pay"}, {"pays", "pay"}, {"paid", "pay"},
        {"send", "send"}, {"sends", "send"}, {"sent", "send"}, {"inherit", "inherit"}, {"inherits", "inherit"},
        {"extend", "extend"}, {"extends", "extend"}, {"imply", "imply"}, {"implies", "imply"},
        {"contain", "contain"}, {"contains", "contain"}, {"include", "include"}, {"includes", "include"},
        {"depend", "depend"}, {"depends", "depend"}, {"eat", "eat"}, {"eats", "eat"}, {"ate", "eat"},
        {"kill", "kill"}, {"kills", "kill"}, {"killed", "kill"}, {"replace", "replace"}, {"replaces", "replace"},
        {"per", "per"}, {"in", "in"},
    };
    return m;
}

// Words that a paraphrase commonly swaps one for another. Small on purpose: a missing pair
// only costs a refused paraphrase.
const std::vector<std::vector<std::string_view>> &synonym_groups() {
    static const std::vector<std::vector<std::string_view>> g = {
        {"delete", "remove", "erase", "drop"}, {"create", "make", "build", "generate"},
        {"fix", "solve", "resolve", "repair", "debug"}, {"error", "bug", "issue", "problem", "exception"},
        {"start", "begin", "launch"}, {"change", "modify", "edit", "update", "alter"},
        {"use", "utilize", "utilise", "employ"}, {"picture", "image", "photo"}, {"program", "code", "script"},
        {"learn", "study"}, {"run", "execute"}, {"price", "cost"}, {"buy", "purchase"},
        {"car", "automobile", "vehicle"}, {"show", "display", "print", "output"}, {"function", "method"},
        {"folder", "directory"}, {"combine", "merge", "join", "concatenate"}, {"check", "verify", "test", "determine"},
        {"big", "large"}, {"fast", "quick", "rapid"}, {"kid", "child"}, {"doctor", "physician"},
        {"film", "movie"}, {"job", "career"}, {"stop", "quit", "halt", "end"}, {"copy", "duplicate"},
        {"rename", "move"}, {"list", "array"}, {"string", "text"}, {"convert", "turn", "transform", "change"},
        {"write", "author"}, {"summarise", "summarize", "summary"}, {"speed", "fast", "quick"},
    };
    return g;
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
    size_t i = 0;
    while (i < s.size()) {
        unsigned char c = static_cast<unsigned char>(s[i]);
        if (!is_word_byte(c) || c == '\'') {
            if (c == '.' || c == '!' || c == '?' || c == ':' || c == '\n') start = true;
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
                t.has_alpha |= std::isalpha(static_cast<unsigned char>(ch)) != 0;
            }
            t.stemmed = stem(t.lower);
            t.sentence_start = start;
            out.push_back(std::move(t));
            start = false;
        }
        i = j;
    }
    return out;
}

bool is_negation(const token &t) {
    const std::string &w = t.lower;
    return negations().count(w) > 0 || (w.size() > 3 && w.compare(w.size() - 3, 3, "n't") == 0);
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

bool is_number_token(const token &t) { return t.has_digit || number_words().count(t.lower) > 0; }

bool is_content(const token &t) {
    return t.has_alpha && !stopwords().count(t.lower) && !scale_words().count(t.lower) && !negations().count(t.lower) && !is_number_token(t) &&
           t.lower != "more" && t.lower != "most" && t.lower != "less" && t.lower != "least" && !is_negation(t);
}

// The words a relation links: content words other than the relation verbs themselves.
bool is_argument(const token &t) { return is_content(t) && !relation_words().count(t.lower); }

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
            else if (!openers().count(t.lower) && !stopwords().count(t.lower)) n.weak.push_back(&t);
        }
    }
    return n;
}

bool mentions(const std::vector<token> &toks, const token &name) {
    for (const token &t : toks)
        if (t.lower == name.lower || t.stemmed == name.stemmed) return true;
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
std::string unmatched_name(const std::vector<token> &a, const std::vector<token> &b) {
    const names na = find_names(a), nb = find_names(b);
    for (const token *t : na.strong)
        if (!mentions(b, *t)) return "'" + t->text + "' is not in the cached question";
    for (const token *t : nb.strong)
        if (!mentions(a, *t)) return "'" + t->text + "' is not in the query";
    const token *wa = nullptr, *wb = nullptr;
    for (const token *t : na.weak)
        if (!mentions(b, *t)) wa = t;
    for (const token *t : nb.weak)
        if (!mentions(a, *t)) wb = t;
    if (wa && wb) return "'" + wa->text + "' vs '" + wb->text + "'";
    return {};
}

// Content words with their positions; positions index into the token vector.
struct content_word {
    std::string stem;
    size_t pos;
};

std::vector<content_word> content_words(const std::vector<token> &toks, bool arguments_only = false) {
    std::vector<content_word> out;
    for (size_t i = 0; i < toks.size(); ++i)
        if (arguments_only ? is_argument(toks[i]) : is_content(toks[i])) out.push_back({toks[i].stemmed, i});
    return out;
}

// For a relation word found exactly once in each text: the argument words before it and after
// it. The relation is reversed when a word before it in one text is after it in the other and
// another word after it is before it (so multi-word names move as a whole: "Tokyo from New
// York" / "New York from Tokyo"). Words that occur more than once in a text are ignored.
std::string reversed_relation(const std::vector<token> &a, const std::vector<token> &b) {
    auto relation_positions = [](const std::vector<token> &t) {
        std::map<std::string_view, std::vector<size_t>> m;
        for (size_t i = 0; i < t.size(); ++i)
            if (auto it = relation_words().find(t[i].lower); it != relation_words().end()) m[it->second].push_back(i);
        return m;
    };
    auto counts = [](const std::vector<token> &t) {
        std::map<std::string, int> m;
        for (const token &x : t)
            if (is_argument(x)) m[x.stemmed] += 1;
        return m;
    };
    const auto ra = relation_positions(a), rb = relation_positions(b);
    const auto ca = counts(a), cb = counts(b);
    auto sides = [](const std::vector<token> &t, size_t pos, const std::map<std::string, int> &own,
                    const std::map<std::string, int> &other, std::set<std::string> &before, std::set<std::string> &after) {
        for (size_t i = 0; i < t.size(); ++i) {
            if (i == pos || !is_argument(t[i])) continue;
            auto o = other.find(t[i].stemmed);
            if (own.at(t[i].stemmed) != 1 || o == other.end() || o->second != 1) continue;
            (i < pos ? before : after).insert(t[i].stemmed);
        }
    };
    for (const auto &[rel, pa] : ra) {
        auto it = rb.find(rel);
        if (pa.size() != 1 || it == rb.end() || it->second.size() != 1) continue;
        std::set<std::string> before_a, after_a, before_b, after_b;
        sides(a, pa[0], ca, cb, before_a, after_a);
        sides(b, it->second[0], cb, ca, before_b, after_b);
        std::string moved_back, moved_forward;
        for (const auto &w : before_a)
            if (after_b.count(w)) moved_back = w;
        for (const auto &w : after_a)
            if (before_b.count(w)) moved_forward = w;
        if (!moved_back.empty() && !moved_forward.empty())
            return "'" + moved_back + " " + std::string(rel) + " " + moved_forward + "' vs '" + moved_forward + " " +
                   std::string(rel) + " " + moved_back + "'";
    }
    return {};
}

// Who / when / where / why ask for different kinds of answer.
std::set<std::string> question_kinds(const std::vector<token> &toks) {
    std::set<std::string> k;
    for (const token &t : toks) {
        if (t.lower == "who" || t.lower == "whom" || t.lower == "whose" || t.lower == "who's") k.insert("who");
        else if (t.lower == "when") k.insert("when");
        else if (t.lower == "where" || t.lower == "where's") k.insert("where");
        else if (t.lower == "why" || t.lower == "why's") k.insert("why");
    }
    return k;
}

bool synonyms(const std::string &x, const std::string &y) {
    static const std::vector<std::set<std::string>> groups = [] {
        std::vector<std::set<std::string>> g;
        for (const auto &grp : synonym_groups()) {
            std::set<std::string> s;
            for (auto w : grp) s.insert(stem(w));
            g.push_back(std::move(s));
        }
        return g;
    }();
    for (const auto &g : groups)
        if (g.count(x) && g.count(y)) return true;
    return false;
}

std::string substitution(const std::vector<token> &a, const std::vector<token> &b) {
    std::set<std::string> sa, sb;
    for (const auto &w : content_words(a)) sa.insert(w.stem);
    for (const auto &w : content_words(b)) sb.insert(w.stem);
    std::vector<std::string> only_a, only_b;
    size_t shared = 0;
    for (const auto &w : sa) {
        if (sb.count(w)) ++shared;
        else only_a.push_back(w);
    }
    for (const auto &w : sb)
        if (!sa.count(w)) only_b.push_back(w);
    auto original = [](const std::vector<token> &t, const std::string &st) {
        for (const auto &x : t)
            if (x.stemmed == st && is_content(x)) return x.text;
        return st;
    };
    // One word added on one side only ("make a table" / "delete a table", "for loop" / "while
    // loop") is the same kind of change as a swap, when the rest holds at least two words.
    if (shared >= 2 && only_a.size() + only_b.size() == 1)
        return only_a.empty() ? "'" + original(b, only_b[0]) + "' only in the cached question"
                              : "'" + original(a, only_a[0]) + "' only in the query";
    if (shared == 0 || only_a.size() != 1 || only_b.size() != 1 || synonyms(only_a[0], only_b[0])) return {};
    return "'" + original(a, only_a[0]) + "' vs '" + original(b, only_b[0]) + "'";
}

// A content word found on one side only whose WordNet opposite is a content word found on the
// other side only, compared through their base forms ("colder" -> "cold").
std::string opposite_words(const std::vector<token> &a, const std::vector<token> &b, const wordnet &wn) {
    auto only = [](const std::vector<token> &x, const std::vector<token> &y) {
        std::set<std::string> in_y;
        for (const auto &t : y) in_y.insert(t.stemmed);
        std::vector<const token *> out;
        for (const auto &t : x)
            if (is_content(t) && !in_y.count(t.stemmed)) out.push_back(&t);
        return out;
    };
    for (const token *x : only(a, b))
        for (const token *y : only(b, a))
            for (const auto &bx : wn.base_forms(x->lower))
                for (const auto &by : wn.base_forms(y->lower))
                    if (wn.antonyms(bx, by) || wn.antonyms(by, bx)) return "'" + x->text + "' vs '" + y->text + "'";
    return {};
}

} // namespace

near_miss_verdict check_near_miss(std::string_view query, std::string_view cached_question, float similarity,
                                  const wordnet *lexicon) {
    near_miss_verdict v;
    const std::vector<token> a = tokenize(query), b = tokenize(cached_question);

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
    if (std::string d = unmatched_name(a, b); !d.empty()) {
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
    if (std::string d = reversed_relation(a, b); !d.empty()) {
        v.reason = near_miss_reason::reversed_relation;
        v.detail = "relation reversed: " + d;
        return v;
    }
    if (lexicon)
        if (std::string d = opposite_words(a, b, *lexicon); !d.empty()) {
            v.reason = near_miss_reason::antonym;
            v.detail = "opposites: " + d;
            return v;
        }
    if (std::string d = substitution(a, b); !d.empty() && similarity < kSubstitutionTrust) {
        v.reason = near_miss_reason::substitution;
        v.detail = "one key word differs: " + d;
        return v;
    }
    return v;
}

} // namespace actorserve
