// Retrieval through the whole server: documents posted, found again unchanged, replaced, listed,
// searched (with filters), deleted; bodies refused with the field named; a body over
// [rag] max_body_bytes refused with 413; chat answers over WebSocket and the OpenAI API carrying
// their sources. Real model, real embedder (models/all-MiniLM-L6-v2), real knowledge base on a
// temporary file. Documents are one short chunk each: embedding is the slow part.
#include "tests/support/temp_dir.h"
#include "tests/support/test_client.h"

#include <filesystem>
#include <fstream>

#include "net/rag_api.h"

using namespace testnet;

namespace {

namespace fs = std::filesystem;
using test_support::temp_dir;

actorserve::server_config rag_config(const fs::path &dir) {
    auto c = server_fixture::config();
    c.runtime.rag.enabled = true;
    c.runtime.rag.file = (dir / "knowledge.rag").string();
    c.runtime.rag.embed_model_dir = test_paths::embed_model_dir();
    c.runtime.rag.budget_tokens = 256; // the test context is 1024 positions
    c.rag_max_body_bytes = 16384;
    return c;
}

const char *kDocs = R"({"documents": [
  {"id": "cats", "text": "Cats are small domesticated carnivores. A house cat sleeps for about fifteen hours a day.",
   "source": "cats.md", "title": "Cats", "tags": ["animals"], "timestamp": "2024-05-01"},
  {"id": "rust", "text": "The Rust compiler checks ownership and borrowing at compile time, so data races are caught early.",
   "tags": ["code"]},
  {"id": "etna", "text": "Mount Etna is an active stratovolcano on the east coast of Sicily, the highest in Italy south of the Alps.",
   "tags": ["geo"]}
]})";

json::object body_of(const http_reply &r) {
    auto v = parse_json(r.body);
    REQUIRE_MESSAGE(v, "not JSON: " << r.body);
    REQUIRE_MESSAGE(v->is_object(), r.body);
    return v->get_object();
}

// The statuses of a POST /v1/rag/documents answer, in order, and its chunk counts.
std::vector<std::string> statuses(const http_reply &r, std::vector<int64_t> *chunks = nullptr) {
    REQUIRE_MESSAGE(r.status == 200, r.status << " " << r.body);
    const json::object o = body_of(r);
    const json::value *results = field(o, "results");
    REQUIRE(results);
    REQUIRE(results->is_array());
    std::vector<std::string> out;
    for (const json::value &x : results->get_array()) {
        out.push_back(str_of(x.get_object(), "status"));
        if (chunks) chunks->push_back(int_of(x.get_object(), "chunks"));
    }
    return out;
}

std::vector<json::object> search(uint16_t port, const json::object &q) {
    const http_reply r = http_post(port, "/v1/rag/search", json::serialize(q));
    REQUIRE_MESSAGE(r.status == 200, r.status << " " << r.body);
    const json::object o = body_of(r);
    CHECK(num_of(o, "elapsed_ms").has_value());
    const json::value *p = field(o, "passages");
    REQUIRE(p);
    REQUIRE(p->is_array());
    std::vector<json::object> out;
    for (const json::value &x : p->get_array()) out.push_back(x.get_object());
    return out;
}

std::vector<std::string> doc_ids(const std::vector<json::object> &passages) {
    std::vector<std::string> out;
    for (const json::object &p : passages) out.push_back(str_of(p, "doc_id"));
    return out;
}

// The error object of an OpenAI-style error body.
json::object error_of(const http_reply &r) {
    const json::object o = body_of(r);
    const json::object *e = obj_of(o, "error");
    REQUIRE_MESSAGE(e, r.body);
    return *e;
}

} // namespace

