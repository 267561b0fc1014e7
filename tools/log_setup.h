// The server's log: spdlog to stderr (journald takes it under systemd), as text lines or, with
// server.log_format = "json", one JSON object per line:
//   {"time":"2026-12-08T00:10:00.123+0000","level":"info","logger":"actorserve","msg":"..."}
#pragma once

#include <string>

namespace actorserve::cli {

void setup_logging(const std::string &level, const std::string &format);

} // namespace actorserve::cli
