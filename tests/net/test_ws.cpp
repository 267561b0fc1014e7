// The WebSocket chat protocol (docs/protocol.md) against the real server and model, in-process:
// streaming, multi-turn sessions, cancel, resume after dropped connections at random points,
// every refusal of bad input, authentication and origins, connection limits, a client that does
// not read, retention, and graceful shutdown.
#include "tests/support/test_client.h"
#include "net/stream_waker.h"

#include <cstdlib>
#include <future>
#include <random>
#include <set>
#include <sstream>

using namespace testnet;
using actorserve::server_config;

namespace {

const char *kPoem = "Write a short poem about the sea.";
const char *kStory = "Write a very long story about a dragon who learns to fly."; // greedy: runs to 1000+ tokens

json::object chat_msg(const std::string &message, int max_tokens, const std::string &session = {}) {
    json::object o{{"type", "chat"}, {"message", message}, {"max_tokens", max_tokens}, {"temperature", 0}};
    if (!session.empty()) o["session_id"] = session;
    return o;
}

// token: the resume_token of the request's start event, which a connection other than the one
// that created the request must show.
json::object resume_msg(const std::string &request_id, int64_t last_event_id, const std::string &token = {}) {
    json::object o{{"type", "resume"}, {"request_id", request_id}, {"last_event_id", last_event_id}};
    if (!token.empty()) o["resume_token"] = token;
    return o;
}

json::object cancel_msg(const std::string &request_id) { return {{"type", "cancel"}, {"request_id", request_id}}; }

// One request's events as a client saw them.
struct stream {
    std::vector<json::object> events;
    std::string request_id, session_id, resume_token;
    std::string text; // the token events' texts joined
    std::optional<json::object> done;
    std::optional<json::object> error;
    std::string problem; // why reading stopped before the request ended
};

// Reads events until the request ends with done or error, or `limit` events have come, or the
// connection fails. Events of the request `skip` (one this connection no longer follows, whose
// last events may still be in flight) are passed over.
stream read_request(ws_client &c, size_t limit = SIZE_MAX, ms timeout = kIoTimeout, const std::string &skip = {}) {
    stream s;
    while (s.events.size() < limit) {
        auto ev = c.read_json(timeout);
        if (!ev) {
            s.problem = c.bad_json() ? "not a JSON object: " + c.last_raw() : c.describe_error();
            break;
        }
        if (!skip.empty() && str_of(*ev, "request_id") == skip) continue;
        const std::string type = str_of(*ev, "type");
        if (type == "start") {
            s.request_id = str_of(*ev, "request_id");
            s.session_id = str_of(*ev, "session_id");
            s.resume_token = str_of(*ev, "resume_token");
        }
        if (type == "token") s.text += str_of(*ev, "text");
        s.events.push_back(*ev);
        if (type == "done") {
            s.done = *ev;
            break;
        }
        if (type == "error") {
            s.error = *ev;
            break;
        }
    }
    return s;
}

std::string dump(const json::object &o) { return json::serialize(o); }

// A whole request's stream: `start` (event 0), `token` events one id apart, with non-empty text,
// all with the request's id, then `done` whose text is the tokens joined; usage and timings sane.
void check_stream(const stream &s, int max_tokens, bool streamed = true) {
    REQUIRE_MESSAGE(s.done, "the request did not end with done: " << s.problem
                                << (s.error ? " error: " + dump(*s.error) : std::string()));
    REQUIRE(s.events.size() >= 2);
    const json::object &start = s.events.front();
    CHECK(str_of(start, "type") == "start");
    CHECK(int_of(start, "event_id") == 0);
    // Ids carry 128 bits: a prefix and 32 lowercase hex digits.
    const auto id_ok = [](const std::string &id, std::string_view prefix) {
        return id.size() == prefix.size() + 32 && id.starts_with(prefix) &&
               id.find_first_not_of("0123456789abcdef", prefix.size()) == std::string::npos;
    };
    CHECK_MESSAGE(id_ok(s.request_id, "r-"), s.request_id);
    CHECK_MESSAGE(id_ok(s.session_id, "s-"), s.session_id);
    for (size_t i = 0; i < s.events.size(); ++i) {
        const json::object &e = s.events[i];
        INFO("event " << i << ": " << dump(e));
        CHECK(int_of(e, "event_id") == static_cast<int64_t>(i));
        CHECK(str_of(e, "request_id") == s.request_id);
        if (i > 0 && i + 1 < s.events.size()) {
            CHECK(str_of(e, "type") == "token");
            CHECK(!str_of(e, "text").empty());
        }
    }
    if (!streamed) CHECK(s.events.size() == 2); // start, done
    const json::object &d = *s.done;
    if (streamed) CHECK(str_of(d, "text") == s.text);
    const std::string reason = str_of(d, "finish_reason");
    CHECK_MESSAGE((reason == "stop" || reason == "length"), "finish_reason " << reason);
    const json::object *usage = obj_of(d, "usage");
    REQUIRE_MESSAGE(usage, "done has no usage: " << dump(d));
    const int64_t prompt = int_of(*usage, "prompt_tokens");
    const int64_t cached = int_of(*usage, "cached_tokens");
    const int64_t completion = int_of(*usage, "completion_tokens");
    CHECK(prompt > 0);
    CHECK(cached >= 0);
    CHECK(cached <= prompt);
    CHECK(completion >= 1);
    CHECK(completion <= max_tokens);
    if (reason == "length") CHECK(completion == max_tokens);
    if (streamed) CHECK(static_cast<int64_t>(s.events.size()) - 2 <= completion); // a token event holds >= 1 token
    const json::object *timings = obj_of(d, "timings");
    REQUIRE_MESSAGE(timings, "done has no timings: " << dump(d));
    const auto ttft = num_of(*timings, "ttft_ms");
    const auto total = num_of(*timings, "total_ms");
    const auto tps = num_of(*timings, "tokens_per_s");
    REQUIRE((ttft && total && tps));
    CHECK(*ttft >= 0);
    CHECK(*total >= *ttft);
    CHECK(*tps >= 0);
}

// Runs one chat on a fresh connection and returns its whole stream.
stream run_chat(uint16_t port, const json::object &msg) {
    ws_client c;
    REQUIRE_MESSAGE(c.connect(port), c.describe_error());
    REQUIRE(c.send_json(msg));
    return read_request(c);
}

// A short chat on `c` that must be answered: the connection is still serving.
void check_serves(ws_client &c, const std::string &what, const std::string &skip = {}) {
    INFO("after " << what);
    REQUIRE_MESSAGE(c.send_json(chat_msg("Say hi.", 2)), c.describe_error());
    stream s = read_request(c, SIZE_MAX, kIoTimeout, skip);
    REQUIRE_MESSAGE(s.done, "no done: " << s.problem << (s.error ? " error: " + dump(*s.error) : std::string()));
    check_stream(s, 2);
}

// The `error` event an input provokes. A `start` may come first where allow_start (the request
// was accepted before the problem showed); then the error must be that request's event 1.
struct refusal {
    std::optional<json::object> error;
    bool started = false;
    std::string problem;
};

refusal read_refusal(ws_client &c, bool allow_start) {
    refusal r;
    std::string rid;
    for (int i = 0; i < 3; ++i) {
        auto ev = c.read_json();
        if (!ev) {
            r.problem = c.bad_json() ? "not a JSON object: " + c.last_raw() : c.describe_error();
            return r;
        }
        const std::string type = str_of(*ev, "type");
        if (type == "start" && allow_start && !r.started) {
            r.started = true;
            rid = str_of(*ev, "request_id");
            continue;
        }
        if (type != "error") {
            r.problem = "expected an error event, got " + dump(*ev);
            return r;
        }
        if (r.started) {
            CHECK(str_of(*ev, "request_id") == rid);
            CHECK(int_of(*ev, "event_id") == 1);
        }
        r.error = *ev;
        return r;
    }
    r.problem = "no error event";
    return r;
}

uint32_t test_seed() {
    if (const char *s = std::getenv("ACTORSERVE_TEST_SEED")) return static_cast<uint32_t>(std::strtoul(s, nullptr, 10));
    return std::random_device{}();
}

} // namespace

