#include <doctest/doctest.h>

#include "cache/exact_cache.h"
#include "cache/semantic_cache.h"
#include "tests/support/sampling.h"
#include "tests/support/temp_dir.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include <sys/wait.h>
#include <unistd.h>

using namespace std::string_literals;

using namespace actorserve;
namespace fs = std::filesystem;
using test_support::greedy_generation;
using test_support::temp_dir;

namespace {

struct fake_clock {
    int64_t now = 9'000'000;
    cache_clock fn() {
        return [this] { return now; };
    }
};

std::string read_all(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_all(const std::string &path, const std::string &bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << bytes;
}

std::vector<float> vec(int seed) {
    std::vector<float> v(4);
    for (int j = 0; j < 4; ++j) v[j] = 0.1f + 2.0f * float(std::cos(seed * 2.3 + j * 1.1));
    return v;
}

} // namespace

TEST_CASE("exact cache: save and load round-trip entries, use counts and expiry") {
    temp_dir dir("exact_rt");
    fake_clock clk;
    cache_limits lim;
    lim.ttl_ms = 1000;
    lim.max_entries = 3;
    exact_cache c(lim, clk.fn());
    c.insert(exact_key::make("m", "a", greedy_generation()), {"A", "stop", 1});
    clk.now += 600;
    c.insert(exact_key::make("m", "b", greedy_generation()), {"B\n\0binary"s, "length", 2});
    c.insert(exact_key::make("m", "c", greedy_generation()), {"C", "stop", 3});
    c.lookup(exact_key::make("m", "b", greedy_generation()));
    std::string err;
    REQUIRE(c.save(dir.file("exact.bin"), err));
    CHECK(dir.names() == std::vector<std::string>{"exact.bin"});   // no temporary left behind

    clk.now += 500;   // "a" has expired by now
    exact_cache d(lim, clk.fn());
    cache_load_report r = d.load(dir.file("exact.bin"));
    CHECK(r.result == cache_load_report::outcome::loaded);
    CHECK(r.entries == 2);
    CHECK(r.expired == 1);
    CHECK(d.lookup(exact_key::make("m", "b", greedy_generation()))->text == "B\n\0binary"s);
    CHECK(d.lookup(exact_key::make("m", "b", greedy_generation()))->finish_reason == "length");
    // Use counts survived: c (1 use) is evicted before b (3 uses now).
    d.insert(exact_key::make("m", "d", greedy_generation()), {"D", "stop", 1});
    d.insert(exact_key::make("m", "e", greedy_generation()), {"E", "stop", 1});
    CHECK(d.lookup(exact_key::make("m", "b", greedy_generation())));
    CHECK_FALSE(d.lookup(exact_key::make("m", "c", greedy_generation())));
}

TEST_CASE("cache files: a missing file is an empty cache, not an error") {
    temp_dir dir("missing");
    exact_cache c;
    cache_load_report r = c.load(dir.file("none.bin"));
    CHECK(r.result == cache_load_report::outcome::missing);
    CHECK(c.size() == 0);
    CHECK(dir.names().empty());
}

TEST_CASE("cache files: a killed save's temporary file is removed by the next load, a live one's is kept") {
    temp_dir dir("stale");
    exact_cache c;
    c.insert(exact_key::make("m", "a", greedy_generation()), {"A", "stop", 1});
    std::string err;
    REQUIRE(c.save(dir.file("exact.bin"), err));
    // a process that has exited: its pid is free
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) ::_exit(0);
    REQUIRE(::waitpid(child, nullptr, 0) == child);
    const std::string dead = std::to_string(child), self = std::to_string(::getpid());
    for (const std::string &name : std::vector<std::string>{"exact.bin.tmp-" + dead, "exact.bin.tmp-" + self, "exact.bin.tmp-1",
                                                            "exact.bin.tmp-x1", "other.bin.tmp-" + dead})
        write_all(dir.file(name), "half a save");

    exact_cache d;
    const cache_load_report r = d.load(dir.file("exact.bin"));
    CHECK(r.result == cache_load_report::outcome::loaded);
    CHECK(r.entries == 1);
    CHECK(r.stale_temps == 2);
    CHECK(stale_temps_note(r) == " (2 temporary files of an unfinished save removed)");
    // pid 1 is alive (a save of another server on the same folder would be); the rest are not ours
    std::vector<std::string> left = dir.names();
    std::sort(left.begin(), left.end());
    CHECK(left == std::vector<std::string>{"exact.bin", "exact.bin.tmp-1", "exact.bin.tmp-x1", "other.bin.tmp-" + dead});
}

TEST_CASE("cache files: corrupt and truncated files are reported and set aside") {
    temp_dir dir("corrupt");
    exact_cache c;
    for (int i = 0; i < 5; ++i)
        c.insert(exact_key::make("m", (std::string("q") += std::to_string(i)), greedy_generation()), {"answer", "stop", 1});
    std::string err;
    const std::string path = dir.file("exact.bin");
    REQUIRE(c.save(path, err));
    const std::string good = read_all(path);

    struct damage {
        const char *name;
        std::string bytes;
        const char *problem;
    };
    std::string flipped = good;
    flipped[good.size() / 2] ^= 0x20;
    std::string wrong_version = good;
    wrong_version[8] = 9;
    const damage cases[] = {
        {"truncated payload", good.substr(0, good.size() - 7), "truncated: header says"},
        {"truncated header", good.substr(0, 10), "shorter than the 32-byte header"},
        {"empty", "", "shorter than the 32-byte header"},
        {"flipped bit", flipped, "checksum mismatch"},
        {"other format", "{\"not\": \"a cache\"} and some more bytes to pass the header", "bad magic"},
        {"newer version", wrong_version, "format version 9"},
        {"trailing bytes", good + "xx", "trailing bytes"},
    };
    for (const damage &d : cases) {
        CAPTURE(d.name);
        write_all(path, d.bytes);
        exact_cache e;
        cache_load_report r = e.load(path);
        CHECK(r.result == cache_load_report::outcome::corrupt);
        CHECK(r.message.find(path) == 0);
        CHECK(r.message.find(d.problem) != std::string::npos);
        CHECK(e.size() == 0);
        CHECK_FALSE(fs::exists(path));
        REQUIRE(fs::exists(r.set_aside));
        CHECK(r.set_aside.find(path + ".corrupt-") == 0);
        CHECK(read_all(r.set_aside) == d.bytes);
        // Starting empty, the cache works and saves over the old name.
        e.insert(exact_key::make("m", "new", greedy_generation()), {"N", "stop", 1});
        REQUIRE(e.save(path, err));
        exact_cache f;
        CHECK(f.load(path).entries == 1);
    }
    CHECK(dir.names().size() == 1 + std::size(cases));   // exact.bin + every file set aside
}

