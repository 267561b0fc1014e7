// /metrics rendering: known values come out at the right lines, in seconds, with cumulative
// buckets ending in +Inf = _count, and Prometheus's own checker (promtool) accepts the whole
// exposition without a single lint problem.
#include "net/prometheus.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using namespace actorserve;

namespace {

metrics_snapshot known_snapshot() {
    metrics_snapshot m;
    m.running = 3;
    m.queue_depth = 2;
    m.kv_blocks_used = 5;
    m.kv_blocks_total = 20;
    m.prompt_tokens = 120;
    m.generated_tokens = 40;
    m.prefix_hit_tokens = 64;
    m.preemptions = 1;
    m.outcomes = {.stop = 4, .length = 2, .context = 0, .cancelled = 1, .error = 0, .rejected = 3, .overloaded = 5};
    for (double v : {3.0, 45.0, 1200.0}) m.ttft_ms.observe(v);
    for (double v : {9.0, 9.0, 30.0}) m.itl_ms.observe(v);
    for (double v : {250.0, 900.0}) m.e2e_ms.observe(v);
    for (double v : {1.5, 7.5}) m.queue_ms.observe(v);
    m.step_ms.observe(12.0);
    for (double v : {1.0, 3.0, 3.0}) m.batch_size.observe(v);
    return m;
}

server_stats known_stats() {
    server_stats s;
    s.open_connections = 7;
    s.websocket_connections = 2;
    s.connections_refused = 11;
    s.retained_requests = 4;
    s.sessions = 6;
    s.ready = true;
    return s;
}

std::vector<std::string> lines_of(const std::string &text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
}

bool has_line(const std::string &text, const std::string &line) {
    for (const std::string &l : lines_of(text))
        if (l == line) return true;
    return false;
}

// Samples by series (name and labels, as written) -> value text.
std::map<std::string, std::string> samples_of(const std::string &text) {
    std::map<std::string, std::string> out;
    for (const std::string &l : lines_of(text)) {
        if (l.empty() || l[0] == '#') continue;
        const size_t sp = l.rfind(' ');
        REQUIRE_MESSAGE(sp != std::string::npos, l);
        out[l.substr(0, sp)] = l.substr(sp + 1);
    }
    return out;
}

struct command_result {
    int status = -1;
    std::string output;  // stdout and stderr together
};

command_result run(const std::string &cmd) {
    command_result r;
    FILE *p = popen((cmd + " 2>&1").c_str(), "r");
    REQUIRE_MESSAGE(p, "cannot run: " << cmd);
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) r.output.append(buf, n);
    const int st = pclose(p);
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return r;
}

// Runs `promtool check metrics` over text; FAILs when promtool is not installed.
command_result promtool_check(const std::string &text) {
    const command_result where = run("command -v promtool");
    if (where.status != 0)
        FAIL("promtool is not installed: install the Debian package `prometheus` (scripts/setup.sh installs it)");
    std::string path = (std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + std::string("/actorserve_metrics_XXXXXX");
    const int fd = mkstemp(path.data());
    REQUIRE_MESSAGE(fd >= 0, "cannot create " << path);
    const bool written = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    close(fd);
    REQUIRE(written);
    const command_result r = run("promtool check metrics < '" + path + "'");
    unlink(path.c_str());
    return r;
}

} // namespace

