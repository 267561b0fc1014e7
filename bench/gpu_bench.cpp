// Decode throughput of the CUDA backend (gpu/gpu_context.h), and the model exported for
// Hugging Face transformers so that scripts/gpu_torch_bench.py can run the same weights.
//
//   gpu_bench [--model M] [--batch 1,16,64] [--tokens 128] [--repeat 3] [--device 0] [--prompt TEXT]
//             [--no-graphs]
//     For each batch size N: N sequences with the same chat prompt, all prefilled in one
//     decode(), then --tokens steps, each one decode() of one token per sequence, the next
//     token the argmax of the logits on the host. Prints one JSON line per batch size: decode
//     tokens/s (N * steps / time of the steps; the prefill is excluded and timed apart), the
//     median of --repeat runs after a warm-up, and sequence 0's greedy tokens. A first line
//     gives the prompt's token ids. Exits 77 with the reason when there is no CUDA device.
//
//   gpu_bench [--model M] --export-hf DIR   (no GPU needed)
//     DIR/config.json (LlamaConfig) and DIR/model.safetensors (F16, Hugging Face names): the
//     model as the CUDA backend uploads it (every matrix converted to F16 by the engine).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "engine/chat_template.h"
#include "engine/fp16.h"
#include "engine/safetensors.h"
#include "engine/tokenizer.h"
#include "gpu/gpu_context.h"

using namespace actorserve;
using clock_type = std::chrono::steady_clock;

namespace {

std::string fmt_float(float v) { // shortest text that reads back as the same float
    char buf[32];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
}

template <typename T> std::string json_list(const std::vector<T> &v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
    return s + "]";
}

// One tensor of the checkpoint: an F16 matrix of the engine's, or a float vector rounded to half.
struct hf_tensor {
    std::string name;
    const weight_matrix *m = nullptr;
    const float *vec = nullptr;
    int64_t n = 0;      // vec's length
    int heads = 0;      // > 0: undo llama.cpp's RoPE row permutation for this many heads
    std::vector<int64_t> shape() const { return m ? std::vector<int64_t>{m->n_out, m->n_in} : std::vector<int64_t>{n}; }
    size_t bytes() const { return static_cast<size_t>(m ? m->n_out * m->n_in : n) * 2; }
};

// Row of the GGUF matrix that holds HF row r. llama.cpp's converter stores q and k with each
// head's rows interleaved for its RoPE (pairs (i, i + d/2) made adjacent): HF's
// w.reshape(heads, 2, d/2, cols).swapaxes(1, 2), i.e. GGUF row h*d + 2i + j is HF row
// h*d + j*d/2 + i. Inverted here: HF row h*d + j*d/2 + i reads GGUF row h*d + 2i + j.
int64_t gguf_row(int64_t r, int heads, int64_t rows) {
    if (heads == 0) return r;
    const int64_t d = rows / heads, h = r / d, k = r % d, j = k / (d / 2), i = k % (d / 2);
    return h * d + 2 * i + j;
}

bool export_hf(const llama_model &model, const std::string &dir, std::string &err) {
    const llama_hparams &hp = model.hparams();
    err.clear();
    // What LlamaConfig cannot say: refuse rather than write a checkpoint that computes otherwise.
    if (hp.arch != "llama") err = "architecture '" + hp.arch + "' is not llama";
    else if (model.rope_freqs()) err = "the model has RoPE frequency factors (llama3 scaling), not exported";
    else if (hp.n_rot != hp.head_dim) err = "partial RoPE (n_rot < head_dim) is not exported";
    if (!err.empty()) return false;

    std::vector<hf_tensor> ts;
    auto mat = [&](std::string name, const weight_matrix &m, int heads = 0) { ts.push_back({std::move(name), &m, nullptr, 0, heads}); };
    auto vec = [&](std::string name, const float *v) { ts.push_back({std::move(name), nullptr, v, hp.n_embd, 0}); };
    mat("model.embed_tokens.weight", model.token_embd());
    for (size_t l = 0; l < model.layers().size(); ++l) {
        const llama_layer &L = model.layers()[l];
        const std::string p = "model.layers." + std::to_string(l) + ".";
        vec(p + "input_layernorm.weight", L.attn_norm);
        mat(p + "self_attn.q_proj.weight", L.wq, hp.n_head);
        mat(p + "self_attn.k_proj.weight", L.wk, hp.n_head_kv);
        mat(p + "self_attn.v_proj.weight", L.wv);
        mat(p + "self_attn.o_proj.weight", L.wo);
        vec(p + "post_attention_layernorm.weight", L.ffn_norm);
        mat(p + "mlp.gate_proj.weight", L.w_gate);
        mat(p + "mlp.up_proj.weight", L.w_up);
        mat(p + "mlp.down_proj.weight", L.w_down);
    }
    vec("model.norm.weight", model.output_norm());
    if (!model.tied_output()) mat("lm_head.weight", model.output());
    for (const hf_tensor &t : ts)
        if (t.m && (t.m->type != tensor_type::f16 || t.m->row_bytes != static_cast<size_t>(t.m->n_in) * 2)) {
            err = t.name + " is " + tensor_type_name(t.m->type) + ", not F16 (load with weight_format::f16)";
            return false;
        }

    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) {
        err = dir + ": " + ec.message();
        return false;
    }