TEST_CASE("ws: a chat streams start, tokens one event_id apart, then done with the tokens joined") {
    server_fixture fx;
    stream s = run_chat(fx.port(), chat_msg("What is the capital of France?", 24));
    check_stream(s, 24);
    MESSAGE("answer: " << s.text);

    // stream: false: no token events, the whole text in done (greedy: the same text)
    json::object quiet = chat_msg("What is the capital of France?", 24);
    quiet["stream"] = false;
    stream q = run_chat(fx.port(), quiet);
    check_stream(q, 24, false);
    REQUIRE(q.done);
    CHECK(str_of(*q.done, "text") == s.text);
    CHECK(q.session_id != s.session_id); // no session_id: a new session each time
}

TEST_CASE("ws: a second chat on the session continues it and reuses the KV prefix; a third while busy is refused") {
    server_fixture fx;
    ws_client c;
    REQUIRE(c.connect(fx.port()));
    json::object first{{"type", "chat"},
                       {"messages", json::array{json::object{{"role", "system"},
                                                             {"content", "You are a helpful assistant who answers "
                                                                         "briefly and kindly, in plain words."}},
                                                json::object{{"role", "user"}, {"content", "What is the capital of France?"}}}},
                       {"max_tokens", 24},
                       {"temperature", 0}};
    REQUIRE(c.send_json(first));
    stream s1 = read_request(c);
    check_stream(s1, 24);
    REQUIRE(s1.done);

    REQUIRE(c.send_json(chat_msg("And of Spain?", 8, s1.session_id)));
    stream s2 = read_request(c);
    check_stream(s2, 8);
    REQUIRE(s2.done);
    CHECK(s2.session_id == s1.session_id);
    CHECK(s2.request_id != s1.request_id);
    const json::object *u1 = obj_of(*s1.done, "usage");
    const json::object *u2 = obj_of(*s2.done, "usage");
    REQUIRE((u1 && u2));
    CHECK(int_of(*u2, "prompt_tokens") > int_of(*u1, "prompt_tokens"));
    CHECK_MESSAGE(int_of(*u2, "cached_tokens") > 0, "usage of the second turn: " << dump(*u2));

    // A session holds one request at a time.
    REQUIRE(c.send_json(chat_msg(kStory, 200, s1.session_id)));
    stream running = read_request(c, 1);
    REQUIRE(running.events.size() == 1);
    REQUIRE(str_of(running.events[0], "type") == "start");
    REQUIRE(c.send_json(chat_msg("Another question.", 4, s1.session_id)));
    std::optional<json::object> busy;
    std::optional<json::object> done;
    int64_t last = 0;
    for (int i = 0; i < 400 && !done; ++i) {
        auto ev = c.read_json();
        REQUIRE_MESSAGE(ev, c.describe_error());
        const std::string type = str_of(*ev, "type");
        if (type == "error" && str_of(*ev, "request_id") != running.request_id) {
            busy = *ev;
            REQUIRE(c.send_json(cancel_msg(running.request_id)));
            continue;
        }
        REQUIRE_MESSAGE(str_of(*ev, "request_id") == running.request_id, dump(*ev));
        CHECK(int_of(*ev, "event_id") == last + 1);
        last = int_of(*ev, "event_id");
        if (type == "done") done = *ev;
        REQUIRE_MESSAGE(type != "error", dump(*ev));
    }
    REQUIRE_MESSAGE(busy, "no error for a chat on a busy session");
    CHECK(str_of(*busy, "code") == "busy");
    CHECK_MESSAGE(!has(*busy, "request_id"), "the refused chat started no request: " << dump(*busy));
    REQUIRE(done);
    CHECK(str_of(*done, "finish_reason") == "cancelled");
}