TEST_CASE("prometheus: known values render at their lines, durations in seconds") {
    const std::string text = render_prometheus(known_snapshot(), known_stats(), "smollm2");
    const std::string M = "{model_name=\"smollm2\"";

    CHECK(has_line(text, "# TYPE actorserve_num_requests_running gauge"));
    CHECK(has_line(text, "actorserve_num_requests_running" + M + "} 3"));
    CHECK(has_line(text, "actorserve_num_requests_waiting" + M + "} 2"));
    CHECK(has_line(text, "actorserve_kv_cache_usage_perc" + M + "} 0.25"));
    CHECK(has_line(text, "# TYPE actorserve_prompt_tokens_total counter"));
    CHECK(has_line(text, "actorserve_prompt_tokens_total" + M + "} 120"));
    CHECK(has_line(text, "actorserve_generation_tokens_total" + M + "} 40"));
    CHECK(has_line(text, "actorserve_prefix_cache_hit_tokens_total" + M + "} 64"));
    CHECK(has_line(text, "actorserve_preemptions_total" + M + "} 1"));
    // every outcome is present, zero or not
    CHECK(has_line(text, "actorserve_requests_total" + M + ",outcome=\"stop\"} 4"));
    CHECK(has_line(text, "actorserve_requests_total" + M + ",outcome=\"length\"} 2"));
    CHECK(has_line(text, "actorserve_requests_total" + M + ",outcome=\"context\"} 0"));
    CHECK(has_line(text, "actorserve_requests_total" + M + ",outcome=\"cancelled\"} 1"));
    CHECK(has_line(text, "actorserve_requests_total" + M + ",outcome=\"error\"} 0"));
    CHECK(has_line(text, "actorserve_requests_total" + M + ",outcome=\"rejected\"} 3"));
    CHECK(has_line(text, "actorserve_requests_total" + M + ",outcome=\"overloaded\"} 5"));

    // TTFT 3, 45, 1200 ms: cumulative buckets in seconds, the sum in seconds
    CHECK(has_line(text, "# TYPE actorserve_time_to_first_token_seconds histogram"));
    CHECK(has_line(text, "actorserve_time_to_first_token_seconds_bucket" + M + ",le=\"0.001\"} 0"));
    CHECK(has_line(text, "actorserve_time_to_first_token_seconds_bucket" + M + ",le=\"0.005\"} 1"));
    CHECK(has_line(text, "actorserve_time_to_first_token_seconds_bucket" + M + ",le=\"0.06\"} 2"));
    CHECK(has_line(text, "actorserve_time_to_first_token_seconds_bucket" + M + ",le=\"1\"} 2"));
    CHECK(has_line(text, "actorserve_time_to_first_token_seconds_bucket" + M + ",le=\"2.5\"} 3"));
    CHECK(has_line(text, "actorserve_time_to_first_token_seconds_bucket" + M + ",le=\"2560\"} 3"));
    CHECK(has_line(text, "actorserve_time_to_first_token_seconds_bucket" + M + ",le=\"+Inf\"} 3"));
    CHECK(has_line(text, "actorserve_time_to_first_token_seconds_sum" + M + "} 1.248"));
    CHECK(has_line(text, "actorserve_time_to_first_token_seconds_count" + M + "} 3"));
    CHECK(has_line(text, "actorserve_inter_token_latency_seconds_bucket" + M + ",le=\"0.01\"} 2"));
    CHECK(has_line(text, "actorserve_inter_token_latency_seconds_sum" + M + "} 0.048"));
    CHECK(has_line(text, "actorserve_e2e_request_latency_seconds_bucket" + M + ",le=\"0.2\"} 0"));
    CHECK(has_line(text, "actorserve_e2e_request_latency_seconds_bucket" + M + ",le=\"0.3\"} 1"));
    CHECK(has_line(text, "actorserve_e2e_request_latency_seconds_bucket" + M + ",le=\"1\"} 2"));
    CHECK(has_line(text, "actorserve_e2e_request_latency_seconds_bucket" + M + ",le=\"7680\"} 2"));
    CHECK(has_line(text, "actorserve_request_queue_time_seconds_bucket" + M + ",le=\"0.001\"} 0"));
    CHECK(has_line(text, "actorserve_request_queue_time_seconds_bucket" + M + ",le=\"0.0025\"} 1"));
    CHECK(has_line(text, "actorserve_request_queue_time_seconds_bucket" + M + ",le=\"0.01\"} 2"));
    // 9 ms is 0.009 s, not the 0.009000000000000001 that 9 * 1e-3 gives
    CHECK(has_line(text, "actorserve_request_queue_time_seconds_sum" + M + "} 0.009"));
    CHECK(has_line(text, "actorserve_step_duration_seconds_bucket" + M + ",le=\"0.02\"} 1"));
    // batch size is a count, not a duration: bounds and sum unscaled
    CHECK(has_line(text, "actorserve_batch_size_bucket" + M + ",le=\"2\"} 1"));
    CHECK(has_line(text, "actorserve_batch_size_bucket" + M + ",le=\"4\"} 3"));
    CHECK(has_line(text, "actorserve_batch_size_sum" + M + "} 7"));

    // the server's own, without the model label
    CHECK(has_line(text, "actorserve_open_connections 7"));
    CHECK(has_line(text, "actorserve_websocket_connections 2"));
    CHECK(has_line(text, "# TYPE actorserve_connections_refused_total counter"));
    CHECK(has_line(text, "actorserve_connections_refused_total 11"));
    CHECK(has_line(text, "actorserve_retained_requests 4"));
    CHECK(has_line(text, "actorserve_sessions 6"));
    CHECK(has_line(text, "actorserve_ready 1"));
}

