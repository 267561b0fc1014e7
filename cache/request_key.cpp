#include "cache/request_key.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace actorserve {
namespace {

std::string float_bits(float f) {
    if (f == 0.0f) f = 0.0f;   // -0 and +0 decide the same answer
    uint32_t b;
    std::memcpy(&b, &f, 4);
    char buf[16];
    std::snprintf(buf, sizeof buf, "%08x", b);
    return buf;
}

} // namespace

std::string canonical_params(const generation_params &p) {
    const sampling_params &s = p.sampling;
    std::string out;
    if (is_deterministic(s)) {
        out += "greedy";
    } else {
        out += "t=" + float_bits(s.temperature) + ";k=" + std::to_string(s.top_k) + ";p=" + float_bits(s.top_p) +
               ";minp=" + float_bits(s.min_p) + ";seed=" + std::to_string(s.seed);
    }
    if (s.repeat_penalty != 1.0f && s.repeat_last_n != 0)
        out += ";rp=" + float_bits(s.repeat_penalty) + ";rln=" + std::to_string(s.repeat_last_n);
    out += ";max=" + std::to_string(p.max_tokens);
    std::vector<std::string> stop = p.stop;
    std::sort(stop.begin(), stop.end());
    stop.erase(std::unique(stop.begin(), stop.end()), stop.end());
    out += ";stop=[";
    for (const auto &st : stop) out += std::to_string(st.size()) + ":" + st;   // length-prefixed: no escaping needed
    out += "]";
    return out;
}

std::string normalise_whitespace(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    bool pending_space = false;
    for (char c : s) {
        const bool ws = c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
        if (ws) {
            pending_space = !out.empty();
            continue;
        }
        if (pending_space) out.push_back(' ');
        pending_space = false;
        out.push_back(c);
    }
    return out;
}

std::string marked_prompt(const rendered_chat &chat) {
    std::string out;
    out.reserve(chat.text.size() + 2 * chat.controls.size());
    size_t at = 0;
    for (const auto &[off, len] : chat.controls) {
        out.append(chat.text, at, off - at);
        out += '\xff';
        out.append(chat.text, off, len);
        out += '\xff';
        at = off + len;
    }
    out.append(chat.text, at, std::string::npos);
    return out;
}

} // namespace actorserve