TEST_CASE("ws: cancel mid-stream ends the request with done, finish_reason cancelled") {
    server_fixture fx;
    ws_client c;
    REQUIRE(c.connect(fx.port()));
    REQUIRE(c.send_json(chat_msg(kStory, 200)));
    stream head = read_request(c, 2); // start and the first token
    REQUIRE_MESSAGE(head.events.size() == 2, head.problem);
    REQUIRE(str_of(head.events[1], "type") == "token");
    REQUIRE(c.send_json(cancel_msg(head.request_id)));
    stream rest = read_request(c);
    REQUIRE_MESSAGE(rest.done, rest.problem << (rest.error ? dump(*rest.error) : std::string()));
    const json::object &d = *rest.done;
    CHECK(str_of(d, "finish_reason") == "cancelled");
    CHECK(str_of(d, "request_id") == head.request_id);
    // ids continue from the head's, and the text is everything streamed
    int64_t expect = 2;
    for (const json::object &e : rest.events) CHECK(int_of(e, "event_id") == expect++);
    CHECK(str_of(d, "text") == head.text + rest.text);
    const json::object *usage = obj_of(d, "usage");
    REQUIRE(usage);
    CHECK(int_of(*usage, "completion_tokens") < 200);

    // the connection goes on serving
    check_serves(c, "a cancel");
}

namespace {

// The uninterrupted greedy answer the resumed runs must reproduce.
stream reference_run(server_fixture &fx, int max_tokens) {
    stream ref = run_chat(fx.port(), chat_msg(kPoem, max_tokens));
    check_stream(ref, max_tokens);
    REQUIRE(ref.done);
    REQUIRE_MESSAGE(int_of(*ref.done, "event_id") >= 10, "the reference answer is too short to cut: " << ref.text);
    return ref;
}

// Checks a stream reassembled from several connections against the reference.
void check_reassembled(const std::map<int64_t, json::object> &seen, const stream &ref) {
    const int64_t n = int_of(*ref.done, "event_id");
    REQUIRE(!seen.empty());
    CHECK(seen.begin()->first == 0);
    CHECK(seen.rbegin()->first == n);
    CHECK(static_cast<int64_t>(seen.size()) == n + 1); // every id once, contiguous
    std::string text;
    for (const auto &[id, e] : seen) {
        const std::string type = str_of(e, "type");
        if (id == 0) CHECK(type == "start");
        else if (id < n) CHECK(type == "token");
        if (type == "token") text += str_of(e, "text");
    }
    const json::object &done = seen.rbegin()->second;
    REQUIRE(str_of(done, "type") == "done");
    CHECK(text == ref.text);
    CHECK(str_of(done, "text") == ref.text);
    CHECK(str_of(done, "finish_reason") == str_of(*ref.done, "finish_reason"));
    for (size_t i = 1; i < ref.events.size() && i < seen.size(); ++i)
        if (seen.count(static_cast<int64_t>(i))) CHECK(str_of(seen.at(static_cast<int64_t>(i)), "text") == str_of(ref.events[i], "text"));
}

} // namespace

