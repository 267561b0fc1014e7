// The RAG actor with real CAF actors, the real MiniLM embedder and the real model: documents go
// in (added, unchanged, replaced, rejected), searches find them with and without filters, the
// file keeps them for the next start, a flood is answered (some of it overloaded) request by
// request, and a chat request grounded in the knowledge base cites its sources.
#include "tests/support/paths.h"
#include "tests/support/temp_dir.h"
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "actors/metrics.h"
#include "actors/rag_actor.h"
#include "include/actorserve/runtime.h"
#include "rag/document.h"

using namespace actorserve;
using namespace std::chrono_literals;
namespace fs = std::filesystem;
using test_support::temp_dir;

namespace {

const std::string kEmbedDir = test_paths::embed_model_dir();

document_input doc(const std::string &id, const std::string &text, const std::string &tag, int64_t timestamp) {
    document_input d;
    d.id = id;
    d.text = text;
    d.meta.source = "kb/" + id + ".txt";
    d.meta.title = id;
    d.meta.tags = {tag};
    d.meta.timestamp = timestamp;
    return d;
}

// Four one-chunk documents on unrelated subjects.
std::vector<document_input> corpus() {
    return {
        doc("volcanoes", "Volcanoes erupt when molten magma rises from the mantle through cracks in the crust "
                         "and pours out as lava and ash.", "geology", 1700000000),
        doc("bees", "Honey bees collect nectar from flowers and turn it into honey inside the hive; they "
                    "pollinate crops as they go.", "biology", 1710000000),
        doc("rust", "The Rust compiler's borrow checker rejects programs where a value is mutated while "
                    "it is borrowed.", "programming", 1720000000),
        doc("tides", "Ocean tides rise and fall twice a day, pulled by the gravity of the Moon and, less, "
                     "of the Sun.", "astronomy", 1730000000),
    };
}

rag_runtime_settings settings(const std::string &file) {
    rag_runtime_settings s;
    s.enabled = true;
    s.embed_model_dir = kEmbedDir;
    s.file = file;
    return s;
}

rag_ingest_reply ingest(caf::scoped_actor &self, const rag_actor &rag, std::vector<document_input> docs) {
    rag_ingest_reply out;
    self->request(rag, 120s, rag_ingest{std::move(docs)})
        .receive([&](rag_ingest_reply &r) { out = std::move(r); },
                 [&](caf::error &e) { FAIL("ingest: " << caf::to_string(e)); });
    return out;
}

rag_search_reply search(caf::scoped_actor &self, const rag_actor &rag, search_request req) {
    rag_search_reply out;
    self->request(rag, 60s, rag_search{std::move(req)})
        .receive([&](rag_search_reply &r) { out = std::move(r); },
                 [&](caf::error &e) { FAIL("search: " << caf::to_string(e)); });
    return out;
}

search_request query(const std::string &q, size_t top_k, retrieval_mode mode = retrieval_mode::hybrid) {
    search_request r;
    r.query = q;
    r.top_k = top_k;
    r.mode = mode;
    return r;
}

bool remove(caf::scoped_actor &self, const rag_actor &rag, const std::string &id) {
    bool out = false;
    self->request(rag, 60s, delete_atom::value, id)
        .receive([&](bool removed) { out = removed; }, [&](caf::error &e) { FAIL("delete: " << caf::to_string(e)); });
    return out;
}

rag_status status_of(caf::scoped_actor &self, const rag_actor &rag) {
    rag_status out;
    self->request(rag, 60s, get_atom::value)
        .receive([&](rag_status &s) { out = std::move(s); }, [&](caf::error &e) { FAIL("status: " << caf::to_string(e)); });
    return out;
}

metrics_snapshot metrics_of(caf::scoped_actor &self, const metrics_source &metrics) {
    metrics_snapshot snap;
    self->request(metrics, 10s, get_atom::value)
        .receive([&](metrics_snapshot &s) { snap = s; }, [&](caf::error &e) { FAIL("metrics: " << caf::to_string(e)); });
    return snap;
}

std::vector<std::string> statuses(const rag_ingest_reply &r) {
    std::vector<std::string> out;
    for (const auto &x : r.results) out.push_back(x.doc_id + ":" + x.status + ":" + std::to_string(x.chunks));
    return out;
}

std::vector<std::string> doc_ids(const std::vector<passage> &ps) {
    std::vector<std::string> out;
    for (const auto &p : ps) out.push_back(p.doc_id);
    return out;
}

struct outcome {
    std::string text;
    std::optional<chat_done> done;
    std::optional<chat_error> error;
};

outcome chat(caf::scoped_actor &self, const chat_session &session, chat_request r) {
    outcome out;
    const int64_t id = r.id;
    self->send(session, std::move(r));
    bool ended = false;
    while (!ended) {
        self->receive(
            [&](chat_delta &d) { CHECK(d.id == id); out.text += d.text; },
            [&](chat_done &d) { out.done = std::move(d); ended = true; },
            [&](chat_error &e) { out.error = std::move(e); ended = true; },
            caf::after(120s) >> [&] { FAIL("the request did not end"); });
    }
    return out;
}

chat_request ask(int64_t id, std::vector<chat_message> messages, std::optional<rag_options> rag, int max_tokens = 6) {
    chat_request r{id, std::move(messages), {}, max_tokens, {}};
    r.sampling.temperature = 0.0f;
    r.rag = std::move(rag);
    return r;
}

runtime_config small_config() {
    runtime_config c;
    c.model_path = test_paths::model();
    c.n_threads = 2;
    c.n_ctx = 1024;
    c.max_seqs = 4;
    c.step_tokens = 256;
    c.kv_capacity_mib = 32;
    return c;
}

} // namespace

