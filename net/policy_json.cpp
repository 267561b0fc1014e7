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

std::optional<boost::json::object> render_guard(const stream_event &done, bool always) {
    const auto &g = done.guard;
    if (!g.checked || (!g.flagged && !always)) return std::nullopt;
    boost::json::array reasons;
    for (const std::string &r : g.reasons) reasons.emplace_back(r);
    return boost::json::object{{"flagged", g.flagged}, {"score", rounded(g.score)}, {"reasons", std::move(reasons)}};
}

} // namespace actorserve
