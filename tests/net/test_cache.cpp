// The answer caches through the whole server: a repeated question is answered by the exact
// cache, a paraphrase by the semantic cache, a near miss is generated; `cache: false` opts out;
// the caches survive a restart, and a corrupt cache file is set aside. Real model, real
// embedder (models/all-MiniLM-L6-v2), real FAISS, over WebSocket and the OpenAI API.
#include "tests/support/temp_dir.h"
#include "tests/support/test_client.h"

#include <filesystem>
#include <fstream>

using namespace testnet;

namespace {

namespace fs = std::filesystem;
using test_support::temp_dir;

actorserve::server_config cache_config(const fs::path &dir) {
    auto c = server_fixture::config();
    c.runtime.cache.enabled = true;
    c.runtime.cache.dir = dir.string();
    c.runtime.cache.embed_model_dir = test_paths::embed_model_dir();
    return c;
}

json::object ask(const std::string &question, int max_tokens = 16) {
    return {{"type", "chat"}, {"message", question}, {"max_tokens", max_tokens}, {"temperature", 0}};
}

// One request on a fresh connection; its done event (REQUIREd), and the token texts joined.
struct answer {
    json::object done;
    std::string streamed;
    int tokens = 0;
};

answer chat_once(uint16_t port, const json::object &msg) {
    ws_client c;
    REQUIRE_MESSAGE(c.connect(port), c.describe_error());
    REQUIRE(c.send_json(msg));
    answer a;
    for (;;) {
        auto ev = c.read_json();
        REQUIRE_MESSAGE(ev, "the request did not end: " << c.describe_error());
        const std::string type = str_of(*ev, "type");
        REQUIRE_MESSAGE(type != "error", json::serialize(*ev));
        if (type == "token") {
            a.streamed += str_of(*ev, "text");
            ++a.tokens;
        }
        if (type == "done") {
            a.done = *ev;
            return a;
        }
    }
}

} // namespace

TEST_CASE("cache: a repeat is an exact hit, a paraphrase a semantic hit, a near miss is generated") {
    temp_dir dir;
    server_fixture fx(cache_config(dir.path));

    answer first = chat_once(fx.port(), ask("What is the capital of France?"));
    CHECK_FALSE(has(first.done, "cached"));
    const std::string text = str_of(first.done, "text");
    REQUIRE(!text.empty());

    // The store is asynchronous (the session tells the cache actor after done): wait for it.
    REQUIRE(fx.wait_metrics([](const auto &m) { return m.cache.stores >= 1; }, 10s));

    answer again = chat_once(fx.port(), ask("What is the capital of France?"));
    CHECK(str_of(again.done, "cached") == "exact");
    CHECK(num_of(again.done, "similarity").value_or(0) == doctest::Approx(1.0));
    CHECK(str_of(again.done, "text") == text);
    CHECK(again.streamed == text); // streamed as tokens too, not only in done
    CHECK(again.tokens >= 1);

    // Whitespace is normalised in the exact key.
    answer spaced = chat_once(fx.port(), ask("What is  the capital\nof France?"));
    CHECK(str_of(spaced.done, "cached") == "exact");

    answer para = chat_once(fx.port(), ask("Which city is the capital of France?"));
    CHECK_MESSAGE(str_of(para.done, "cached") == "semantic", json::serialize(para.done));
    CHECK(str_of(para.done, "text") == text);
    const double sim = num_of(para.done, "similarity").value_or(0);
    MESSAGE("paraphrase similarity " << sim);
    CHECK(sim >= fx.cfg().runtime.cache.sem.threshold);
    CHECK(sim < 1.0);

    // A different country: close in meaning, but the guard (or the threshold) refuses it.
    answer other = chat_once(fx.port(), ask("What is the capital of Germany?"));
    CHECK_MESSAGE(!has(other.done, "cached"), json::serialize(other.done));

    // Opting out: generated again, even though the exact answer is there.
    json::object no_cache = ask("What is the capital of France?");
    no_cache["cache"] = false;
    answer fresh = chat_once(fx.port(), no_cache);
    CHECK_FALSE(has(fresh.done, "cached"));
    CHECK(str_of(fresh.done, "text") == text); // greedy: the same answer

    // A sampled request is neither looked up nor stored unless it opts in.
    json::object sampled = ask("What is the capital of France?");
    sampled["temperature"] = 0.7;
    sampled["seed"] = 3;
    CHECK_FALSE(has(chat_once(fx.port(), sampled).done, "cached"));
    const uint64_t stores = fx.metrics().cache.stores;
    sampled["cache"] = true; // opted in: looked up (its parameters make it a new key) and stored
    CHECK_FALSE(has(chat_once(fx.port(), sampled).done, "cached"));
    REQUIRE(fx.wait_metrics([&](const auto &m) { return m.cache.stores > stores; }, 10s));
    CHECK(str_of(chat_once(fx.port(), sampled).done, "cached") == "exact");
}

