// Who may talk to the server: API keys (Authorization: Bearer, or access_token on a WebSocket
// upgrade, which browsers cannot give headers) and the WebSocket Origin allow-list.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "include/actorserve/errc.h"

namespace actorserve {

// One key per line; blank lines and lines starting with # are skipped. False and err when the
// file cannot be read or holds no key.
bool load_api_keys(const std::string &path, std::vector<std::string> &keys, std::string &err);

struct auth_problem {
    errc code;
    std::string message;
};

// authorization: the Authorization header's value; access_token: the query parameter's (only
// taken for WebSocket upgrades).
std::optional<auth_problem> check_key(const std::vector<std::string> &keys, std::string_view authorization,
                                      std::optional<std::string_view> access_token);
std::optional<auth_problem> check_origin(const std::vector<std::string> &allowed, std::string_view origin);

// The value of query parameter `name` in a request target ("/v1/ws?a=1&b=2"), percent-decoded.
std::optional<std::string> query_param(std::string_view target, std::string_view name);

} // namespace actorserve
