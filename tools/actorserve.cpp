// actorserve: the command-line tool. Subcommands generate, chat, tokenize, info and perplexity
// over one GGUF model on the CPU engine, embed over a sentence-embedding model, ingest and
// rag-search over a knowledge base file, serve. See docs/cli.md.
// This file sets up the parser and dispatches; each command lives in its own cmd_<name>.cpp.
//
// Exit codes: 0 success, 1 an error reported as "actorserve: error: <message>" (bad model,
// bad parameter value, prompt too long, ...), 2 a usage error found by the argument parser.
#include <CLI/CLI.hpp>

#include <csignal>
#include <cstdio>
#include <exception>
#include <new>

#include "tools/cli_common.h"
#include "tools/commands.h"

using namespace actorserve::cli;

int main(int argc, char **argv) {
    // A closed stdout (e.g. `| head`) ends generation through a failed write instead of a signal.
    std::signal(SIGPIPE, SIG_IGN);

    CLI::App app{"actorserve: LLM inference on the CPU (GGUF, LLaMA family)", "actorserve"};
    app.require_subcommand(1);

    generate_options gen;
    CLI::App *gen_cmd = app.add_subcommand("generate", "Complete a prompt, streaming text to stdout");
    add_model_option(gen_cmd, gen.model);
    add_weights_option(gen_cmd, gen.model);
    gen_cmd->add_option("-p,--prompt", gen.prompt, "Prompt text")->required();
    gen_cmd->add_flag("--chat", gen.chat, "Wrap the prompt as a user message in the model's chat template");
    add_run_options(gen_cmd, gen.run);

    model_options chat_model;
    run_options chat_run;
    chat_run.max_tokens = 512;
    CLI::App *chat_cmd = app.add_subcommand("chat", "Interactive chat on the terminal (/reset, /quit)");
    add_model_option(chat_cmd, chat_model);
    add_weights_option(chat_cmd, chat_model);
    add_run_options(chat_cmd, chat_run);
    bool chat_verbose = false;
    chat_cmd->add_flag("-v,--verbose", chat_verbose, "After each answer print token counts and speed to stderr");

    tokenize_options tk;
    CLI::App *tok_cmd = app.add_subcommand("tokenize", "Print the token ids of a text");
    add_model_option(tok_cmd, tk.model);
    tok_cmd->add_option("--text", tk.text, "Text to tokenize")->required();
    tok_cmd->add_flag("--no-special", tk.no_special, "Tokenize control-token text (<|im_start|>) as plain text");
    tok_cmd->add_flag("--pieces", tk.pieces, "Print one token per line: id, tab, its text");

    embed_options emb;
    CLI::App *emb_cmd = app.add_subcommand("embed", "Print the sentence embedding of a text (all-MiniLM-L6-v2)");
    emb_cmd->add_option("--text", emb.text, "Text to embed");
    emb_cmd->add_option("-f,--file", emb.file, "Embed every line of this file, one vector per line");
    emb_cmd->add_option("--batch-size", emb.batch_size, "Lines of --file embedded together (1: one by one)")
        ->capture_default_str();
    emb_cmd->add_option("--model-dir", emb.model_dir, "Folder with config.json, vocab.txt and model.safetensors")
        ->capture_default_str();
    emb_cmd->add_option("-t,--threads", emb.threads, "Threads of the encoder")->capture_default_str();

    model_options info;
    CLI::App *info_cmd = app.add_subcommand("info", "Describe a model file");
    add_model_option(info_cmd, info);
    add_weights_option(info_cmd, info);

    perplexity_options ppl;
    CLI::App *ppl_cmd = app.add_subcommand("perplexity", "Perplexity over a text file, computed as llama.cpp does");
    add_model_option(ppl_cmd, ppl.model);
    add_weights_option(ppl_cmd, ppl.model);
    ppl_cmd->add_option("-f,--file", ppl.file, "Text file to score")->required();
    ppl_cmd->add_option("-c,--ctx", ppl.ctx, "Tokens per chunk (the context of each evaluation)")->capture_default_str();
    ppl_cmd->add_option("--chunks", ppl.chunks, "Chunks to score (default: all)");
    ppl_cmd->add_option("-t,--threads", ppl.threads, "Worker threads (default: physical cores)");

    ingest_options ing;
    CLI::App *ingest_cmd = app.add_subcommand("ingest", "Add documents (files, folders) to a knowledge base file for retrieval");
    ingest_cmd->add_option("paths", ing.paths, "Files, and folders searched for .md, .markdown, .txt and .jsonl")->required();
    ingest_cmd->add_option("--kb", ing.kb, "Knowledge base file ([rag] file)")->capture_default_str();
    ingest_cmd->add_option("--chunk-tokens", ing.chunk_tokens, "Word pieces per chunk ([rag] chunk_tokens)")->capture_default_str();
    ingest_cmd->add_option("--overlap", ing.overlap, "Word pieces repeated between chunks ([rag] overlap_tokens)")
        ->capture_default_str();
    ingest_cmd->add_option("-t,--threads", ing.threads, "Threads of the embedder")->capture_default_str();
    ingest_cmd->add_option("--embed-model-dir", ing.embed_model_dir, "Sentence-embedding model folder ([rag] embed_model_dir)")
        ->capture_default_str();

    rag_search_options rs;
    CLI::App *rs_cmd = app.add_subcommand("rag-search", "Search a knowledge base file and print passages with their scores");
    rs_cmd->add_option("-q,--query", rs.query, "What to search for")->required();
    rs_cmd->add_option("--kb", rs.kb, "Knowledge base file")->capture_default_str();
    rs_cmd->add_option("-k,--top-k", rs.top_k, "Passages to print")->capture_default_str();
    rs_cmd->add_option("--mode", rs.mode, "hybrid, bm25 or dense")->capture_default_str();
    rs_cmd->add_option("--tag", rs.tags, "Only documents with this tag; repeatable (any of them)");
    rs_cmd->add_option("--source", rs.sources, "Only documents from this source; repeatable (any of them)");
    rs_cmd->add_option("-t,--threads", rs.threads, "Threads of the embedder")->capture_default_str();
    rs_cmd->add_option("--embed-model-dir", rs.embed_model_dir, "Sentence-embedding model folder")->capture_default_str();

    serve_options srv;
    CLI::App *serve_cmd = app.add_subcommand("serve", "The network server: WebSocket chat, OpenAI-compatible HTTP, web page");
    serve_cmd->add_option("-c,--config", srv.config, "TOML settings file (see configs/actorserve.toml)");
    serve_cmd->add_option("-m,--model", srv.model, "GGUF model file (model.path)");
    serve_cmd->add_option("--host", srv.host, "Address to bind (server.host, default 127.0.0.1)");
    serve_cmd->add_option("--port", srv.port, "Port; 0: any free one (server.port, default 8080)");
    serve_cmd->add_option("--port-file", srv.port_file, "Write the bound port to this file once listening");
    serve_cmd->add_option("-t,--threads", srv.threads, "Engine threads (model.threads; default: physical cores)");
    serve_cmd->add_option("--devices", srv.devices, "auto (every GPU, else the CPU), cpu, or CUDA device indices such as 0,1 (model.devices)");
    serve_cmd->add_option("--ctx-size", srv.ctx_size, "Longest sequence, prompt + answer (model.n_ctx)");
    serve_cmd->add_option("--io-threads", srv.io_threads, "Network I/O threads (server.io_threads)");
    serve_cmd->add_option("--max-connections", srv.max_connections, "Open connections before 429 (server.max_connections)");
    serve_cmd->add_option("--api-keys", srv.api_keys, "File of API keys, one per line (server.api_keys_file)");
    serve_cmd->add_option("--allowed-origin", srv.allowed_origins,
                          "Cross-origin browser page to allow, e.g. http://localhost:3000, or *; repeatable (server.allowed_origins)");
    serve_cmd->add_option("--allowed-host", srv.allowed_hosts,
                          "Host header name to serve besides the bound address and localhost, or *; repeatable (server.allowed_hosts)");
    serve_cmd->add_option("--web-dir", srv.web_dir, "Directory of the web chat page (server.web_dir)");
    serve_cmd->add_option("--retention", srv.retention_s, "Seconds a dropped request's events are kept for resume (sessions.retention_s)");
    serve_cmd->add_option("--log-level", srv.log_level, "trace, debug, info, warn, error or off (server.log_level)");
    serve_cmd->add_option("--log-format", srv.log_format, "text or json (server.log_format)");
    serve_cmd->add_flag("--log-prompts", srv.log_prompts, "Log prompt text (off by default)");

    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp &e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp &e) {
        return app.exit(e);
    } catch (const CLI::ParseError &e) {
        std::fprintf(stderr, "actorserve: error: %s\nRun 'actorserve --help' or 'actorserve <command> --help'.\n",
                     e.what());
        return 2;
    }

    try {
        if (*gen_cmd) return cmd_generate(gen);
        if (*chat_cmd) return cmd_chat(chat_model, chat_run, chat_verbose);
        if (*tok_cmd) return cmd_tokenize(tk);
        if (*emb_cmd) return cmd_embed(emb);
        if (*info_cmd) return cmd_info(info);
        if (*ppl_cmd) return cmd_perplexity(ppl);
        if (*serve_cmd) return cmd_serve(srv);
        if (*ingest_cmd) return cmd_ingest(ing);
        if (*rs_cmd) return cmd_rag_search(rs);
    } catch (const std::bad_alloc &) {
        return fail("out of memory");
    } catch (const std::exception &e) {
        return fail(e.what());
    }
    return 0;
}
