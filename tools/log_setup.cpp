#include "tools/log_setup.h"

#include <boost/json.hpp>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <memory>

namespace actorserve::cli {

namespace {

// %* in the JSON pattern: the message as a JSON string, quoted and escaped by Boost.JSON.
class json_message_flag final : public spdlog::custom_flag_formatter {
public:
    void format(const spdlog::details::log_msg &msg, const std::tm &, spdlog::memory_buf_t &dest) override {
        const std::string quoted =
            boost::json::serialize(boost::json::string_view(msg.payload.data(), msg.payload.size()));
        dest.append(quoted.data(), quoted.data() + quoted.size());
    }
    std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<json_message_flag>(); }
};

} // namespace

void setup_logging(const std::string &level, const std::string &format) {
    std::shared_ptr<spdlog::logger> logger;
    if (format == "json") {
        logger = spdlog::stderr_logger_mt("actorserve"); // no colour codes inside the JSON
        auto f = std::make_unique<spdlog::pattern_formatter>();
        f->add_flag<json_message_flag>('*').set_pattern(
            R"({"time":"%Y-%m-%dT%H:%M:%S.%e%z","level":"%l","logger":"%n","msg":%*})");
        logger->set_formatter(std::move(f));
    } else {
        logger = spdlog::stderr_color_mt("actorserve");
        logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
    }
    spdlog::set_default_logger(logger);
    spdlog::set_level(spdlog::level::from_str(level));
}

} // namespace actorserve::cli
