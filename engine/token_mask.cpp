#include "engine/token_mask.h"

#include <algorithm>

#include "engine/tokenizer.h"
#include "engine/utf8.h"

namespace actorserve {

namespace {

// Characters of s when every byte may stand in a JSON string as it is; -1 otherwise.
int plain_chars(const std::string &s) {
    if (!is_valid_utf8(s)) return -1;
    int n = 0;
    for (unsigned char c : s) {
        if (c < 0x20 || c == '"' || c == '\\') return -1;
        if ((c & 0xC0) != 0x80) ++n;
    }
    return n;
}

} // namespace

token_vocab::token_vocab(const tokenizer &tok) {
    const int32_t n = tok.n_vocab();
    bytes_.resize(static_cast<size_t>(n));
    plain_chars_.assign(static_cast<size_t>(n), -1);
    all_.emplace_back();
    special_.emplace_back();
    for (int32_t id = 0; id < n; ++id) {
        if (tok.is_eog(id)) {
            eog_.push_back(id);
            continue;
        }
        bytes_[static_cast<size_t>(id)] = tok.token_bytes(id, false); // control tokens: empty, never allowed
        const std::string &b = bytes_[static_cast<size_t>(id)];
        if (b.empty()) continue;
        insert(all_, b, id);
        const int chars = plain_chars(b);
        if (chars >= 0) plain_.emplace_back(id, chars), plain_chars_[static_cast<size_t>(id)] = chars;
        else insert(special_, b, id);
    }
}

void token_vocab::insert(std::vector<trie_node> &t, const std::string &bytes, int32_t id) {
    int32_t at = 0;
    for (unsigned char c : bytes) {
        auto &kids = t[static_cast<size_t>(at)].kids;
        auto it = std::find_if(kids.begin(), kids.end(), [&](const auto &k) { return k.first == c; });
        if (it != kids.end()) {
            at = it->second;
            continue;
        }
        const auto next = static_cast<int32_t>(t.size());
        t[static_cast<size_t>(at)].kids.emplace_back(c, next); // note: before emplace_back on t
        t.emplace_back();
        at = next;
    }
    t[static_cast<size_t>(at)].ends.push_back(id);
}

bool token_vocab::is_eog(int32_t id) const { return std::find(eog_.begin(), eog_.end(), id) != eog_.end(); }

void token_vocab::walk(const std::vector<trie_node> &t, int32_t node, const json_matcher &m, std::vector<int32_t> &out) const {
    for (const auto &[byte, kid] : t[static_cast<size_t>(node)].kids) {
        json_matcher next = m;
        if (!next.feed(byte)) continue;
        const trie_node &k = t[static_cast<size_t>(kid)];
        out.insert(out.end(), k.ends.begin(), k.ends.end());
        if (!k.kids.empty()) walk(t, kid, next, out);
    }
}

void token_vocab::fit_budget(const json_matcher &m, std::vector<int32_t> &out, int budget) const {
    const bool finish = m.can_finish();
    int remaining = 0, due = 0;
    const bool in_string = m.in_plain_string(remaining, &due);
    const int now = m.min_close();
    // A plain token inside a string leaves its closing as it was, less the minLength it pays.
    auto close_after = [&](int32_t id) {
        const int chars = plain_chars_[static_cast<size_t>(id)];
        if (in_string && chars >= 0) return now - std::min(chars, due);
        json_matcher c = m;
        c.feed(bytes(id));
        return c.min_close();
    };
    std::vector<int32_t> fits;
    for (int32_t id : out)
        if ((finish && is_eog(id)) || (!is_eog(id) && close_after(id) <= budget)) fits.push_back(id);
    if (fits.empty()) { // nothing closes in time: the tokens that bring the end nearest
        int best = 1 << 30;
        for (int32_t id : out) best = std::min(best, is_eog(id) ? 0 : close_after(id));
        for (int32_t id : out)
            if ((is_eog(id) ? 0 : close_after(id)) == best) fits.push_back(id);
    }
    out.swap(fits);
}

void token_vocab::allowed(const json_matcher &m, std::vector<int32_t> &out, int budget) const {
    allowed(m, out);
    // note: checked at every step, not only near the end: one token (a key whose value must
    // hold many required properties) can move the end far.
    if (budget >= 0) fit_budget(m, out, budget);
}

void token_vocab::allowed(const json_matcher &m, std::vector<int32_t> &out) const {
    out.clear();
    if (m.can_finish()) out.insert(out.end(), eog_.begin(), eog_.end());
    if (m.must_finish()) return;
    int remaining = -1;
    if (m.in_plain_string(remaining)) {
        // The walk's few tokens sorted, then merged with the plain ones (ascending already).
        walk(special_, 0, m, out);
        std::sort(out.begin(), out.end());
        const auto mid = static_cast<ptrdiff_t>(out.size());
        for (const auto &[id, chars] : plain_)
            if (remaining < 0 || chars <= remaining) out.push_back(id);
        std::inplace_merge(out.begin(), out.begin() + mid, out.end());
    } else {
        walk(all_, 0, m, out);
        std::sort(out.begin(), out.end());
    }
}

} // namespace actorserve
