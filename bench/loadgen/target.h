// Where requests go and how they are spoken: parsed from --url and --api.
#pragma once

#include <string>

namespace loadgen {

enum class api_kind { actorserve_ws, openai };

struct target {
    api_kind api = api_kind::actorserve_ws;
    std::string host;       // "127.0.0.1"
    std::string port;       // "8080"
    std::string path;       // "/v1/ws" or "/v1/chat/completions"
    std::string api_key;    // sent as "Authorization: Bearer <key>" when non-empty
    std::string model;      // OpenAI "model" field; empty: not sent
    std::string url() const;
};

// ws://host[:port][/path] speaks our WebSocket protocol (path default /v1/ws);
// http://host[:port][/base] with api "openai" posts to <base>/v1/chat/completions, where a base
// that already ends in /v1 or /v1/chat/completions is taken as it is. api "" picks from the scheme.
// wss:// and https:// are refused (no TLS). False and `err` set on a bad URL.
bool parse_target(const std::string &url, const std::string &api, target &out, std::string &err);

} // namespace loadgen
