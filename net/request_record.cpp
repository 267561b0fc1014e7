#include "net/request_record.h"

#include <boost/json.hpp>

#include "net/policy_json.h"

#include <cmath>
#include <ctime>

namespace actorserve {

namespace json = boost::json;

namespace {

// 2026-12-07T11:52:03.125Z
std::string iso_utc(std::chrono::system_clock::time_point t) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
    const std::time_t secs = static_cast<std::time_t>(ms / 1000);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char buf[40];
    const size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    return std::string(buf, n) + "." + std::to_string(1000 + ms % 1000).substr(1) + "Z";
}

json::object common(const request_record &r) {
    json::object o;
    o["time"] = iso_utc(std::chrono::system_clock::now());
    o["request_id"] = r.request_id;
    if (!r.session_id.empty()) o["session_id"] = r.session_id;
    if (r.key.empty()) o["key"] = nullptr;
    else o["key"] = r.key;
    o["api"] = r.api;
    o["priority"] = name(r.priority);
    if (r.choices != 1) o["n"] = r.choices;
    o["max_tokens"] = r.max_tokens;
    if (r.temperature) o["temperature"] = *r.temperature;
    else o["temperature"] = nullptr;
    return o;
}

} // namespace

std::string render_request_record(const request_record &r, const stream_event &end, bool with_text) {
    json::object o = common(r);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::system_clock::now() - r.started).count();
    if (end.kind == stream_event::done) {
        o["outcome"] = name(end.finish_reason);
        o["prompt_tokens"] = end.usage.prompt_tokens;
        o["cached_tokens"] = end.usage.cached_tokens;
        o["completion_tokens"] = end.usage.completion_tokens;
        o["ttft_ms"] = std::round(end.ttft_ms * 10) / 10;
        o["total_ms"] = std::round(end.total_ms * 10) / 10;
        if (end.cached.empty()) o["cache"] = nullptr;
        else o["cache"] = end.cached;
        if (r.rag) o["rag_sources"] = end.sources.size();
        if (!end.policy.kind.empty())
            o["policy"] = *render_policy(end);
        if (auto g = render_guard(end, true)) o["guard"] = std::move(*g);
        if (with_text) o["answer"] = end.text;
    } else {
        o["outcome"] = "error";
        o["error"] = {{"code", name(end.code)}, {"message", end.message}};
        o["total_ms"] = std::round(ms * 10) / 10;
        if (auto g = render_guard(end, true)) o["guard"] = std::move(*g);
    }
    if (with_text && r.messages) {
        json::array a;
        for (const chat_message &m : *r.messages) a.push_back({{"role", m.role}, {"content", m.content}});
        o["messages"] = std::move(a);
    }
    return json::serialize(o);
}

std::string render_refused_record(const request_record &r, std::string_view limit, std::string_view message,
                                  int retry_after_ms) {
    json::object o = common(r);
    o["outcome"] = "refused";
    o["error"] = {{"code", "rate_limited"}, {"limit", limit}, {"message", message}, {"retry_after_ms", retry_after_ms}};
    return json::serialize(o);
}

} // namespace actorserve