metrics_snapshot with_rag(metrics_snapshot m) {
    rag_metrics &r = m.rag;
    r.enabled = true;
    r.documents = 12;
    r.chunks = 345;
    r.searches = 9;
    r.search_errors = 2;
    r.overloaded = 1;
    r.documents_added = 12;
    r.documents_replaced = 3;
    r.documents_unchanged = 7;
    r.documents_rejected = 1;
    r.documents_deleted = 4;
    r.chunks_embedded = 400;
    for (double v : {4.0, 30.0, 30.0}) r.search_ms.observe(v);
    return m;
}

TEST_CASE("prometheus: retrieval families appear only when retrieval is on, with their values") {
    const std::string M = "{model_name=\"smollm2\"";
    const std::string off = render_prometheus(known_snapshot(), known_stats(), "smollm2");
    CHECK(off.find("actorserve_rag_") == std::string::npos);

    const std::string text = render_prometheus(with_rag(known_snapshot()), known_stats(), "smollm2");
    CHECK(has_line(text, "# TYPE actorserve_rag_documents gauge"));
    CHECK(has_line(text, "actorserve_rag_documents" + M + "} 12"));
    CHECK(has_line(text, "actorserve_rag_chunks" + M + "} 345"));
    CHECK(has_line(text, "# TYPE actorserve_rag_searches_total counter"));
    CHECK(has_line(text, "actorserve_rag_searches_total" + M + "} 9"));
    CHECK(has_line(text, "actorserve_rag_search_errors_total" + M + "} 2"));
    CHECK(has_line(text, "actorserve_rag_overloaded_total" + M + "} 1"));
    CHECK(has_line(text, "actorserve_rag_document_updates_total" + M + ",outcome=\"added\"} 12"));
    CHECK(has_line(text, "actorserve_rag_document_updates_total" + M + ",outcome=\"replaced\"} 3"));
    CHECK(has_line(text, "actorserve_rag_document_updates_total" + M + ",outcome=\"unchanged\"} 7"));
    CHECK(has_line(text, "actorserve_rag_document_updates_total" + M + ",outcome=\"rejected\"} 1"));
    CHECK(has_line(text, "actorserve_rag_document_updates_total" + M + ",outcome=\"deleted\"} 4"));
    CHECK(has_line(text, "actorserve_rag_chunks_embedded_total" + M + "} 400"));
    // 4, 30, 30 ms: 0.005 s holds one, 0.05 s all three; the sum is 0.064 s
    CHECK(has_line(text, "# TYPE actorserve_rag_search_duration_seconds histogram"));
    CHECK(has_line(text, "actorserve_rag_search_duration_seconds_bucket" + M + ",le=\"0.0025\"} 0"));
    CHECK(has_line(text, "actorserve_rag_search_duration_seconds_bucket" + M + ",le=\"0.005\"} 1"));
    CHECK(has_line(text, "actorserve_rag_search_duration_seconds_bucket" + M + ",le=\"0.025\"} 1"));
    CHECK(has_line(text, "actorserve_rag_search_duration_seconds_bucket" + M + ",le=\"0.05\"} 3"));
    CHECK(has_line(text, "actorserve_rag_search_duration_seconds_bucket" + M + ",le=\"+Inf\"} 3"));
    CHECK(has_line(text, "actorserve_rag_search_duration_seconds_sum" + M + "} 0.064"));
    CHECK(has_line(text, "actorserve_rag_search_duration_seconds_count" + M + "} 3"));
}

metrics_snapshot with_devices(metrics_snapshot m) {
    m.devices.push_back({.name = "cuda:0", .description = "NVIDIA H200", .weight_bytes = 270000000,
                         .kv_bytes = 268435456, .scratch_bytes = 40000000, .total_bytes = 150000000000,
                         .free_bytes = 140000000000});
    m.devices.push_back({.name = "cuda:1", .description = "NVIDIA H200", .weight_bytes = 270000000,
                         .kv_bytes = 268435456, .scratch_bytes = 40000000, .total_bytes = 150000000000,
                         .free_bytes = 139000000000});
    return m;
}

