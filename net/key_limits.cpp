#include "net/key_limits.h"

#include <charconv>

namespace actorserve {

namespace {

constexpr auto kWindow = std::chrono::seconds(60);

int ms_until(key_limiter::clock::time_point t, key_limiter::clock::time_point now) {
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(t - now).count();
    return static_cast<int>(std::max<int64_t>(1, ms));
}

bool parse_count(std::string_view v, int &out) {
    int n = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || end != v.data() + v.size() || n < 0) return false;
    out = n;
    return true;
}

} // namespace

bool parse_key_settings(std::string_view text, key_settings &out, std::string &err) {
    size_t i = 0;
    while (i < text.size()) {
        if (text[i] == ' ' || text[i] == '\t') {
            ++i;
            continue;
        }
        size_t end = text.find_first_of(" \t", i);
        if (end == std::string_view::npos) end = text.size();
        const std::string_view field = text.substr(i, end - i);
        i = end;
        const size_t eq = field.find('=');
        if (eq == std::string_view::npos || eq == 0) {
            err = "'" + std::string(field.substr(0, 64)) + "' is not a setting (name=value: id, rpm, tpm, concurrent, priority)";
            return false;
        }
        const std::string_view k = field.substr(0, eq), v = field.substr(eq + 1);
        if (k == "id") {
            if (v.empty() || v.size() > 64) {
                err = "id must be 1 to 64 characters";
                return false;
            }
            out.id = std::string(v);
        } else if (k == "rpm" || k == "tpm" || k == "concurrent") {
            int &dst = k == "rpm" ? out.rpm : k == "tpm" ? out.tpm : out.concurrent;
            if (!parse_count(v, dst)) {
                err = std::string(k) + " must be a whole number >= 0 (0: no limit), got '" + std::string(v.substr(0, 32)) + "'";
                return false;
            }
        } else if (k == "priority") {
            auto p = parse_priority(v);
            if (!p) {
                err = "priority must be interactive, standard or batch, got '" + std::string(v.substr(0, 32)) + "'";
                return false;
            }
            out.priority = *p;
        } else {
            err = "unknown setting '" + std::string(k.substr(0, 32)) + "' (id, rpm, tpm, concurrent, priority)";
            return false;
        }
    }
    return true;
}

key_limiter::key_limiter(std::vector<key_settings> keys) {
    keys_.resize(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) keys_[i].cfg = std::move(keys[i]);
}

void key_limiter::expire(state &s, clock::time_point now) {
    while (!s.started.empty() && s.started.front() + kWindow <= now) s.started.pop_front();
    while (!s.used.empty() && s.used.front().first + kWindow <= now) {
        s.used_sum -= s.used.front().second;
        s.used.pop_front();
    }
}

std::optional<key_limiter::refusal> key_limiter::admit(size_t key, clock::time_point now, int concurrent_retry_ms) {
    std::lock_guard<std::mutex> lk(mu_);
    if (key >= keys_.size()) return std::nullopt;
    state &s = keys_[key];
    expire(s, now);
    const key_settings &c = s.cfg;
    auto refuse = [&](key_limit l, std::string what, int retry_ms) {
        ++s.refused[static_cast<int>(l)];
        return refusal{l, "API key " + c.id + " is over its limit of " + what, retry_ms};
    };
    if (c.concurrent > 0 && s.running >= c.concurrent)
        return refuse(key_limit::concurrent, std::to_string(c.concurrent) + " concurrent requests (concurrent)",
                      std::max(1, concurrent_retry_ms));
    if (c.rpm > 0 && static_cast<int>(s.started.size()) >= c.rpm)
        return refuse(key_limit::rpm, std::to_string(c.rpm) + " requests per minute (rpm)",
                      ms_until(s.started[s.started.size() - static_cast<size_t>(c.rpm)] + kWindow, now));
    if (c.tpm > 0 && s.used_sum >= c.tpm) {
        // The window lets one more in once enough of its oldest entries leave it.
        int64_t sum = s.used_sum;
        clock::time_point at = now;
        for (const auto &[t, n] : s.used) {
            sum -= n;
            at = t + kWindow;
            if (sum < c.tpm) break;
        }
        return refuse(key_limit::tpm, std::to_string(c.tpm) + " tokens per minute (tpm; " + std::to_string(s.used_sum) +
                                          " used in the last 60 s)",
                      ms_until(at, now));
    }
    if (c.rpm > 0) s.started.push_back(now);
    ++s.running;
    return std::nullopt;
}

void key_limiter::finish(size_t key, int64_t tokens, clock::time_point now) {
    std::lock_guard<std::mutex> lk(mu_);
    if (key >= keys_.size()) return;
    state &s = keys_[key];
    if (s.running > 0) --s.running;
    if (s.cfg.tpm > 0 && tokens > 0) {
        s.used.emplace_back(now, tokens);
        s.used_sum += tokens;
    }
    expire(s, now);
}

uint64_t key_limiter::refused(size_t key, key_limit l) const {
    std::lock_guard<std::mutex> lk(mu_);
    return key < keys_.size() ? keys_[key].refused[static_cast<int>(l)] : 0;
}

int key_limiter::running(size_t key) const {
    std::lock_guard<std::mutex> lk(mu_);
    return key < keys_.size() ? keys_[key].running : 0;
}

} // namespace actorserve
