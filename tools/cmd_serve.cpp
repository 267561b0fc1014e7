// actorserve serve: the network server on one model. Settings from --config (TOML; every key is
// documented in configs/actorserve.toml) overridden by flags. SIGINT/SIGTERM: stop accepting,
// let running answers finish within server.shutdown_grace_s, exit 0.
#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include <csignal>
#include <pthread.h>

#include "include/actorserve/runtime.h"
#include "net/server.h"
#include "tools/commands.h"
#include "tools/log_setup.h"
#include "tools/service_notify.h"

namespace actorserve::cli {

int cmd_serve(const serve_options &o) {
    server_config cfg;
    std::string err;
    if (!o.config.empty() && !load_config_file(o.config, cfg, err)) return fail(err);
    if (o.host) cfg.host = *o.host;
    if (o.port) cfg.port = *o.port;
    if (o.port_file) cfg.port_file = *o.port_file;
    if (o.model) cfg.runtime.model_path = *o.model;
    if (o.threads) cfg.runtime.n_threads = *o.threads;
    if (o.devices) cfg.runtime.devices = *o.devices;
    if (o.ctx_size) cfg.runtime.n_ctx = *o.ctx_size;
    if (o.io_threads) cfg.io_threads = *o.io_threads;
    if (o.max_connections) cfg.max_connections = *o.max_connections;
    if (o.api_keys) cfg.api_keys_file = *o.api_keys;
    if (!o.allowed_origins.empty()) cfg.allowed_origins = o.allowed_origins;
    if (!o.allowed_hosts.empty()) cfg.allowed_hosts = o.allowed_hosts;
    if (o.web_dir) cfg.web_dir = *o.web_dir;
    if (o.log_prompts) cfg.log_prompts = true;
    if (o.log_level) cfg.log_level = *o.log_level;
    if (o.log_format) cfg.log_format = *o.log_format;
    if (o.retention_s) cfg.retention_s = *o.retention_s;
    if (!validate(cfg, err)) return fail(err);

    setup_logging(cfg.log_level, cfg.log_format);

    // Signals are taken by sigwait below: block them before any thread exists, so that every
    // thread (CAF's, the I/O threads, the engine's) inherits the mask and none is interrupted.
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, nullptr);

    service_notifier service{std::chrono::seconds(cfg.watchdog_step_s)};
    service.status("loading the model");

    caf::actor_system_config caf_cfg;
    runtime::tune(caf_cfg);
    caf::actor_system sys{caf_cfg};

    // Listen first: /health says "loading" (503) while the model loads.
    auto srv = server::start(sys, cfg, err);
    if (!srv) return fail(err);
    if (!cfg.model_name.empty()) cfg.runtime.model_name = cfg.model_name;
    auto rt = runtime::start(sys, cfg.runtime, err);
    if (!rt) {
        srv->shutdown(std::chrono::milliseconds(0));
        return fail(err);
    }
    for (const std::string &note : rt->notes()) spdlog::info("{}", note);
    for (const std::string &d : rt->devices()) spdlog::info("executor on {}", d);
    if (!cfg.runtime.cache.enabled) spdlog::info("answer caches off ([cache] enabled = false)");
    if (!cfg.runtime.rag.enabled) spdlog::info("retrieval off ([rag] enabled = false)");
    srv->attach(*rt);
    service.ready("serving " + cfg.runtime.model_path);
    service.start_watchdog(*rt);

    int sig = 0;
    sigwait(&sigs, &sig);
    spdlog::info("{}: stopping (running answers get {} s to finish)", sig == SIGINT ? "SIGINT" : "SIGTERM",
                 cfg.shutdown_grace_s);
    service.stopping("stopping: running answers get " + std::to_string(cfg.shutdown_grace_s) + " s");
    service.stop_watchdog();
    srv->shutdown(std::chrono::seconds(cfg.shutdown_grace_s));
    srv.reset();
    rt.reset();
    return 0;
}

} // namespace actorserve::cli
