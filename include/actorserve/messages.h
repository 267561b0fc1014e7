// Messages between a client actor and a session: the programmatic chat API.
//
//   client -> session  chat_request               start a turn (one request at a time)
//   client -> session  (cancel_atom, id)          end it early
//   session -> client  chat_delta ...             streamed text, in order, valid UTF-8
//   session -> client  chat_done | chat_error     exactly one of them ends every request
//
// note: these types travel only between actors of one process (CAF messages are never
// serialized here), so they are allowed as unsafe message types rather than given inspectors.
#pragma once

#include <caf/all.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "include/actorserve/chat_message.h"
#include "include/actorserve/errc.h"
#include "include/actorserve/finish_reason.h"
#include "include/actorserve/priority.h"
#include "include/actorserve/retrieval.h"
#include "include/actorserve/sampling.h"

namespace actorserve {

struct json_grammar; // engine/json_grammar.h: structured output

using cancel_atom = caf::atom_constant<caf::atom("cancel")>;
using get_atom = caf::atom_constant<caf::atom("get")>;

// Retrieval for one chat request (docs/rag.md): passages from the runtime's knowledge base are
// numbered into the prompt and the answer is asked to cite them.
struct rag_options {
    size_t top_k = 0;                     // 0: the runtime's default
    search_filters filters;
    retrieval_mode mode = retrieval_mode::hybrid;
    size_t budget_tokens = 0;             // 0: the runtime's default
};

// A passage the prompt gave the model, as the answer may cite it: "[number]".
struct rag_source {
    int number = 0;                       // 1-based, as numbered in the prompt
    uint64_t chunk_id = 0;
    std::string doc_id, source, title, heading;
    float score = 0.0f;
    bool flagged = false;                 // its text read as instructions and was quoted as data
};

// A sampled token's log-probability (chat_request::logprobs): bytes are the token's text as the
// tokenizer decodes it, which may be part of a UTF-8 character.
struct token_alternative {
    std::string bytes;
    float logprob = 0.0f;
};
struct token_logprob {
    std::string bytes;
    float logprob = 0.0f;
    std::vector<token_alternative> top;   // the most likely tokens at that step, most likely first
};

struct chat_request {
    int64_t id = 0;                       // the client's; echoed in every event of this request
    std::vector<chat_message> messages;   // appended to the session's turns (usually one user turn)
    sampling_params sampling;
    int max_tokens = 256;
    std::vector<std::string> stop;        // stop strings; the text before the first is kept
    bool raw = false;                     // messages[0].content is the whole prompt, no chat
                                          // template, and it does not become a turn
    std::optional<bool> cache = std::nullopt; // the runtime's caches (docs/cache.md): unset, only a
                                          // greedy request may be answered from them and stored;
                                          // false, neither; true, a sampled one too (opt-in)
    std::optional<rag_options> rag = std::nullopt; // ground the answer in retrieved passages
    bool cache_debug = false;             // done says which cache scope was asked and, on a
                                          // semantic hit, the question the answer was cached for
                                          // (when the server allows it: [cache] debug_hits)
    int logprobs = -1;                    // 0..20: every delta carries the logprobs of its tokens
                                          // with this many alternatives, done all of them
                                          // (never answered from the caches); -1: none
    std::shared_ptr<const json_grammar> grammar = nullptr; // structured output: the answer is a JSON
                                          // document of this grammar (compile_json_schema();
                                          // never answered from the caches)
    priority_class priority = priority_class::standard; // the scheduler's admission class (an API
                                          // key's setting on the server)
    bool temperature_set = false;         // the client gave temperature / top_p (the server's
    bool top_p_set = false;               // dynamic temperature then keeps them: docs/policy.md)
};

struct chat_delta {
    int64_t id = 0;
    std::string text;                     // non-empty
    std::vector<token_logprob> logprobs;  // with chat_request::logprobs: the tokens that arrived
                                          // since the last delta (their bytes join to text, but
                                          // for a character split across deltas)
};

struct chat_usage {
    int prompt_tokens = 0;
    int cached_tokens = 0;                // of prompt_tokens, served from the prefix cache
    int completion_tokens = 0;
};

struct chat_done {
    int64_t id = 0;
    actorserve::finish_reason finish_reason = actorserve::finish_reason::stop;
    std::string text;                     // the whole answer (the deltas joined)
    chat_usage usage;
    double ttft_ms = 0.0;                 // request to first delta
    std::string cached;                   // "exact" or "semantic" when the caches answered
    float similarity = 0.0f;              // with cached: the question's cosine to the cached
                                          // one (1 for exact)
    std::vector<rag_source> sources;      // with rag: the passages given, in prompt order
    std::vector<token_logprob> logprobs;  // with chat_request::logprobs: every token of text
    // With cache_debug: the semantic scope's id (what [cache] semantic_off names), the question a
    // semantic hit's answer was cached for, or why the server gave neither.
    std::string cache_scope, cached_question, cache_debug_refused;
};

struct chat_error {
    int64_t id = 0;
    errc code = errc::internal;
    std::string message;                  // names the problem: "prompt has 3000 tokens, ..."
    int retry_after_ms = 0;               // with errc::overloaded: when trying again makes sense
};

// What a client may send a session (runtime::open_session()), and what it must handle in return.
using chat_session = caf::typed_actor<caf::reacts_to<chat_request>, caf::reacts_to<cancel_atom, int64_t>>;
using chat_listener = caf::typed_actor<caf::reacts_to<chat_delta>, caf::reacts_to<chat_done>, caf::reacts_to<chat_error>>;

} // namespace actorserve

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorserve::chat_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorserve::chat_delta)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorserve::chat_done)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(actorserve::chat_error)
