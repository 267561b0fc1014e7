// The programmatic API: start the runtime inside your own caf::actor_system, open sessions,
// and talk to them with the messages of include/actorserve/messages.h.
//
//   caf::actor_system_config cfg;
//   actorserve::runtime::tune(cfg);
//   caf::actor_system sys{cfg};
//   std::string err;
//   auto rt = actorserve::runtime::start(sys, {.model_path = "models/m.gguf"}, err);
//   actorserve::chat_session chat = rt->open_session();
//   self->send(chat, actorserve::chat_request{1, {{"user", "Hello"}}});
//   // -> chat_delta{1, "Hi"} ... chat_done{1, "stop", ...}   (or one chat_error)
//
// Actors: per device (the CPU, or each GPU of `devices`) an executor and the scheduler that
// feeds it; with several devices a placement actor in front of them (actors/placement.h); one
// metrics actor, a session per conversation, and when enabled the cache actor and the RAG actor (with its ingest
// worker); docs/architecture.md shows who owns what.
#pragma once

#include <caf/all.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "include/actorserve/cache_settings.h"
#include "include/actorserve/embed_messages.h"
#include "include/actorserve/rag_settings.h"
#include "include/actorserve/messages.h"
#include "include/actorserve/metrics.h"
#include "include/actorserve/rag_messages.h"
#include "include/actorserve/request_check.h"

namespace actorserve {

// The engine's and the scheduler's types, opaque here: include engine/model.h,
// engine/tokenizer.h or scheduling/scheduler_state.h to look inside.
struct llama_hparams;
class llama_model;
class tokenizer;
class token_vocab;
class chat_template;
struct scheduler_settings;

struct runtime_config {
    std::string model_path;
    int n_threads = 0;              // engine threads; 0: physical cores
    // "auto": every CUDA device, or the CPU when there is none; "cpu"; or CUDA device indices
    // such as "0,1" (actors/devices.h). Scheduler settings and kv_capacity_mib are per device.
    std::string devices = "auto";
    int n_ctx = 2048;               // longest sequence (prompt + answer)
    int max_seqs = 16;              // sequences per step
    int step_tokens = 512;          // tokens per step (decode + prompt chunks)
    int max_waiting = 256;          // queued requests; beyond: overloaded
    int kv_capacity_mib = 256;      // KV pool size
    int kv_block_size = 32;         // positions per KV block (multiple of 32)
    std::chrono::milliseconds batch_wait{2};
    size_t scheduler_mailbox_limit = 4096;
    int retry_after_ms = 1000;
    size_t max_request_bytes = 1 << 20; // message text per request
    int max_tokens_limit = 2048;    // a request's max_tokens is at most this
    cache_settings cache;           // the answer caches; off unless cache.enabled
    rag_runtime_settings rag;       // retrieval (the RAG actor); off unless rag.enabled
    embedding_settings embeddings;  // the embeddings actor; off unless embeddings.enabled
    std::string model_name;         // names the model to the caches; "": the file's stem

    // What check_request allows a request (include/actorserve/request_check.h).
    request_limits limits() const { return {max_tokens_limit, max_request_bytes}; }
    // The scheduler's settings these imply for a model (KV blocks from the capacity).
    scheduler_settings settings(const llama_hparams &hp) const;
};

class runtime {
public:
    // Settings for the actor_system the runtime will live in; call on your config before
    // constructing the system. CAF's workers normally poll for work when idle, in short sleeps
    // (about 60 microseconds), for tens of milliseconds; on a box whose cores the engine's
    // threads keep busy, each wake-up preempts one of them and stalls the step it belongs to.
    // With this they wait on a condition variable and are woken by the next message instead.
    static void tune(caf::actor_system_config &cfg);

    // Loads the model and spawns, per device, the executor (weights uploaded to a GPU now) and
    // its scheduler; the metrics actor; the cache and RAG actors when enabled. nullptr and
    // err = "<what>: <problem>" on a bad model, bad settings, a device that cannot be opened, or
    // retrieval enabled without a usable embedding model.
    static std::unique_ptr<runtime> start(caf::actor_system &sys, const runtime_config &cfg, std::string &err);
    // Stops the runtime's actors; open sessions then end too, answering a request in flight
    // with errc::internal "the runtime stopped".
    ~runtime();
    runtime(const runtime &) = delete;
    runtime &operator=(const runtime &) = delete;

    chat_session open_session();      // a new conversation; end it with send_exit
    const std::vector<std::string> &devices() const { return device_names_; } // "cpu", "cuda:0", ...
    metrics_source metrics() const;                    // (get_atom) => metrics_snapshot
    rag_actor rag() const;                             // null when retrieval is off (include/actorserve/rag_messages.h)
    embed_actor embeddings() const;                    // null when embeddings are off (include/actorserve/embed_messages.h)
    // What start-up did that an operator should read (caches and knowledge base loaded, set
    // aside, turned off).
    const std::vector<std::string> &notes() const { return notes_; }
    // The service watchdog's check: how long the longest-running step of any device's scheduler
    // has been in flight (0 when every one is idle), or nullopt when a scheduler did not answer
    // within `timeout` (its mailbox is stuck). Blocks the caller up to `timeout` per device.
    std::optional<std::chrono::milliseconds> longest_step(std::chrono::milliseconds timeout) const;
    const tokenizer &tok() const { return *tok_; }
    const llama_model &model() const { return *model_; }
    const scheduler_settings &settings() const { return *settings_; }

private:
    runtime(caf::actor_system &sys) : sys_(sys) {}

    caf::actor_system &sys_;
    runtime_config cfg_;
    std::shared_ptr<const scheduler_settings> settings_;
    std::shared_ptr<const llama_model> model_;
    std::shared_ptr<const tokenizer> tok_;
    std::shared_ptr<const token_vocab> vocab_; // structured output's token classes
    std::shared_ptr<const chat_template> tmpl_;
    struct actors;                   // the typed handles (actors/protocol.h), in runtime.cpp
    std::shared_ptr<actors> actors_;
    std::vector<std::string> notes_;
    std::vector<std::string> device_names_;
};

} // namespace actorserve
