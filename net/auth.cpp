#include "net/auth.h"

#include <boost/beast/core/string.hpp>

#include <fstream>

namespace actorserve {

namespace {

// Compares in time that depends on the lengths only, so that a key cannot be guessed byte by
// byte from response times.
bool same_key(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    unsigned char diff = 0;
    for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
    return diff == 0;
}

int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

} // namespace

bool load_api_keys(const std::string &path, std::vector<std::string> &keys, std::string &err) {
    std::ifstream in(path);
    if (!in) {
        err = "cannot read the API keys file " + path;
        return false;
    }
    std::string line;
    while (std::getline(in, line)) {
        while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
        size_t start = line.find_first_not_of(" \t");
        if (start == std::string::npos || line[start] == '#') continue;
        keys.push_back(line.substr(start));
    }
    if (keys.empty()) {
        err = "the API keys file " + path + " holds no key";
        return false;
    }
    return true;
}

std::optional<auth_problem> check_key(const std::vector<std::string> &keys, std::string_view authorization,
                                      std::optional<std::string_view> access_token) {
    if (keys.empty()) return std::nullopt;
    std::string_view given;
    if (!authorization.empty()) {
        // The scheme is case-insensitive and followed by one or more spaces (RFC 9110, 11.1 and 11.4).
        const size_t sp = authorization.find(' ');
        if (sp == std::string_view::npos || !boost::beast::iequals(authorization.substr(0, sp), "bearer"))
            return auth_problem{errc::unauthorized, "the Authorization header must be 'Bearer <key>'"};
        const size_t key_at = authorization.find_first_not_of(' ', sp);
        if (key_at != std::string_view::npos) given = authorization.substr(key_at);
    } else if (access_token) {
        given = *access_token;
    } else {
        return auth_problem{errc::unauthorized, "an API key is required: send 'Authorization: Bearer <key>'"};
    }
    bool ok = false;
    for (const std::string &k : keys) ok |= same_key(k, given);
    if (!ok) return auth_problem{errc::unauthorized, "the API key is not valid"};
    return std::nullopt;
}

std::optional<auth_problem> check_origin(const std::vector<std::string> &allowed, std::string_view origin) {
    if (allowed.empty() || origin.empty()) return std::nullopt; // no list, or not a browser
    for (const std::string &a : allowed)
        if (a == origin) return std::nullopt;
    return auth_problem{errc::forbidden, "origin '" + std::string(origin.substr(0, 128)) + "' is not allowed"};
}

std::optional<std::string> query_param(std::string_view target, std::string_view name) {
    size_t q = target.find('?');
    if (q == std::string_view::npos) return std::nullopt;
    std::string_view rest = target.substr(q + 1);
    while (!rest.empty()) {
        size_t amp = rest.find('&');
        std::string_view pair = rest.substr(0, amp);
        rest = amp == std::string_view::npos ? std::string_view{} : rest.substr(amp + 1);
        size_t eq = pair.find('=');
        if (pair.substr(0, eq) != name) continue;
        std::string_view raw = eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1);
        std::string out;
        for (size_t i = 0; i < raw.size(); ++i) {
            if (raw[i] == '%' && i + 2 < raw.size() && hex(raw[i + 1]) >= 0 && hex(raw[i + 2]) >= 0) {
                out.push_back(static_cast<char>(hex(raw[i + 1]) * 16 + hex(raw[i + 2])));
                i += 2;
            } else if (raw[i] == '+') {
                out.push_back(' ');
            } else {
                out.push_back(raw[i]);
            }
        }
        return out;
    }
    return std::nullopt;
}

} // namespace actorserve