namespace {

// One resume iteration: where to drop, how, and how long to wait before reconnecting.
struct drop_plan {
    int index = 0;
    std::vector<int64_t> cuts; // events read in all when connection d is dropped (sorted; equal
                               // cuts drop a resumed connection before it read anything)
    std::vector<bool> rst;     // a reset instead of a FIN
    std::vector<int> wait_ms;  // 0-50 ms before reconnecting
    std::string describe(uint32_t seed) const {
        std::ostringstream s;
        s << "iteration " << index << " (seed " << seed << "): drop after";
        for (size_t d = 0; d < cuts.size(); ++d)
            s << " " << cuts[d] << " events (" << (rst[d] ? "RST" : "FIN") << ", then " << wait_ms[d] << " ms)";
        return s.str();
    }
};

struct drop_outcome {
    std::map<int64_t, json::object> seen; // every event read, by event_id
    std::string failure;                  // empty: the stream was read to its done
};

// Runs a plan: chat on a new connection, drop it after cuts[0] events, resume on a new one from
// the last event seen, and so on; the last connection reads to the done. No doctest assertions
// here: it runs on several threads at once, and the main thread checks the outcome.
drop_outcome run_plan(uint16_t port, const drop_plan &plan, int max_tokens) {
    drop_outcome out;
    auto fail = [&out](std::string why) {
        out.failure = std::move(why);
        return out;
    };
    std::string rid, token;
    int64_t last = -1;
    const size_t drops = plan.cuts.size();
    for (size_t d = 0; d <= drops; ++d) {
        ws_client c;
        std::ostringstream where;
        where << "connection " << d << ", after event " << last << ": ";
        if (!c.connect(port)) return fail(where.str() + "connect: " + c.describe_error());
        const bool sent = d == 0 ? c.send_json(chat_msg(kPoem, max_tokens)) : c.send_json(resume_msg(rid, last, token));
        if (!sent) return fail(where.str() + "send: " + c.describe_error());
        const int64_t until = d < drops ? plan.cuts[d] : INT64_MAX;
        while (last + 1 < until) {
            auto ev = c.read_json();
            if (!ev) return fail(where.str() + "read: " + c.describe_error());
            const std::string type = str_of(*ev, "type");
            if (type == "error") return fail(where.str() + "an error: " + dump(*ev));
            if (rid.empty()) rid = str_of(*ev, "request_id");
            if (token.empty()) token = str_of(*ev, "resume_token");
            if (str_of(*ev, "request_id") != rid) return fail(where.str() + "another request's event: " + dump(*ev));
            const int64_t id = int_of(*ev, "event_id");
            if (id != last + 1)
                return fail(where.str() + "expected event " + std::to_string(last + 1) + ", got " + dump(*ev));
            if (!out.seen.emplace(id, *ev).second) return fail(where.str() + "a second event " + std::to_string(id));
            last = id;
            if (type == "done") return out;
        }
        c.drop(plan.rst[d]);
        std::this_thread::sleep_for(ms(plan.wait_ms[d]));
    }
    out.failure = "the last connection ended without a done";
    return out;
}

} // namespace

TEST_CASE("ws: resume after 1-3 abrupt drops at random points yields every event exactly once, in order") {
    server_fixture fx;
    constexpr int kMaxTokens = 40;
    const stream ref = reference_run(fx, kMaxTokens);
    const int64_t n = int_of(*ref.done, "event_id");
    const uint32_t seed = test_seed();
    MESSAGE("resume test: seed " << seed << " (ACTORSERVE_TEST_SEED repeats a run), reference has events 0.." << n);
    std::mt19937 rng(seed);

    // Every plan is drawn up front from the one seeded generator, then they run four at a time
    // (the requests share the batch, as concurrent clients' do).
    constexpr int kIterations = 24;
    constexpr int kLanes = 4;
    std::vector<drop_plan> plans(kIterations);
    for (int it = 0; it < kIterations; ++it) {
        drop_plan &p = plans[static_cast<size_t>(it)];
        p.index = it;
        const int drops = std::uniform_int_distribution<int>(1, 3)(rng);
        for (int d = 0; d < drops; ++d) {
            p.cuts.push_back(std::uniform_int_distribution<int64_t>(1, n)(rng));
            p.rst.push_back(std::uniform_int_distribution<int>(0, 1)(rng) == 1);
            p.wait_ms.push_back(std::uniform_int_distribution<int>(0, 50)(rng));
        }
        std::sort(p.cuts.begin(), p.cuts.end());
    }
    std::vector<drop_outcome> outcomes(kIterations);
    std::vector<std::thread> lanes;
    for (int lane = 0; lane < kLanes; ++lane)
        lanes.emplace_back([&, lane] {
            for (int it = lane; it < kIterations; it += kLanes)
                outcomes[static_cast<size_t>(it)] = run_plan(fx.port(), plans[static_cast<size_t>(it)], kMaxTokens);
        });
    for (auto &t : lanes) t.join();

    for (int it = 0; it < kIterations; ++it) {
        const drop_outcome &o = outcomes[static_cast<size_t>(it)];
        INFO(plans[static_cast<size_t>(it)].describe(seed));
        CHECK_MESSAGE(o.failure.empty(), o.failure);
        if (o.failure.empty()) check_reassembled(o.seen, ref);
    }
}