    // safetensors: u64 LE header length, JSON header (padded with spaces to 8 bytes), data.
    std::string header = "{\"__metadata__\":{\"format\":\"pt\"}";
    size_t offset = 0;
    for (const hf_tensor &t : ts) {
        header += ",\"" + t.name + "\":{\"dtype\":\"F16\",\"shape\":" + json_list(t.shape()) +
                  ",\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + t.bytes()) + "]}";
        offset += t.bytes();
    }
    header += "}";
    header.append((8 - header.size() % 8) % 8, ' ');
    const std::string st_path = dir + "/model.safetensors";
    FILE *f = std::fopen(st_path.c_str(), "wb");
    if (!f) {
        err = st_path + ": cannot create";
        return false;
    }
    uint8_t len[8];
    for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(static_cast<uint64_t>(header.size()) >> (8 * i));
    bool ok = std::fwrite(len, 1, 8, f) == 8 && std::fwrite(header.data(), 1, header.size(), f) == header.size();
    std::vector<uint16_t> half;
    for (const hf_tensor &t : ts) {
        if (!ok) break;
        if (t.m) {
            for (int64_t r = 0; r < t.m->n_out && ok; ++r) {
                const uint8_t *row = t.m->data + static_cast<size_t>(gguf_row(r, t.heads, t.m->n_out)) * t.m->row_bytes;
                ok = std::fwrite(row, 1, t.m->row_bytes, f) == t.m->row_bytes;
            }
        } else {
            half.resize(static_cast<size_t>(t.n));
            for (int64_t i = 0; i < t.n; ++i) half[static_cast<size_t>(i)] = fp32_to_fp16(t.vec[i]);
            ok = std::fwrite(half.data(), 2, half.size(), f) == half.size();
        }
    }
    if (std::fclose(f) != 0 || !ok) {
        err = st_path + ": write failed";
        return false;
    }
    // Read it back with the engine's own reader: every tensor where the header says, whole.
    auto st = safetensors_file::open(st_path, err);
    if (!st) return false;
    if (st->tensors().size() != ts.size()) {
        err = st_path + ": read back " + std::to_string(st->tensors().size()) + " tensors, wrote " + std::to_string(ts.size());
        return false;
    }

    const gguf_file &g = model.file();
    std::ostringstream c;
    c << "{\n  \"architectures\": [\"LlamaForCausalLM\"],\n  \"model_type\": \"llama\",\n"
      << "  \"vocab_size\": " << hp.n_vocab << ",\n  \"hidden_size\": " << hp.n_embd << ",\n"
      << "  \"intermediate_size\": " << hp.n_ff << ",\n  \"num_hidden_layers\": " << hp.n_layer << ",\n"
      << "  \"num_attention_heads\": " << hp.n_head << ",\n  \"num_key_value_heads\": " << hp.n_head_kv << ",\n"
      << "  \"head_dim\": " << hp.head_dim << ",\n  \"hidden_act\": \"silu\",\n"
      << "  \"rms_norm_eps\": " << fmt_float(hp.rms_eps) << ",\n  \"rope_theta\": " << fmt_float(hp.rope_theta) << ",\n";
    if (hp.rope_freq_scale != 1.0f)
        c << "  \"rope_scaling\": {\"rope_type\": \"linear\", \"factor\": " << fmt_float(1.0f / hp.rope_freq_scale) << "},\n";
    c << "  \"max_position_embeddings\": " << hp.n_ctx_train << ",\n"
      << "  \"tie_word_embeddings\": " << (model.tied_output() ? "true" : "false") << ",\n"
      << "  \"attention_bias\": false,\n  \"mlp_bias\": false,\n";
    if (auto v = g.get_uint("tokenizer.ggml.bos_token_id")) c << "  \"bos_token_id\": " << *v << ",\n";
    if (auto v = g.get_uint("tokenizer.ggml.eos_token_id")) c << "  \"eos_token_id\": " << *v << ",\n";
    c << "  \"torch_dtype\": \"float16\"\n}\n";
    const std::string cfg_path = dir + "/config.json";
    FILE *cf = std::fopen(cfg_path.c_str(), "wb");
    const std::string cs = c.str();
    if (!cf || std::fwrite(cs.data(), 1, cs.size(), cf) != cs.size() || std::fclose(cf) != 0) {
        err = cfg_path + ": write failed";
        return false;
    }
    std::fprintf(stderr, "gpu_bench: wrote %s (%zu tensors, %zu bytes of F16) and %s\n", st_path.c_str(), ts.size(),
                 offset, cfg_path.c_str());
    return true;
}

