#include "bench/loadgen/target.h"

namespace loadgen {

std::string target::url() const {
    return std::string(api == api_kind::actorserve_ws ? "ws://" : "http://") + host + ":" + port + path;
}

bool parse_target(const std::string &url, const std::string &api, target &out, std::string &err) {
    const auto sep = url.find("://");
    if (sep == std::string::npos) {
        err = "--url needs a scheme (ws:// or http://): " + url;
        return false;
    }
    const std::string scheme = url.substr(0, sep);
    if (scheme == "wss" || scheme == "https") {
        err = "TLS (" + scheme + "://) is not supported; use ws:// or http://";
        return false;
    }
    if (scheme != "ws" && scheme != "http") {
        err = "unknown scheme " + scheme + ":// (ws:// or http://)";
        return false;
    }
    if (api.empty()) out.api = scheme == "ws" ? api_kind::actorserve_ws : api_kind::openai;
    else if (api == "openai") out.api = api_kind::openai;
    else if (api == "actorserve" || api == "ws") out.api = api_kind::actorserve_ws;
    else {
        err = "unknown --api " + api + " (actorserve or openai)";
        return false;
    }
    if ((out.api == api_kind::openai) != (scheme == "http")) {
        err = out.api == api_kind::openai ? "--api openai needs an http:// URL" : "the actorserve protocol needs a ws:// URL";
        return false;
    }
    std::string rest = url.substr(sep + 3);
    const auto slash = rest.find('/');
    std::string hostport = rest.substr(0, slash);
    std::string path = slash == std::string::npos ? "" : rest.substr(slash);
    if (hostport.empty()) {
        err = "no host in --url " + url;
        return false;
    }
    const auto colon = hostport.rfind(':');
    if (colon != std::string::npos && hostport.find(']') == std::string::npos) {
        out.host = hostport.substr(0, colon);
        out.port = hostport.substr(colon + 1);
    } else {
        out.host = hostport;
        out.port = "80";
    }
    if (out.port.empty() || out.port.find_first_not_of("0123456789") != std::string::npos) {
        err = "bad port in --url " + url;
        return false;
    }
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    if (path == "/") path.clear();
    if (out.api == api_kind::actorserve_ws) {
        out.path = path.empty() ? "/v1/ws" : path;
    } else if (path.size() >= 17 && path.compare(path.size() - 17, 17, "/chat/completions") == 0) {
        out.path = path;
    } else if (path.size() >= 3 && path.compare(path.size() - 3, 3, "/v1") == 0) {
        out.path = path + "/chat/completions";
    } else {
        out.path = path + "/v1/chat/completions";
    }
    return true;
}

} // namespace loadgen
