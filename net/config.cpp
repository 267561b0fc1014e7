#include "net/config.h"

#include <toml++/toml.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

namespace actorserve {

namespace {

// One reader per table: it knows its keys, reads each into the field of the same meaning, and
// remembers which keys it saw so that a misspelt key is reported instead of silently ignored.
class table_reader {
public:
    table_reader(const toml::table &root, std::string name, std::string &err) : name_(std::move(name)), err_(err) {
        if (const toml::node *n = root.get(name_)) {
            tbl_ = n->as_table();
            if (!tbl_) fail("", "must be a table");
        }
    }

    template <typename T, typename Field>
    void get(const char *key, Field &field) {
        seen_.insert(key);
        if (!tbl_ || !err_.empty()) return;
        const toml::node *n = tbl_->get(key);
        if (!n) return;
        if constexpr (std::is_same_v<T, bool>) {
            if (auto v = n->value_exact<bool>()) field = *v;
            else fail(key, "must be true or false");
        } else if constexpr (std::is_same_v<T, std::string>) {
            if (auto v = n->value_exact<std::string>()) field = *v;
            else fail(key, "must be a string");
        } else if constexpr (std::is_same_v<T, double>) {
            if (auto v = n->value<double>()) field = static_cast<Field>(*v);
            else fail(key, "must be a number");
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
            const toml::array *a = n->as_array();
            if (!a) return fail(key, "must be an array of strings");
            field.clear();
            for (const toml::node &e : *a) {
                auto v = e.value_exact<std::string>();
                if (!v) return fail(key, "must be an array of strings");
                field.push_back(*v);
            }
        } else {
            auto v = n->value_exact<int64_t>();
            if (!v) return fail(key, "must be an integer");
            if (*v < 0 || static_cast<uint64_t>(*v) > static_cast<uint64_t>(std::numeric_limits<Field>::max()))
                return fail(key, "is out of range: " + std::to_string(*v));
            field = static_cast<Field>(*v);
        }
    }

    void done() {
        if (!tbl_ || !err_.empty()) return;
        for (const auto &[k, v] : *tbl_)
            if (!seen_.count(std::string(k.str()))) return fail(std::string(k.str()), "is not a setting");
    }

private:
    void fail(const std::string &key, const std::string &what) {
        if (err_.empty()) err_ = "[" + name_ + "]" + (key.empty() ? "" : " " + key) + " " + what;
    }
    std::string name_;
    std::string &err_;
    const toml::table *tbl_ = nullptr;
    std::set<std::string> seen_;
};

} // namespace

bool load_config_file(const std::string &path, server_config &cfg, std::string &err) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        err = path + ": cannot open the config file (" + std::strerror(errno) + ")";
        return false;
    }
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) {
        err = path + ": cannot read the config file";
        return false;
    }
    return load_config_text(text.str(), path, cfg, err);
}

