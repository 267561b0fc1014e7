// The embeddings actor with real CAF actors and the real MiniLM embedder: a request's texts come
// back as the embedder's own vectors, in order, with the word pieces counted; bad requests are
// refused naming the field; a flood over the mailbox limit is answered request by request, some
// of it overloaded; a missing model turns the actor off with a note.
#include "tests/support/paths.h"
#include <doctest/doctest.h>

#include <cmath>

#include "actors/embed_actor.h"
#include "engine/embedder.h"

using namespace actorserve;
using namespace std::chrono_literals;

namespace {

embedding_settings settings() {
    embedding_settings s;
    s.enabled = true;
    s.model_dir = test_paths::embed_model_dir();
    return s;
}

embed_reply ask(caf::scoped_actor &self, const embed_actor &a, embed_request req) {
    embed_reply out;
    self->request(a, 60s, std::move(req))
        .receive([&](embed_reply &r) { out = std::move(r); }, [&](caf::error &e) { FAIL("embed: " << caf::to_string(e)); });
    return out;
}

} // namespace

TEST_CASE("embed actor: vectors are the embedder's, in input order, and the tokens are counted") {
    caf::actor_system_config cfg;
    caf::actor_system sys{cfg};
    caf::scoped_actor self{sys};
    std::vector<std::string> notes;
    embed_actor a = spawn_embeddings(sys, settings(), notes);
    REQUIRE(a);
    REQUIRE(notes.size() == 1);
    CHECK(notes[0].find("384 dimensions") != std::string::npos);

    std::string err;
    auto emb = embedder::load(test_paths::embed_model_dir(), err);
    REQUIRE_MESSAGE(emb, err);
    const std::vector<std::string> texts{"How do bees make honey?", "", "Ocean tides follow the Moon.", "déjà vu"};
    embed_reply r = ask(self, a, {texts});
    REQUIRE_MESSAGE(r.ok, r.error);
    REQUIRE(r.vectors.size() == texts.size());
    size_t tokens = 0;
    for (size_t i = 0; i < texts.size(); ++i) {
        const std::vector<float> want = emb->embed(texts[i]);
        REQUIRE(r.vectors[i].size() == want.size());
        double worst = 0;
        for (size_t k = 0; k < want.size(); ++k) worst = std::max(worst, std::fabs(double(r.vectors[i][k]) - want[k]));
        CHECK_MESSAGE(worst < 1e-5, "text " << i << " differs by " << worst); // batched vs alone: summation order
        tokens += emb->count_tokens(texts[i]);
    }
    CHECK(r.tokens == tokens);
    CHECK(emb->count_tokens("") == 2); // [CLS] [SEP]
}

TEST_CASE("embed actor: refuses too many texts, other dimensions and malformed UTF-8, naming the field") {
    caf::actor_system_config cfg;
    caf::actor_system sys{cfg};
    caf::scoped_actor self{sys};
    std::vector<std::string> notes;
    embedding_settings s = settings();
    s.max_inputs = 3;
    embed_actor a = spawn_embeddings(sys, s, notes);
    REQUIRE(a);
    embed_reply r = ask(self, a, {{"a", "b", "c", "d"}});
    CHECK(!r.ok);
    CHECK(r.code == errc::invalid_request);
    CHECK(r.param == "input");
    r = ask(self, a, {{"a"}, 128});
    CHECK(r.param == "dimensions");
    CHECK(r.error == "dimensions must be 384 (all-MiniLM-L6-v2 cannot shorten its vectors), got 128");
    r = ask(self, a, {{"fine", "bad \xC3("}});
    CHECK(r.param == "input[1]");
    CHECK(r.error == "input[1] is not valid UTF-8");
    r = ask(self, a, {{}});
    CHECK(r.param == "input");
    r = ask(self, a, {{"a"}, 384});
    CHECK(r.ok);
}

TEST_CASE("embed actor: a flood over the mailbox limit is answered request by request, some overloaded") {
    caf::actor_system_config cfg;
    caf::actor_system sys{cfg};
    caf::scoped_actor self{sys};
    std::vector<std::string> notes;
    embedding_settings s = settings();
    s.mailbox_limit = 2;
    embed_actor a = spawn_embeddings(sys, s, notes);
    REQUIRE(a);
    constexpr int kFlood = 40;
    for (int i = 0; i < kFlood; ++i)
        self->send(a, embed_request{{"a question about tides, volcanoes and bees, number " + std::to_string(i)}});
    int ok = 0, overloaded = 0, other = 0;
    for (int i = 0; i < kFlood; ++i)
        self->receive(
            [&](embed_reply &r) {
                if (r.ok) ++ok;
                else if (r.code == errc::overloaded && !r.error.empty()) ++overloaded;
                else ++other;
            },
            caf::after(60s) >> [&] { FAIL("request " << i << " was not answered"); });
    bool extra = false;
    self->receive([&](embed_reply &) { extra = true; }, caf::after(300ms) >> [] {});
    CHECK_FALSE(extra);
    CHECK(other == 0);
    CHECK(ok >= 1);
    CHECK(overloaded >= 1);
}

TEST_CASE("embed actor: without its model there is no actor, and the note says why") {
    caf::actor_system_config cfg;
    caf::actor_system sys{cfg};
    std::vector<std::string> notes;
    embedding_settings s = settings();
    s.model_dir = "/nonexistent/minilm";
    embed_actor a = spawn_embeddings(sys, s, notes);
    CHECK(!a);
    REQUIRE(notes.size() == 1);
    CHECK(notes[0].rfind("embeddings off: cannot load the embedding model: /nonexistent/minilm", 0) == 0);
}
