// The rules of net/auth.h on their own (the server applies them in tests/net/test_security.cpp):
// which Host names and Origins are this server's, JSON media types, API keys, resume tokens.
#include "net/auth.h"
#include "net/chat_service.h"
#include "net/random_id.h"

#include <doctest/doctest.h>

using namespace actorserve;

TEST_CASE("check_host: localhost, loopback, the bound address and listed names; IP literals when bound to all") {
    const std::vector<std::string> none, listed = {"chat.example.org"}, any = {"*"};
    for (const char *ok : {"localhost", "localhost:8080", "LOCALHOST:1", "localhost.", "app.localhost:80", "127.0.0.1:8080",
                           "127.8.9.1", "[::1]:8080", "[::1]"})
        CHECK_MESSAGE(!check_host(none, "127.0.0.1", ok), ok);
    for (const char *bad : {"evil.example", "evil.example:8080", "localhost.evil.example", "127.0.0.1.nip.io", "10.0.0.2:8080",
                            "[fe80::1]:8080", "localhostx"})
        CHECK_MESSAGE(check_host(none, "127.0.0.1", bad), bad);
    CHECK(check_host(none, "127.0.0.1", "")->code == errc::invalid_request);
    CHECK(check_host(none, "127.0.0.1", "evil.example")->code == errc::forbidden);
    CHECK(!check_host(listed, "127.0.0.1", "Chat.Example.org:443"));
    CHECK(!check_host(any, "127.0.0.1", "whatever.example"));
    CHECK(!check_host(none, "10.0.0.2", "10.0.0.2:8080"));       // the bound address
    CHECK(!check_host(none, "0.0.0.0", "192.168.1.20:8080"));   // all interfaces: any IP literal
    CHECK(check_host(none, "0.0.0.0", "evil.example:8080"));    // but not a name
}

TEST_CASE("check_origin: the server's own origin, listed ones (cross, with CORS), and no Origin pass") {
    const std::vector<std::string> none, listed = {"http://good.example:3000"}, any = {"*"};
    bool cross = true;
    CHECK(!check_origin(none, "", "127.0.0.1:8080", &cross));
    CHECK(!cross);
    CHECK(!check_origin(none, "http://127.0.0.1:8080", "127.0.0.1:8080", &cross));
    CHECK(!cross);
    CHECK(!check_origin(none, "http://LOCALHOST", "localhost:80", &cross)); // default port
    CHECK(!check_origin(none, "https://chat.example.org", "chat.example.org:443"));
    CHECK(check_origin(none, "http://localhost:8080", "127.0.0.1:8080")); // same machine, another origin
    CHECK(check_origin(none, "http://127.0.0.1:9999", "127.0.0.1:8080"));
    CHECK(check_origin(none, "null", "127.0.0.1:8080"));
    CHECK(check_origin(none, "http://evil.example", "127.0.0.1:8080")->code == errc::forbidden);
    CHECK(!check_origin(listed, "http://good.example:3000", "127.0.0.1:8080", &cross));
    CHECK(cross);
    CHECK(check_origin(listed, "http://good.example", "127.0.0.1:8080"));
    CHECK(!check_origin(any, "http://anything.example", "127.0.0.1:8080", &cross));
    CHECK(cross);
}

TEST_CASE("is_json_media_type") {
    for (const char *ok : {"application/json", "Application/JSON", "application/json; charset=utf-8", " application/json ;x=y"})
        CHECK_MESSAGE(is_json_media_type(ok), ok);
    for (const char *bad : {"", "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
                            "application/jsonx", "text/json"})
        CHECK_MESSAGE(!is_json_media_type(bad), bad);
}

TEST_CASE("check_key: any case of Bearer; which key matched") {
    const std::vector<std::string> keys = {"alpha", "beta"};
    size_t which = 99;
    CHECK(!check_key(keys, "Bearer beta", std::nullopt, &which));
    CHECK(which == 1);
    CHECK(!check_key(keys, "bearer   alpha", std::nullopt, &which));
    CHECK(which == 0);
    CHECK(check_key(keys, "Basic alpha", std::nullopt));
    CHECK(check_key(keys, "Bearer gamma", std::nullopt));
    CHECK(!check_key(keys, "", std::string_view("beta"), &which));
    CHECK(which == 1);
    CHECK(check_key(keys, "", std::nullopt)->code == errc::unauthorized);
}

TEST_CASE("owns: the same principal, or (for a connection's things) its resume token") {
    const std::string conn = "conn:" + random_id("t-"), key = "key:0";
    const std::string token = conn.substr(5);
    CHECK(owns(conn, caller{conn, std::nullopt}));
    CHECK(owns(conn, caller{"conn:t-other", token}));
    CHECK_FALSE(owns(conn, caller{"conn:t-other", std::nullopt}));
    CHECK_FALSE(owns(conn, caller{"conn:t-other", "t-" + std::string(32, '0')}));
    CHECK_FALSE(owns(conn, caller{"", std::string()}));
    CHECK(owns(key, caller{"key:0", std::nullopt}));
    CHECK_FALSE(owns(key, caller{"key:1", std::nullopt}));
    CHECK_FALSE(owns(key, caller{"key:1", "0"})); // a key's things take no token
    CHECK_FALSE(owns(std::string(), caller{"", std::nullopt})); // HTTP requests belong to nobody
    CHECK(random_id("r-") != random_id("r-"));
    CHECK(random_id("r-").size() == 34);
}