TEST_CASE("rag api: the rag field and search bodies are read with the field named") {
    simdjson::dom::parser parser;
    auto rag_of = [&](std::string_view text, std::optional<actorserve::rag_options> &out) {
        simdjson::dom::element v;
        REQUIRE(!parser.parse(text.data(), text.size()).get(v));
        return actorserve::read_rag_options(v, "rag", out);
    };
    std::optional<actorserve::rag_options> opt;
    CHECK_FALSE(rag_of("true", opt));
    REQUIRE(opt);
    CHECK(opt->top_k == 0); // the runtime's default
    CHECK_FALSE(rag_of("false", opt));
    CHECK_FALSE(opt);
    CHECK_FALSE(rag_of(R"({"top_k": 3, "mode": "bm25", "budget_tokens": 300,
                           "filters": {"tags": ["a", "b"], "source": "x.md", "since": "2024-05-01", "until": 1800000000}})",
                       opt));
    REQUIRE(opt);
    CHECK(opt->top_k == 3);
    CHECK(opt->mode == actorserve::retrieval_mode::bm25);
    CHECK(opt->budget_tokens == 300);
    CHECK(opt->filters.tags == std::vector<std::string>{"a", "b"});
    CHECK(opt->filters.sources == std::vector<std::string>{"x.md"});
    CHECK(opt->filters.since == 1714521600);
    CHECK(opt->filters.until == 1800000000);

    auto p = rag_of(R"({"top_k": 0})", opt);
    REQUIRE(p);
    CHECK(p->message == "rag.top_k must be in [1, 50], got 0");
    CHECK(p->code == actorserve::errc::unprocessable);
    p = rag_of(R"({"mode": "fuzzy"})", opt);
    REQUIRE(p);
    CHECK(p->message == "rag.mode must be hybrid, bm25 or dense, got 'fuzzy'");
    CHECK(p->code == actorserve::errc::invalid_request);
    p = rag_of(R"({"filters": {"since": "yesterday"}})", opt);
    REQUIRE(p);
    CHECK(p->param == "rag.filters.since");
    p = rag_of(R"({"filters": {"colour": "red"}})", opt);
    REQUIRE(p);
    CHECK(p->param == "rag.filters.colour");
    p = rag_of(R"({"filters": {"since": 20, "until": 10}})", opt);
    REQUIRE(p);
    CHECK(p->message == "rag.filters.since is after rag.filters.until");
    p = rag_of("3", opt);
    REQUIRE(p);
    CHECK(p->param == "rag");

    CHECK(actorserve::percent_decode("notes%2Fa%20b") == std::optional<std::string>("notes/a b"));
    CHECK(actorserve::percent_decode("a+b") == std::optional<std::string>("a+b"));
    CHECK_FALSE(actorserve::percent_decode("bad%2"));
    CHECK_FALSE(actorserve::percent_decode("bad%zz"));
}