TEST_CASE("cache: hits are counted in the metrics and /metrics, and the OpenAI API says cached") {
    temp_dir dir;
    server_fixture fx(cache_config(dir.path));
    const std::string body =
        R"({"messages":[{"role":"user","content":"Name a primary colour."}],"max_tokens":8,"temperature":0})";
    auto r1 = http_post(fx.port(), "/v1/chat/completions", body);
    REQUIRE(r1.status == 200);
    auto j1 = parse_json(r1.body);
    REQUIRE((j1 && j1->is_object()));
    CHECK_FALSE(has(j1->get_object(), "cached"));
    REQUIRE(fx.wait_metrics([](const auto &m) { return m.cache.stores >= 1; }, 10s));
    auto r2 = http_post(fx.port(), "/v1/chat/completions", body);
    REQUIRE(r2.status == 200);
    auto j2 = parse_json(r2.body);
    REQUIRE((j2 && j2->is_object()));
    CHECK(str_of(j2->get_object(), "cached") == "exact");

    auto m = fx.metrics();
    CHECK(m.cache.enabled);
    CHECK(m.cache.semantic_enabled);
    CHECK(m.cache.lookups == 2);
    CHECK(m.cache.hits_exact == 1);
    CHECK(m.cache.misses == 1);
    CHECK(m.cache.entries_exact == 1);
    CHECK(m.cache.entries_semantic == 1);
    CHECK(m.cache.bytes_exact > 0);
    auto text = http_get(fx.port(), "/metrics");
    REQUIRE(text.status == 200);
    CHECK(text.body.find("actorserve_cache_hits_total{model_name=") != std::string::npos);
    CHECK(text.body.find("cache=\"exact\"} 1\n") != std::string::npos);
}

