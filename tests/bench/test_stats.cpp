// The report's arithmetic and the pieces around it, on known data: nearest-rank percentiles,
// run summaries, the workload sequence, URL parsing, SSE framing, the JSON report and the SVG.
#include <unistd.h>
#include <doctest/doctest.h>

#include <boost/json.hpp>

#include "bench/loadgen/openai_request.h"
#include "bench/loadgen/report.h"
#include "bench/loadgen/stats.h"
#include "bench/loadgen/svg_chart.h"
#include "bench/loadgen/target.h"
#include "bench/loadgen/workload.h"

using namespace loadgen;
namespace json = boost::json;

TEST_CASE("percentile: nearest rank on 1..10 picks the ceil(p*n)-th sample") {
    const std::vector<double> v{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    CHECK(percentile_nearest_rank(v, 50) == 5);
    CHECK(percentile_nearest_rank(v, 90) == 9);
    CHECK(percentile_nearest_rank(v, 99) == 10);
    CHECK(percentile_nearest_rank(v, 100) == 10);
    CHECK(percentile_nearest_rank(v, 1) == 1);
}

TEST_CASE("percentile: the textbook example 15, 20, 35, 40, 50") {
    const std::vector<double> v{15, 20, 35, 40, 50};
    CHECK(percentile_nearest_rank(v, 5) == 15);
    CHECK(percentile_nearest_rank(v, 30) == 20);
    CHECK(percentile_nearest_rank(v, 40) == 20);
    CHECK(percentile_nearest_rank(v, 50) == 35);
    CHECK(percentile_nearest_rank(v, 100) == 50);
}

TEST_CASE("summarize: unsorted samples, one sample, none") {
    auto s = summarize({40, 10, 30, 20});
    CHECK(s.n == 4);
    CHECK(s.p50 == 20);
    CHECK(s.p90 == 40);
    CHECK(s.max == 40);
    CHECK(s.mean == doctest::Approx(25));
    auto one = summarize({7});
    CHECK((one.p50 == 7 && one.p99 == 7 && one.max == 7));
    CHECK(summarize({}).n == 0);
}

namespace {
request_record rec(const char *outcome, double ttft, double e2e, std::vector<double> itl, int64_t tokens) {
    request_record r;
    r.outcome = outcome;
    r.ttft_ms = ttft;
    r.e2e_ms = e2e;
    r.itl_ms = std::move(itl);
    r.output_tokens = tokens;
    r.token_events = tokens;
    return r;
}
} // namespace

TEST_CASE("run summary: counts add up and only ok requests enter the latencies") {
    std::vector<request_record> rs{rec("ok", 100, 400, {10, 20, 30}, 4), rec("ok", 200, 500, {40}, 2),
                                   rec("overloaded", -1, 5, {}, 0), rec("error:timeout", 900, 3000, {99}, 2),
                                   rec("error:timeout", -1, 3000, {}, 0), rec("error:connect", -1, 1, {}, 0)};
    rs[1].cached = true;
    rs[0].cached_tokens = 16;
    auto s = summarize_run(rs, /*wall_s=*/2.0, /*dropped=*/3);
    CHECK(s.requests == 6);
    CHECK(s.ok == 2);
    CHECK(s.overloaded == 1);
    CHECK(s.errors == 3);
    CHECK(s.requests == s.ok + s.overloaded + s.errors);
    CHECK(s.errors_by_type.at("timeout") == 2);
    CHECK(s.errors_by_type.at("connect") == 1);
    CHECK(s.dropped_by_client == 3);
    CHECK(s.output_tokens == 6);
    CHECK(s.req_per_s == doctest::Approx(1.0));
    CHECK(s.output_tok_per_s == doctest::Approx(3.0));
    CHECK(s.cached == 1);
    CHECK(s.cache_hit_share == doctest::Approx(0.5));
    CHECK(s.prefix_hits == 1);
    CHECK(s.ttft_ms.n == 2);
    CHECK(s.ttft_ms.p50 == 100);
    CHECK(s.ttft_ms.max == 200);
    CHECK(s.itl_ms.n == 4); // 10, 20, 30, 40 pooled
    CHECK(s.itl_ms.p50 == 20);
    CHECK(s.itl_ms.p99 == 40);
    CHECK(s.e2e_ms.max == 500);
}

TEST_CASE("workload: the same seed gives the same sequence, another seed another") {
    auto seq = [](uint64_t seed) {
        workload w(builtin_prompts(), 0.3, seed);
        std::vector<std::string> out;
        for (int i = 0; i < 40; ++i) out.push_back(json::serialize(w.next().messages));
        return out;
    };
    CHECK(seq(7) == seq(7));
    CHECK(seq(7) != seq(8));
    CHECK(builtin_prompts().size() >= 30);
}

TEST_CASE("workload: repeat fraction 1 resends the first prompt, half of the time reworded") {
    workload w(builtin_prompts(), 1.0, 3);
    const auto first = w.next();
    CHECK_FALSE(first.repeated);
    int paraphrased = 0;
    for (int i = 0; i < 50; ++i) {
        auto it = w.next();
        CHECK(it.repeated);
        CHECK(it.prompt_index == first.prompt_index);
        if (it.paraphrased) {
            ++paraphrased;
            CHECK(json::serialize(it.messages) != json::serialize(first.messages));
        } else {
            CHECK(json::serialize(it.messages) == json::serialize(first.messages));
        }
    }
    CHECK(paraphrased > 5);
    CHECK(paraphrased < 45);
}

TEST_CASE("paraphrase: always changes the text and keeps its words") {
    std::mt19937_64 rng(1);
    for (int i = 0; i < 20; ++i) {
        const std::string p = paraphrase("What is the capital of France?", rng);
        CHECK(p != "What is the capital of France?");
        CHECK(p.find("apital of") != std::string::npos);
    }
}

TEST_CASE("prompts file: prompt and messages lines, and a bad line named") {
    const std::string path = "/tmp/actorserve-bench-prompts-test-" + std::to_string(::getpid()) + ".jsonl";
    std::string err;
    REQUIRE(write_text_file(path, "{\"prompt\": \"Hi\"}\n\n{\"messages\": [{\"role\":\"user\",\"content\":\"Yo\"}]}\n", err));
    auto ps = load_prompts_jsonl(path, err);
    REQUIRE(ps.size() == 2);
    CHECK(ps[0].messages[0].as_object().at("content") == "Hi");
    CHECK(ps[1].messages[0].as_object().at("content") == "Yo");
    REQUIRE(write_text_file(path, "{\"prompt\": \"Hi\"}\n{\"text\": 1}\n", err));
    CHECK(load_prompts_jsonl(path, err).empty());
    CHECK(err.find(":2:") != std::string::npos);
    std::remove(path.c_str());
}

TEST_CASE("target: URLs for both protocols") {
    target t;
    std::string err;
    REQUIRE(parse_target("ws://127.0.0.1:18080/v1/ws", "", t, err));
    CHECK(t.api == api_kind::actorserve_ws);
    CHECK(t.host == "127.0.0.1");
    CHECK(t.port == "18080");
    CHECK(t.path == "/v1/ws");
    REQUIRE(parse_target("http://localhost:8081", "openai", t, err));
    CHECK(t.api == api_kind::openai);
    CHECK(t.path == "/v1/chat/completions");
    REQUIRE(parse_target("http://h:1/v1/", "openai", t, err));
    CHECK(t.path == "/v1/chat/completions");
    REQUIRE(parse_target("http://h/proxy/v1/chat/completions", "", t, err));
    CHECK(t.port == "80");
    CHECK(t.path == "/proxy/v1/chat/completions");
    CHECK_FALSE(parse_target("https://h:1", "openai", t, err));
    CHECK_FALSE(parse_target("ws://h:1", "openai", t, err));
    CHECK_FALSE(parse_target("h:1", "", t, err));
    CHECK_FALSE(parse_target("ws://h:x/v1/ws", "", t, err));
}

TEST_CASE("sse: data lines split across reads come out whole") {
    sse_lines sse;
    std::vector<std::string> got;
    auto sink = [&](std::string_view d) { got.emplace_back(d); };
    sse.feed("data: {\"a\"", sink);
    CHECK(got.empty());
    sse.feed(":1}\r\n\r\n: comment\nevent: x\ndata:[DONE]\n", sink);
    REQUIRE(got.size() == 2);
    CHECK(got[0] == "{\"a\":1}");
    CHECK(got[1] == "[DONE]");
}

TEST_CASE("report: the JSON parses and carries summary and records") {
    run_result r;
    r.mode = "closed";
    r.concurrency = 2;
    r.records = {rec("ok", 100, 400, {10, 20}, 3), rec("error:timeout", -1, 900, {}, 0)};
    r.wall_s = 1;
    std::vector<report_point> pts{make_point(r)};
    target t;
    std::string err;
    REQUIRE(parse_target("ws://127.0.0.1:1/v1/ws", "", t, err));
    const std::string text = json::serialize(report_json(t, json::object{{"seed", 1}}, pts));
    auto v = json::parse(text);
    const auto &run = v.at("runs").at(0).as_object();
    CHECK(run.at("summary").at("requests").to_number<int>() == 2);
    CHECK(run.at("summary").at("ttft_ms").at("p50").to_number<double>() == 100);
    CHECK(run.at("records").as_array().size() == 2);
    CHECK(run.at("records").at(1).at("ttft_ms").is_null());
}

TEST_CASE("svg: a CDF chart is one well-formed SVG document with a line per set") {
    auto c = cdf_chart("TTFT", "ms", {{"a", {3, 1, 2}}, {"b & c", {5}}});
    REQUIRE(c.series.size() == 2);
    CHECK(c.series[0].points.front() == std::pair<double, double>{1, 0});
    CHECK(c.series[0].points.back() == std::pair<double, double>{3, 1});
    const std::string svg = render_svg(c);
    CHECK(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0) == 0);
    CHECK(svg.find("</svg>") != std::string::npos);
    CHECK(svg.find("b &amp; c") != std::string::npos);
    size_t lines = 0;
    for (size_t p = svg.find("<polyline"); p != std::string::npos; p = svg.find("<polyline", p + 1)) ++lines;
    CHECK(lines == 2);
}
