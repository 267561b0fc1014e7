// One turn of a conversation, as a client writes it and the chat template renders it
// (engine/chat_template.h). Standard library only, like include/actorserve/sampling.h.
#pragma once

#include <string>

namespace actorserve {

struct chat_message {
    std::string role, content; // role: "system", "user" or "assistant"
};

} // namespace actorserve