TEST_CASE("ws: resume replays a finished request, picks up a done never read, and takes a request over") {
    server_fixture fx;
    constexpr int kMaxTokens = 40;
    const stream ref = reference_run(fx, kMaxTokens);
    const int64_t n = int_of(*ref.done, "event_id");

    // last_event_id -1 after the request finished: the whole stream again, twice
    {
        ws_client a;
        REQUIRE(a.connect(fx.port()));
        REQUIRE(a.send_json(chat_msg(kPoem, kMaxTokens)));
        stream whole = read_request(a);
        check_stream(whole, kMaxTokens);
        a.drop(true);
        for (int round = 0; round < 2; ++round) {
            INFO("replay " << round);
            ws_client b;
            REQUIRE(b.connect(fx.port()));
            REQUIRE(b.send_json(resume_msg(whole.request_id, -1, whole.resume_token)));
            stream again = read_request(b);
            REQUIRE_MESSAGE(again.done, again.problem << (again.error ? dump(*again.error) : std::string()));
            REQUIRE(again.events.size() == whole.events.size());
            for (size_t i = 0; i < whole.events.size(); ++i) {
                INFO("event " << i);
                CHECK(str_of(again.events[i], "type") == str_of(whole.events[i], "type"));
                CHECK(int_of(again.events[i], "event_id") == int_of(whole.events[i], "event_id"));
                CHECK(str_of(again.events[i], "text") == str_of(whole.events[i], "text"));
            }
            CHECK(str_of(*again.done, "text") == ref.text);
            b.drop();
        }
    }

    // the done was produced while nobody followed: resume delivers it
    {
        const uint64_t finished_before = fx.metrics().requests_finished;
        ws_client a;
        REQUIRE(a.connect(fx.port()));
        REQUIRE(a.send_json(chat_msg(kPoem, kMaxTokens)));
        stream head = read_request(a, 2);
        REQUIRE(head.events.size() == 2);
        a.drop();
        REQUIRE_MESSAGE(fx.wait_metrics([&](const auto &m) { return m.requests_finished > finished_before; }, kIoTimeout),
                        "the request did not finish");
        std::this_thread::sleep_for(300ms); // and its done has reached the server
        ws_client b;
        REQUIRE(b.connect(fx.port()));
        REQUIRE(b.send_json(resume_msg(head.request_id, 1, head.resume_token)));
        stream rest = read_request(b);
        REQUIRE_MESSAGE(rest.done, rest.problem << (rest.error ? dump(*rest.error) : std::string()));
        std::map<int64_t, json::object> seen;
        for (const auto &e : head.events) CHECK(seen.emplace(int_of(e, "event_id"), e).second);
        for (const auto &e : rest.events) CHECK(seen.emplace(int_of(e, "event_id"), e).second);
        CHECK(int_of(rest.events.front(), "event_id") == 2);
        check_reassembled(seen, ref);
    }

    // a resume from a second connection while the first is still open takes the request over
    {
        ws_client a;
        REQUIRE(a.connect(fx.port()));
        REQUIRE(a.send_json(chat_msg(kPoem, kMaxTokens)));
        stream head = read_request(a, 1);
        REQUIRE(head.events.size() == 1);
        ws_client b;
        REQUIRE(b.connect(fx.port()));
        REQUIRE(b.send_json(resume_msg(head.request_id, 0, head.resume_token)));
        stream rest = read_request(b);
        REQUIRE_MESSAGE(rest.done, rest.problem << (rest.error ? dump(*rest.error) : std::string()));
        std::map<int64_t, json::object> seen;
        seen.emplace(0, head.events[0]);
        for (const auto &e : rest.events) CHECK(seen.emplace(int_of(e, "event_id"), e).second);
        check_reassembled(seen, ref);
        CHECK(int_of(*rest.done, "event_id") == n);
        // the first connection still serves
        check_serves(a, "losing its request to another connection", head.request_id);
    }
}

