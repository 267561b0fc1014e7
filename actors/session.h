// A session: one conversation. It owns the turns so far and the request in flight; it renders
// the conversation with the model's chat template, submits it to the scheduler, and turns the
// token stream into text for its client (UTF-8 whole characters, stop strings honoured).
//
//   client -> session: chat_request, (cancel_atom, id)        see include/actorserve/messages.h
//   scheduler -> session: gen_event
//   session -> rag: rag_search                               => rag_search_reply
//
// One request at a time: another chat_request while one runs gets errc::busy. The prompt of
// every turn is the whole conversation; the scheduler's prefix cache makes the earlier turns
// free. A client that terminates cancels its request; the session ends with its scheduler.
//
// With caches (session_config::cache), a cacheable request asks the cache actor first: a hit is
// streamed to the client from the cached text, in word-sized deltas, and a miss is submitted
// with the question's embedding kept, so that its answer can be stored when it completes.
//
// With retrieval (chat_request.rag, session_config::rag), the last user message is first sent to
// the RAG actor as a search; the passages found are fenced into the prompt (rag/prompt.h): the
// instructions to cite them appended to the system message, the passages before the question.
// The conversation keeps the user's message as asked, without the passages, and chat_done lists
// the passages as sources. Such a request never uses the answer caches: its answer depends on
// the knowledge base, which changes.
#pragma once

#include <caf/all.hpp>

#include <memory>

#include "engine/chat_template.h"
#include "engine/token_mask.h"
#include "engine/tokenizer.h"
#include "include/actorserve/request_check.h"

#include "actors/interfaces.h"

namespace actorserve {

struct session_config {
    std::shared_ptr<const tokenizer> tok;
    std::shared_ptr<const chat_template> tmpl;
    int n_ctx = 2048;            // the scheduler's; a longer prompt is refused here, by name
    request_limits limits;       // what check_request allows
    cache_actor cache;           // the answer caches (actors/cache_actor.h); null: none
    rag_actor rag;               // retrieval (actors/rag_actor.h); null: chat_request.rag is refused
    size_t rag_top_k = 4;        // passages asked for when the request leaves top_k at 0
    size_t rag_budget_tokens = 1024; // model tokens of passages, when the request leaves it at 0
    int retry_after_ms = 1000;   // the hint given with an overloaded knowledge base
    std::shared_ptr<const token_vocab> vocab; // structured output's token classes (built once per model)
};

session_actor spawn_session(caf::actor_system &sys, const session_config &cfg, submit_target scheduler);

} // namespace actorserve
