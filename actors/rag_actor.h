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

#include "actors/interfaces.h"
#include "include/actorserve/rag_messages.h"
#include "include/actorserve/rag_settings.h"

namespace actorserve {

// Built by the runtime: loads the knowledge base file and the embedding model (what it did goes
// to notes) and spawns the RAG actor and its ingest worker. A null actor, with the reason as the
// last note, when the embedding model cannot be loaded or does not match settings.kb.dim.
rag_actor spawn_rag(caf::actor_system &sys, const rag_runtime_settings &s, metrics_actor metrics,
                    std::vector<std::string> &notes);

} // namespace actorserve
