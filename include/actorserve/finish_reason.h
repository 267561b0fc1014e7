// Why an answer ended: one enum from the scheduler to the client. Strings appear only at the
// edges (a JSON event, the cache file), through name() and parse_finish_reason().
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace actorserve {

enum class finish_reason : uint8_t {
    stop,       // an end-of-generation token or a stop string
    length,     // max_tokens generated
    context,    // the context filled up
    cancelled,  // the client or its session ended it
};

// As the WebSocket protocol and the C++ API's logs spell it.
constexpr std::string_view name(finish_reason f) {
    switch (f) {
    case finish_reason::stop: return "stop";
    case finish_reason::length: return "length";
    case finish_reason::context: return "context";
    case finish_reason::cancelled: return "cancelled";
    }
    return "stop";
}

// In OpenAI's words: the context filling up is a length limit too.
constexpr std::string_view openai_name(finish_reason f) {
    return f == finish_reason::context ? "length" : name(f);
}

constexpr std::optional<finish_reason> parse_finish_reason(std::string_view s) {
    for (finish_reason f : {finish_reason::stop, finish_reason::length, finish_reason::context, finish_reason::cancelled})
        if (name(f) == s) return f;
    return std::nullopt;
}

} // namespace actorserve
