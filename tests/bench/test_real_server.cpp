// actorserve-bench against the real server and runtime in-process (tests/support/test_client.h's
// server_fixture, on a free loopback port): a short closed-loop run over each protocol.
#include "tests/support/test_client.h"

#include "bench/loadgen/report.h"
#include "bench/loadgen/runner.h"
#include "bench/loadgen/svg_chart.h"

#include <unistd.h>
#include <filesystem>

using namespace loadgen;

namespace {

report_point short_run(uint16_t port, const std::string &url_fmt, const std::string &api) {
    run_options opt;
    std::string err;
    const std::string url = url_fmt.substr(0, url_fmt.find("PORT")) + std::to_string(port) +
                            url_fmt.substr(url_fmt.find("PORT") + 4);
    REQUIRE(parse_target(url, api, opt.tgt, err));
    opt.prompts = builtin_prompts();
    opt.params.max_tokens = 8;
    opt.params.temperature = 0;
    opt.load.concurrency = 2;
    opt.load.requests = 4;
    opt.load.timeout_s = 120;
    opt.load.request_timeout_s = 60;
    opt.progress = false;
    opt.seed = 5;
    auto p = make_point(run_load(opt));
    REQUIRE_MESSAGE(p.result.error.empty(), p.result.error);
    return p;
}

void check_consistent(const report_point &p) {
    const auto &s = p.summary;
    CHECK(s.requests == 4);
    CHECK(s.requests == s.ok + s.overloaded + s.errors);
    CHECK(s.ok == 4); // an idle server with room for 16 sequences
    for (const auto *l : {&s.ttft_ms, &s.itl_ms, &s.e2e_ms}) {
        CHECK(l->p50 <= l->p90);
        CHECK(l->p90 <= l->p99);
        CHECK(l->p99 <= l->max);
    }
    CHECK(s.ttft_ms.n == 4);
    // Tokens are measured as they arrive, not when the answer ends: a decode step of the model
    // takes milliseconds, so gaps of ~0 would mean the stream was read in one piece.
    CHECK(s.itl_ms.p50 > 1.0);
    CHECK(s.output_tokens >= 4);
    CHECK(s.output_tokens <= 32);
    for (const auto &r : p.result.records) {
        CHECK(r.ttft_ms >= 0);
        CHECK(r.ttft_ms <= r.e2e_ms);
        CHECK(r.itl_ms.size() + 1 == static_cast<size_t>(r.token_events));
        CHECK(r.prompt_tokens > 0);
        CHECK((r.finish_reason == "length" || r.finish_reason == "stop"));
    }
    target t;
    std::string err;
    REQUIRE(parse_target("ws://127.0.0.1:1/v1/ws", "", t, err));
    auto v = testnet::parse_json(boost::json::serialize(report_json(t, {}, {p})));
    REQUIRE(v);
    CHECK(v->at("runs").at(0).at("summary").at("requests").to_number<int>() == 4);
    CHECK(v->at("runs").at(0).at("records").as_array().size() == 4);
}

} // namespace

TEST_CASE("real server: a short closed-loop run over the WebSocket protocol adds up") {
    testnet::server_fixture fx;
    auto p = short_run(fx.port(), "ws://127.0.0.1:PORT/v1/ws", "");
    check_consistent(p);
    std::string err;
    const std::string dir = "/tmp/actorserve-bench-test-svg-" + std::to_string(::getpid());
    auto files = write_charts(dir, {p, p}, /*sweep=*/true, err);
    CHECK(files.size() == 5);
    std::filesystem::remove_all(dir);
}

TEST_CASE("real server: a short closed-loop run over the OpenAI API adds up") {
    testnet::server_fixture fx;
    auto p = short_run(fx.port(), "http://127.0.0.1:PORT", "openai");
    check_consistent(p);
}
