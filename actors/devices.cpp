#include "actors/devices.h"

#include <charconv>

#include "gpu/gpu_context.h"

namespace actorserve {

namespace {

std::optional<int> parse_index(std::string_view s) {
    if (s.starts_with("cuda:")) s.remove_prefix(5);
    int v = -1;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || end != s.data() + s.size() || v < 0) return std::nullopt;
    return v;
}

} // namespace

std::optional<std::vector<device_choice>> resolve_devices(const std::string &spec, std::vector<std::string> &notes,
                                                          std::string &err) {
    std::string why;
    if (spec == "cpu") return std::vector<device_choice>{{false, 0}};
    if (spec == "auto" || spec.empty()) {
        const int n = gpu_device_count(why);
        if (n == 0) {
            notes.push_back("no CUDA device (" + why + "): running on the CPU executor");
            return std::vector<device_choice>{{false, 0}};
        }
        std::vector<device_choice> out;
        for (int i = 0; i < n; ++i) out.push_back({true, i});
        return out;
    }
    std::vector<device_choice> out;
    size_t start = 0;
    while (start <= spec.size()) {
        const size_t comma = std::min(spec.find(',', start), spec.size());
        const std::string item = spec.substr(start, comma - start);
        const auto idx = parse_index(item);
        if (!idx) {
            err = "devices: \"" + item + "\" is not a device; expected \"auto\", \"cpu\" or CUDA device indices such as \"0,1\"";
            return std::nullopt;
        }
        for (const device_choice &d : out)
            if (d.index == *idx) {
                err = "devices: cuda:" + std::to_string(*idx) + " is listed twice";
                return std::nullopt;
            }
        out.push_back({true, *idx});
        start = comma + 1;
    }
    const int n = gpu_device_count(why);
    for (const device_choice &d : out)
        if (d.index >= n) {
            err = "devices: cuda:" + std::to_string(d.index) + " asked for, but " +
                  (n == 0 ? "there is no CUDA device (" + why + ")" : "only " + std::to_string(n) + " are visible");
            return std::nullopt;
        }
    return out;
}

std::unique_ptr<batch_decoder> open_decoder(const device_choice &d, const llama_model &model,
                                            const context_params &params, std::string &err) {
    if (!d.gpu) return std::make_unique<llama_context>(model, params);
    return gpu_context::create(model, params, d.index, err);
}

device_metrics probe_device(const device_choice &d, const batch_decoder &ctx) {
    device_metrics m;
    m.name = d.name();
    if (!d.gpu) {
        const auto &cpu = static_cast<const llama_context &>(ctx);
        m.description = "CPU, " + std::to_string(cpu.n_threads()) + " threads";
        m.weight_bytes = cpu.model().resident_weight_bytes();
        m.kv_bytes = static_cast<uint64_t>(cpu.n_kv_blocks()) *
                     llama_context::kv_bytes_per_block(cpu.model().hparams(), cpu.kv_block_size());
        return m;
    }
    const auto &g = static_cast<const gpu_context &>(ctx);
    m.weight_bytes = g.weight_bytes();
    m.kv_bytes = g.kv_bytes();
    m.scratch_bytes = g.scratch_bytes();
    gpu_device_info info;
    std::string err;
    if (gpu_device_query(d.index, info, err)) {
        m.description = info.name;
        m.total_bytes = info.total_bytes;
        m.free_bytes = info.free_bytes;
    } else {
        m.description = err;
    }
    return m;
}

} // namespace actorserve