TEST_CASE("rag actor: documents are added, unchanged, replaced, found by query and filter, deleted, and kept in the file") {
    temp_dir dir("lifecycle");
    const std::string file = (dir.path / "kb" / "rag.kb").string(); // its folder is made at start
    caf::actor_system_config cfg;
    caf::actor_system sys{cfg};
    caf::scoped_actor self{sys};
    metrics_actor metrics = spawn_metrics(sys, std::chrono::milliseconds(5000));
    std::vector<std::string> notes;
    rag_actor rag = spawn_rag(sys, settings(file), metrics, notes);
    REQUIRE_MESSAGE(rag, (notes.empty() ? "" : notes.back()));
    REQUIRE(notes.size() == 1);
    CHECK(notes[0] == "knowledge base: " + file + " not found, starting empty");

    // new documents are chunked and embedded by the worker, answered in the request's order
    auto first = ingest(self, rag, corpus());
    REQUIRE(first.ok);
    CHECK(first.error == "");
    CHECK(statuses(first) == std::vector<std::string>{"volcanoes:added:1", "bees:added:1", "rust:added:1", "tides:added:1"});

    // the same again costs nothing; a changed one replaces, a bad one is rejected by name
    auto again = ingest(self, rag, corpus());
    REQUIRE(again.ok);
    CHECK(statuses(again) == std::vector<std::string>{"volcanoes:unchanged:1", "bees:unchanged:1", "rust:unchanged:1",
                                                      "tides:unchanged:1"});
    document_input bad = doc("", "a document without an id", "none", 0);
    auto changed = corpus();
    changed[1].text += " A hive holds one queen.";
    auto mixed = ingest(self, rag, {changed[0], changed[1], bad});
    REQUIRE(mixed.ok);
    CHECK(statuses(mixed) == std::vector<std::string>{"volcanoes:unchanged:1", "bees:replaced:1", ":rejected:0"});
    CHECK(mixed.results[2].error == check_document(bad));
    CHECK(mixed.results[2].error != "");

    // searches: the obvious document first, in every mode
    auto hit = search(self, rag, query("Why do volcanoes erupt lava?", 4));
    REQUIRE(hit.ok);
    REQUIRE(hit.passages.size() == 4);
    CHECK(hit.passages[0].doc_id == "volcanoes");
    CHECK(hit.passages[0].source == "kb/volcanoes.txt");
    auto dense = search(self, rag, query("insects that make something sweet", 2, retrieval_mode::dense));
    REQUIRE(dense.ok);
    REQUIRE(dense.passages.size() == 2);
    CHECK(dense.passages[0].doc_id == "bees");
    auto lexical = search(self, rag, query("gravity of the Moon", 1, retrieval_mode::bm25));
    REQUIRE(lexical.ok);
    CHECK(doc_ids(lexical.passages) == std::vector<std::string>{"tides"});

    // filters restrict what is ranked, whatever the query says
    search_request by_tag = query("Why do volcanoes erupt lava?", 4);
    by_tag.filters.tags = {"biology", "programming"};
    auto tagged = search(self, rag, by_tag);
    REQUIRE(tagged.ok);
    std::vector<std::string> ids = doc_ids(tagged.passages);
    std::sort(ids.begin(), ids.end());
    CHECK(ids == std::vector<std::string>{"bees", "rust"});
    search_request by_time = query("Why do volcanoes erupt lava?", 4);
    by_time.filters.since = 1715000000;
    by_time.filters.sources = {"kb/tides.txt"};
    auto timed = search(self, rag, by_time);
    REQUIRE(timed.ok);
    CHECK(doc_ids(timed.passages) == std::vector<std::string>{"tides"});

    // a caller's mistakes are errors by name, not empty results
    auto empty = search(self, rag, query("  ", 4));
    CHECK_FALSE(empty.ok);
    CHECK(empty.code == errc::invalid_request);
    CHECK(empty.error == "query is empty");
    auto zero = search(self, rag, query("volcanoes", 0));
    CHECK_FALSE(zero.ok);
    CHECK(zero.code == errc::invalid_request);
    CHECK(zero.error != "");

    // deletion: once true, then false
    CHECK(remove(self, rag, "rust"));
    CHECK_FALSE(remove(self, rag, "rust"));
    rag_status st = status_of(self, rag);
    CHECK(st.stats.documents == 3);
    CHECK(st.stats.chunks == 3);
    REQUIRE(st.documents.size() == 3);
    CHECK(st.documents[0].id == "bees");
    CHECK(st.documents[1].id == "tides");
    CHECK(st.documents[2].id == "volcanoes");

    const metrics_snapshot m = metrics_of(self, metrics);
    CHECK(m.rag.enabled);
    CHECK(m.rag.documents == 3);
    CHECK(m.rag.chunks == 3);
    CHECK(m.rag.documents_added == 4);
    CHECK(m.rag.documents_unchanged == 5);
    CHECK(m.rag.documents_replaced == 1);
    CHECK(m.rag.documents_rejected == 1);
    CHECK(m.rag.documents_deleted == 1);
    CHECK(m.rag.chunks_embedded == 5);
    CHECK(m.rag.searches == 5);
    CHECK(m.rag.search_errors == 2);
    CHECK(m.rag.search_ms.count() == 5);
    CHECK(m.rag.overloaded == 0);

    // the next start finds what was committed, and searches it without ingesting again
    self->send_exit(rag, caf::exit_reason::user_shutdown);
    notes.clear();
    rag_actor reloaded = spawn_rag(sys, settings(file), metrics_actor{}, notes);
    REQUIRE(reloaded);
    REQUIRE(notes.size() == 1);
    CHECK(notes[0] == "knowledge base: 3 documents / 3 chunks loaded from " + file);
    CHECK(status_of(self, reloaded).stats.documents == 3);
    auto after = search(self, reloaded, query("honey and the queen of the hive", 1));
    REQUIRE(after.ok);
    CHECK(doc_ids(after.passages) == std::vector<std::string>{"bees"});
    auto kept = ingest(self, reloaded, {changed[1]});
    CHECK(statuses(kept) == std::vector<std::string>{"bees:unchanged:1"});
    self->send_exit(reloaded, caf::exit_reason::user_shutdown);
    self->send_exit(metrics, caf::exit_reason::user_shutdown);
}

