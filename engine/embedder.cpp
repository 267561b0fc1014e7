#include "engine/embedder.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <span>
#include <sstream>

#include "engine/bert.h"
#include "engine/json_reader.h"
#include "engine/wordpiece.h"

namespace actorserve {

namespace {

// sentence-transformers' max_seq_length for all-MiniLM-L6-v2, used when the folder has no
// sentence_bert_config.json.
constexpr int kDefaultMaxSeqLen = 256;
// Most tokens encoded in one pass of embed_batch: bounds the scratch at about
// kBatchTokens * (6 d + n_ff) floats (25 MB for MiniLM) whatever the batch.
constexpr int64_t kBatchTokens = 2048;

// A small optional JSON file of the model folder: false with err set when it exists but is
// unreadable or not a JSON object; true with root.type == null when it does not exist.
bool read_optional_json(const std::string &path, json_value &root, std::string &err) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return true;
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    std::string jerr;
    if (!in || !parse_json(ss.str(), root, jerr) || root.type != json_value::kind::object) {
        err = path + ": not a readable JSON object" + (jerr.empty() ? "" : ": " + jerr);
        return false;
    }
    return true;
}

} // namespace

struct embedder::impl {
    std::unique_ptr<wordpiece_tokenizer> tok;
    std::unique_ptr<bert_model> model;
    std::unique_ptr<bert_context> ctx;
    int max_tokens = kDefaultMaxSeqLen; // [CLS] + pieces + [SEP]
    std::string error;
    std::vector<float> hidden; // (n_tok, d) last hidden states of a batch

    // Mean of each sequence's hidden states (every token counts: the attention mask is all
    // ones), then x / max(|x|, 1e-12) as sentence-transformers' Normalize.
    void pool(std::span<const std::span<const int32_t>> seqs, std::vector<std::vector<float>> &out,
              const std::vector<size_t> &slots) {
        const int d = model->hparams().n_embd;
        ctx->encode(seqs, hidden);
        size_t row = 0;
        for (size_t s = 0; s < seqs.size(); ++s) {
            std::vector<double> sum(static_cast<size_t>(d), 0.0);
            for (size_t i = 0; i < seqs[s].size(); ++i, ++row) {
                const float *h = hidden.data() + row * static_cast<size_t>(d);
                for (int c = 0; c < d; ++c) sum[static_cast<size_t>(c)] += h[c];
            }
            double sq = 0.0;
            for (double &v : sum) {
                v /= static_cast<double>(seqs[s].size());
                sq += v * v;
            }
            const double inv = 1.0 / std::max(std::sqrt(sq), 1e-12);
            std::vector<float> &e = out[slots[s]];
            e.resize(static_cast<size_t>(d));
            for (int c = 0; c < d; ++c) e[static_cast<size_t>(c)] = static_cast<float>(sum[static_cast<size_t>(c)] * inv);
        }
    }
};

embedder::embedder() : impl_(std::make_unique<impl>()) {}
embedder::~embedder() = default;

std::unique_ptr<embedder> embedder::load(const std::string &dir, std::string &err, int n_threads) {
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) {
        err = dir + ": not a directory (the model folder; scripts/setup.sh fetches models/all-MiniLM-L6-v2)";
        return nullptr;
    }
    const std::string config = dir + "/config.json", vocab = dir + "/vocab.txt", weights = dir + "/model.safetensors";
    for (const std::string &f : {config, vocab, weights}) {
        if (!std::filesystem::exists(f, ec)) {
            err = f + ": missing from the model folder";
            return nullptr;
        }
    }
    std::unique_ptr<embedder> e(new embedder());
    impl &m = *e->impl_;
    // The pipeline as sentence-transformers describes it, where the folder says.
    json_value st;
    if (!read_optional_json(dir + "/sentence_bert_config.json", st, err)) return nullptr;
    if (const json_value *v = st.find("max_seq_length")) {
        const auto n = v->as_int();
        if (!n || *n < 2 || *n > 1 << 20) {
            err = dir + "/sentence_bert_config.json: max_seq_length must be an integer >= 2";
            return nullptr;
        }
        m.max_tokens = static_cast<int>(*n);
    }
    json_value tc;
    if (!read_optional_json(dir + "/tokenizer_config.json", tc, err)) return nullptr;
    if (const json_value *v = tc.find("do_lower_case"); v && v->type == json_value::kind::boolean && !v->boolean) {
        err = dir + "/tokenizer_config.json: do_lower_case is false; only uncased BERT vocabularies are supported";
        return nullptr;
    }

    m.model = bert_model::load(config, weights, err);
    if (!m.model) return nullptr;
    m.tok = wordpiece_tokenizer::load(vocab, err);
    if (!m.tok) return nullptr;
    const bert_hparams &hp = m.model->hparams();
    if (m.tok->vocab_size() > static_cast<size_t>(hp.n_vocab)) {
        err = vocab + ": " + std::to_string(m.tok->vocab_size()) + " tokens, more than config.json's vocab_size " +
              std::to_string(hp.n_vocab);
        return nullptr;
    }
    if (hp.n_pos < 2) {
        err = config + ": max_position_embeddings must be at least 2 ([CLS] and [SEP])";
        return nullptr;
    }
    m.max_tokens = std::min(m.max_tokens, hp.n_pos);
    m.ctx = std::make_unique<bert_context>(*m.model, std::max(1, n_threads));
    return e;
}

int embedder::dim() const { return impl_->model->hparams().n_embd; }

const std::string &embedder::last_error() const { return impl_->error; }

std::vector<float> embedder::embed(std::string_view text) {
    impl &m = *impl_;
    m.error.clear();
    std::vector<int32_t> ids;
    if (!m.tok->encode(text, m.max_tokens, ids, m.error)) return {};
    std::vector<std::vector<float>> out(1);
    const std::span<const int32_t> seq(ids);
    m.pool(std::span(&seq, 1), out, {0});
    return std::move(out[0]);
}

size_t embedder::count_tokens(std::string_view text) const {
    std::vector<int32_t> ids;
    std::string err;
    return impl_->tok->encode(text, impl_->max_tokens, ids, err) ? ids.size() : 0;
}

std::vector<std::vector<float>> embedder::embed_batch(const std::vector<std::string> &texts) {
    impl &m = *impl_;
    m.error.clear();
    std::vector<std::vector<float>> out(texts.size());
    std::vector<std::vector<int32_t>> ids(texts.size());
    std::vector<std::span<const int32_t>> seqs;
    std::vector<size_t> slots; // out[] index of each of seqs
    int64_t n_tok = 0;
    const auto run = [&] {
        if (!seqs.empty()) m.pool(seqs, out, slots);
        seqs.clear();
        slots.clear();
        n_tok = 0;
    };
    for (size_t i = 0; i < texts.size(); ++i) {
        std::string err;
        if (!m.tok->encode(texts[i], m.max_tokens, ids[i], err)) {
            if (m.error.empty()) m.error = "text " + std::to_string(i) + ": " + err;
            continue;
        }
        const auto n = static_cast<int64_t>(ids[i].size());
        if (n_tok + n > kBatchTokens) run();
        seqs.emplace_back(ids[i]);
        slots.push_back(i);
        n_tok += n;
    }
    run();
    return out;
}

} // namespace actorserve
