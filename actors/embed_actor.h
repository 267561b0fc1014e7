// The embeddings actor: an embedder (all-MiniLM-L6-v2, engine/embedder.h) on a thread of its
// own, answering POST /v1/embeddings and programs holding runtime::embeddings().
//
//   any -> embed  embed_request  => embed_reply (one unit vector per input, or an error naming
//                                   the input; overloaded when more than mailbox_limit wait)
//
// A request's texts are encoded together (embedder::embed_batch: one pass per 2,048 tokens).
#pragma once

#include <caf/all.hpp>

#include <string>
#include <vector>

#include "include/actorserve/embed_messages.h"

namespace actorserve {

// A null actor, with the reason as the last note, when the model cannot be loaded.
embed_actor spawn_embeddings(caf::actor_system &sys, const embedding_settings &s, std::vector<std::string> &notes);

} // namespace actorserve
