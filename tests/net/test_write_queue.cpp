// The bounded write queue both connection kinds use (net/write_queue.h): order, the write in
// flight kept across an overflow, and the byte count.
#include <doctest/doctest.h>

#include "net/write_queue.h"

using actorserve::write_queue;

TEST_CASE("write_queue: writes leave in order, one at a time") {
    write_queue q(100);
    CHECK(q.push("ab"));
    CHECK(q.push("cde"));
    CHECK(q.bytes() == 5);
    CHECK(q.start() == "ab");
    CHECK(q.writing());
    CHECK(q.push("f")); // queued behind the write in flight
    q.done();
    CHECK(q.bytes() == 4);
    CHECK(q.start() == "cde");
    q.done();
    CHECK(q.start() == "f");
    q.done();
    CHECK(q.empty());
    CHECK(q.bytes() == 0);
}

TEST_CASE("write_queue: over the limit it refuses and keeps only the write in flight") {
    write_queue q(10);
    CHECK(q.push("12345"));
    const std::string &front = q.start();
    CHECK(q.push("678"));
    CHECK_FALSE(q.push("9abc")); // 12 bytes > 10
    CHECK(q.bytes() == 5);       // the socket still holds the first write's buffer
    CHECK(front == "12345");
    q.done();
    CHECK(q.empty());
    CHECK(q.bytes() == 0);

    write_queue idle(4);
    CHECK_FALSE(idle.push("too long")); // nothing in flight: nothing kept
    CHECK(idle.empty());
    CHECK(idle.bytes() == 0);
}

TEST_CASE("write_queue: clear drops what waits, not what is being written") {
    write_queue q(100);
    q.push("a");
    q.push("b");
    q.push("c");
    q.start();
    q.clear();
    CHECK(q.bytes() == 1);
    q.done();
    CHECK(q.empty());
}