TEST_CASE("ws: bad input is answered with an error event naming the problem, and the connection goes on") {
    server_config cfg = server_fixture::config();
    cfg.runtime.n_ctx = 256;
    cfg.max_message_bytes = 4096;
    server_fixture fx(cfg);

    std::string long_message;
    for (int i = 0; i < 300; ++i) long_message += "hello ";
    REQUIRE(long_message.size() < 4000);

    struct bad_case {
        const char *name;
        std::string frame;
        const char *code;
        const char *names;       // the message must mention this (case-insensitively)
        bool binary = false;
        bool allow_start = false; // the problem may show after the request started
    };
    const std::vector<bad_case> cases = {
        {"malformed JSON", R"({"type": "chat", "message": )", "invalid_request", "JSON"},
        {"not an object", R"([1, 2, 3])", "invalid_request", "object"},
        {"missing type", R"({"message": "hi", "max_tokens": 2})", "invalid_request", "type"},
        {"unknown type", R"({"type": "frobnicate"})", "invalid_request", "frobnicate"},
        {"unknown field", R"({"type": "chat", "message": "hi", "bogus_field": 1})", "invalid_request", "bogus_field"},
        {"wrong type", R"({"type": "chat", "message": "hi", "max_tokens": "ten"})", "invalid_request", "max_tokens"},
        {"wrong type of stop", R"({"type": "chat", "message": "hi", "stop": 5})", "invalid_request", "stop"},
        {"both message and messages",
         R"({"type": "chat", "message": "hi", "messages": [{"role": "user", "content": "hi"}]})", "invalid_request",
         "message"},
        {"neither message nor messages", R"({"type": "chat", "max_tokens": 2})", "invalid_request", "message"},
        {"max_tokens over the limit", R"({"type": "chat", "message": "hi", "max_tokens": 100000})", "unprocessable",
         "max_tokens"},
        {"max_tokens 0", R"({"type": "chat", "message": "hi", "max_tokens": 0})", "unprocessable", "max_tokens"},
        {"negative temperature", R"({"type": "chat", "message": "hi", "temperature": -1})", "unprocessable",
         "temperature"},
        {"resume without request_id", R"({"type": "resume", "last_event_id": 3})", "invalid_request", "request_id"},
        {"resume of an unknown request", R"({"type": "resume", "request_id": "r-doesnotexist", "last_event_id": -1})",
         "not_found", "r-doesnotexist"},
        {"a binary frame", R"({"type": "chat", "message": "hi"})", "invalid_request", "binary", true},
        {"a chat on an unknown session", R"({"type": "chat", "session_id": "s-doesnotexist", "message": "hi"})",
         "not_found", "s-doesnotexist", false, true},
        {"an unknown role", R"({"type": "chat", "messages": [{"role": "wizard", "content": "hi"}], "max_tokens": 2})",
         "invalid_request", "role", false, true},
        {"a prompt longer than the context",
         json::serialize(json::object{{"type", "chat"}, {"message", long_message}, {"max_tokens", 2}}), "exceed_context",
         "context", false, true},
    };

    ws_client c;
    REQUIRE(c.connect(fx.port()));
    for (const bad_case &bc : cases) {
        INFO("case: " << bc.name << ": " << bc.frame.substr(0, 120));
        REQUIRE_MESSAGE((bc.binary ? c.send_binary(bc.frame) : c.send_text(bc.frame)), c.describe_error());
        refusal r = read_refusal(c, bc.allow_start);
        REQUIRE_MESSAGE(r.error, r.problem);
        const json::object &e = *r.error;
        INFO("got " << dump(e));
        CHECK(str_of(e, "code") == bc.code);
        const std::string message = str_of(e, "message");
        CHECK_MESSAGE(contains_ci(message, bc.names), "the message does not name '" << bc.names << "'");
        if (!r.started) {
            CHECK_MESSAGE(!has(e, "request_id"), "an error that started no request has no request_id");
            CHECK_MESSAGE(!has(e, "event_id"), "an error that started no request has no event_id");
        }
        check_serves(c, bc.name);
    }
}

TEST_CASE("ws: an oversized message closes with 1009, invalid UTF-8 with 1007; other clients are still served") {
    server_config cfg = server_fixture::config();
    cfg.max_message_bytes = 4096;
    server_fixture fx(cfg);

    ws_client bystander;
    REQUIRE(bystander.connect(fx.port()));

    SUBCASE("a message over max_message_bytes") {
        ws_client c;
        REQUIRE(c.connect(fx.port()));
        const std::string big = json::serialize(json::object{{"type", "chat"}, {"message", std::string(6000, 'a')}});
        REQUIRE_MESSAGE(c.send_text(big), c.describe_error());
        // The close status says it all (RFC 6455 7.4.1: 1009, message too big); no event precedes
        // it, since the rest of the oversized message cannot be skipped to send one.
        for (int i = 0; i < 3; ++i) {
            auto msg = c.read(10s);
            if (!msg) break;
            auto v = parse_json(*msg);
            CHECK_MESSAGE(!(v && v->is_object()), "unexpected event before the close: " << *msg);
        }
        CHECK_MESSAGE(c.closed(), "expected a close frame, got: " << c.describe_error());
        CHECK_MESSAGE(c.close_code() == 1009, c.describe_error());
    }

    SUBCASE("invalid UTF-8 in a text frame") {
        ws_client c;
        REQUIRE(c.connect(fx.port()));
        REQUIRE(c.send_text("{\"type\": \"chat\", \"message\": \"caf\xc3\x28 \xff\xfe\"}"));
        for (int i = 0; i < 3; ++i)
            if (!c.read(10s)) break;
        CHECK_MESSAGE(c.closed(), "expected a close frame, got: " << c.describe_error());
        CHECK(c.close_code() == 1007);
    }

    check_serves(bystander, "another client's connection was closed");
    ws_client fresh;
    REQUIRE(fresh.connect(fx.port()));
    check_serves(fresh, "another client's connection was closed");
}

