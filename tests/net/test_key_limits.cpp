// Per-key limits on their own (net/key_limits.h), on a clock the test moves: the key file's
// settings, each limit's window, its Retry-After, and what a refusal names. The server applies
// them in tests/net/test_policy.cpp.
#include "net/auth.h"
#include "net/key_limits.h"
#include "tests/support/temp_dir.h"

#include <doctest/doctest.h>

#include <fstream>

using namespace actorserve;
using namespace std::chrono_literals;

namespace {

std::string write_file(const test_support::temp_dir &dir, const std::string &text) {
    const std::string p = dir.file("keys");
    std::ofstream(p) << text;
    return p;
}

key_settings limits(int rpm, int tpm, int concurrent) {
    key_settings k;
    k.id = "k";
    k.rpm = rpm, k.tpm = tpm, k.concurrent = concurrent;
    return k;
}

} // namespace

TEST_CASE("key file: settings after a key are read; a bad one names its line, never the key") {
    test_support::temp_dir dir("keys");
    std::vector<std::string> keys;
    std::vector<key_settings> cfg;
    std::string err;
    REQUIRE_MESSAGE(load_api_keys(write_file(dir, "# team keys\nsk-plain\n  sk-a   id=alpha rpm=60 tpm=2000 concurrent=4 "
                                                  "priority=interactive\t\nsk-b priority=batch\n"),
                                  keys, err, &cfg),
                    err);
    REQUIRE(keys == std::vector<std::string>{"sk-plain", "sk-a", "sk-b"});
    REQUIRE(cfg.size() == 3);
    CHECK(cfg[0].id == "key:0");
    CHECK(cfg[0].rpm == 0);
    CHECK(cfg[0].priority == priority_class::standard);
    CHECK(cfg[1].id == "alpha");
    CHECK(cfg[1].rpm == 60);
    CHECK(cfg[1].tpm == 2000);
    CHECK(cfg[1].concurrent == 4);
    CHECK(cfg[1].priority == priority_class::interactive);
    CHECK(cfg[2].id == "key:2");
    CHECK(cfg[2].priority == priority_class::batch);

    struct bad_case {
        const char *file, *names;
    } bad[] = {
        {"sk-secret-1 rpm=-1\n", "rpm"},          {"sk-secret-1 rpm=ten\n", "rpm"},
        {"sk-secret-1 priority=urgent\n", "priority"}, {"sk-secret-1 colour=red\n", "colour"},
        {"sk-secret-1 rpm\n", "rpm"},             {"sk-ok\n\nsk-secret-1 tpm=1e3\n", ":3:"},
    };
    for (const bad_case &b : bad) {
        keys.clear();
        cfg.clear();
        err.clear();
        CHECK_FALSE(load_api_keys(write_file(dir, b.file), keys, err, &cfg));
        CHECK_MESSAGE(err.find(b.names) != std::string::npos, err);
        CHECK_MESSAGE(err.find("sk-secret") == std::string::npos, err);
    }
}

TEST_CASE("key_limiter: rpm counts the last 60 s and says when the oldest leaves the window") {
    key_limiter lim({limits(2, 0, 0)});
    const auto t0 = key_limiter::clock::now();
    CHECK(!lim.admit(0, t0));
    CHECK(!lim.admit(0, t0 + 10s));
    auto over = lim.admit(0, t0 + 20s);
    REQUIRE(over);
    CHECK(over->limit == key_limit::rpm);
    CHECK(over->retry_after_ms == 40000); // the request at t0 leaves the window at t0 + 60 s
    CHECK(over->message.find("2 requests per minute") != std::string::npos);
    CHECK(over->message.find("k") != std::string::npos);
    CHECK(lim.refused(0, key_limit::rpm) == 1);
    CHECK(!lim.admit(0, t0 + 60s)); // a refused request is not counted: one place freed, one taken
    CHECK(lim.admit(0, t0 + 61s));
    CHECK(!lim.admit(0, t0 + 70s));
}

TEST_CASE("key_limiter: concurrent holds a place until finish; tpm counts ended requests' tokens") {
    key_limiter lim({limits(0, 0, 2), limits(0, 100, 0)});
    const auto t0 = key_limiter::clock::now();
    CHECK(!lim.admit(0, t0));
    CHECK(!lim.admit(0, t0));
    auto over = lim.admit(0, t0, 1500);
    REQUIRE(over);
    CHECK(over->limit == key_limit::concurrent);
    CHECK(over->retry_after_ms == 1500);
    CHECK(lim.running(0) == 2);
    lim.finish(0, 10, t0 + 1s);
    CHECK(lim.running(0) == 1);
    CHECK(!lim.admit(0, t0 + 1s));

    // key 1: 100 tokens a minute; a request may take the sum past it, the next then waits
    CHECK(!lim.admit(1, t0));
    lim.finish(1, 60, t0 + 1s);
    CHECK(!lim.admit(1, t0 + 2s));
    lim.finish(1, 70, t0 + 5s); // 130 in the window
    over = lim.admit(1, t0 + 10s);
    REQUIRE(over);
    CHECK(over->limit == key_limit::tpm);
    CHECK(over->retry_after_ms == 51000); // the 60 of t0 + 1 s leave at t0 + 61 s: 70 < 100
    CHECK(over->message.find("130 used") != std::string::npos);
    CHECK(!lim.admit(1, t0 + 61s));
    CHECK(lim.refused(1, key_limit::tpm) == 1);
    CHECK(lim.refused(1, key_limit::rpm) == 0);
}

TEST_CASE("key_limiter: a key without limits is never refused, and unknown keys pass") {
    key_limiter lim({limits(0, 0, 0)});
    const auto t0 = key_limiter::clock::now();
    for (int i = 0; i < 1000; ++i) CHECK(!lim.admit(0, t0));
    CHECK(lim.running(0) == 1000);
    CHECK(!lim.admit(7, t0));
}