bool load_config_text(std::string_view text, const std::string &path, server_config &cfg, std::string &err) {
    toml::table root;
    try {
        root = toml::parse(text, std::string_view(path));
    } catch (const toml::parse_error &e) {
        err = path + ":" + std::to_string(e.source().begin.line) + ": " + std::string(e.description());
        return false;
    }
    static const std::set<std::string> tables{"server", "sessions",   "model",  "scheduler",  "cache",
                                              "rag",    "embeddings", "policy", "request_log"};
    for (const auto &[k, v] : root)
        if (!tables.count(std::string(k.str()))) {
            err = path + ": [" + std::string(k.str()) + "] is not a settings table (server, sessions, model, scheduler, cache, rag, embeddings, policy, request_log)";
            return false;
        }
    std::string e;
    {
        table_reader t(root, "server", e);
        t.get<std::string>("host", cfg.host);
        t.get<int64_t>("port", cfg.port);
        t.get<std::string>("port_file", cfg.port_file);
        t.get<int64_t>("io_threads", cfg.io_threads);
        t.get<int64_t>("max_connections", cfg.max_connections);
        t.get<int64_t>("max_message_bytes", cfg.max_message_bytes);
        t.get<int64_t>("max_write_queue_bytes", cfg.max_write_queue_bytes);
        t.get<int64_t>("idle_timeout_s", cfg.idle_timeout_s);
        t.get<int64_t>("sse_ping_s", cfg.sse_ping_s);
        t.get<int64_t>("sse_resume_grace_s", cfg.sse_resume_grace_s);
        t.get<int64_t>("header_timeout_s", cfg.header_timeout_s);
        t.get<int64_t>("shutdown_grace_s", cfg.shutdown_grace_s);
        t.get<int64_t>("watchdog_step_s", cfg.watchdog_step_s);
        t.get<std::string>("log_format", cfg.log_format);
        t.get<std::string>("web_dir", cfg.web_dir);
        t.get<std::string>("api_keys_file", cfg.api_keys_file);
        t.get<std::vector<std::string>>("allowed_origins", cfg.allowed_origins);
        t.get<std::vector<std::string>>("allowed_hosts", cfg.allowed_hosts);
        t.get<bool>("log_prompts", cfg.log_prompts);
        t.get<std::string>("log_level", cfg.log_level);
        t.get<int64_t>("max_tokens_default", cfg.max_tokens_default);
        t.get<int64_t>("max_tokens_limit", cfg.runtime.max_tokens_limit);
        t.done();
    }
    {
        table_reader t(root, "sessions", e);
        t.get<int64_t>("retention_s", cfg.retention_s);
        t.get<int64_t>("idle_s", cfg.session_idle_s);
        t.get<int64_t>("max_sessions", cfg.max_sessions);
        t.get<int64_t>("max_retained_requests", cfg.max_retained_requests);
        t.get<int64_t>("max_sessions_per_client", cfg.max_sessions_per_client);
        t.get<int64_t>("max_retained_per_client", cfg.max_retained_per_client);
        t.done();
    }
    {
        table_reader t(root, "model", e);
        t.get<std::string>("path", cfg.runtime.model_path);
        t.get<std::string>("name", cfg.model_name);
        t.get<int64_t>("threads", cfg.runtime.n_threads);
        t.get<std::string>("devices", cfg.runtime.devices);
        t.get<int64_t>("n_ctx", cfg.runtime.n_ctx);
        t.done();
    }
    {
        table_reader t(root, "scheduler", e);
        t.get<int64_t>("max_seqs", cfg.runtime.max_seqs);
        t.get<int64_t>("step_tokens", cfg.runtime.step_tokens);
        t.get<int64_t>("max_waiting", cfg.runtime.max_waiting);
        t.get<int64_t>("kv_capacity_mib", cfg.runtime.kv_capacity_mib);
        t.get<int64_t>("kv_block_size", cfg.runtime.kv_block_size);
        int64_t wait_ms = cfg.runtime.batch_wait.count();
        t.get<int64_t>("batch_wait_ms", wait_ms);
        cfg.runtime.batch_wait = std::chrono::milliseconds(wait_ms);
        t.get<int64_t>("mailbox_limit", cfg.runtime.scheduler_mailbox_limit);
        t.get<int64_t>("retry_after_ms", cfg.runtime.retry_after_ms);
        t.done();
    }
    {
        table_reader t(root, "cache", e);
        cache_settings &c = cfg.runtime.cache;
        t.get<bool>("enabled", c.enabled);
        t.get<std::string>("dir", c.dir);
        t.get<int64_t>("save_interval_s", c.save_interval_s);
        t.get<int64_t>("mailbox_limit", c.mailbox_limit);
        t.get<int64_t>("max_entries", c.exact.max_entries);
        size_t mib = c.exact.max_bytes >> 20;
        t.get<int64_t>("max_mib", mib);
        c.exact.max_bytes = mib << 20;
        int64_t ttl_s = c.exact.ttl_ms / 1000;
        t.get<int64_t>("ttl_s", ttl_s);
        c.exact.ttl_ms = ttl_s * 1000;
        t.get<bool>("semantic", c.semantic);
        t.get<std::string>("embed_model", c.embed_model_dir);
        t.get<int64_t>("embed_threads", c.embed_threads);
        if (e.empty() && (c.embed_threads < 1 || c.embed_threads > 64))
            e = "[cache] embed_threads must be 1 to 64, got " + std::to_string(c.embed_threads);
        t.get<double>("semantic_threshold", c.sem.threshold);
        t.get<bool>("guard", c.sem.guard);
        t.get<std::vector<std::string>>("semantic_off", c.semantic_off);
        for (const std::string &id : c.semantic_off)
            if (e.empty() && (id.size() != 16 || id.find_first_not_of("0123456789abcdef") != std::string::npos))
                e = "[cache] semantic_off holds \"" + id.substr(0, 40) +
                    "\": a scope id is 16 lowercase hex digits (a request with \"cache_debug\": true shows its own)";
        t.get<bool>("debug_hits", c.debug_hits);
        std::string index = c.sem.index == semantic_index_kind::hnsw ? "hnsw" : "flat";
        t.get<std::string>("semantic_index", index);
        if (index == "hnsw") c.sem.index = semantic_index_kind::hnsw;
        else if (index == "flat") c.sem.index = semantic_index_kind::flat;
        else if (e.empty()) e = "[cache] semantic_index must be \"flat\" or \"hnsw\", got \"" + index + "\"";
        t.get<int64_t>("semantic_max_entries", c.sem.limits.max_entries);
        size_t sem_mib = c.sem.limits.max_bytes >> 20;
        t.get<int64_t>("semantic_max_mib", sem_mib);
        c.sem.limits.max_bytes = sem_mib << 20;
        c.sem.limits.ttl_ms = c.exact.ttl_ms;
        t.done();
    }
    {
        table_reader t(root, "rag", e);
        rag_runtime_settings &r = cfg.runtime.rag;
        t.get<bool>("enabled", r.enabled);
        t.get<std::string>("file", r.file);
        t.get<int64_t>("chunk_tokens", r.kb.chunking.max_tokens);
        t.get<int64_t>("overlap_tokens", r.kb.chunking.overlap_tokens);
        t.get<double>("k1", r.kb.bm25.k1);
        t.get<double>("b", r.kb.bm25.b);
        std::string fusion = r.kb.fusion == fusion_kind::weighted ? "weighted" : "rrf";
        t.get<std::string>("fusion", fusion);
        if (fusion == "rrf") r.kb.fusion = fusion_kind::rrf;
        else if (fusion == "weighted") r.kb.fusion = fusion_kind::weighted;
        else if (e.empty()) e = "[rag] fusion must be \"rrf\" or \"weighted\", got \"" + fusion + "\"";
        t.get<double>("rrf_k", r.kb.rrf_k);
        t.get<double>("bm25_weight", r.kb.bm25_weight);
        t.get<double>("dense_weight", r.kb.dense_weight);
        t.get<int64_t>("candidates", r.kb.candidates);
        t.get<int64_t>("top_k", r.default_top_k);
        t.get<int64_t>("budget_tokens", r.budget_tokens);
        t.get<int64_t>("mailbox_limit", r.mailbox_limit);
        t.get<int64_t>("max_body_bytes", cfg.rag_max_body_bytes);
        t.get<std::string>("embed_model_dir", r.embed_model_dir);
        t.done();
    }
    {
        table_reader t(root, "embeddings", e);
        embedding_settings &m = cfg.runtime.embeddings;
        t.get<bool>("enabled", m.enabled);
        t.get<std::string>("model_dir", m.model_dir);
        t.get<std::string>("model_id", m.model_id);
        t.get<int64_t>("max_inputs", m.max_inputs);
        t.get<int64_t>("mailbox_limit", m.mailbox_limit);
        t.get<int64_t>("threads", m.threads);
        t.done();
    }
    {
        table_reader t(root, "policy", e);
        policy_settings &p = cfg.policy;
        t.get<bool>("dynamic_temperature", p.dynamic_temperature);
        std::string action = cfg.guard.action == guard_action::block ? "block" : cfg.guard.action == guard_action::off ? "off" : "flag";
        t.get<std::string>("guard", action);
        if (auto a = parse_guard_action(action)) cfg.guard.action = *a;
        else if (e.empty()) e = "[policy] guard must be \"block\", \"flag\" or \"off\", got \"" + action.substr(0, 32) + "\"";
        t.get<std::string>("guard_examples", cfg.guard.examples);
        double threshold = cfg.guard.threshold;
        t.get<double>("guard_threshold", threshold);
        if (e.empty() && !(threshold > 0 && threshold < 1))
            e = "[policy] guard_threshold must be in (0, 1), got " + std::to_string(threshold);
        cfg.guard.threshold = static_cast<float>(threshold);
        t.get<std::string>("examples", p.examples);
        for (int k = 0; k < kRequestKinds; ++k) {
            const std::string kind(kRequestKindNames[k]);
            double temp = p.temperature[k], top_p = p.top_p[k];
            t.get<double>((kind + "_temperature").c_str(), temp);
            t.get<double>((kind + "_top_p").c_str(), top_p);
            if (e.empty() && !(temp >= 0 && temp <= 2))
                e = "[policy] " + kind + "_temperature must be in [0, 2], got " + std::to_string(temp);
            if (e.empty() && !(top_p > 0 && top_p <= 1))
                e = "[policy] " + kind + "_top_p must be in (0, 1], got " + std::to_string(top_p);
            p.temperature[k] = static_cast<float>(temp);
            p.top_p[k] = static_cast<float>(top_p);
        }
        t.done();
    }
    {
        table_reader t(root, "request_log", e);
        request_log_config &l = cfg.request_log;
        t.get<std::string>("path", l.path);
        size_t mib = l.max_bytes >> 20;
        t.get<int64_t>("max_mib", mib);
        l.max_bytes = mib << 20;
        t.get<int64_t>("keep", l.keep);
        t.done();
    }
    if (!e.empty()) {
        err = path + ": " + e;
        return false;
    }
    return true;
}