int32_t argmax(const float *l, int n) { return static_cast<int32_t>(std::max_element(l, l + n) - l); }

struct run_result {
    double prefill_s = 0, decode_s = 0;
    std::vector<int32_t> seq0; // sequence 0's greedy tokens: after the prefill, then after each step
};

// One run at batch size n: slots [0, n) cleared, prefilled together, then `steps` decode steps.
bool run_batch(gpu_context &gpu, const std::vector<int32_t> &prompt, int n, int steps, run_result &r, std::string &err) {
    const int V = gpu.model().hparams().n_vocab;
    std::vector<batch_token> batch;
    for (int s = 0; s < n; ++s) {
        gpu.truncate(0, s);
        for (size_t i = 0; i < prompt.size(); ++i)
            batch.push_back({prompt[i], s, static_cast<int32_t>(i), i + 1 == prompt.size()});
    }
    const auto t0 = clock_type::now();
    if (!gpu.decode(batch, err)) return false;
    const auto t1 = clock_type::now();
    std::vector<int32_t> next(static_cast<size_t>(n));
    for (int s = 0; s < n; ++s) next[static_cast<size_t>(s)] = argmax(gpu.logits(static_cast<size_t>(s)), V);
    r.seq0 = {next[0]};
    for (int step = 0; step < steps; ++step) {
        batch.clear();
        for (int s = 0; s < n; ++s) batch.push_back({next[static_cast<size_t>(s)], s, gpu.n_past(s), true});
        if (!gpu.decode(batch, err)) return false;
        for (int s = 0; s < n; ++s) next[static_cast<size_t>(s)] = argmax(gpu.logits(static_cast<size_t>(s)), V);
        r.seq0.push_back(next[0]);
    }
    const auto t2 = clock_type::now();
    r.prefill_s = std::chrono::duration<double>(t1 - t0).count();
    r.decode_s = std::chrono::duration<double>(t2 - t1).count();
    return true;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t m = v.size() / 2;
    return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

} // namespace

