// libFuzzer target: the JSON-schema compiler and its matcher (engine/json_grammar.h). The input
// is a schema, then a 0 byte, then a candidate document. The compiler refuses with a message
// naming the keyword, or gives a grammar; the candidate is fed to its matcher byte by byte, and
// every prefix the matcher can finish on must be valid JSON (simdjson parses it), which is the
// promise structured output makes to a client.
#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "engine/json_grammar.h"

namespace {

[[noreturn]] void die(const std::string &what) {
    std::fprintf(stderr, "fuzz_json_schema: %s\n", what.c_str());
    std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static simdjson::dom::parser parser;
    const std::string_view in(reinterpret_cast<const char *>(data), size);
    const size_t zero = in.find('\0');
    const std::string_view schema = in.substr(0, zero);
    const std::string_view doc = zero == std::string_view::npos ? std::string_view{} : in.substr(zero + 1);
    const actorserve::schema_result r = actorserve::compile_json_schema(schema);
    if (!r.grammar) {
        if (r.error.empty()) die("refused a schema without a message");
        return 0;
    }
    actorserve::json_matcher m(*r.grammar);
    std::string fed;
    for (char c : doc) {
        if (!m.feed(static_cast<uint8_t>(c))) break;
        fed += c;
        if (m.can_finish()) {
            const simdjson::padded_string padded(fed);
            simdjson::dom::element e;
            const simdjson::error_code err = parser.parse(padded).get(e);
            // A number outside double's range, such as 2.5e323, is JSON by the grammar
            // (RFC 8259 leaves the range to implementations) and the matcher follows the grammar;
            // simdjson refuses it by range, which is no finding.
            if (err != simdjson::SUCCESS && err != simdjson::NUMBER_ERROR)
                die("the matcher finished on invalid JSON: " + fed);
        }
        if (m.min_close() < 0) die("min_close < 0");
    }
    return 0;
}
