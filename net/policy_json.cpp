#include "net/policy_json.h"

#include <cmath>

namespace actorserve {

namespace {

// Three decimals: 0.2f prints 0.2, not 0.20000000298023224.
double rounded(float v) { return std::round(double(v) * 1000) / 1000; }

} // namespace

std::optional<boost::json::object> render_policy(const stream_event &done) {
    if (done.policy.kind.empty()) return std::nullopt;
    boost::json::object o{{"kind", done.policy.kind},
                          {"temperature", rounded(done.policy.temperature)},
                          {"top_p", rounded(done.policy.top_p)}};
    if (done.policy.kind != "unclassified") o["similarity"] = rounded(done.policy.similarity);
    return o;
}

} // namespace actorserve
