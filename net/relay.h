// The relay: one small actor per request, between a session actor and the request's stream. It
// sends the chat_request to the session (so the session streams its answer back to it), turns
// every chat_delta / chat_done / chat_error into a stream_event, and ends with the request.
//
//   anyone -> relay   (cancel_atom)      ask the session to end the request early
#pragma once

#include <caf/all.hpp>

#include <memory>
#include <vector>

#include "include/actorserve/embed_messages.h"
#include "include/actorserve/messages.h"
#include "net/request_stream.h"
#include "policy/injection_guard.h"
#include "policy/temperature_policy.h"

namespace actorserve {

// sessions: one per choice (OpenAI's n); choice i asks with seed + i. With several, each
// choice's deltas are token events of that choice, each choice's end a token event with
// choice_end, and done (choice 0's, usage of all) follows the last; an error of one choice
// cancels the others and ends the request.
// own_session: the sessions exist for this request alone and end with it.
// tokens: append a token event per delta; false (stream: false) keeps only start and the end,
// so event ids stay consecutive and the stream holds the text once.
// policy (with embed): a request that set no temperature is sent once its kind is known, with
// the kind's temperature (and top-p, unless it set one); the done event says what was chosen.
// guard: the prompt-injection guard checks its user messages first (and with "block" may end
// it with a prompt_injection error).
struct relay_policy {
    std::shared_ptr<const temperature_policy> policy;
    std::shared_ptr<const injection_guard> guard;
    embed_actor embed;
};
caf::actor spawn_relay(caf::actor_system &sys, std::vector<chat_session> sessions, chat_request req,
                       std::shared_ptr<request_stream> stream, bool own_session, bool tokens, relay_policy policy = {});

} // namespace actorserve