TEST_CASE("ws: API keys and allowed origins guard the upgrade") {
    SUBCASE("api_keys_file") {
        temp_file keys("# keys for the test\nsecret-key-1\n\nsecret-key-2\n");
        server_config cfg = server_fixture::config();
        cfg.api_keys_file = keys.path();
        server_fixture fx(cfg);

        struct attempt {
            const char *name;
            ws_options opt;
            int status; // 101: accepted
        };
        auto with_target = [](std::string t) {
            ws_options o;
            o.target = std::move(t);
            return o;
        };
        auto with_header = [](std::string k, std::string v) {
            ws_options o;
            o.headers.emplace_back(std::move(k), std::move(v));
            return o;
        };
        const std::vector<attempt> attempts = {
            {"no key", {}, 401},
            {"a wrong access_token", with_target("/v1/ws?access_token=nope"), 401},
            {"a wrong bearer key", with_header("Authorization", "Bearer nope"), 401},
            {"a comment line as the key", with_header("Authorization", "Bearer # keys for the test"), 401},
            {"an empty bearer", with_header("Authorization", "Bearer "), 401},
            {"access_token", with_target("/v1/ws?access_token=secret-key-1"), 101},
            {"a bearer key", with_header("Authorization", "Bearer secret-key-1"), 101},
            {"the second key", with_header("Authorization", "Bearer secret-key-2"), 101},
        };
        for (const attempt &a : attempts) {
            INFO(a.name);
            ws_client c;
            const bool ok = c.connect(fx.port(), a.opt);
            if (a.status == 101) {
                REQUIRE_MESSAGE(ok, "status " << c.status() << ": " << c.describe_error());
                check_serves(c, a.name);
            } else {
                CHECK(!ok);
                CHECK(c.status() == a.status);
            }
        }
    }

    SUBCASE("allowed_origins") {
        server_config cfg = server_fixture::config();
        cfg.allowed_origins = {"http://good.example"};
        server_fixture fx(cfg);
        ws_options evil;
        evil.headers = {{"Origin", "http://evil.example"}};
        ws_client bad;
        CHECK(!bad.connect(fx.port(), evil));
        CHECK(bad.status() == 403);
        ws_options good;
        good.headers = {{"Origin", "http://good.example"}};
        ws_client ok;
        REQUIRE_MESSAGE(ok.connect(fx.port(), good), "status " << ok.status());
        check_serves(ok, "an allowed Origin");
        ws_client no_origin; // not a browser
        REQUIRE_MESSAGE(no_origin.connect(fx.port()), "status " << no_origin.status());
        check_serves(no_origin, "no Origin");
    }
}

TEST_CASE("ws: beyond max_connections an upgrade gets 429 and the others keep working") {
    server_config cfg = server_fixture::config();
    cfg.max_connections = 2;
    server_fixture fx(cfg);
    auto a = std::make_unique<ws_client>();
    ws_client b;
    REQUIRE(a->connect(fx.port()));
    REQUIRE(b.connect(fx.port()));
    ws_client third;
    CHECK(!third.connect(fx.port()));
    CHECK(third.status() == 429);
    CHECK(http_get(fx.port(), "/v1/models").status == 429);
    check_serves(*a, "a third connection was refused");
    check_serves(b, "a third connection was refused");

    // a closed connection frees its place
    REQUIRE(a->close());
    a.reset();
    bool admitted = false;
    for (int i = 0; i < 100 && !admitted; ++i) {
        ws_client again;
        admitted = again.connect(fx.port());
        if (admitted) check_serves(again, "a place was freed");
        else std::this_thread::sleep_for(50ms);
    }
    CHECK_MESSAGE(admitted, "a connection was refused after one of the two closed");
}

TEST_CASE("ws: a client that does not read is closed once its write queue overflows; others are served") {
    server_config cfg = server_fixture::config();
    cfg.max_write_queue_bytes = 8192;
    server_fixture fx(cfg);
    {
        stream warm = run_chat(fx.port(), chat_msg("Say hi.", 2)); // everything loaded before measuring
        REQUIRE(warm.done);
    }
    const long rss_before = rss_kib();
    std::atomic<long> rss_peak{rss_before};
    std::atomic<bool> sampling{true};
    std::thread sampler([&] {
        while (sampling) {
            const long r = rss_kib();
            if (r > rss_peak) rss_peak = r;
            std::this_thread::sleep_for(10ms);
        }
    });

    ws_client slow;
    ws_options small;
    small.rcvbuf = 4096;
    REQUIRE(slow.connect(fx.port(), small));

    // A normal client chats meanwhile.
    auto normal = std::async(std::launch::async, [&] { return run_chat(fx.port(), chat_msg("Name three colours.", 16)); });

    // The flood: malformed messages, each answered with an error event that is never read. The
    // loopback socket buffers hold about 3 MB, so it takes tens of thousands before the server's
    // own queue fills; it goes on until a write fails because the server closed the connection.
    const auto t0 = std::chrono::steady_clock::now();
    constexpr size_t kMaxFlood = 400000;
    size_t sent = 0;
    bool write_failed = false;
    std::string write_error;
    while (sent < kMaxFlood && std::chrono::steady_clock::now() - t0 < 30s) {
        if (!slow.send_text("{", 20s)) {
            write_failed = true;
            write_error = slow.describe_error();
            break;
        }
        ++sent;
    }
    const double flood_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    MESSAGE("flood: " << sent << " messages in " << flood_s << " s, then: " << (write_failed ? write_error : "no failure"));
    CHECK_MESSAGE(write_error.find("timed out") == std::string::npos,
                  "a write blocked: the server stopped reading without closing the connection");

    // What the server left for the slow client: error events, then a close 1008 or a reset.
    size_t errors = 0;
    for (;;) {
        auto msg = slow.read(20s);
        if (!msg) break;
        ++errors;
    }
    const double closed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    MESSAGE("slow client read " << errors << " events, then " << slow.describe_error() << " after " << closed_s << " s");
    CHECK_MESSAGE(slow.error() != boost::system::error_code(asio::error::timed_out), "the connection was never closed");
    if (slow.closed()) {
        CHECK(slow.close_code() == 1008);
        CHECK(slow.close_reason() == "write queue overflow");
    }
    CHECK(closed_s < 90);

    stream n = normal.get();
    check_stream(n, 16);
    sampling = false;
    sampler.join();
    const long grown_mib = (rss_peak - rss_before) / 1024;
    MESSAGE("RSS " << rss_before / 1024 << " MiB before the flood, peak " << rss_peak / 1024 << " MiB");
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    (void)grown_mib; // the sanitizers' quarantine and shadow memory make RSS no measure here
#else
    CHECK_MESSAGE(grown_mib <= 64, "RSS grew by " << grown_mib << " MiB during the flood");
#endif

    // and the server still serves new connections
    stream after = run_chat(fx.port(), chat_msg("Say hi.", 2));
    check_stream(after, 2);
}

