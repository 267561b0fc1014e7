// Sentence embeddings as a service: the embeddings actor's settings, messages and typed
// interface, embed_actor, which runtime::embeddings() hands out and POST /v1/embeddings asks
// (actors/embed_actor.h has the protocol).
#pragma once

#include <caf/all.hpp>

#include <cstddef>
#include <string>
#include <vector>

#include "include/actorserve/errc.h"

namespace actorserve {

struct embedding_settings {
    bool enabled = false;                 // off, or a model that does not load: /v1/embeddings is 404
    std::string model_dir = "models/all-MiniLM-L6-v2";
    std::string model_id = "all-MiniLM-L6-v2"; // what a request's "model" must name
    size_t max_inputs = 256;              // texts per request
    size_t mailbox_limit = 64;            // requests waiting; one more is `overloaded`
    int threads = 1;                      // the embedder's threads, its actor's included
};

// Embeds each text; vectors[i] is inputs[i]'s, unit length.
struct embed_request {
    std::vector<std::string> inputs;
    int dimensions = 0;                   // 0: the model's; another than the model's is refused
};

struct embed_reply {
    bool ok = false;
    errc code = errc::internal;           // when !ok: invalid_request (the field named), overloaded
    std::string error;
    std::string param;                    // with invalid_request: "input[2]", "dimensions"
    std::vector<std::vector<float>> vectors;
    size_t tokens = 0;                    // word pieces the model read, [CLS] and [SEP] included
};

// The embeddings actor (null when embeddings are off).
using embed_actor = caf::typed_actor<caf::replies_to<embed_request>::with<embed_reply>>;

} // namespace actorserve

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorserve::embed_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorserve::embed_reply)
