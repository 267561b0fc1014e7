#include "cache/exact_cache.h"

#include <algorithm>
#include <cassert>

namespace actorserve {

exact_key exact_key::make(std::string_view model, std::string_view rendered_prompt, const generation_params &p) {
    exact_key k;
    const std::string prompt = normalise_whitespace(rendered_prompt);
    // Length prefixes keep the fields apart whatever bytes they contain.
    k.canonical = std::to_string(model.size()) + ":" + std::string(model) + "\x1f" + std::to_string(prompt.size()) +
                  ":" + prompt + "\x1f" + canonical_params(p);
    k.hash = siphash128(k.canonical);
    k.deterministic = is_deterministic(p.sampling);
    return k;
}

exact_cache::exact_cache(cache_limits limits, cache_clock clock) : limits_(limits), clock_(std::move(clock)) {
    if (!clock_) clock_ = system_clock_ms;
}

uint64_t exact_cache::find_id(const exact_key &key) const {
    auto [b, e] = by_hash_.equal_range(key.hash.lo);
    for (auto it = b; it != e; ++it) {
        const entry &en = entries_.at(it->second);
        if (en.key.hash == key.hash && en.key.canonical == key.canonical) return it->second;
    }
    return 0;
}

void exact_cache::drop(uint64_t id) {
    auto it = entries_.find(id);
    assert(it != entries_.end());
    auto [b, e] = by_hash_.equal_range(it->second.key.hash.lo);
    for (auto h = b; h != e; ++h) {
        if (h->second == id) {
            by_hash_.erase(h);
            break;
        }
    }
    stats_.bytes -= it->second.bytes;
    entries_.erase(it);
    policy_.erase(id);
    stats_.entries = entries_.size();
}

std::optional<cached_answer> exact_cache::lookup(const exact_key &key, bool allow_sampled) {
    if (!key.deterministic && !allow_sampled) {
        stats_.skipped += 1;
        return std::nullopt;
    }
    stats_.lookups += 1;
    const uint64_t id = find_id(key);
    if (id != 0 && policy_.expired(id, clock_())) {
        drop(id);
        stats_.evictions_ttl += 1;
    } else if (id != 0) {
        policy_.touch(id);
        stats_.hits += 1;
        return entries_.at(id).answer;
    }
    stats_.misses += 1;
    return std::nullopt;
}

size_t exact_cache::purge_expired() {
    const int64_t now = clock_();
    size_t n = 0;
    while (auto id = policy_.first_expired(now)) {
        drop(*id);
        n += 1;
    }
    stats_.evictions_ttl += n;
    return n;
}

bool exact_cache::evict_one_for_space(int64_t now) {
    if (auto id = policy_.first_expired(now)) {
        drop(*id);
        stats_.evictions_ttl += 1;
        return true;
    }
    if (auto id = policy_.victim()) {
        drop(*id);
        stats_.evictions_lfu += 1;
        return true;
    }
    return false;
}

insert_status exact_cache::insert(const exact_key &key, cached_answer answer, bool allow_sampled) {
    if (!key.deterministic && !allow_sampled) {
        stats_.skipped += 1;
        return insert_status::not_cacheable;
    }
    const size_t bytes = entry_bytes(key, answer);
    if (bytes > limits_.max_bytes || limits_.max_entries == 0) return insert_status::too_large;
    const int64_t now = clock_();
    const int64_t expires = expiry_after(now, limits_.ttl_ms);

    if (uint64_t id = find_id(key); id != 0) {
        entry &en = entries_.at(id);
        stats_.bytes -= en.bytes;
        // Make room for the size difference, without evicting the entry being replaced.
        const uint64_t uses = policy_.find(id)->freq + 1;   // a replacement counts as a use
        policy_.erase(id);
        while (stats_.bytes + bytes > limits_.max_bytes && evict_one_for_space(now)) {}
        en.answer = std::move(answer);
        en.bytes = bytes;
        stats_.bytes += bytes;
        policy_.insert(id, expires, uses);
        stats_.inserts += 1;
        return insert_status::replaced;
    }

    while ((entries_.size() + 1 > limits_.max_entries || stats_.bytes + bytes > limits_.max_bytes) &&
           evict_one_for_space(now)) {}
    const uint64_t id = next_id_++;
    entries_.emplace(id, entry{key, std::move(answer), bytes});
    by_hash_.emplace(key.hash.lo, id);
    policy_.insert(id, expires);
    stats_.bytes += bytes;
    stats_.entries = entries_.size();
    stats_.inserts += 1;
    return insert_status::stored;
}

bool exact_cache::erase(const exact_key &key) {
    const uint64_t id = find_id(key);
    if (id == 0) return false;
    drop(id);
    return true;
}

void exact_cache::clear() {
    entries_.clear();
    by_hash_.clear();
    policy_.clear();
    stats_.entries = 0;
    stats_.bytes = 0;
}

// Payload: u64 count, then per entry in least-recent-use order:
//   str canonical, u8 deterministic, str text, str finish_reason, i64 completion_tokens,
//   u64 freq, i64 expires_ms
bool exact_cache::save(const std::string &path, std::string &err) const {
    std::vector<std::pair<uint64_t, uint64_t>> by_tick;   // (tick, id): replayed in this order on load
    by_tick.reserve(entries_.size());
    for (const auto &[id, en] : entries_) by_tick.emplace_back(policy_.find(id)->tick, id);
    std::sort(by_tick.begin(), by_tick.end());
    byte_writer w;
    w.u64(by_tick.size());
    for (auto [tick, id] : by_tick) {
        const entry &en = entries_.at(id);
        const lfu_ttl::meta *m = policy_.find(id);
        w.str(en.key.canonical);
        w.u8(en.key.deterministic ? 1 : 0);
        w.str(en.answer.text);
        w.str(en.answer.finish_reason);
        w.i64(en.answer.completion_tokens);
        w.u64(m->freq);
        w.i64(m->expires_ms);
    }
    return write_cache_file(path, cache_file_kind::exact, w.bytes(), err);
}

cache_load_report exact_cache::load(const std::string &path) {
    clear();
    std::string payload;
    cache_load_report report = read_cache_file(path, cache_file_kind::exact, payload);
    if (report.result != cache_load_report::outcome::loaded) return report;

    byte_reader r(payload);
    uint64_t n = 0;
    r.u64(n);
    if (r.ok() && n > payload.size() / 8) r.fail("entry count " + std::to_string(n) + " cannot fit the payload");
    const int64_t now = clock_();
    for (uint64_t i = 0; r.ok() && i < n; ++i) {
        entry en;
        uint8_t det = 0;
        int64_t tokens = 0, expires = 0;
        uint64_t freq = 0;
        r.str(en.key.canonical);
        r.u8(det);
        r.str(en.answer.text);
        r.str(en.answer.finish_reason);
        r.i64(tokens);
        r.u64(freq);
        r.i64(expires);
        if (!r.ok()) break;
        if (freq == 0) {
            r.fail("entry " + std::to_string(i) + " has use count 0");
            break;
        }
        if (now >= expires) {
            report.expired += 1;
            continue;
        }
        en.key.deterministic = det != 0;
        en.key.hash = siphash128(en.key.canonical);
        en.answer.completion_tokens = static_cast<int>(tokens);
        en.bytes = entry_bytes(en.key, en.answer);
        if (find_id(en.key) != 0) {
            r.fail("entry " + std::to_string(i) + " repeats a key");
            break;
        }
        // Limits may have shrunk since the file was written: the oldest entries give way.
        while ((entries_.size() + 1 > limits_.max_entries || stats_.bytes + en.bytes > limits_.max_bytes) &&
               evict_one_for_space(now)) {}
        if (en.bytes > limits_.max_bytes || limits_.max_entries == 0) continue;
        const uint64_t id = next_id_++;
        by_hash_.emplace(en.key.hash.lo, id);
        stats_.bytes += en.bytes;
        policy_.insert(id, expires, freq);
        entries_.emplace(id, std::move(en));
        stats_.entries = entries_.size();
    }
    if (r.ok() && !r.at_end()) r.fail("bytes after the last entry");
    if (!r.ok()) {
        clear();
        set_aside_corrupt(path, r.error(), report);
        return report;
    }
    report.entries = entries_.size();
    report.message = path + ": loaded " + std::to_string(report.entries) + " entries (" +
                     std::to_string(report.expired) + " expired dropped)";
    return report;
}

} // namespace actorserve
