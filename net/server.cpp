#include "net/server.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <fstream>

#include "net/auth.h"
#include "net/http_session.h"
#include "net/server_impl.h"
#include "net/static_files.h"

namespace actorserve {

namespace {

using tcp = asio::ip::tcp;

void do_accept(const std::shared_ptr<server_impl> &s) {
    // Each connection gets its own strand: its handlers never run concurrently, whichever I/O
    // thread picks them up.
    s->acceptor->async_accept(asio::make_strand(s->ioc), [s](beast::error_code ec, tcp::socket socket) {
        if (ec) {
            if (ec == asio::error::operation_aborted || !s->acceptor->is_open()) return; // shutting down
            spdlog::warn("accept failed: {}", ec.message());
        } else {
            // Events are small writes that should leave at once: without this, Nagle's algorithm
            // holds a write back until the peer's delayed ACK (about 40 ms on Linux).
            beast::error_code nd;
            socket.set_option(tcp::no_delay(true), nd);
            const bool refuse = s->connections.load() >= s->cfg.max_connections;
            std::make_shared<http_session>(std::move(socket), s, refuse)->run();
        }
        do_accept(s);
    });
}

void schedule_sweep(const std::shared_ptr<server_impl> &s) {
    s->sweeper->expires_after(std::chrono::seconds(1));
    s->sweeper->async_wait([s](beast::error_code ec) {
        if (ec) return;
        s->service.sweep();
        schedule_sweep(s);
    });
}

} // namespace

std::unique_ptr<server> server::start(caf::actor_system &sys, const server_config &cfg, std::string &err) {
    auto ioc = std::make_unique<asio::io_context>(cfg.io_threads);
    auto s = std::make_shared<server_impl>(sys, cfg, *ioc);
    s->model_name = cfg.model_name.empty() ? std::filesystem::path(cfg.runtime.model_path).stem().string() : cfg.model_name;
    s->created = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    if (!cfg.api_keys_file.empty() && !load_api_keys(cfg.api_keys_file, s->api_keys, err, &s->key_cfg)) return nullptr;
    s->service.set_keys(s->key_cfg);
    if (!cfg.request_log.path.empty()) {
        auto log = request_log::open(cfg.request_log, err);
        if (!log) return nullptr;
        s->service.set_request_log(std::move(log));
    }
    std::error_code fec;
    const std::string web = cfg.web_dir.empty() ? std::string(default_web_dir()) : cfg.web_dir;
    s->web_root = std::filesystem::weakly_canonical(web, fec).string();
    if (fec || !std::filesystem::is_directory(s->web_root)) spdlog::warn("web page directory {} not found: GET / answers 404", web);

    beast::error_code ec;
    auto addr = asio::ip::make_address(cfg.host, ec);
    if (ec) {
        err = "server.host '" + cfg.host + "' is not an IP address: " + ec.message();
        return nullptr;
    }
    s->acceptor = std::make_unique<tcp::acceptor>(s->ioc);
    const tcp::endpoint ep{addr, cfg.port};
    s->acceptor->open(ep.protocol(), ec);
    if (!ec) s->acceptor->set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) s->acceptor->bind(ep, ec);
    if (!ec) s->acceptor->listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
        err = "cannot listen on " + cfg.host + ":" + std::to_string(cfg.port) + ": " + ec.message();
        return nullptr;
    }
    const uint16_t port = s->acceptor->local_endpoint().port();
    if (!cfg.port_file.empty()) {
        // Written whole under another name, then renamed: a reader never sees half a number.
        const std::string tmp = cfg.port_file + ".tmp";
        std::ofstream(tmp) << port << "\n";
        std::filesystem::rename(tmp, cfg.port_file, fec);
        if (fec) {
            err = "cannot write server.port_file " + cfg.port_file + ": " + fec.message();
            return nullptr;
        }
    }
    s->sweeper = std::make_unique<asio::steady_timer>(s->ioc);
    do_accept(s);
    schedule_sweep(s);
    for (int i = 0; i < cfg.io_threads; ++i) s->threads.emplace_back([s] { s->ioc.run(); });
    spdlog::info("listening on {}:{} ({} I/O threads){}", cfg.host, port, cfg.io_threads,
                 s->api_keys.empty() ? "" : ", API keys required");
    std::unique_ptr<server> out(new server());
    out->ioc_ = std::move(ioc);
    out->impl_ = std::move(s);
    return out;
}

server::~server() {
    shutdown(std::chrono::milliseconds(0));
    // From here no actor thread reaches a connection (net/stream_waker.h).
    impl_->gate->close();
    // The I/O threads are gone. I/O objects go before their io_context; the io_context then
    // destroys the handlers it still holds, and with them the last references to connections.
    impl_->acceptor.reset();
    impl_->sweeper.reset();
    ioc_.reset();
    impl_.reset();
}

