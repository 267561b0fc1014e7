#include "net/auth.h"

#include <boost/asio/ip/address.hpp>
#include <boost/beast/core/string.hpp>

#include <algorithm>
#include <fstream>

#include "net/random_id.h"

namespace actorserve {

namespace {

int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

} // namespace

bool load_api_keys(const std::string &path, std::vector<std::string> &keys, std::string &err,
                   std::vector<key_settings> *settings) {
    std::ifstream in(path);
    if (!in) {
        err = "cannot read the API keys file " + path;
        return false;
    }
    std::string line;
    int line_no = 0;
    while (std::getline(in, line)) {
        ++line_no;
        while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
        size_t start = line.find_first_not_of(" \t");
        if (start == std::string::npos || line[start] == '#') continue;
        const size_t end = std::min(line.find_first_of(" \t", start), line.size());
        key_settings ks;
        ks.id = "key:" + std::to_string(keys.size());
        std::string why;
        if (!parse_key_settings(std::string_view(line).substr(end), ks, why)) {
            err = path + ":" + std::to_string(line_no) + ": " + why; // never the key itself
            return false;
        }
        keys.push_back(line.substr(start, end - start));
        if (settings) settings->push_back(std::move(ks));
    }
    if (keys.empty()) {
        err = "the API keys file " + path + " holds no key";
        return false;
    }
    return true;
}

std::optional<auth_problem> check_key(const std::vector<std::string> &keys, std::string_view authorization,
                                      std::optional<std::string_view> access_token, size_t *which) {
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
    // Every key is compared, so that the time taken does not tell which one matched.
    size_t found = keys.size();
    for (size_t i = keys.size(); i-- > 0;)
        if (same_secret(keys[i], given)) found = i;
    if (found == keys.size()) return auth_problem{errc::unauthorized, "the API key is not valid"};
    if (which) *which = found;
    return std::nullopt;
}

namespace {

std::string lower(std::string_view s) {
    std::string out(s);
    for (char &c : out)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return out;
}

// "Name:port", "[v6]:port" or "name" -> the name (brackets kept for IPv6), lower case.
std::string host_name(std::string_view host) {
    if (!host.empty() && host.front() == '[') return lower(host.substr(0, host.find(']') + 1));
    return lower(host.substr(0, host.rfind(':')));
}

// An authority as browsers compare it: lower case, without the scheme's default port.
std::string authority(std::string_view a, std::string_view scheme) {
    std::string s = lower(a);
    const std::string dflt = scheme == "https" ? ":443" : ":80";
    if (s.size() > dflt.size() && s.compare(s.size() - dflt.size(), dflt.size(), dflt) == 0) s.resize(s.size() - dflt.size());
    return s;
}

bool listed(const std::vector<std::string> &allowed, std::string_view value) {
    for (const std::string &a : allowed)
        if (a == "*" || boost::beast::iequals(a, value)) return true;
    return false;
}

} // namespace

std::optional<auth_problem> check_host(const std::vector<std::string> &allowed, std::string_view bound_address,
                                       std::string_view host) {
    if (host.empty()) return auth_problem{errc::invalid_request, "the Host header is missing (RFC 9112, 3.2)"};
    std::string name = host_name(host);
    if (!name.empty() && name.back() == '.') name.pop_back(); // "localhost." is localhost
    if (listed(allowed, name) || name == "localhost" ||
        (name.size() > 10 && name.compare(name.size() - 10, 10, ".localhost") == 0))
        return std::nullopt;
    boost::system::error_code ec;
    const std::string literal = name.size() > 2 && name.front() == '[' ? name.substr(1, name.size() - 2) : name;
    const auto ip = boost::asio::ip::make_address(literal, ec);
    if (!ec) {
        if (ip.is_loopback()) return std::nullopt;
        const auto bound = boost::asio::ip::make_address(std::string(bound_address), ec);
        if (!ec && (bound.is_unspecified() || bound == ip)) return std::nullopt; // an IP literal cannot be rebound
    } else if (boost::beast::iequals(name, bound_address)) {
        return std::nullopt;
    }
    return auth_problem{errc::forbidden, "Host '" + std::string(host.substr(0, 128)) +
                                             "' does not name this server (a DNS rebinding guard); to serve that name, "
                                             "list it in server.allowed_hosts (--allowed-host)"};
}

std::optional<auth_problem> check_origin(const std::vector<std::string> &allowed, std::string_view origin,
                                         std::string_view host, bool *cross) {
    if (cross) *cross = false;
    if (origin.empty()) return std::nullopt;
    const size_t sep = origin.find("://");
    if (sep != std::string_view::npos) {
        const std::string scheme = lower(origin.substr(0, sep));
        if (!host.empty() && authority(origin.substr(sep + 3), scheme) == authority(host, scheme)) return std::nullopt;
    }
    if (listed(allowed, origin)) {
        if (cross) *cross = true;
        return std::nullopt;
    }
    return auth_problem{errc::forbidden, "Origin '" + std::string(origin.substr(0, 128)) +
                                             "' is not this server's own: a page of another site may not use it; to "
                                             "allow that site, list its origin in server.allowed_origins (--allowed-origin)"};
}

bool is_json_media_type(std::string_view content_type) {
    const std::string_view type = content_type.substr(0, content_type.find(';'));
    const size_t first = type.find_first_not_of(" \t"), last = type.find_last_not_of(" \t");
    return first != std::string_view::npos && boost::beast::iequals(type.substr(first, last - first + 1), "application/json");
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
