#include "net/static_files.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace actorserve {

namespace {

std::string_view content_type_of(std::string_view name) {
    auto ends = [&](std::string_view ext) { return name.size() >= ext.size() && name.substr(name.size() - ext.size()) == ext; };
    if (ends(".html")) return "text/html; charset=utf-8";
    if (ends(".js")) return "text/javascript; charset=utf-8";
    if (ends(".css")) return "text/css; charset=utf-8";
    if (ends(".svg")) return "image/svg+xml";
    if (ends(".png")) return "image/png";
    if (ends(".ico")) return "image/x-icon";
    if (ends(".json")) return "application/json";
    return "application/octet-stream";
}

bool safe_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
           c == '_' || c == '/';
}

} // namespace

const char *default_web_dir() { return ACTORSERVE_WEB_DIR; }

static_result load_static(const std::string &web_root, std::string_view target, static_file &out) {
    if (target.empty() || target[0] != '/') return static_result::bad_path;
    std::string rel(target.substr(1));
    // The two pages by name, exactly these targets: "/" the chat, "/dashboard" the metrics dashboard.
    if (rel.empty()) rel = "index.html";
    else if (rel == "dashboard") rel = "dashboard.html";
    for (char c : rel)
        if (!safe_name_char(c)) return static_result::bad_path;
    if (rel.find("..") != std::string::npos || rel.find("//") != std::string::npos || rel[0] == '/')
        return static_result::bad_path;
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::path p = fs::weakly_canonical(fs::path(web_root) / rel, ec);
    if (ec) return static_result::not_found;
    // Resolved (symbolic links included), it must still be under the root.
    const fs::path root(web_root);
    auto [root_end, unused] = std::mismatch(root.begin(), root.end(), p.begin(), p.end());
    if (root_end != root.end()) return static_result::not_found;
    if (!fs::is_regular_file(p, ec)) return static_result::not_found;
    std::ifstream in(p, std::ios::binary);
    if (!in) return static_result::not_found;
    std::ostringstream ss;
    ss << in.rdbuf();
    out.body = ss.str();
    out.content_type = std::string(content_type_of(rel));
    return static_result::ok;
}

} // namespace actorserve