TEST_CASE("cache files: a payload that passes the checksum but breaks the cache's rules is set aside") {
    temp_dir dir("payload");
    const std::string path = dir.file("exact.bin");
    byte_writer w;
    w.u64(2);   // claims two entries, holds one
    w.str("1:m\x1f" "1:q\x1fgreedy;max=256;stop=[]");
    w.u8(1);
    w.str("A");
    w.str("stop");
    w.i64(1);
    w.u64(1);
    w.i64(INT64_MAX);
    std::string err;
    REQUIRE(write_cache_file(path, cache_file_kind::exact, w.bytes(), err));
    exact_cache c;
    cache_load_report r = c.load(path);
    CHECK(r.result == cache_load_report::outcome::corrupt);
    CHECK(r.message.find("truncated u64") != std::string::npos);
    CHECK(c.size() == 0);

    // The semantic cache's file is not an exact cache's.
    semantic_settings s;
    s.dim = 4;
    semantic_cache sem(s);
    sem.insert("scope", vec(1), "q", {"a", "stop", 1});
    REQUIRE(sem.save(dir.file("sem.bin"), err));
    exact_cache x;
    r = x.load(dir.file("sem.bin"));
    CHECK(r.result == cache_load_report::outcome::corrupt);
    CHECK(r.message.find("holds cache kind 2, expected 1") != std::string::npos);
}

TEST_CASE("semantic cache: save and load keep ids, scopes, vectors and answers") {
    temp_dir dir("sem_rt");
    fake_clock clk;
    semantic_settings s;
    s.dim = 4;
    s.threshold = 0.99f;
    semantic_cache c(s, clk.fn());
    const std::string s1 = semantic_scope("m", "sys1", greedy_generation());
    const std::string s2 = semantic_scope("m", "sys2", greedy_generation());
    std::vector<uint64_t> ids;
    for (int i = 0; i < 6; ++i) ids.push_back(c.insert(i % 2 ? s1 : s2, vec(i), "question " + std::to_string(i), {"answer " + std::to_string(i), "stop", i}).id);
    c.erase(ids[2]);
    std::string err;
    REQUIRE(c.save(dir.file("sem.bin"), err));

    semantic_cache d(s, clk.fn());
    cache_load_report r = d.load(dir.file("sem.bin"));
    REQUIRE(r.result == cache_load_report::outcome::loaded);
    CHECK(r.entries == 5);
    CHECK(d.size() == 5);
    CHECK(d.index_ntotal() == 5);
    CHECK(d.stats().scopes == 2);
    for (int i = 0; i < 6; ++i) {
        if (i == 2) {
            CHECK_FALSE(d.contains(ids[2]));
            continue;
        }
        CHECK(d.contains(ids[i]));
        auto hit = d.lookup(i % 2 ? s1 : s2, vec(i), "question " + std::to_string(i));
        REQUIRE(hit.hit);
        CHECK(hit.hit->id == ids[i]);
        CHECK(hit.hit->answer.text == "answer " + std::to_string(i));
        CHECK(hit.hit->answer.completion_tokens == i);
        CHECK(hit.hit->similarity == doctest::Approx(1.0f).epsilon(1e-5));
    }
    // New ids continue after the loaded ones.
    CHECK(d.insert(s1, vec(9), "question 9", {"a", "stop", 1}).id > ids.back());

    // A file of another dimension is set aside, not misread.
    semantic_settings t = s;
    t.dim = 8;
    semantic_cache e(t, clk.fn());
    r = e.load(dir.file("sem.bin"));
    CHECK(r.result == cache_load_report::outcome::corrupt);
    CHECK(r.message.find("vectors have 4 dimensions, the cache uses 8") != std::string::npos);
    CHECK(e.size() == 0);
}

TEST_CASE("semantic cache: a truncated file is set aside and the cache starts empty") {
    temp_dir dir("sem_trunc");
    semantic_settings s;
    s.dim = 4;
    semantic_cache c(s);
    for (int i = 0; i < 4; ++i) c.insert("scope", vec(i), (std::string("q") += std::to_string(i)), {"a", "stop", 1});
    std::string err;
    const std::string path = dir.file("sem.bin");
    REQUIRE(c.save(path, err));
    const std::string good = read_all(path);
    for (size_t cut : {size_t(0), size_t(31), size_t(32), good.size() / 2, good.size() - 1}) {
        CAPTURE(cut);
        write_all(path, good.substr(0, cut));
        semantic_cache d(s);
        cache_load_report r = d.load(path);
        CHECK(r.result == cache_load_report::outcome::corrupt);
        CHECK(d.size() == 0);
        CHECK(d.index_ntotal() == 0);
        CHECK(fs::exists(r.set_aside));
    }
}
