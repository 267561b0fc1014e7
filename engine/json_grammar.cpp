// The matcher of engine/json_grammar.h: each live parse is a stack of frames, one per open
// value; a byte advances every stack (forking at anyOf, dropping the ones it cannot continue).
#include "engine/json_grammar.h"

#include <algorithm>

namespace actorserve {

namespace {

// An action of the top frame on a byte.
enum action : uint8_t { consumed, rejected, pop_refeed, pop_consumed, push_child };

// Phases. Containers: 0 expects the opening byte; 1 after it; 2 inside a key (object);
// 3 before ':'; 4 before a value; 5 after a value; 6 after ','.
enum : uint8_t { c_open = 0, c_first = 1, c_key = 2, c_colon = 3, c_value = 4, c_after = 5, c_next = 6 };
// Strings.
enum : uint8_t { s_open = 0, s_in = 1, s_utf8 = 2, s_esc = 3, s_hex = 4 };
// Numbers: completable in n_zero, n_int, n_frac, n_exp.
enum : uint8_t { n_start = 0, n_minus = 1, n_zero = 2, n_int = 3, n_dot = 4, n_frac = 5, n_e = 6, n_esign = 7, n_exp = 8 };

const json_node kFreeKey = [] {
    json_node n;
    n.kind = json_node::string;
    return n;
}();

bool is_ws(uint8_t b) { return b == ' ' || b == '\n' || b == '\t' || b == '\r'; }
bool is_digit(uint8_t b) { return b >= '0' && b <= '9'; }
bool is_hex(uint8_t b) { return is_digit(b) || (b >= 'a' && b <= 'f') || (b >= 'A' && b <= 'F'); }

bool container(const json_node *n) {
    return n->kind == json_node::object || n->kind == json_node::free_object || n->kind == json_node::array;
}
bool ws_ok(const json_matcher::frame &f) { return container(f.node) && f.phase != c_open && f.phase != c_key; }

bool completable(const json_matcher::frame &f) {
    switch (f.node->kind) {
    case json_node::number:
    case json_node::integer: return f.phase == n_zero || f.phase == n_int || f.phase == n_frac || f.phase == n_exp;
    case json_node::literals: return static_cast<size_t>(f.at) == f.node->texts[static_cast<size_t>(f.k)].size();
    default: return false;
    }
}

// Object: the first property index that may come next, and the last (the next required one).
int first_candidate(const json_matcher::frame &f) { return f.count + 1; }
int last_candidate(const json_matcher::frame &f) {
    const int n = static_cast<int>(f.node->keys.size());
    for (int j = f.count + 1; j < n; ++j)
        if (f.node->required[static_cast<size_t>(j)]) return j;
    return n - 1;
}
bool required_left(const json_matcher::frame &f) {
    for (size_t j = static_cast<size_t>(f.count + 1); j < f.node->keys.size(); ++j)
        if (f.node->required[j]) return true;
    return false;
}

// A text of `texts` (in [lo, hi]) that agrees with texts[k] on its first `at` bytes and has b
// next; -1 when none.
int extend(const std::vector<std::string> &texts, int lo, int hi, int k, int at, uint8_t b) {
    const auto n = static_cast<size_t>(at);
    const std::string &cur = texts[static_cast<size_t>(k)];
    for (int j = lo; j <= hi; ++j) {
        const std::string &t = texts[static_cast<size_t>(j)];
        if (t.size() > n && static_cast<uint8_t>(t[n]) == b && t.compare(0, n, cur, 0, n) == 0) return j;
    }
    return -1;
}

action string_byte(json_matcher::frame &f, uint8_t b) {
    const int max = f.node->max_length;
    auto start_char = [&] {
        if (max >= 0 && f.count >= max) return false;
        ++f.count;
        return true;
    };
    switch (f.phase) {
    case s_open:
        if (b != '"') return rejected;
        f.phase = s_in;
        return consumed;
    case s_in:
        if (b == '"') return f.count >= f.node->min_length ? pop_consumed : rejected;
        if (b < 0x20) return rejected;
        if (!start_char()) return rejected;
        if (b == '\\') {
            f.phase = s_esc;
            return consumed;
        }
        if (b < 0x80) return consumed;
        f.lo = 0x80, f.hi = 0xBF;
        if (b >= 0xC2 && b <= 0xDF) f.need = 1;
        else if (b >= 0xE0 && b <= 0xEF) f.need = 2, f.lo = b == 0xE0 ? 0xA0 : 0x80, f.hi = b == 0xED ? 0x9F : 0xBF;
        else if (b >= 0xF0 && b <= 0xF4) f.need = 3, f.lo = b == 0xF0 ? 0x90 : 0x80, f.hi = b == 0xF4 ? 0x8F : 0xBF;
        else return rejected;
        f.phase = s_utf8;
        return consumed;
    case s_utf8:
        if (b < f.lo || b > f.hi) return rejected;
        f.lo = 0x80, f.hi = 0xBF;
        if (--f.need == 0) f.phase = s_in;
        return consumed;
    case s_esc:
        if (b == 'u') {
            f.phase = s_hex;
            f.need = 4;
            return consumed;
        }
        if (b == '"' || b == '\\' || b == '/' || b == 'b' || b == 'f' || b == 'n' || b == 'r' || b == 't') {
            f.phase = s_in;
            return consumed;
        }
        return rejected;
    case s_hex:
        if (!is_hex(b) || (f.need == 4 && (b == 'd' || b == 'D'))) return rejected; // no surrogate halves
        if (--f.need == 0) f.phase = s_in;
        return consumed;
    }
    return rejected;
}

action number_byte(json_matcher::frame &f, uint8_t b) {
    const bool real = f.node->kind == json_node::number;
    constexpr int kMaxExp = 3;
    switch (f.phase) {
    case n_start:
    case n_minus:
        if (b == '-' && f.phase == n_start) return f.phase = n_minus, consumed;
        if (b == '0') return f.phase = n_zero, consumed;
        if (b >= '1' && b <= '9') return f.phase = n_int, f.need = 1, consumed;
        return rejected;
    case n_zero:
    case n_int:
        if (f.phase == n_int && is_digit(b) && f.need < json_matcher::kMaxDigits) return ++f.need, consumed;
        if (real && b == '.') return f.phase = n_dot, consumed;
        if (real && (b == 'e' || b == 'E')) return f.phase = n_e, consumed;
        return pop_refeed;
    case n_dot:
        if (is_digit(b)) return f.phase = n_frac, f.need = 1, consumed;
        return rejected;
    case n_frac:
        if (is_digit(b) && f.need < json_matcher::kMaxDigits) return ++f.need, consumed;
        if (b == 'e' || b == 'E') return f.phase = n_e, consumed;
        return pop_refeed;
    case n_e:
        if (b == '+' || b == '-') return f.phase = n_esign, consumed;
        [[fallthrough]];
    case n_esign:
        if (is_digit(b)) return f.phase = n_exp, f.need = 1, consumed;
        return rejected;
    case n_exp:
        if (is_digit(b) && f.need < kMaxExp) return ++f.need, consumed;
        return pop_refeed;
    }
    return rejected;
}

action literal_byte(json_matcher::frame &f, uint8_t b) {
    const auto &texts = f.node->texts;
    const int j = extend(texts, 0, static_cast<int>(texts.size()) - 1, f.k, f.at, b);
    if (j < 0) return completable(f) ? pop_refeed : rejected;
    f.k = j;
    ++f.at;
    if (!completable(f)) return consumed;
    // Whole: done at once unless a longer text goes on from here (enum [1, 10] after "1").
    for (size_t i = 0; i < texts.size(); ++i)
        if (texts[i].size() > static_cast<size_t>(f.at) && texts[i].compare(0, static_cast<size_t>(f.at), texts[static_cast<size_t>(f.k)]) == 0)
            return consumed;
    return pop_consumed;
}

// Objects, free objects and arrays; `child` is set with push_child.
action container_byte(json_matcher::frame &f, uint8_t b, const json_node *&child) {
    const json_node *n = f.node;
    const bool arr = n->kind == json_node::array, free = n->kind == json_node::free_object;
    const uint8_t close = arr ? ']' : '}';
    switch (f.phase) {
    case c_open:
        if (b != (arr ? '[' : '{')) return rejected;
        f.phase = c_first;
        return consumed;
    case c_first:
    case c_next:
        if (f.phase == c_first && b == close) {
            if (arr) return f.node->min_items == 0 ? pop_consumed : rejected;
            return free || !required_left(f) ? pop_consumed : rejected;
        }
        if (arr) {
            if (n->max_items == 0) return rejected;
            ++f.count;
            f.phase = c_after;
            child = n->item;
            return push_child;
        }
        if (b != '"') return rejected;
        if (free) {
            f.phase = c_colon;
            child = &kFreeKey;
            return push_child;
        }
        if (first_candidate(f) >= static_cast<int>(n->keys.size())) return rejected;
        f.k = first_candidate(f);
        f.at = 1;
        f.phase = c_key;
        return consumed;
    case c_key: {
        const int j = extend(n->keys, first_candidate(f), last_candidate(f), f.k, f.at, b);
        if (j < 0) return rejected;
        f.k = j;
        if (static_cast<size_t>(++f.at) == n->keys[static_cast<size_t>(j)].size()) {
            f.count = j;
            f.phase = c_colon;
        }
        return consumed;
    }
    case c_colon:
        if (b != ':') return rejected;
        f.phase = c_value;
        return consumed;
    case c_value:
        f.phase = c_after;
        child = free ? n->item : n->values[static_cast<size_t>(f.count)];
        return push_child;
    case c_after:
        if (b == ',') {
            if (arr && n->max_items >= 0 && f.count >= n->max_items) return rejected;
            if (!arr && !free && f.count + 1 >= static_cast<int>(n->keys.size())) return rejected;
            f.phase = c_next;
            return consumed;
        }
        if (b == close) {
            if (arr) return f.count >= n->min_items ? pop_consumed : rejected;
            return free || !required_left(f) ? pop_consumed : rejected;
        }
        return rejected;
    }
    return rejected;
}

action frame_byte(json_matcher::frame &f, uint8_t b, const json_node *&child) {
    switch (f.node->kind) {
    case json_node::object:
    case json_node::free_object:
    case json_node::array: return container_byte(f, b, child);
    case json_node::string: return string_byte(f, b);
    case json_node::number:
    case json_node::integer: return number_byte(f, b);
    case json_node::literals: return literal_byte(f, b);
    case json_node::any_of: return rejected; // never on a stack: expanded when pushed
    }
    return rejected;
}

// Pushes a frame for n on s (one stack per option of an anyOf) into out.
void push(json_matcher::stack s, const json_node *n, std::vector<json_matcher::stack> &out) {
    if (n->kind == json_node::any_of) {
        for (const json_node *o : n->options) push(s, o, out);
        return;
    }
    if (static_cast<int>(s.frames.size()) >= json_matcher::kMaxDepth) return;
    s.frames.push_back({n, 0, 0x80, 0xBF, 0, n->kind == json_node::object ? -1 : 0, 0, 0});
    out.push_back(std::move(s));
}

void step(json_matcher::stack s, uint8_t b, std::vector<json_matcher::stack> &out) {
    for (;;) {
        if (s.frames.empty()) return; // the document is whole: nothing may follow
        json_matcher::frame &f = s.frames.back();
        if (is_ws(b) && ws_ok(f)) {
            if (s.ws >= json_matcher::kMaxWhitespace) return;
            ++s.ws;
            out.push_back(std::move(s));
            return;
        }
        const json_node *child = nullptr;
        switch (frame_byte(f, b, child)) {
        case rejected: return;
        case consumed:
            s.ws = 0;
            out.push_back(std::move(s));
            return;
        case pop_consumed:
            s.ws = 0;
            s.frames.pop_back();
            out.push_back(std::move(s));
            return;
        case pop_refeed: s.frames.pop_back(); continue;
        case push_child: {
            std::vector<json_matcher::stack> forks;
            push(std::move(s), child, forks);
            for (auto &t : forks) step(std::move(t), b, out);
            return;
        }
        }
    }
}

// The fewest bytes after which frame f's value is whole (its parents' share not counted).
int frame_close(const json_matcher::frame &f) {
    const json_node *n = f.node;
    switch (n->kind) {
    case json_node::string: {
        const int deficit = std::max(0, n->min_length - f.count);
        switch (f.phase) {
        case s_open: return n->min_bytes;
        case s_in: return deficit + 1;
        case s_esc: return 1 + deficit + 1;
        default: return f.need + deficit + 1; // inside a character or a \u escape
        }
    }
    case json_node::number:
    case json_node::integer: return completable(f) ? 0 : 1;
    case json_node::literals: {
        int m = 1 << 30;
        const auto at = static_cast<size_t>(f.at);
        const std::string &cur = n->texts[static_cast<size_t>(f.k)];
        for (const std::string &t : n->texts)
            if (t.size() >= at && t.compare(0, at, cur, 0, at) == 0) m = std::min(m, static_cast<int>(t.size() - at));
        return m;
    }
    case json_node::free_object:
        switch (f.phase) {
        case c_open: return 2;
        case c_first: case c_after: return 1;
        case c_colon: return 3;       // : 0 }
        case c_value: return 2;       // 0 }
        default: return 5;            // after ',': "": 0 }
        }
    case json_node::array: {
        const int item = n->item->min_bytes;
        if (f.phase == c_open) return n->min_bytes;
        int due = std::max(0, n->min_items - f.count);
        if (f.phase == c_first) return due == 0 ? 1 : due * item + due - 1 + 1;
        if (f.phase == c_after) return due * (1 + item) + 1;
        due = std::max(1, due); // after ',': an item is due
        return item + (due - 1) * (1 + item) + 1;
    }
    case json_node::object: {
        if (f.phase == c_open) return n->min_bytes;
        auto prop = [&](size_t j) { return static_cast<int>(n->keys[j].size()) + 1 + n->values[j]->min_bytes; };
        // Required properties after `from`, each with the comma before it.
        auto rest = [&](int from, int &count) {
            int total = 0;
            count = 0;
            for (size_t j = static_cast<size_t>(from); j < n->keys.size(); ++j)
                if (n->required[j]) total += 1 + prop(j), ++count;
            return total;
        };
        int cnt = 0;
        switch (f.phase) {
        case c_first: {
            const int r = rest(f.count + 1, cnt);
            return cnt ? r - 1 + 1 : 1; // no comma before the first
        }
        case c_next: {
            const int r = rest(f.count + 1, cnt);
            if (cnt) return r - 1 + 1;
            int cheapest = 1 << 30; // an optional property is due after the comma
            for (size_t j = static_cast<size_t>(f.count + 1); j < n->keys.size(); ++j) cheapest = std::min(cheapest, prop(j));
            return cheapest + 1;
        }
        case c_key: { // the cheapest key still agreeing with the bytes typed
            const auto at = static_cast<size_t>(f.at);
            const std::string &cur = n->keys[static_cast<size_t>(f.k)];
            int best = 1 << 30;
            for (int j = first_candidate(f); j <= last_candidate(f); ++j) {
                const auto u = static_cast<size_t>(j);
                if (n->keys[u].compare(0, at, cur, 0, at) != 0) continue;
                best = std::min(best, static_cast<int>(n->keys[u].size() - at) + 1 + n->values[u]->min_bytes + rest(j + 1, cnt) + 1);
            }
            return best;
        }
        case c_colon: return 1 + n->values[static_cast<size_t>(f.count)]->min_bytes + rest(f.count + 1, cnt) + 1;
        case c_value: return n->values[static_cast<size_t>(f.count)]->min_bytes + rest(f.count + 1, cnt) + 1;
        default: return rest(f.count + 1, cnt) + 1; // c_after
        }
    }
    case json_node::any_of: return 0;
    }
    return 0;
}

} // namespace

int json_matcher::min_close() const {
    int best = 1 << 30;
    for (const stack &s : stacks_) {
        int total = 0;
        for (const frame &f : s.frames) total += frame_close(f);
        best = std::min(best, total);
    }
    return best;
}

bool json_matcher::stack::operator==(const stack &o) const {
    if (ws != o.ws || frames.size() != o.frames.size()) return false;
    for (size_t i = 0; i < frames.size(); ++i) {
        const frame &a = frames[i], &c = o.frames[i];
        if (a.node != c.node || a.phase != c.phase || a.lo != c.lo || a.hi != c.hi || a.need != c.need ||
            a.count != c.count || a.k != c.k || a.at != c.at)
            return false;
    }
    return true;
}

json_matcher::json_matcher(const json_grammar &g) { push(stack{}, g.root, stacks_); }

bool json_matcher::feed(uint8_t byte) {
    next_.clear();
    for (const stack &s : stacks_) step(s, byte, next_);
    if (next_.empty()) return false;
    // The same parse reached twice (anyOf of overlapping options) is kept once.
    for (size_t i = 1; i < next_.size();) {
        if (std::find(next_.begin(), next_.begin() + static_cast<ptrdiff_t>(i), next_[i]) != next_.begin() + static_cast<ptrdiff_t>(i))
            next_.erase(next_.begin() + static_cast<ptrdiff_t>(i));
        else ++i;
    }
    if (next_.size() > static_cast<size_t>(kMaxStacks)) next_.resize(kMaxStacks); // each left is a valid parse
    stacks_.swap(next_);
    return true;
}

bool json_matcher::feed(std::string_view bytes) {
    const std::vector<stack> saved = stacks_;
    for (char c : bytes)
        if (!feed(static_cast<uint8_t>(c))) {
            stacks_ = saved;
            return false;
        }
    return true;
}

bool json_matcher::can_finish() const {
    for (const stack &s : stacks_)
        if (s.frames.empty() || (s.frames.size() == 1 && completable(s.frames[0]))) return true;
    return false;
}

bool json_matcher::must_finish() const {
    for (const stack &s : stacks_)
        if (!s.frames.empty()) return false;
    return true;
}

bool json_matcher::in_plain_string(int &remaining, int *due) const {
    if (stacks_.size() != 1 || stacks_[0].frames.empty()) return false;
    const frame &f = stacks_[0].frames.back();
    if (f.node->kind != json_node::string || f.phase != s_in) return false;
    remaining = f.node->max_length < 0 ? -1 : f.node->max_length - f.count;
    if (due) *due = std::max(0, f.node->min_length - f.count);
    return true;
}

} // namespace actorserve
