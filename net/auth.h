// Who may talk to the server: API keys (Authorization: Bearer, or access_token on a WebSocket
// upgrade, which browsers cannot give headers), and the rules that keep web pages of other sites
// from driving it (Origin, Host, Content-Type; docs/protocol.md, "Security model").
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "include/actorserve/errc.h"
#include "net/key_limits.h"

namespace actorserve {

// One key per line, optionally followed by its settings (net/key_limits.h): "<key> rpm=60
// priority=batch"; a key holds no blank. Blank lines and lines starting with # are skipped.
// settings (when given) gets one entry per key. False and err (naming the line) when the file
// cannot be read, holds no key, or a setting is bad.
bool load_api_keys(const std::string &path, std::vector<std::string> &keys, std::string &err,
                   std::vector<key_settings> *settings = nullptr);

struct auth_problem {
    errc code;
    std::string message;
};

// authorization: the Authorization header's value; access_token: the query parameter's (only
// taken for WebSocket upgrades). On success with keys, *which (when given) is the index of the
// key presented: the principal that owns what the request creates.
std::optional<auth_problem> check_key(const std::vector<std::string> &keys, std::string_view authorization,
                                      std::optional<std::string_view> access_token, size_t *which = nullptr);

// Host must name this server (defeats DNS rebinding): a name in `allowed` ("*": any),
// localhost or a name under .localhost, a loopback address, the bound address, or (bound to
// all interfaces) any IP literal. The port is not compared. An empty Host is refused.
std::optional<auth_problem> check_host(const std::vector<std::string> &allowed, std::string_view bound_address,
                                       std::string_view host);

// A request carrying Origin (a browser's) is served when the Origin is the server's own (its
// host and port are the Host header's) or is in `allowed` ("*": any). No Origin: not a browser,
// or a same-origin navigation; allowed. *cross (when given) is set when the Origin is allowed
// but not the server's own: the response then carries CORS headers.
std::optional<auth_problem> check_origin(const std::vector<std::string> &allowed, std::string_view origin,
                                         std::string_view host, bool *cross = nullptr);

// True when a Content-Type value is application/json (parameters such as charset allowed).
bool is_json_media_type(std::string_view content_type);

// The value of query parameter `name` in a request target ("/v1/ws?a=1&b=2"), percent-decoded.
std::optional<std::string> query_param(std::string_view target, std::string_view name);

} // namespace actorserve
