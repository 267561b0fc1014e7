#include "net/cache_debug.h"

namespace actorserve {

std::optional<boost::json::object> render_cache_debug(const stream_event &done) {
    boost::json::object o;
    if (!done.cache_debug_refused.empty()) {
        o["refused"] = done.cache_debug_refused;
        return o;
    }
    if (done.cache_scope.empty()) return std::nullopt;
    o["scope"] = done.cache_scope;
    if (!done.cached_question.empty()) o["cached_question"] = done.cached_question;
    return o;
}

} // namespace actorserve