TEST_CASE("rag api: added, unchanged, replaced, listed, searched, filtered, deleted") {
    temp_dir dir;
    server_fixture fx(rag_config(dir.path));
    const uint16_t port = fx.port();

    std::vector<int64_t> chunks;
    CHECK(statuses(http_post(port, "/v1/rag/documents", kDocs), &chunks) ==
          std::vector<std::string>{"added", "added", "added"});
    CHECK(chunks == std::vector<int64_t>{1, 1, 1});
    CHECK(statuses(http_post(port, "/v1/rag/documents", kDocs)) == std::vector<std::string>{"unchanged", "unchanged", "unchanged"});

    // One document alone, changed: replaced. Its metadata is what the new version says.
    const json::object cats2{{"id", "cats"},
                             {"text", "Cats are small domesticated carnivores. A house cat sleeps for about sixteen hours a day."},
                             {"source", "cats.md"},
                             {"title", "House cats"},
                             {"tags", json::array{"animals"}},
                             {"timestamp", "2024-05-01"}};
    CHECK(statuses(http_post(port, "/v1/rag/documents", json::serialize(cats2))) == std::vector<std::string>{"replaced"});

    // Without an id: named by its source.
    CHECK(statuses(http_post(port, "/v1/rag/documents",
                             R"({"text": "Bees make honey from nectar.", "source": "notes/a b"})")) ==
          std::vector<std::string>{"added"});

    const http_reply list = http_get(port, "/v1/rag/documents");
    REQUIRE_MESSAGE(list.status == 200, list.body);
    const json::object lo = body_of(list);
    CHECK(int_of(lo, "chunks") == 4);
    const json::value *docs = field(lo, "documents");
    REQUIRE(docs);
    REQUIRE(docs->is_array());
    std::vector<std::string> ids;
    for (const json::value &d : docs->get_array()) ids.push_back(str_of(d.get_object(), "id"));
    CHECK(ids == std::vector<std::string>{"cats", "etna", "notes/a b", "rust"});
    const json::object &cats = docs->get_array()[0].get_object();
    CHECK(str_of(cats, "source") == "cats.md");
    CHECK(str_of(cats, "title") == "House cats");
    CHECK(int_of(cats, "timestamp") == 1714521600);
    CHECK(int_of(cats, "chunks") == 1);
    CHECK(json::serialize(*field(cats, "tags")) == R"(["animals"])");

    // The expected document first, whatever the retriever.
    auto hits = search(port, {{"query", "How many hours does a cat sleep?"}, {"top_k", 2}});
    REQUIRE(hits.size() == 2);
    CHECK(str_of(hits[0], "doc_id") == "cats");
    CHECK(str_of(hits[0], "source") == "cats.md");
    CHECK(str_of(hits[0], "text").find("sixteen hours") != std::string::npos);
    CHECK(int_of(hits[0], "bm25_rank") == 1);
    CHECK(int_of(hits[0], "dense_rank") == 1);
    CHECK(num_of(hits[0], "score").value_or(0) > num_of(hits[1], "score").value_or(0));
    CHECK(doc_ids(search(port, {{"query", "stratovolcano Sicily"}, {"mode", "bm25"}, {"top_k", 1}})) ==
          std::vector<std::string>{"etna"});
    auto dense = search(port, {{"query", "memory safety in a programming language"}, {"mode", "dense"}, {"top_k", 1}});
    REQUIRE(dense.size() == 1);
    CHECK(str_of(dense[0], "doc_id") == "rust");
    CHECK(int_of(dense[0], "bm25_rank") == 0);

    // Filters restrict before ranking: only what passes comes back, however poor its match.
    CHECK(doc_ids(search(port, {{"query", "cat sleep"}, {"top_k", 3}, {"filters", {{"tags", json::array{"geo"}}}}})) ==
          std::vector<std::string>{"etna"});
    CHECK(doc_ids(search(port, {{"query", "cat sleep"}, {"top_k", 3}, {"filters", {{"source", "notes/a b"}}}})) ==
          std::vector<std::string>{"notes/a b"});
    CHECK(doc_ids(search(port, {{"query", "volcano"}, {"top_k", 3}, {"filters", {{"since", "2024-01-01"}}}})) ==
          std::vector<std::string>{"cats"}); // the only document with a date

    // DELETE, with the id percent-encoded in the path; a second time it is gone.
    http_reply del = http_request(port, http::verb::delete_, "/v1/rag/documents/notes%2Fa%20b");
    REQUIRE_MESSAGE(del.status == 200, del.body);
    CHECK(del.body == R"({"id":"notes/a b","deleted":true})");
    del = http_request(port, http::verb::delete_, "/v1/rag/documents/notes%2Fa%20b");
    CHECK(del.status == 404);
    CHECK(str_of(error_of(del), "type") == "not_found_error");
    auto left = doc_ids(search(port, {{"query", "honey bees"}, {"top_k", 5}}));
    std::sort(left.begin(), left.end());
    CHECK(left == std::vector<std::string>{"cats", "etna", "rust"});

    REQUIRE(fx.wait_metrics([](const auto &m) { return m.rag.documents == 3 && m.rag.documents_deleted == 1; }, 10s));
    const auto m = fx.metrics();
    CHECK(m.rag.enabled);
    CHECK(m.rag.chunks == 3);
    CHECK(m.rag.documents_added == 4);
    CHECK(m.rag.documents_unchanged == 3);
    CHECK(m.rag.documents_replaced == 1);

    const http_reply prom = http_get(port, "/metrics");
    REQUIRE(prom.status == 200);
    CHECK(prom.body.find("actorserve_rag_documents{model_name=") != std::string::npos);
    CHECK(prom.body.find("actorserve_rag_document_updates_total{") != std::string::npos);
}