int main(int argc, char **argv) {
    CLI::App app{"actorserve CUDA decode throughput; --export-hf writes the model for transformers"};
    std::string model_path = "models/SmolLM2-135M-Instruct.Q4_1.gguf", batches = "1,16,64", export_dir;
    std::string prompt_text = "Write a short story about a robot who learns to paint.";
    int tokens = 128, repeat = 3, device = 0;
    app.add_option("--model", model_path, "GGUF model");
    app.add_option("--batch", batches, "batch sizes (sequences decoded together), comma-separated");
    app.add_option("--tokens", tokens, "decode steps per run")->check(CLI::PositiveNumber);
    app.add_option("--repeat", repeat, "timed runs per batch size (the median is printed)")->check(CLI::PositiveNumber);
    app.add_option("--device", device, "CUDA device index");
    app.add_option("--prompt", prompt_text, "user message of every sequence's chat prompt");
    bool no_graphs = false;
    app.add_flag("--no-graphs", no_graphs, "launch every kernel of a decode step instead of replaying CUDA graphs");
    app.add_option("--export-hf", export_dir, "write DIR/config.json and DIR/model.safetensors, then exit");
    CLI11_PARSE(app, argc, argv);

    std::vector<int> sizes;
    std::stringstream ss(batches);
    for (std::string item; std::getline(ss, item, ',');) {
        const int b = std::atoi(item.c_str());
        if (b <= 0) {
            std::fprintf(stderr, "gpu_bench: bad batch size '%s'\n", item.c_str());
            return 2;
        }
        sizes.push_back(b);
    }

    std::string err;
    load_options opts;
    opts.weights = weight_format::f16; // what the GPU holds; the export writes the same halves
    auto model = llama_model::load(model_path, opts, err);
    if (!model) {
        std::fprintf(stderr, "gpu_bench: %s\n", err.c_str());
        return 1;
    }
    if (!export_dir.empty()) {
        if (export_hf(*model, export_dir, err)) return 0;
        std::fprintf(stderr, "gpu_bench: --export-hf: %s\n", err.c_str());
        return 1;
    }

    std::string why;
    if (gpu_device_count(why) == 0) {
        std::fprintf(stderr, "gpu_bench: no CUDA device: %s\n", why.c_str());
        return 77;
    }
    gpu_device_info info;
    if (!gpu_device_query(device, info, err)) {
        std::fprintf(stderr, "gpu_bench: %s\n", err.c_str());
        return 1;
    }

    auto tok = tokenizer::from_gguf(model->file(), err);
    auto tmpl = tok ? chat_template::detect(model->file().get_string("tokenizer.chat_template").value_or(""), err)
                    : std::nullopt;
    if (!tmpl) {
        std::fprintf(stderr, "gpu_bench: %s\n", err.c_str());
        return 1;
    }
    const std::vector<chat_message> msgs = {{"user", prompt_text}};
    const std::vector<int32_t> prompt = encode_prompt(*tok, tmpl->render(msgs, true));
    const int max_b = *std::max_element(sizes.begin(), sizes.end());
    const int P = static_cast<int>(prompt.size());

    // One context for every batch size: a slot per sequence of the largest, the whole prefill
    // of the largest in one decode(). chunk_invariant as the runtime runs it.
    context_params cp;
    cp.n_seq = max_b;
    cp.n_ctx = (P + tokens + 1 + 31) / 32 * 32;
    cp.n_batch = std::max(max_b * P, max_b);
    cp.chunk_invariant = true;
    auto gpu = gpu_context::create(*model, cp, device, err);
    if (!gpu) {
        std::fprintf(stderr, "gpu_bench: %s\n", err.c_str());
        return 1;
    }
    gpu->use_graphs(!no_graphs);
    std::printf("{\"what\":\"prompt\",\"prompt_ids\":%s}\n", json_list(prompt).c_str());
    for (int b : sizes) {
        run_result r;
        if (!run_batch(*gpu, prompt, b, std::min(tokens, 8), r, err)) { // warm-up: cuBLAS, caches
            std::fprintf(stderr, "gpu_bench: batch %d: %s\n", b, err.c_str());
            return 1;
        }
        std::vector<double> tps, prefill_ms;
        std::vector<int32_t> seq0;
        for (int i = 0; i < repeat; ++i) {
            if (!run_batch(*gpu, prompt, b, tokens, r, err)) {
                std::fprintf(stderr, "gpu_bench: batch %d: %s\n", b, err.c_str());
                return 1;
            }
            tps.push_back(static_cast<double>(b) * tokens / r.decode_s);
            prefill_ms.push_back(r.prefill_s * 1e3);
            if (i == 0) seq0 = r.seq0;
        }
        std::string runs = "[";
        for (size_t i = 0; i < tps.size(); ++i) runs += (i ? "," : "") + std::to_string(tps[i]);
        std::printf("{\"what\":\"decode\",\"backend\":\"actorserve\",\"device\":\"%s\",\"batch\":%d,\"prompt_tokens\":%d,"
                    "\"decode_steps\":%d,\"graphs\":%s,\"tok_per_s\":%.1f,\"runs_tok_per_s\":%s],\"prefill_ms\":%.2f,\"greedy_seq0\":%s}\n",
                    info.name.c_str(), b, P, tokens, gpu->graphs_in_use() ? "true" : "false", median(tps), runs.c_str(),
                    median(prefill_ms), json_list(seq0).c_str());
        std::fflush(stdout);
    }
    return 0;
}
