#include "engine/stop_filter.h"

#include <algorithm>

namespace actorserve {

stop_filter::stop_filter(std::vector<std::string> stops) : stops_(std::move(stops)) {
    std::erase_if(stops_, [](const std::string &s) { return s.empty(); });
}

stop_filter::result stop_filter::push(std::string_view text) {
    if (stopped_) return {"", true};
    pending_.append(text);

    // note: everything emitted before held no complete stop and no proper prefix of one at
    // its end, so a match can only start inside pending_.
    size_t first = std::string::npos;
    for (const std::string &s : stops_) first = std::min(first, pending_.find(s));
    if (first != std::string::npos) {
        stopped_ = true;
        std::string emit = pending_.substr(0, first);
        pending_.clear();
        return {std::move(emit), true};
    }

    // Longest suffix of pending_ that is a proper prefix of some stop string.
    size_t hold = 0;
    for (const std::string &s : stops_) {
        const size_t max_len = std::min(s.size() - 1, pending_.size());
        for (size_t len = max_len; len > hold; --len)
            if (std::string_view(pending_).substr(pending_.size() - len) == std::string_view(s).substr(0, len)) {
                hold = len;
                break;
            }
    }
    std::string emit = pending_.substr(0, pending_.size() - hold);
    pending_.erase(0, pending_.size() - hold);
    return {std::move(emit), false};
}

std::string stop_filter::flush() {
    std::string out = std::move(pending_);
    pending_.clear();
    return out;
}

} // namespace actorserve