TEST_CASE("rag api: malformed bodies, bad fields, wrong methods and bodies over the limit are refused") {
    temp_dir dir;
    server_fixture fx(rag_config(dir.path));
    const uint16_t port = fx.port();

    http_reply r = http_post(port, "/v1/rag/documents", "{\"documents\": [");
    CHECK(r.status == 400);
    CHECK(str_of(error_of(r), "message").rfind("malformed JSON", 0) == 0);

    r = http_post(port, "/v1/rag/documents", R"({"documents": [{"id": "a", "text": "fine"}, {"id": "b"}]})");
    CHECK(r.status == 400);
    const std::string missing = str_of(error_of(r), "message");
    CHECK_MESSAGE(missing.find("documents[1]") != std::string::npos, missing);
    CHECK_MESSAGE(names_word(missing, "text"), missing);

    // Raw bytes that are not UTF-8 (a JSON string cannot hold them escaped).
    r = http_post(port, "/v1/rag/documents", std::string("{\"text\": \"caf\xC3\x28 au lait\"}"));
    CHECK(r.status == 400);
    CHECK_MESSAGE(contains_ci(str_of(error_of(r), "message"), "utf-8"), r.body);

    r = http_post(port, "/v1/rag/documents", R"({"documents": []})");
    CHECK(r.status == 400);
    CHECK(str_of(error_of(r), "param") == "documents");

    // Nothing was stored by any of them.
    const http_reply list = http_get(port, "/v1/rag/documents");
    CHECK(list.body == R"({"documents":[],"chunks":0})");

    r = http_post(port, "/v1/rag/search", R"({"top_k": 2})");
    CHECK(r.status == 400);
    CHECK(str_of(error_of(r), "param") == "query");
    r = http_post(port, "/v1/rag/search", R"({"query": "x", "top_k": "two"})");
    CHECK(r.status == 400);
    CHECK(str_of(error_of(r), "message") == "top_k must be an integer, got a string");
    r = http_post(port, "/v1/rag/search", R"({"query": "x", "top_k": 0})");
    CHECK(r.status == 422);
    r = http_post(port, "/v1/rag/search", R"({"query": "x", "mode": "fuzzy"})");
    CHECK(r.status == 400);
    CHECK(str_of(error_of(r), "param") == "mode");
    r = http_post(port, "/v1/rag/search", R"({"query": "x", "filters": {"until": "soon"}})");
    CHECK(r.status == 400);
    CHECK(str_of(error_of(r), "param") == "filters.until");
    r = http_post(port, "/v1/rag/search", R"({"query": "x", "limit": 3})");
    CHECK(r.status == 400);
    CHECK(str_of(error_of(r), "param") == "limit");

    r = http_get(port, "/v1/rag/search");
    CHECK(r.status == 405);
    r = http_request(port, http::verb::put, "/v1/rag/documents/x");
    CHECK(r.status == 405);
    r = http_get(port, "/v1/rag/nothing");
    CHECK(r.status == 404);

    // Over [rag] max_body_bytes (16384 here): 413, and the connection is closed.
    std::string big = R"({"id": "big", "text": ")" + std::string(20000, 'a') + "\"}";
    r = http_post(port, "/v1/rag/documents", big);
    CHECK(r.status == 413);
    CHECK_MESSAGE(str_of(error_of(r), "message").find("rag.max_body_bytes") != std::string::npos, r.body);
    CHECK(lower(r.header("connection")) == "close");
    // Within it, the same route takes a body larger than nothing else would need.
    std::string ok = R"({"id": "medium", "text": ")" + std::string(200, 'b') + "\"}";
    CHECK(statuses(http_post(port, "/v1/rag/documents", ok)) == std::vector<std::string>{"added"});
}

TEST_CASE("rag chat: answers over WebSocket and the OpenAI API carry their sources") {
    temp_dir dir;
    server_fixture fx(rag_config(dir.path));
    const uint16_t port = fx.port();
    CHECK(statuses(http_post(port, "/v1/rag/documents", kDocs)) == std::vector<std::string>{"added", "added", "added"});

    SUBCASE("WebSocket: done lists the passages given, numbered") {
        ws_client c;
        REQUIRE_MESSAGE(c.connect(port), c.describe_error());
        REQUIRE(c.send_json({{"type", "chat"},
                             {"message", "How long does a house cat sleep?"},
                             {"max_tokens", 8},
                             {"temperature", 0},
                             {"rag", {{"top_k", 2}}}}));
        std::optional<json::object> done;
        while (auto ev = c.read_json()) {
            const std::string type = str_of(*ev, "type");
            REQUIRE_MESSAGE(type != "error", json::serialize(*ev));
            if (type == "done") {
                done = *ev;
                break;
            }
        }
        REQUIRE_MESSAGE(done, c.describe_error());
        const json::value *src = field(*done, "sources");
        REQUIRE_MESSAGE(src, json::serialize(*done));
        REQUIRE(src->is_array());
        REQUIRE(src->get_array().size() == 2);
        const json::object &first = src->get_array()[0].get_object();
        CHECK(int_of(first, "number") == 1);
        CHECK(str_of(first, "doc_id") == "cats");
        CHECK(str_of(first, "source") == "cats.md");
        CHECK(int_of(src->get_array()[1].get_object(), "number") == 2);

        // Without rag, no sources.
        REQUIRE(c.send_json({{"type", "chat"}, {"message", "Hi"}, {"max_tokens", 2}, {"temperature", 0}}));
        while (auto ev = c.read_json()) {
            if (str_of(*ev, "type") != "done") continue;
            CHECK_FALSE(has(*ev, "sources"));
            break;
        }
    }
    SUBCASE("OpenAI, not streamed: sources at the top level") {
        const json::object req{{"messages", json::array{json::object{{"role", "user"}, {"content", "Where is Mount Etna?"}}}},
                               {"max_tokens", 8},
                               {"temperature", 0},
                               {"rag", {{"top_k", 1}, {"filters", {{"tags", json::array{"geo"}}}}}}};
        const http_reply r = http_post(port, "/v1/chat/completions", json::serialize(req));
        REQUIRE_MESSAGE(r.status == 200, r.body);
        const json::object o = body_of(r);
        const json::value *src = field(o, "sources");
        REQUIRE_MESSAGE(src, r.body);
        REQUIRE(src->is_array());
        REQUIRE(src->get_array().size() == 1);
        CHECK(str_of(src->get_array()[0].get_object(), "doc_id") == "etna");
    }
    SUBCASE("OpenAI, streamed: sources on the final chunk") {
        const json::object req{{"messages", json::array{json::object{{"role", "user"}, {"content", "What does the Rust compiler check?"}}}},
                               {"max_tokens", 4},
                               {"temperature", 0},
                               {"stream", true},
                               {"rag", true}};
        const http_reply r = http_post(port, "/v1/chat/completions", json::serialize(req));
        REQUIRE_MESSAGE(r.status == 200, r.body);
        CHECK_MESSAGE(r.error.empty(), r.error << "; got " << r.body);
        int with_sources = 0;
        std::string last_finish;
        for (size_t pos = r.body.find("data: "); pos != std::string::npos; pos = r.body.find("data: ", pos + 6)) {
            const size_t end = r.body.find("\n\n", pos);
            const std::string data = r.body.substr(pos + 6, end - pos - 6);
            if (data == "[DONE]") break;
            auto v = parse_json(data);
            REQUIRE_MESSAGE(v, data);
            if (has(v->get_object(), "sources")) {
                ++with_sources;
                const json::value &choice = v->get_object().at("choices").get_array()[0];
                last_finish = str_of(choice.get_object(), "finish_reason");
            }
        }
        CHECK_MESSAGE(with_sources == 1, r.body);
        CHECK(!last_finish.empty());
    }
}