namespace {

// Embeds texts with the runtime's embeddings actor, max_inputs at a time; false with err.
bool embed_all(caf::actor_system &sys, embed_actor embed, size_t chunk, const std::vector<std::string> &texts,
               std::vector<std::vector<float>> &out, std::string &err) {
    caf::scoped_actor self{sys};
    chunk = std::max<size_t>(1, chunk);
    for (size_t i = 0; i < texts.size() && err.empty(); i += chunk) {
        embed_request req;
        req.inputs.assign(texts.begin() + static_cast<std::ptrdiff_t>(i),
                          texts.begin() + static_cast<std::ptrdiff_t>(std::min(texts.size(), i + chunk)));
        self->request(embed, std::chrono::seconds(120), std::move(req))
            .receive(
                [&](embed_reply &r) {
                    if (!r.ok) err = r.error;
                    for (auto &v : r.vectors) out.push_back(std::move(v));
                },
                [&](caf::error &e) { err = to_string(e); });
    }
    return err.empty();
}

// The dynamic temperature's centroids, from the tune half of its examples (a second at
// start-up). Null, said in the log, when it is off or cannot be built; requests are then
// served with the temperature they come with.
std::shared_ptr<const temperature_policy> load_policy(caf::actor_system &sys, const server_config &cfg, runtime &rt) {
    if (!cfg.policy.dynamic_temperature) return nullptr;
    embed_actor embed = rt.embeddings();
    if (!embed) {
        spdlog::warn("dynamic temperature off: it needs the embeddings actor ([embeddings] enabled)");
        return nullptr;
    }
    std::vector<kind_example> all, tune;
    std::string err;
    if (!load_kind_examples(cfg.policy.examples, all, err)) {
        spdlog::warn("dynamic temperature off: {}", err);
        return nullptr;
    }
    std::vector<std::string> texts;
    for (kind_example &e : all)
        if (e.tune) {
            texts.push_back(e.text);
            tune.push_back(std::move(e));
        }
    std::vector<std::vector<float>> vectors;
    std::shared_ptr<const temperature_policy> policy;
    if (embed_all(sys, embed, cfg.runtime.embeddings.max_inputs, texts, vectors, err))
        policy = temperature_policy::build(cfg.policy, tune, vectors, err);
    if (!policy) {
        spdlog::warn("dynamic temperature off: {}", err);
        return nullptr;
    }
    spdlog::info("dynamic temperature on: {} labelled examples ({})", tune.size(), cfg.policy.examples);
    return policy;
}

// The prompt-injection guard, trained on the tune half of its examples (a few seconds at
// start-up). Null when off. When it should run and cannot be built, start-up goes on and says
// so: the operator asked for a guard, so it is an error in the log, not a warning.
std::shared_ptr<const injection_guard> load_guard(caf::actor_system &sys, const server_config &cfg, runtime &rt) {
    if (cfg.guard.action == guard_action::off) return nullptr;
    embed_actor embed = rt.embeddings();
    std::string err;
    std::vector<guard_example> all, tune;
    std::vector<std::string> texts;
    std::vector<std::vector<float>> vectors;
    std::shared_ptr<const injection_guard> guard;
    if (!embed) err = "it needs the embeddings actor ([embeddings] enabled)";
    else if (load_guard_examples(cfg.guard.examples, all, err)) {
        for (guard_example &e : all)
            if (e.tune) {
                auto p = injection_guard::prepare(e.text);
                texts.push_back(p.texts.empty() ? e.text : p.texts[0]);
                tune.push_back(std::move(e));
            }
        if (embed_all(sys, embed, cfg.runtime.embeddings.max_inputs, texts, vectors, err))
            guard = injection_guard::train(cfg.guard, tune, vectors, err);
    }
    if (!guard) {
        spdlog::error("prompt-injection guard off: {}", err);
        return nullptr;
    }
    spdlog::info("prompt-injection guard on ({}): {} labelled examples ({}), threshold {}",
                 cfg.guard.action == guard_action::block ? "block" : "flag", tune.size(), cfg.guard.examples,
                 cfg.guard.threshold);
    return guard;
}

} // namespace

void server::attach(runtime &rt) {
    impl_->service.set_policy(load_policy(impl_->sys, impl_->cfg, rt), load_guard(impl_->sys, impl_->cfg, rt),
                              rt.embeddings());
    impl_->service.attach(rt);
    spdlog::info("ready: serving {}", impl_->model_name);
}

uint16_t server::port() const {
    beast::error_code ec;
    return impl_->acceptor->local_endpoint(ec).port();
}

void server::shutdown(std::chrono::milliseconds grace) {
    auto s = impl_;
    if (!s || s->stopping.exchange(true)) return;
    using clock = std::chrono::steady_clock;
    // 1. No new connections, no new requests.
    asio::post(s->ioc, [s] {
        beast::error_code ignored;
        s->acceptor->close(ignored);
        s->sweeper->cancel();
    });
    s->service.drain();
    // 2. What was accepted runs to its end, within the grace period; then it is cancelled.
    const auto deadline = clock::now() + grace;
    while (s->service.running() > 0 && clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (int left = s->service.running(); left > 0) {
        spdlog::warn("shutdown: {} requests still running after the grace period, cancelling them", left);
        s->service.cancel_all();
        const auto cancel_deadline = clock::now() + std::chrono::seconds(5);
        while (s->service.running() > 0 && clock::now() < cancel_deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    // 3. Connections send what they hold, then close (WebSocket: 1001 going away).
    std::vector<std::shared_ptr<connection>> open;
    {
        std::lock_guard<std::mutex> lk(s->conn_mu);
        for (auto &[p, w] : s->open)
            if (auto c = w.lock()) open.push_back(std::move(c));
    }
    for (auto &c : open) c->close_for_shutdown();
    open.clear();
    const auto close_deadline = clock::now() + std::chrono::seconds(5);
    while (clock::now() < close_deadline) {
        {
            std::lock_guard<std::mutex> lk(s->conn_mu);
            if (s->open.empty()) break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    // 4. Stop the I/O threads; handlers still queued are destroyed with the io_context.
    s->ioc.stop();
    for (auto &t : s->threads) t.join();
    s->threads.clear();
    spdlog::info("server stopped");
}

} // namespace actorserve
