// The RAG actor: the knowledge base (rag/knowledge_base.h) and an embedder on a thread of its
// own, answering searches for sessions and for the HTTP API, and taking documents in.
//
//   any   -> rag  rag_search                      => rag_search_reply (passages, or an error)
//   any   -> rag  rag_ingest                      => rag_ingest_reply (one result per document)
//   any   -> rag  (delete_atom, doc_id)           => bool (false: no such document)
//   any   -> rag  (get_atom)                      => rag_status (documents, chunks, counters)
//   rag   -> metrics rag_metrics                  after every search and change
//
// Ingestion: documents are checked and compared by content hash first (unchanged ones cost
// nothing); new and changed ones are chunked and embedded by the ingest worker, a second actor
// with its own thread and embedder, so searches are not held up behind a long ingest; the
// worker hands prepared documents back and the RAG actor commits them and saves the file
// (atomically: an interrupted ingest leaves the previous file whole).
//
// Backpressure: a mailbox limit on each actor; over it a request is answered at once with
// errc::overloaded, never queued without bound and never dropped silently.
#pragma once

#include <caf/all.hpp>

#include <string>
#include <vector>

#include "actors/rag_settings.h"
#include "include/actorserve/errc.h"
#include "rag/knowledge_base.h"

#include "actors/protocol.h" // metrics_actor

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
    std::vector<knowledge_base::doc_info> documents;
};

// The error a (delete_atom, doc_id) request is answered with when it is refused (overloaded) or
// the actor stops first: category "actorserve", code = the errc. A dead actor's requests fail
// with CAF's own errors (sec::request_receiver_down) instead.
inline caf::error rag_error(errc e) { return caf::error(static_cast<uint8_t>(e), caf::atom("actorserve")); }

// Built by the runtime: loads the knowledge base file and the embedding model (what it did goes
// to notes) and spawns the RAG actor and its ingest worker. A null actor, with the reason as the
// last note, when the embedding model cannot be loaded or does not match settings.kb.dim.
caf::actor spawn_rag(caf::actor_system &sys, const rag_runtime_settings &s, metrics_actor metrics,
                     std::vector<std::string> &notes);

} // namespace actorserve

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorserve::rag_search)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorserve::rag_search_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorserve::rag_ingest)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorserve::rag_ingest_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorserve::rag_status)