TEST_CASE("rag api: a save that fails (the file's folder unusable, as on a full disk) is not acknowledged; sent again once it works, it is saved") {
    temp_dir dir;
    const fs::path folder = dir.path / "kb";
    auto cfg = rag_config(dir.path);
    cfg.runtime.rag.file = (folder / "knowledge.rag").string();
    server_fixture fx(cfg);
    const uint16_t port = fx.port();
    // Once the server runs, a file takes the folder's place: every save fails.
    fs::rename(folder, dir.path / "kb.moved");
    { std::ofstream(folder) << "x"; }
    const std::string doc = R"({"id": "cats", "text": "Cats sleep for about fifteen hours a day."})";

    http_reply r = http_post(port, "/v1/rag/documents", doc);
    CHECK(r.status == 500);
    CHECK_MESSAGE(str_of(error_of(r), "message").find("was not saved") != std::string::npos, r.body);
    // in memory it is there, and the server goes on serving
    CHECK(doc_ids(search(port, {{"query", "cat sleep"}, {"top_k", 1}})) == std::vector<std::string>{"cats"});
    REQUIRE(fx.wait_metrics([](const auto &m) { return m.rag.save_errors >= 1; }, 10s));
    CHECK(http_get(port, "/metrics").body.find("actorserve_rag_save_errors_total{") != std::string::npos);

    // The folder becomes usable: the same request, unchanged, is saved this time.
    fs::remove(folder);
    fs::create_directory(folder);
    CHECK(statuses(http_post(port, "/v1/rag/documents", doc)) == std::vector<std::string>{"unchanged"});
    CHECK(fs::exists(folder / "knowledge.rag"));
}

TEST_CASE("rag off: the API answers 404 and a chat asking for retrieval is refused") {
    server_fixture fx; // server_fixture::config(): retrieval off
    const http_reply r = http_post(fx.port(), "/v1/rag/search", R"({"query": "x"})");
    CHECK(r.status == 404);
    CHECK_MESSAGE(str_of(error_of(r), "message").find("retrieval (rag) is not enabled") != std::string::npos, r.body);

    const json::object req{{"messages", json::array{json::object{{"role", "user"}, {"content", "Hi"}}}},
                           {"max_tokens", 2},
                           {"rag", true}};
    const http_reply chat = http_post(fx.port(), "/v1/chat/completions", json::serialize(req));
    CHECK(chat.status == 404);
    CHECK_MESSAGE(str_of(error_of(chat), "message").find("retrieval (rag) is not enabled") != std::string::npos, chat.body);
    const http_reply bad = http_post(fx.port(), "/v1/chat/completions",
                                     R"({"messages": [{"role": "user", "content": "Hi"}], "rag": {"top_k": "x"}})");
    CHECK(bad.status == 400);
    CHECK(str_of(error_of(bad), "param") == "rag.top_k");
}
