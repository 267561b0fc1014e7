// http_session::ask_actor (net/http_session.h): asking an actor from a connection without
// blocking its I/O thread. Included by the files that define http_session's routes.
#pragma once

#include <spdlog/spdlog.h>

#include <functional>
#include <string>
#include <tuple>

#include "net/http_session.h"

namespace actorserve {

// A short-lived actor asks the target actor and ends with the answer; the answer reaches this
// connection on its strand through the io_gate, which the actor holds instead of the connection
// (see net/stream_waker.h): it never keeps a connection alive, and never posts to an io_context
// that shutdown has destroyed. An error the actor sends (rag_error: overloaded) keeps its code;
// another CAF error (the actor gone, the deadline passed) becomes a 503 or a 500.
template <class Reply, class Handle, class... Ts>
void http_session::ask_actor(Handle to, std::chrono::seconds timeout,
                             std::function<void(http_session &, Reply &)> on_reply,
                             std::function<void(http_session &, const std::string &why)> on_error, Ts &&...msg) {
    using handler = std::function<void(http_session &)>;
    auto deliver = [w = weak_from_this(), gate = srv_->gate](handler f) {
        gate->run([&] {
            if (auto self = w.lock())
                asio::post(self->stream_.get_executor(), [self, f = std::move(f)] {
                    if (self->watching_) { // no write is pending: cancelling touches only the watch
                        self->watching_ = false;
                        beast::error_code ignored;
                        self->stream_.socket().cancel(ignored);
                    }
                    f(*self);
                });
        });
    };
    const int retry_ms = srv_->cfg.runtime.retry_after_ms;
    // The target is passed as the spawned actor's argument, not captured: CAF 0.17.6 builds an
    // actor spawned with no arguments from a null shared_ptr<tuple<>> that it dereferences,
    // which UBSan reports.
    srv_->sys.spawn([timeout, deliver, on_reply = std::move(on_reply), on_error = std::move(on_error), retry_ms,
                     args = std::make_tuple(std::forward<Ts>(msg)...)](caf::event_based_actor *self, Handle target) mutable {
        std::apply(
            [&](auto &...a) {
                self->request(target, timeout, std::move(a)...)
                    .then(
                        [deliver, on_reply](Reply &r) {
                            deliver([on_reply, r = std::move(r)](http_session &s) mutable { on_reply(s, r); });
                        },
                        [self, deliver, timeout, retry_ms, on_error](caf::error &e) {
                            if (on_error) {
                                const std::string why = self->system().render(e);
                                return deliver([on_error, why](http_session &s) { on_error(s, why); });
                            }
                            if (e.category() == caf::atom("actorserve")) { // rag_error: the actor refused
                                const auto code = static_cast<errc>(e.code());
                                std::string m = code == errc::overloaded
                                                    ? "the knowledge base is busy: too many requests wait; retry later"
                                                    : "the knowledge base refused the request (" + std::string(name(code)) + ")";
                                return deliver([code, m, retry_ms](http_session &s) { s.respond_error(code, m, {}, retry_ms); });
                            }
                            if (e == caf::sec::request_timeout) {
                                const std::string m = "the retrieval actor did not answer within " +
                                                      std::to_string(timeout.count()) + " s";
                                return deliver([m, retry_ms](http_session &s) {
                                    s.respond_error(errc::overloaded, m, {}, retry_ms);
                                });
                            }
                            const std::string m = "retrieval failed: " + self->system().render(e);
                            deliver([m](http_session &s) { s.respond_error(errc::internal, m); });
                        });
            },
            args);
    }, std::move(to));
    // The pending watch is what keeps this connection alive until the answer comes (nothing
    // else holds it meanwhile), and it notices a client that hangs up.
    watch_peer();
}

} // namespace actorserve