TEST_CASE("prometheus: device memory per device and use; the GPU families only with a GPU") {
    const std::string M = "{model_name=\"smollm2\"";
    const std::string none = render_prometheus(known_snapshot(), known_stats(), "smollm2");
    CHECK(none.find("actorserve_device_") == std::string::npos);

    metrics_snapshot cpu = known_snapshot();
    cpu.devices.push_back({.name = "cpu", .description = "CPU, 2 threads", .weight_bytes = 98000000, .kv_bytes = 268435456});
    const std::string c = render_prometheus(cpu, known_stats(), "smollm2");
    CHECK(has_line(c, "# TYPE actorserve_device_memory_bytes gauge"));
    CHECK(has_line(c, "actorserve_device_memory_bytes" + M + ",device=\"cpu\",use=\"weights\"} 98000000"));
    CHECK(has_line(c, "actorserve_device_memory_bytes" + M + ",device=\"cpu\",use=\"kv\"} 268435456"));
    CHECK(c.find("actorserve_device_memory_total_bytes") == std::string::npos);

    const std::string g = render_prometheus(with_devices(known_snapshot()), known_stats(), "smollm2");
    CHECK(has_line(g, "actorserve_device_memory_bytes" + M + ",device=\"cuda:1\",use=\"scratch\"} 40000000"));
    CHECK(has_line(g, "actorserve_device_memory_total_bytes" + M + ",device=\"cuda:0\"} 150000000000"));
    CHECK(has_line(g, "actorserve_device_memory_free_bytes" + M + ",device=\"cuda:1\"} 139000000000"));
}

TEST_CASE("prometheus: every histogram's buckets rise to +Inf, which equals _count") {
    const std::string text = render_prometheus(known_snapshot(), known_stats(), "smollm2");
    const auto samples = samples_of(text);
    int histograms = 0;
    for (const std::string &l : lines_of(text)) {
        const std::string prefix = "# TYPE ";
        if (l.rfind(prefix, 0) != 0 || l.substr(l.size() - 10) != " histogram") continue;
        const std::string name = l.substr(prefix.size(), l.size() - prefix.size() - 10);
        ++histograms;
        // in the order written: cumulative, so never decreasing
        uint64_t last = 0;
        int buckets = 0;
        for (const std::string &s : lines_of(text)) {
            if (s.rfind(name + "_bucket{", 0) != 0) continue;
            const uint64_t v = std::stoull(s.substr(s.rfind(' ') + 1));
            CHECK_MESSAGE(v >= last, s);
            last = v;
            ++buckets;
        }
        const std::string inf = name + "_bucket{model_name=\"smollm2\",le=\"+Inf\"}";
        const std::string count = name + "_count{model_name=\"smollm2\"}";
        REQUIRE_MESSAGE(samples.count(inf), inf);
        REQUIRE_MESSAGE(samples.count(count), count);
        CHECK_MESSAGE(samples.at(inf) == samples.at(count), name);
        CHECK_MESSAGE(std::to_string(last) == samples.at(count), name); // +Inf is the last bucket
        CHECK_MESSAGE(buckets > 1, name);
    }
    CHECK(histograms == 6);
}

TEST_CASE("prometheus: promtool accepts the exposition with no problems") {
    SUBCASE("known values, and a model name that needs escaping") {
        const std::string text = render_prometheus(known_snapshot(), known_stats(), "models/\"small\" \\ one\nq4_1");
        CHECK(text.find("model_name=\"models/\\\"small\\\" \\\\ one\\nq4_1\"") != std::string::npos);
        const command_result r = promtool_check(text);
        CHECK_MESSAGE(r.status == 0, r.output);
        CHECK_MESSAGE(r.output.empty(), r.output);
    }
    SUBCASE("with retrieval on") {
        const std::string text = render_prometheus(with_rag(known_snapshot()), known_stats(), "smollm2");
        const command_result r = promtool_check(text);
        CHECK_MESSAGE(r.status == 0, r.output);
        CHECK_MESSAGE(r.output.empty(), r.output);
    }
    SUBCASE("with two GPUs") {
        const std::string text = render_prometheus(with_devices(known_snapshot()), known_stats(), "smollm2");
        const command_result r = promtool_check(text);
        CHECK_MESSAGE(r.status == 0, r.output);
        CHECK_MESSAGE(r.output.empty(), r.output);
    }
    SUBCASE("a server without a runtime yet: a default snapshot") {
        const std::string text = render_prometheus(metrics_snapshot{}, server_stats{}, "smollm2");
        CHECK(has_line(text, "actorserve_kv_cache_usage_perc{model_name=\"smollm2\"} 0"));
        CHECK(has_line(text, "actorserve_ready 0"));
        const command_result r = promtool_check(text);
        CHECK_MESSAGE(r.status == 0, r.output);
        CHECK_MESSAGE(r.output.empty(), r.output);
    }
}
