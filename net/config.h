// The server's settings: every one documented, with its default, in configs/actorserve.toml.
// Read from a TOML file (load_config_file), then overridden by command-line flags.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "include/actorserve/runtime.h"
#include "net/request_log.h"
#include "policy/injection_guard.h"
#include "policy/temperature_policy.h"

namespace actorserve {

struct server_config {
    // [server]
    std::string host = "127.0.0.1";          // loopback unless told otherwise
    uint16_t port = 8080;                     // 0: any free port (see port_file)
    std::string port_file;                    // when set, the bound port is written there
    int io_threads = 2;
    int max_connections = 256;                // beyond: 429
    size_t max_message_bytes = 1 << 20;       // HTTP body or WebSocket message
    size_t max_write_queue_bytes = 1 << 20;   // unsent bytes per connection before it is closed
    int idle_timeout_s = 300;                 // an HTTP connection with no request is closed
    int sse_ping_s = 10;                      // an OpenAI stream silent this long gets a ": ping"; 0: never
    int sse_resume_grace_s = 10;              // an OpenAI stream whose client left runs on this long for a
                                              // resume, then is cancelled; 0: cancelled at once
    int header_timeout_s = 10;                // a request's headers, from their first byte
    int shutdown_grace_s = 30;                // SIGINT/SIGTERM: running requests get this long
    int watchdog_step_s = 120;                // under systemd's watchdog: a step running longer is a hang
    std::string log_format = "text";          // text, or json (one object per line, for journald and shippers)
    std::string web_dir;                      // the chat page; empty: the source tree's web/
    std::string api_keys_file;                // empty: no authentication
    // Browsers (docs/protocol.md, "Security model"). A request with an Origin header is served
    // when the Origin is the server's own (its host and port are the Host header's) or listed
    // here; "*" allows any. Host must be the bound address, localhost, a loopback or (bound to
    // all interfaces) any IP literal, or a name listed here; "*" allows any.
    std::vector<std::string> allowed_origins;
    std::vector<std::string> allowed_hosts;
    bool log_prompts = false;                 // prompt and answer text in the log
    std::string log_level = "info";
    int max_tokens_default = 256;             // the limit, max_tokens_limit, is runtime's
    // [sessions]
    int retention_s = 300;                    // events of an unfollowed request are kept this long
    int session_idle_s = 1800;                // a conversation with no request is forgotten after
    int max_sessions = 1024;
    int max_retained_requests = 1024;
    int max_sessions_per_client = 64;        // per API key, or per connection without keys
    int max_retained_per_client = 256;
    // [rag], the part the network reads: POST /v1/rag/documents bodies up to this (other
    // requests keep max_message_bytes); the rest of [rag] is runtime.rag
    size_t rag_max_body_bytes = size_t{16} << 20;
    // [policy]: the dynamic temperature (policy/temperature_policy.h)
    policy_settings policy;
    guard_settings guard;                     // [policy] guard, guard_examples, guard_threshold
    // [request_log]: one JSON line per finished or refused request (net/request_log.h)
    request_log_config request_log;
    // [model], [scheduler], [cache] and [rag]
    std::string model_name;                   // the id clients use; empty: the file name's stem
    runtime_config runtime = server_runtime_defaults();

    // The runtime API keeps its caches and retrieval off unless asked; a server has them on,
    // saved under data/cache/ and data/rag/ (relative to the working directory).
    static runtime_config server_runtime_defaults() {
        runtime_config r;
        r.cache.enabled = true;
        r.cache.dir = "data/cache";
        r.rag.enabled = true;
        r.rag.file = "data/rag/knowledge.rag";
        return r;
    }
};

// Reads `path` into cfg (keys not in the file keep their value). False, with err naming the key
// and the problem, on a missing file, a TOML syntax error, an unknown key or a bad value.
bool load_config_file(const std::string &path, server_config &cfg, std::string &err);
// The same over TOML text already read; path names it in messages.
bool load_config_text(std::string_view text, const std::string &path, server_config &cfg, std::string &err);

// Checks ranges after flags are applied; the message names the setting.
bool validate(const server_config &cfg, std::string &err);

} // namespace actorserve