bool validate(const server_config &c, std::string &err) {
    auto bad = [&](const std::string &m) {
        err = m;
        return false;
    };
    if (c.io_threads < 1 || c.io_threads > 64) return bad("server.io_threads must be in [1, 64], got " + std::to_string(c.io_threads));
    if (c.max_connections < 1) return bad("server.max_connections must be >= 1");
    if (c.request_log.max_bytes < (size_t{1} << 20)) return bad("request_log.max_mib must be >= 1");
    if (c.request_log.keep < 0 || c.request_log.keep > 100) return bad("request_log.keep must be 0 to 100");
    if (c.max_message_bytes < 1024) return bad("server.max_message_bytes must be >= 1024, got " + std::to_string(c.max_message_bytes));
    if (c.max_write_queue_bytes < 1024) return bad("server.max_write_queue_bytes must be >= 1024");
    if (c.idle_timeout_s < 1) return bad("server.idle_timeout_s must be >= 1");
    if (c.sse_ping_s < 0 || c.sse_ping_s > 3600) return bad("server.sse_ping_s must be in [0, 3600], got " + std::to_string(c.sse_ping_s));
    if (c.sse_resume_grace_s < 0 || c.sse_resume_grace_s > c.retention_s)
        return bad("server.sse_resume_grace_s must be in [0, sessions.retention_s = " + std::to_string(c.retention_s) +
                   "], got " + std::to_string(c.sse_resume_grace_s));
    if (c.header_timeout_s < 1) return bad("server.header_timeout_s must be >= 1");
    if (c.runtime.max_tokens_limit < 1)
        return bad("server.max_tokens_limit must be >= 1, got " + std::to_string(c.runtime.max_tokens_limit));
    if (c.max_tokens_default < 1 || c.max_tokens_default > c.runtime.max_tokens_limit)
        return bad("server.max_tokens_default must be in [1, max_tokens_limit = " + std::to_string(c.runtime.max_tokens_limit) + "]");
    if (c.retention_s < 1) return bad("sessions.retention_s must be >= 1");
    if (c.session_idle_s < 1) return bad("sessions.idle_s must be >= 1");
    if (c.max_sessions < 1) return bad("sessions.max_sessions must be >= 1");
    if (c.max_retained_requests < 1) return bad("sessions.max_retained_requests must be >= 1");
    if (c.max_sessions_per_client < 1) return bad("sessions.max_sessions_per_client must be >= 1");
    if (c.max_retained_per_client < 1) return bad("sessions.max_retained_per_client must be >= 1");
    if (c.log_level != "trace" && c.log_level != "debug" && c.log_level != "info" && c.log_level != "warn" &&
        c.log_level != "error" && c.log_level != "off")
        return bad("server.log_level must be trace, debug, info, warn, error or off, got '" + c.log_level + "'");
    if (c.log_format != "text" && c.log_format != "json")
        return bad("server.log_format must be text or json, got '" + c.log_format + "'");
    if (c.watchdog_step_s < 1) return bad("server.watchdog_step_s must be >= 1, got " + std::to_string(c.watchdog_step_s));
    if (c.runtime.model_path.empty()) return bad("model.path is not set");
    const cache_settings &k = c.runtime.cache;
    if (k.enabled) {
        if (!(k.sem.threshold > 0.0f && k.sem.threshold <= 1.0f))
            return bad("cache.semantic_threshold must be in (0, 1], got " + std::to_string(k.sem.threshold));
        if (k.exact.max_entries < 1 || k.sem.limits.max_entries < 1) return bad("cache.max_entries and cache.semantic_max_entries must be >= 1");
        if (k.exact.max_bytes < (size_t{1} << 20) || k.sem.limits.max_bytes < (size_t{1} << 20))
            return bad("cache.max_mib and cache.semantic_max_mib must be >= 1");
        if (k.save_interval_s < 1) return bad("cache.save_interval_s must be >= 1");
        if (k.mailbox_limit < 1) return bad("cache.mailbox_limit must be >= 1");
    }
    const rag_runtime_settings &r = c.runtime.rag;
    if (r.enabled) {
        const size_t chunk = r.kb.chunking.max_tokens;
        // all-MiniLM-L6-v2 reads 256 word pieces, [CLS] and [SEP] among them: a longer chunk
        // would be embedded truncated, its end found by BM25 alone.
        if (chunk < 16 || chunk > 254) return bad("rag.chunk_tokens must be in [16, 254], got " + std::to_string(chunk));
        if (r.kb.chunking.overlap_tokens >= chunk)
            return bad("rag.overlap_tokens must be below rag.chunk_tokens = " + std::to_string(chunk) + ", got " +
                       std::to_string(r.kb.chunking.overlap_tokens));
        if (!(r.kb.bm25.k1 >= 0.0f && r.kb.bm25.k1 <= 10.0f))
            return bad("rag.k1 must be in [0, 10], got " + std::to_string(r.kb.bm25.k1));
        if (!(r.kb.bm25.b >= 0.0f && r.kb.bm25.b <= 1.0f)) return bad("rag.b must be in [0, 1], got " + std::to_string(r.kb.bm25.b));
        if (!(r.kb.rrf_k > 0.0f)) return bad("rag.rrf_k must be > 0, got " + std::to_string(r.kb.rrf_k));
        if (!(r.kb.bm25_weight >= 0.0f) || !(r.kb.dense_weight >= 0.0f) || r.kb.bm25_weight + r.kb.dense_weight <= 0.0f)
            return bad("rag.bm25_weight and rag.dense_weight must be >= 0 and not both 0");
        if (r.default_top_k < 1 || r.default_top_k > r.kb.max_top_k)
            return bad("rag.top_k must be in [1, " + std::to_string(r.kb.max_top_k) + "], got " + std::to_string(r.default_top_k));
        if (r.kb.candidates < r.default_top_k || r.kb.candidates > 10000)
            return bad("rag.candidates must be in [rag.top_k = " + std::to_string(r.default_top_k) + ", 10000], got " +
                       std::to_string(r.kb.candidates));
        if (r.budget_tokens < 16 || r.budget_tokens >= static_cast<size_t>(c.runtime.n_ctx))
            return bad("rag.budget_tokens must be in [16, model.n_ctx = " + std::to_string(c.runtime.n_ctx) + "), got " +
                       std::to_string(r.budget_tokens));
        if (r.mailbox_limit < 1) return bad("rag.mailbox_limit must be >= 1");
        if (c.rag_max_body_bytes < 1024)
            return bad("rag.max_body_bytes must be >= 1024, got " + std::to_string(c.rag_max_body_bytes));
        if (r.embed_model_dir.empty()) return bad("rag.embed_model_dir is not set (the embedding model is needed)");
    }
    const embedding_settings &m = c.runtime.embeddings;
    if (m.enabled) {
        if (m.model_id.empty()) return bad("embeddings.model_id must not be empty");
        if (m.max_inputs < 1 || m.max_inputs > 2048)
            return bad("embeddings.max_inputs must be in [1, 2048], got " + std::to_string(m.max_inputs));
        if (m.mailbox_limit < 1) return bad("embeddings.mailbox_limit must be >= 1");
        if (m.threads < 1 || m.threads > 64) return bad("embeddings.threads must be in [1, 64], got " + std::to_string(m.threads));
    }
    return true;
}

} // namespace actorserve
