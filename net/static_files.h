// The web chat page: files under web_root only. A target is mapped to a file by a strict rule
// (letters, digits, '.', '-', '_' and '/' between names; no '..', no percent-escapes), and the
// result is checked once more to lie inside web_root after resolving links.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace actorserve {

struct static_file {
    std::string body;
    std::string content_type;
};

enum class static_result { ok, not_found, bad_path };

// The source tree's web/, where the page lives when server.web_dir is not set. (Compiled into
// static_files.cpp alone, so that no other file's compilation depends on where the tree lies.)
const char *default_web_dir();

// target: the path part of the request target ("/", "/app.js"). "/" is index.html, "/dashboard"
// is dashboard.html.
static_result load_static(const std::string &web_root, std::string_view target, static_file &out);

} // namespace actorserve