TEST_CASE("rag actor: a flood over the mailbox limit is answered request by request, some overloaded") {
    caf::actor_system_config cfg;
    caf::actor_system sys{cfg};
    caf::scoped_actor self{sys};
    metrics_actor metrics = spawn_metrics(sys, std::chrono::milliseconds(5000));
    rag_runtime_settings s = settings("");
    s.mailbox_limit = 2;
    std::vector<std::string> notes;
    rag_actor rag = spawn_rag(sys, s, metrics, notes);
    REQUIRE(rag);
    CHECK(notes == std::vector<std::string>{"knowledge base kept in memory only (no file)"});
    // Each hybrid search embeds its query (milliseconds); the whole flood is sent in microseconds.
    constexpr int kFlood = 40;
    for (int i = 0; i < kFlood; ++i)
        self->send(rag, rag_search{query("how do tides and volcanoes and bees work, question " + std::to_string(i), 3)});
    int ok = 0, overloaded = 0, other = 0;
    for (int i = 0; i < kFlood; ++i) {
        self->receive(
            [&](rag_search_reply &r) {
                if (r.ok) ++ok;
                else if (r.code == errc::overloaded && r.error != "") ++overloaded;
                else ++other;
            },
            caf::after(60s) >> [&] { FAIL("request " << i << " was not answered"); });
    }
    bool extra = false;
    self->receive([&](rag_search_reply &) { extra = true; }, caf::after(300ms) >> [] {});
    CHECK_FALSE(extra);   // answered once each
    CHECK(ok + overloaded == kFlood);
    CHECK(other == 0);
    CHECK(ok >= 1);
    CHECK(overloaded >= 1);
    const metrics_snapshot m = metrics_of(self, metrics);
    CHECK(m.rag.overloaded == static_cast<uint64_t>(overloaded));
    CHECK(m.rag.searches == static_cast<uint64_t>(ok));

    // an ingest and a delete with a flood behind them are refused the same way
    auto filler = [&] {
        for (int i = 0; i < 10; ++i) self->send(rag, rag_search{query("filler question " + std::to_string(i), 1)});
    };
    filler();
    self->send(rag, rag_ingest{{doc("late", "A document sent in a flood.", "none", 0)}});
    self->send(rag, delete_atom::value, std::string("late"));
    filler();
    int searches = 0, ingests = 0, deletes = 0;
    bool ingest_overloaded = false, delete_overloaded = false;
    while (searches + ingests + deletes < 22) {
        self->receive([&](rag_search_reply &) { ++searches; },
                      [&](rag_ingest_reply &r) {
                          ++ingests;
                          ingest_overloaded = !r.ok && r.code == errc::overloaded;
                      },
                      [&](bool) { ++deletes; },
                      [&](caf::error &e) {
                          ++deletes;
                          delete_overloaded = e == rag_error(errc::overloaded);
                      },
                      caf::after(60s) >> [&] { FAIL("not every request was answered"); });
    }
    CHECK(ingests == 1);
    CHECK(deletes == 1);
    CHECK(ingest_overloaded);
    CHECK(delete_overloaded);
    self->send_exit(rag, caf::exit_reason::user_shutdown);
    self->send_exit(metrics, caf::exit_reason::user_shutdown);
}

