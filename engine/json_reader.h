// A small JSON reader for the engine's few JSON inputs: a safetensors header and a model's
// config.json. It builds a plain tree; every read is bounds-checked and nesting is capped, so
// untrusted bytes give an error message, never a crash.
//
// note: why not simdjson: the engine links only PCRE2 and Threads and depends on nothing
// above it; these inputs are a few kilobytes read once at load, where a tree of std::string
// and std::vector costs nothing worth a dependency.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace actorserve {

struct json_value {
    enum class kind : uint8_t { null, boolean, number, string, array, object };
    kind type = kind::null;
    bool boolean = false;
    double number = 0.0;
    std::string string;                                      // UTF-8, escapes resolved
    std::vector<json_value> items;                           // array elements
    std::vector<std::pair<std::string, json_value>> members; // object members, in file order

    // Defined in json_reader.cpp, where json_value is complete: std::pair of an incomplete type
    // may not be destroyed inline (clang with libstdc++ instantiates it here and refuses).
    json_value();
    json_value(const json_value &);
    json_value(json_value &&) noexcept;
    json_value &operator=(const json_value &);
    json_value &operator=(json_value &&) noexcept;
    ~json_value();

    // The first member named key, or nullptr (also when this is not an object).
    const json_value *find(std::string_view key) const;
    // The value as an integer when it is a number with no fraction in [-2^53, 2^53].
    std::optional<int64_t> as_int() const;
};

const char *json_kind_name(json_value::kind k); // "null", "number", ...

// Parses text as exactly one JSON value (RFC 8259; surrounding whitespace allowed).
// On failure returns false and sets err to "<problem> at byte <offset>".
bool parse_json(std::string_view text, json_value &out, std::string &err);

} // namespace actorserve