TEST_CASE("ws: a request nobody follows for retention_s is cancelled and forgotten") {
    server_config cfg = server_fixture::config();
    cfg.retention_s = 1;
    server_fixture fx(cfg);
    const uint64_t generated_before = fx.metrics().generated_tokens;
    std::string rid;
    {
        ws_client a;
        REQUIRE(a.connect(fx.port()));
        REQUIRE(a.send_json(chat_msg(kStory, 400))); // greedy, this runs to max_tokens
        stream head = read_request(a, 2);
        REQUIRE(head.events.size() == 2);
        rid = head.request_id;
        a.drop();
    }
    // The sweep (every second) forgets it once it has gone unfollowed for retention_s: wait for
    // the retained-request gauge to read 0 rather than for a fixed time.
    const auto forgotten_by = std::chrono::steady_clock::now() + 30s;
    bool forgotten = false;
    while (!forgotten && std::chrono::steady_clock::now() < forgotten_by) {
        const http_reply m = http_get(fx.port(), "/metrics");
        forgotten = m.status == 200 && m.body.find("\nactorserve_retained_requests 0\n") != std::string::npos;
        if (!forgotten) std::this_thread::sleep_for(50ms);
    }
    REQUIRE_MESSAGE(forgotten, "the request was still retained 30 s after its connection dropped");
    ws_client b;
    REQUIRE(b.connect(fx.port()));
    REQUIRE(b.send_json(resume_msg(rid, 1)));
    refusal r = read_refusal(b, false);
    REQUIRE_MESSAGE(r.error, r.problem);
    CHECK_MESSAGE(str_of(*r.error, "code") == "not_found", dump(*r.error));
    // it was cancelled, not run to its end
    CHECK(fx.wait_metrics([](const auto &m) { return m.running == 0; }, 10s));
    const uint64_t generated = fx.metrics().generated_tokens - generated_before;
    MESSAGE("the dropped request generated " << generated << " tokens before it was cancelled");
    CHECK(generated < 400);
    check_serves(b, "a resume of a forgotten request");
}

TEST_CASE("ws: graceful shutdown lets a running request finish, then closes with 1001") {
    server_fixture fx;
    const uint16_t port = fx.port();
    ws_client c;
    REQUIRE(c.connect(port));
    REQUIRE(c.send_json(chat_msg(kPoem, 30)));
    stream head = read_request(c, 1);
    REQUIRE(head.events.size() == 1);
    auto stopping = std::async(std::launch::async, [&] { fx.shutdown(10s); });
    stream rest = read_request(c);
    REQUIRE_MESSAGE(rest.done, rest.problem << (rest.error ? dump(*rest.error) : std::string()));
    const std::string reason = str_of(*rest.done, "finish_reason");
    CHECK_MESSAGE((reason == "stop" || reason == "length"), "finish_reason " << reason);
    int64_t expect = 1;
    for (const auto &e : rest.events) CHECK(int_of(e, "event_id") == expect++);
    CHECK(str_of(*rest.done, "text") == rest.text);
    auto after = c.read(20s);
    CHECK_MESSAGE(!after, "a message after done: " << *after);
    CHECK_MESSAGE(c.closed(), "expected a close frame: " << c.describe_error());
    CHECK(c.close_code() == 1001);
    REQUIRE_MESSAGE(stopping.wait_for(30s) == std::future_status::ready, "shutdown(10s) did not return in 30 s");
    stopping.get();
    CHECK_MESSAGE(!can_connect(port), "a connection was accepted after shutdown");
}

// Streams are appended to on actor threads, which may outlive the server's io_context: once the
// server closes its gate, a stream's append must no longer reach the connection at all.
TEST_CASE("ws: a stream appended to after the server closed its I/O gate wakes nobody") {
    auto gate = std::make_shared<actorserve::io_gate>();
    int woken = 0;
    auto waker = std::make_shared<actorserve::stream_waker>(gate, [&](const std::string &) { ++woken; });
    actorserve::request_stream s("r-test", "s-test");
    s.follow(std::weak_ptr<actorserve::stream_follower>(waker));
    s.append(actorserve::stream_event{});
    CHECK(woken == 1);
    gate->close();
    actorserve::stream_event tok;
    tok.kind = actorserve::stream_event::token;
    tok.text = "x";
    s.append(tok);
    CHECK(woken == 1);
    std::vector<actorserve::stream_event> out;
    CHECK(s.read(0, waker.get(), out) == 2); // the events are still kept, for a resume
}