TEST_CASE("runtime: a chat request with rag is grounded in the knowledge base and lists its sources") {
    caf::actor_system_config cfg;
    runtime::tune(cfg);
    caf::actor_system sys{cfg};
    runtime_config c = small_config();
    c.rag = settings("");
    c.rag.default_top_k = 2;
    c.cache.enabled = true;   // to see that a grounded request never asks the caches
    c.cache.semantic = false;
    std::string err;
    auto rt = runtime::start(sys, c, err);
    REQUIRE_MESSAGE(rt, err);
    REQUIRE(rt->rag());
    caf::scoped_actor self{sys};
    auto in = ingest(self, rt->rag(), corpus());
    REQUIRE(in.ok);

    const std::string question = "What makes a volcano erupt?";
    actorserve::chat_session s = rt->open_session();
    outcome grounded = chat(self, s, ask(1, {{"user", question}}, rag_options{}));
    REQUIRE_MESSAGE(grounded.done, (grounded.error ? grounded.error->message : ""));
    const chat_done &d = *grounded.done;
    CHECK(d.text == grounded.text);
    CHECK(d.text != "");
    CHECK(d.cached == "");
    REQUIRE(d.sources.size() == 2); // the runtime's default top_k, both within the budget
    for (size_t i = 0; i < d.sources.size(); ++i) CHECK(d.sources[i].number == static_cast<int>(i + 1));
    CHECK(d.sources[0].doc_id == "volcanoes");
    CHECK(d.sources[0].source == "kb/volcanoes.txt");
    CHECK(d.sources[0].title == "volcanoes");
    CHECK(d.sources[0].chunk_id != d.sources[1].chunk_id);
    CHECK(d.sources[0].score >= d.sources[1].score);
    CHECK_FALSE(d.sources[0].flagged);

    // the passages were in the prompt: the same question without them is shorter
    actorserve::chat_session plain = rt->open_session();
    outcome bare = chat(self, plain, ask(2, {{"user", question}}, std::nullopt));
    REQUIRE(bare.done);
    CHECK(bare.done->sources.empty());
    CHECK(d.usage.prompt_tokens > bare.done->usage.prompt_tokens + 40);

    // the conversation keeps the question as asked: the next turn's prompt is what a session
    // given the same turns without retrieval renders
    outcome next = chat(self, s, ask(3, {{"user", "And why?"}}, std::nullopt));
    REQUIRE(next.done);
    actorserve::chat_session replay = rt->open_session();
    outcome same = chat(self, replay, ask(4, {{"user", question}, {"assistant", d.text}, {"user", "And why?"}}, std::nullopt));
    REQUIRE(same.done);
    CHECK(next.done->usage.prompt_tokens == same.done->usage.prompt_tokens);

    // filters and top_k from the request
    rag_options only_bees;
    only_bees.top_k = 3;
    only_bees.filters.tags = {"biology"};
    outcome filtered = chat(self, s, ask(5, {{"user", question}}, only_bees));
    REQUIRE(filtered.done);
    REQUIRE(filtered.done->sources.size() == 1);
    CHECK(filtered.done->sources[0].number == 1);
    CHECK(filtered.done->sources[0].doc_id == "bees");

    // a search error reaches the client with its code
    rag_options too_many;
    too_many.top_k = 1000;
    outcome refused = chat(self, s, ask(6, {{"user", question}}, too_many));
    REQUIRE(refused.error);
    CHECK(refused.error->code == errc::invalid_request);
    CHECK(refused.error->message != "");

    const metrics_snapshot m = metrics_of(self, rt->metrics());
    CHECK(m.rag.searches == 2);
    CHECK(m.rag.search_errors == 1);
    CHECK(m.cache.lookups == 3); // bare, next and same; never a grounded one

    // a knowledge base that has stopped gives errors, never a hang
    self->send_exit(rt->rag(), caf::exit_reason::user_shutdown);
    outcome gone = chat(self, s, ask(7, {{"user", question}}, rag_options{}));
    REQUIRE(gone.error);
    CHECK(gone.error->message.find("the knowledge base stopped") != std::string::npos);
    outcome later = chat(self, s, ask(8, {{"user", question}}, rag_options{}));
    REQUIRE(later.error);
    CHECK(later.error->message.find("the knowledge base stopped") != std::string::npos);
    for (auto &a : {s, plain, replay}) self->send_exit(a, caf::exit_reason::user_shutdown);
}

TEST_CASE("runtime: a chat request asking for rag on a runtime without it is refused as invalid") {
    caf::actor_system_config cfg;
    runtime::tune(cfg);
    caf::actor_system sys{cfg};
    std::string err;
    auto rt = runtime::start(sys, small_config(), err);
    REQUIRE_MESSAGE(rt, err);
    CHECK_FALSE(rt->rag());
    caf::scoped_actor self{sys};
    actorserve::chat_session s = rt->open_session();
    outcome r = chat(self, s, ask(1, {{"user", "What makes a volcano erupt?"}}, rag_options{}));
    REQUIRE(r.error);
    // the code the network answers too (404), for the chat field and the /v1/rag routes alike
    CHECK(r.error->code == errc::not_found);
    CHECK(r.error->message.rfind("retrieval (rag) is not enabled on this server", 0) == 0);
    // the session is free again: the same question without rag is answered
    outcome plain = chat(self, s, ask(2, {{"user", "What makes a volcano erupt?"}}, std::nullopt));
    CHECK(plain.done);
    self->send_exit(s, caf::exit_reason::user_shutdown);
}
