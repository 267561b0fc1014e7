// The batched forward pass on one CUDA device: the same contract as llama_context (see
// engine/forward.h and engine/decoder.h), with the weights, the paged KV cache and all scratch
// in that device's memory.
//
// - Weights: every matrix uploaded once as F16, whatever the file holds (dequantized on the
//   host row by row with the engine's own kernels, then rounded to half); norm vectors as
//   float. Matrix products go through cuBLAS (F16 inputs, F32 accumulation and output).
// - KV cache: F16, paged exactly as on the CPU (blocks of kv_block_size positions, a block
//   table per slot, set_blocks()/clear() in pool mode), held on the device.
// - Per step: the batch's tokens, positions and the tables of its slots go up, the logits of
//   the rows that asked for them come back; everything else stays on the device.
// - Streams: copies of the next batch's metadata run on a copy stream while the compute
//   stream finishes; logits come back through pinned memory. Decode steps replay CUDA graphs.
//
// The header needs no CUDA: without the toolkit (ACTORSERVE_CUDA=OFF) create() fails with the
// reason and gpu_device_count() returns 0, so callers build and run the same either way.
// note: not thread-safe; one owner (a GPU executor) calls it from its own thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "engine/decoder.h"
#include "engine/forward.h"

namespace actorserve {

struct gpu_device_info {
    int index = 0;
    std::string name;         // e.g. "NVIDIA H200"
    int cc_major = 0, cc_minor = 0;
    size_t total_bytes = 0;   // device memory
    size_t free_bytes = 0;    // free now
};

// CUDA devices visible to this process; 0 with `why` set when there are none: a build without
// CUDA, no driver, no device (the CUDA runtime's own message is quoted).
int gpu_device_count(std::string &why);
bool gpu_device_query(int device, gpu_device_info &info, std::string &err);

class gpu_context final : public batch_decoder {
public:
    // Uploads the weights to `device` and allocates the KV pool and scratch for `params` (same
    // meaning as for llama_context; n_threads only bounds the host threads that convert
    // weights). nullptr with err naming the device and the problem: no such device, out of
    // device memory (bytes needed and free named), a build without CUDA.
    static std::unique_ptr<gpu_context> create(const llama_model &model, const context_params &params, int device,
                                               std::string &err);
    ~gpu_context() override;

    bool decode(std::span<const batch_token> batch, std::string &err) override;
    const float *logits(size_t i) const override; // host copy, (n_vocab,)
    void set_blocks(int seq, std::span<const int32_t> table, int n_past) override;
    void clear(int seq) override;
    int n_past(int seq = 0) const override;
    const llama_model &model() const;
    int n_vocab() const override;

    // Sequence 0, as llama_context::eval: appends tokens, last one's logits in logits(0).
    bool eval(std::span<const int32_t> tokens, std::string &err);
    void truncate(int n, int seq = 0);

    // CUDA graphs for decode steps (on by default): a step of at most 64 tokens that all want
    // logits replays a graph captured for its size. Off: every step launches its kernels.
    // Both compute the same bits. If a capture fails, graphs stay off for this context.
    void use_graphs(bool on);
    bool graphs_in_use() const;

    int device() const;
    int kv_block_size() const;
    int n_kv_blocks() const;
    size_t weight_bytes() const;  // device memory held by weights
    size_t kv_bytes() const;      // by the KV pool
    size_t scratch_bytes() const; // by activations, tables and cuBLAS workspace

    struct impl;

private:
    explicit gpu_context(std::unique_ptr<impl> p);
    std::unique_ptr<impl> p_;
};

} // namespace actorserve