TEST_CASE("cache: the caches survive a restart; a corrupt cache file is set aside and the server serves") {
    temp_dir dir;
    std::string text;
    {
        server_fixture fx(cache_config(dir.path));
        text = str_of(chat_once(fx.port(), ask("Give me one word for happy.")).done, "text");
        REQUIRE(fx.wait_metrics([](const auto &m) { return m.cache.stores >= 1; }, 10s));
    } // the cache actor saves as the runtime stops
    REQUIRE(fs::exists(dir.path / "exact.cache"));
    REQUIRE(fs::exists(dir.path / "semantic.cache"));
    {
        server_fixture fx(cache_config(dir.path));
        answer a = chat_once(fx.port(), ask("Give me one word for happy."));
        CHECK(str_of(a.done, "cached") == "exact");
        CHECK(str_of(a.done, "text") == text);
    }
    // Damage the exact cache's file: the next start sets it aside and starts that cache empty.
    {
        std::fstream f(dir.path / "exact.cache", std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(40);
        f.write("garbage!", 8);
    }
    {
        server_fixture fx(cache_config(dir.path));
        bool set_aside = false;
        for (const auto &e : fs::directory_iterator(dir.path))
            set_aside |= e.path().filename().string().rfind("exact.cache.corrupt-", 0) == 0;
        CHECK_MESSAGE(set_aside, "no exact.cache.corrupt-* beside the caches");
        bool noted = false;
        for (const std::string &n : fx.rt().notes()) noted |= n.find("set aside") != std::string::npos;
        CHECK(noted);
        answer a = chat_once(fx.port(), ask("Give me one word for happy."));
        // The exact cache is empty, the semantic one was kept: the same question is its hit.
        CHECK(str_of(a.done, "cached") == "semantic");
        CHECK(str_of(a.done, "text") == text);
    }
}

TEST_CASE("cache: a save that fails (the folder unusable, as on a full disk) is counted and serving goes on") {
    temp_dir dir;
    const fs::path folder = dir.path / "caches";
    auto cfg = cache_config(folder);
    cfg.runtime.cache.save_interval_s = 1;
    server_fixture fx(cfg);
    // Once the server runs, a file takes the folder's place: every save fails.
    fs::rename(folder, dir.path / "caches.moved");
    { std::ofstream(folder) << "x"; }
    const std::string text = str_of(chat_once(fx.port(), ask("Give me one word for happy.")).done, "text");
    REQUIRE(fx.wait_metrics([](const auto &m) { return m.cache.save_errors >= 1; }, 20s));
    // the caches still serve from memory, and /metrics says so
    answer a = chat_once(fx.port(), ask("Give me one word for happy."));
    CHECK(str_of(a.done, "cached") == "exact");
    CHECK(str_of(a.done, "text") == text);
    CHECK(http_get(fx.port(), "/metrics").body.find("actorserve_cache_save_errors_total{") != std::string::npos);
}

TEST_CASE("cache: configs/actorserve.toml loads with its [cache] table; bad cache settings are named") {
    actorserve::server_config cfg;
    std::string err;
    REQUIRE_MESSAGE(actorserve::load_config_file(test_paths::source() + "/configs/actorserve.toml", cfg, err), err);
    REQUIRE_MESSAGE(actorserve::validate(cfg, err), err);
    const actorserve::cache_settings &c = cfg.runtime.cache;
    CHECK(c.enabled);
    CHECK(c.dir == "data/cache");
    CHECK(c.exact.ttl_ms == 86400 * 1000LL);
    CHECK(c.sem.threshold == doctest::Approx(actorserve::kDefaultSemanticThreshold));
    CHECK(c.sem.index == actorserve::semantic_index_kind::flat);

    temp_file bad_key("[cache]\nsemantic_treshold = 0.8\n");
    actorserve::server_config c2;
    CHECK_FALSE(actorserve::load_config_file(bad_key.path(), c2, err));
    CHECK_MESSAGE(err.find("semantic_treshold") != std::string::npos, err);

    temp_file bad_index("[cache]\nsemantic_index = \"ivf\"\n");
    CHECK_FALSE(actorserve::load_config_file(bad_index.path(), c2, err));
    CHECK_MESSAGE(err.find("semantic_index") != std::string::npos, err);

    temp_file bad_threshold("[cache]\nsemantic_threshold = 1.5\n");
    actorserve::server_config c3;
    c3.runtime.model_path = test_paths::model();
    REQUIRE(actorserve::load_config_file(bad_threshold.path(), c3, err));
    CHECK_FALSE(actorserve::validate(c3, err));
    CHECK_MESSAGE(err.find("cache.semantic_threshold") != std::string::npos, err);
}

TEST_CASE("cache: over its mailbox limit the cache is bypassed, never a lost request") {
    temp_dir dir;
    auto cfg = cache_config(dir.path);
    cfg.runtime.cache.mailbox_limit = 0; // any lookup that finds another message queued bypasses
    server_fixture fx(cfg);
    constexpr int kClients = 8;
    std::vector<std::unique_ptr<ws_client>> clients;
    for (int i = 0; i < kClients; ++i) {
        clients.push_back(std::make_unique<ws_client>());
        REQUIRE(clients.back()->connect(fx.port()));
    }
    // All at once, so that lookups queue up behind each other in the cache actor's mailbox.
    for (int i = 0; i < kClients; ++i)
        REQUIRE(clients[i]->send_json(ask("Count to " + std::to_string(i + 3) + ".", 4)));
    int done = 0;
    for (auto &c : clients) {
        for (;;) {
            auto ev = c->read_json();
            REQUIRE_MESSAGE(ev, c->describe_error());
            const std::string type = str_of(*ev, "type");
            REQUIRE_MESSAGE(type != "error", json::serialize(*ev));
            if (type == "done") {
                ++done;
                break;
            }
        }
    }
    CHECK(done == kClients);
    auto m = fx.metrics();
    MESSAGE("bypassed " << m.cache.bypassed << " of " << kClients << " lookups");
    CHECK(m.cache.lookups + m.cache.bypassed == kClients); // each request offered once
    CHECK(m.cache.hits_exact + m.cache.hits_semantic == 0);
}

TEST_CASE("cache: cache_debug names the scope and the question a hit was cached for; semantic_off keeps exact hits only") {
    temp_dir dir;
    std::string scope;
    {
        auto cfg = cache_config(dir.path);
        cfg.runtime.cache.debug_hits = true;
        server_fixture fx(cfg);
        json::object first = ask("What is the capital of France?");
        first["cache_debug"] = true;
        answer a = chat_once(fx.port(), first);
        const json::object *dbg = obj_of(a.done, "cache_debug");
        REQUIRE_MESSAGE(dbg, json::serialize(a.done));
        scope = str_of(*dbg, "scope");
        CHECK(scope.size() == 16);
        CHECK_FALSE(has(*dbg, "cached_question")); // a miss: nothing served it
        REQUIRE(fx.wait_metrics([](const auto &m) { return m.cache.stores >= 1; }, 10s));

        json::object para = ask("Which city is the capital of France?");
        para["cache_debug"] = true;
        answer p = chat_once(fx.port(), para);
        CHECK(str_of(p.done, "cached") == "semantic");
        dbg = obj_of(p.done, "cache_debug");
        REQUIRE_MESSAGE(dbg, json::serialize(p.done));
        CHECK(str_of(*dbg, "scope") == scope);
        CHECK(str_of(*dbg, "cached_question") == "What is the capital of France?");
        // Not asked for: not told.
        CHECK_FALSE(has(chat_once(fx.port(), ask("Which city is the capital of France?")).done, "cache_debug"));

        // The OpenAI API carries the same object.
        auto r = http_post(fx.port(), "/v1/chat/completions",
                           R"({"messages":[{"role":"user","content":"Which city is the capital of France?"}],)"
                           R"("max_tokens":16,"temperature":0,"cache_debug":true})");
        REQUIRE(r.status == 200);
        auto j = parse_json(r.body);
        REQUIRE((j && j->is_object()));
        dbg = obj_of(j->get_object(), "cache_debug");
        REQUIRE_MESSAGE(dbg, r.body);
        CHECK(str_of(*dbg, "cached_question") == "What is the capital of France?");
        auto bad = http_post(fx.port(), "/v1/chat/completions",
                             R"({"messages":[{"role":"user","content":"Hi"}],"cache_debug":"yes"})");
        CHECK(bad.status == 400);
        CHECK_MESSAGE(bad.body.find("cache_debug") != std::string::npos, bad.body);
    }
    {
        // The same caches (saved at exit) with that scope's semantic hits off: the paraphrase is
        // generated, the repeat is still an exact hit; and without debug_hits nothing is shown.
        auto cfg = cache_config(dir.path);
        cfg.runtime.cache.semantic_off = {scope};
        server_fixture fx(cfg);
        json::object para = ask("Which city is the capital of France?");
        para["cache_debug"] = true;
        answer p = chat_once(fx.port(), para);
        CHECK_MESSAGE(!has(p.done, "cached"), json::serialize(p.done));
        const json::object *dbg = obj_of(p.done, "cache_debug");
        REQUIRE(dbg);
        CHECK(str_of(*dbg, "refused").find("debug_hits") != std::string::npos);
        CHECK(str_of(chat_once(fx.port(), ask("What is the capital of France?")).done, "cached") == "exact");
        CHECK(fx.metrics().cache.semantic_off == 1); // the exact hit is found before the semantic cache is asked
        auto text = http_get(fx.port(), "/metrics");
        CHECK(text.body.find("actorserve_cache_semantic_off_total{") != std::string::npos);
    }
    {
        temp_file bad("[cache]\nsemantic_off = [\"What is the capital\"]\n");
        actorserve::server_config c;
        std::string err;
        CHECK_FALSE(actorserve::load_config_file(bad.path(), c, err));
        CHECK_MESSAGE(err.find("16 lowercase hex digits") != std::string::npos, err);
    }
}
