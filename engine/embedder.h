// Sentence embeddings with a BERT encoder (all-MiniLM-L6-v2): WordPiece tokens -> 6-layer
// encoder -> mean over the tokens -> L2-normalised vector. See docs/embeddings.md.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace actorserve {

class embedder {
public:
    // dir: a folder with config.json, vocab.txt and the weights (models/all-MiniLM-L6-v2).
    // On failure returns nullptr and sets err to "<file>: <problem>".
    // n_threads counts the calling thread (1: no workers).
    static std::unique_ptr<embedder> load(const std::string &dir, std::string &err, int n_threads = 1);
    ~embedder();
    embedder(const embedder &) = delete;
    embedder &operator=(const embedder &) = delete;

    int dim() const; // 384 for all-MiniLM-L6-v2

    // An L2-normalised vector of dim() floats. Text that is not well-formed UTF-8 gives an
    // empty vector and last_error() says why; nothing else fails once loaded.
    // note: not thread-safe (scratch buffers are reused); one embedder per thread.
    std::vector<float> embed(std::string_view text);
    // embed() of each text in turn: result[i] == embed(texts[i]), empty where that text failed.
    std::vector<std::vector<float>> embed_batch(const std::vector<std::string> &texts);

    // Word pieces the model reads of text, [CLS] and [SEP] included, after truncation to its
    // longest sequence; 0 when text is not well-formed UTF-8.
    size_t count_tokens(std::string_view text) const;

    // Why the last embed/embed_batch call gave an empty vector ("" when none did).
    const std::string &last_error() const;

private:
    embedder();
    struct impl;
    std::unique_ptr<impl> impl_;
};

} // namespace actorserve
