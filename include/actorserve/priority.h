// Priority classes (docs/policy.md, "Per-key limits and priorities"): the scheduler admits a
// waiting request of a higher class before any of a lower one, and under memory or slot
// pressure preempts a lower class's running sequence for it. An API key's settings give its
// requests their class; programs using the actor API set chat_request::priority.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace actorserve {

enum class priority_class : uint8_t {
    interactive = 0, // a person waiting on the first token
    standard = 1,    // the default
    batch = 2,       // offline work that may wait and be preempted
};

inline constexpr int kPriorityClasses = 3;

constexpr std::string_view name(priority_class p) {
    switch (p) {
    case priority_class::interactive: return "interactive";
    case priority_class::standard: return "standard";
    case priority_class::batch: return "batch";
    }
    return "standard";
}

constexpr std::optional<priority_class> parse_priority(std::string_view s) {
    if (s == "interactive") return priority_class::interactive;
    if (s == "standard") return priority_class::standard;
    if (s == "batch") return priority_class::batch;
    return std::nullopt;
}

} // namespace actorserve
