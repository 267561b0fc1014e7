// The actorserve subcommands, one per file (cmd_<name>.cpp), and the options each takes.
// Each returns the process exit code: 0 success, 1 an error already reported on stderr.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tools/cli_common.h"

namespace actorserve::cli {

struct generate_options {
    model_options model;
    run_options run;
    std::string prompt;
    bool chat = false;
};

// Complete a prompt (or, with --chat, one user message), streaming text to stdout.
int cmd_generate(const generate_options &o);

// Interactive conversation on stdin/stdout (/reset, /quit).
int cmd_chat(const model_options &mo, const run_options &o, bool verbose);

struct tokenize_options {
    model_options model;
    std::string text;
    bool no_special = false;
    bool pieces = false;
};

// Print the token ids of a text (with --pieces, one token per line with its text).
int cmd_tokenize(const tokenize_options &o);

struct embed_options {
    std::optional<std::string> text;
    std::string file;
    std::string model_dir = "models/all-MiniLM-L6-v2";
    int threads = 1;
    int batch_size = 32; // texts per embed_batch call (--file); 1: embed() one by one
};

// Print L2-normalised sentence embeddings, one vector per line, space-separated: of --text,
// or of each line of --file (then with a speed line on stderr).
int cmd_embed(const embed_options &o);

// Describe a model file.
int cmd_info(const model_options &o);

struct perplexity_options {
    model_options model;
    std::string file;
    int ctx = 512;
    int chunks = -1; // -1: all
    int threads = 0; // 0: physical cores
};

// Perplexity of the model over a text file, chunk by chunk as llama.cpp's perplexity tool.
int cmd_perplexity(const perplexity_options &o);

struct ingest_options {
    std::vector<std::string> paths;            // files, and folders searched for .md .markdown .txt .jsonl
    std::string kb = "data/rag/knowledge.rag";
    size_t chunk_tokens = 200;
    size_t overlap = 40;
    int threads = 2;
    std::string embed_model_dir = "models/all-MiniLM-L6-v2";
};

// Add documents to a knowledge base file (docs/rag.md): unchanged ones are skipped by content
// hash, new and changed ones chunked and embedded, the file saved once at the end (atomically).
// Exit 1 when any document was rejected.
int cmd_ingest(const ingest_options &o);

struct rag_search_options {
    std::string query;
    std::string kb = "data/rag/knowledge.rag";
    size_t top_k = 5;
    std::string mode = "hybrid";
    std::vector<std::string> tags, sources;
    int threads = 1;
    std::string embed_model_dir = "models/all-MiniLM-L6-v2";
};

// Search a knowledge base file and print the passages with their scores.
int cmd_rag_search(const rag_search_options &o);

struct serve_options {
    std::string config;
    std::optional<std::string> host, port_file, model, api_keys, web_dir, log_level, log_format, devices;
    std::optional<uint16_t> port;
    std::optional<int> threads, ctx_size, io_threads, max_connections, retention_s;
    std::vector<std::string> allowed_origins;
    std::vector<std::string> allowed_hosts;
    bool log_prompts = false;
};

// The network server (docs/protocol.md) until SIGINT or SIGTERM.
int cmd_serve(const serve_options &o);

} // namespace actorserve::cli
