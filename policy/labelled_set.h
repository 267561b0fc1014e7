// The labelled sets of the request policy (configs/policy_kinds.jsonl, configs/guard_examples.jsonl):
// JSON Lines of {"text": ..., <label field>: ..., "split": "tune" | "held_out", "source": ...}.
#pragma once

#include <boost/json/object.hpp>

#include <functional>
#include <string>
#include <string_view>

namespace actorserve {

struct labelled_line {
    std::string text;
    std::string label;  // the label field's value
    bool tune = true;   // "split" is "tune" (or absent)
    std::string source; // "" when absent
};

// Calls add for every non-blank line, in order. False, with err naming the file and line, when
// the file cannot be read, a line is not an object with string text and label, or add refuses
// the line (it then sets why).
bool read_labelled_set(const std::string &path, std::string_view label_field,
                       const std::function<bool(labelled_line &&, std::string &why)> &add, std::string &err);

} // namespace actorserve
