// Unguessable identifiers: request and session ids and resume tokens are capabilities (showing
// one is what resume, cancel and a session's reuse ask for), so they come from the kernel's
// CSPRNG, never from a seeded generator whose state the ids it has shown could rebuild.
#pragma once

#include <string>
#include <string_view>

namespace actorserve {

// prefix followed by 128 bits from getrandom(2) as 32 lower-case hex digits. Throws
// std::system_error when the kernel refuses (it does not once booted).
std::string random_id(std::string_view prefix);

// Equal, in time that depends on the lengths only: for comparing a presented secret (an API
// key, a resume token) with the one held, so that it cannot be guessed byte by byte.
bool same_secret(std::string_view a, std::string_view b);

} // namespace actorserve
