// The RAG actor's messages and its typed interface, rag_actor: what runtime::rag() hands a
// program (include/actorserve/runtime.h) and what the server's retrieval API asks
// (actors/rag_actor.h has the protocol). The types they carry are in
// include/actorserve/retrieval.h.
#pragma once

#include <caf/all.hpp>

#include <cstddef>
#include <string>
#include <vector>

#include "include/actorserve/errc.h"
#include "include/actorserve/messages.h" // get_atom
#include "include/actorserve/retrieval.h"

namespace actorserve {

using delete_atom = caf::atom_constant<caf::atom("delete")>;

struct rag_search {
    search_request req;
};

struct rag_search_reply {
    bool ok = false;
    errc code = errc::internal;            // when !ok
    std::string error;
    std::vector<passage> passages;
    double elapsed_ms = 0.0;
};

struct rag_ingest {
    std::vector<document_input> documents;
};

struct rag_ingest_result {
    std::string doc_id;
    std::string status;                    // "added", "replaced", "unchanged", "rejected"
    size_t chunks = 0;                     // chunks of the document now stored
    std::string error;                     // with rejected: names the problem
};

struct rag_ingest_reply {
    bool ok = false;                       // false: the whole request was refused (overloaded, too many)
    errc code = errc::internal;
    std::string error;                     // with ok: set when the changes were not saved to the file
    std::vector<rag_ingest_result> results;
};

struct rag_status {
    kb_stats stats;
    std::vector<document_info> documents;
};

// The error a (delete_atom, doc_id) request is answered with when it is refused (overloaded) or
// the actor stops first: category "actorserve", code = the errc. A dead actor's requests fail
// with CAF's own errors (sec::request_receiver_down) instead.
inline caf::error rag_error(errc e) { return caf::error(static_cast<uint8_t>(e), caf::atom("actorserve")); }

// The RAG actor (null when retrieval is off).
using rag_actor = caf::typed_actor<caf::replies_to<rag_search>::with<rag_search_reply>,
                                   caf::replies_to<rag_ingest>::with<rag_ingest_reply>,
                                   caf::replies_to<delete_atom, std::string>::with<bool>,
                                   caf::replies_to<get_atom>::with<rag_status>>;

} // namespace actorserve

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorserve::rag_search)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorserve::rag_search_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorserve::rag_ingest)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorserve::rag_ingest_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorserve::rag_status)
