#include "policy/temperature_policy.h"

#include <cmath>

#include "policy/labelled_set.h"

namespace actorserve {

bool load_kind_examples(const std::string &path, std::vector<kind_example> &out, std::string &err) {
    return read_labelled_set(
        path, "kind",
        [&](labelled_line &&l, std::string &why) {
            kind_example e;
            e.kind = -1;
            for (int k = 0; k < kRequestKinds; ++k)
                if (l.label == kRequestKindNames[k]) e.kind = k;
            if (e.kind < 0) {
                why = "kind must be factual, code, creative or chat";
                return false;
            }
            e.text = std::move(l.text);
            e.tune = l.tune;
            out.push_back(std::move(e));
            return true;
        },
        err);
}

std::shared_ptr<temperature_policy> temperature_policy::build(const policy_settings &s,
                                                              const std::vector<kind_example> &examples,
                                                              const std::vector<std::vector<float>> &vectors,
                                                              std::string &err) {
    if (vectors.size() != examples.size() || vectors.empty()) {
        err = "the policy examples and their vectors differ in number";
        return nullptr;
    }
    const size_t dim = vectors[0].size();
    auto p = std::shared_ptr<temperature_policy>(new temperature_policy());
    p->cfg_ = s;
    p->centroids_.assign(kRequestKinds, std::vector<float>(dim, 0.0f));
    std::array<int, kRequestKinds> n{};
    for (size_t i = 0; i < examples.size(); ++i) {
        if (!examples[i].tune) continue;
        if (vectors[i].size() != dim) {
            err = "policy example \"" + examples[i].text.substr(0, 40) + "\" has no vector";
            return nullptr;
        }
        std::vector<float> &c = p->centroids_[examples[i].kind];
        for (size_t d = 0; d < dim; ++d) c[d] += vectors[i][d];
        ++n[examples[i].kind];
    }
    for (int k = 0; k < kRequestKinds; ++k) {
        if (n[k] == 0) {
            err = "the policy examples have no tune example of kind " + std::string(kRequestKindNames[k]);
            return nullptr;
        }
        double norm = 0;
        for (float x : p->centroids_[k]) norm += double(x) * x;
        const float inv = static_cast<float>(1.0 / std::sqrt(norm));
        for (float &x : p->centroids_[k]) x *= inv;
    }
    return p;
}

temperature_policy::choice temperature_policy::classify(const std::vector<float> &v) const {
    choice best;
    best.similarity = -2.0f;
    for (int k = 0; k < kRequestKinds; ++k) {
        const std::vector<float> &c = centroids_[k];
        float dot = 0;
        for (size_t d = 0; d < c.size() && d < v.size(); ++d) dot += c[d] * v[d];
        if (dot > best.similarity) {
            best.similarity = dot;
            best.kind = k;
        }
    }
    best.temperature = cfg_.temperature[best.kind];
    best.top_p = cfg_.top_p[best.kind];
    return best;
}

} // namespace actorserve
