// safetensors reader over a read-only memory map.
//
// Layout: u64 little-endian header size N, N bytes of JSON
//   {"<name>": {"dtype": "F32", "shape": [d0, d1, ...], "data_offsets": [begin, end]}, ...,
//    "__metadata__": {"<key>": "<string>", ...}}
// then the data section; offsets are relative to its start (byte 8 + N).
// Everything is checked at open: the header size against the file, the JSON, each dtype, each
// shape, and that every tensor's byte range lies inside the data section and holds exactly
// shape x dtype bytes. A bad file yields "<path>: <problem>"; nothing here aborts or throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace actorserve {

enum class st_dtype : uint8_t { boolean, u8, i8, u16, i16, f16, bf16, u32, i32, f32, u64, i64, f64 };
const char *st_dtype_name(st_dtype t); // as the header spells it: "F32", "BF16", ...
size_t st_dtype_size(st_dtype t);      // bytes per element

struct st_tensor {
    std::string name;
    st_dtype dtype = st_dtype::f32;
    std::vector<int64_t> shape;     // outermost first (row-major, the last dimension contiguous)
    const uint8_t *data = nullptr;  // inside the mapping
    size_t nbytes = 0;

    int64_t n_elements() const;
    std::string shape_string() const; // "[30522, 384]"
};

class safetensors_file {
public:
    // Maps and validates the file. On failure returns nullptr and sets err to "<path>: <problem>".
    static std::unique_ptr<safetensors_file> open(const std::string &path, std::string &err);
    // Same checks over bytes the caller keeps alive (tests).
    static std::unique_ptr<safetensors_file> from_memory(const uint8_t *data, size_t size, const std::string &name,
                                                         std::string &err);
    ~safetensors_file();
    safetensors_file(const safetensors_file &) = delete;
    safetensors_file &operator=(const safetensors_file &) = delete;

    const std::string &path() const { return path_; }
    const std::vector<st_tensor> &tensors() const { return tensors_; } // in header order
    const st_tensor *tensor(std::string_view name) const;              // nullptr when absent
    const std::vector<std::pair<std::string, std::string>> &metadata() const { return metadata_; }

private:
    safetensors_file() = default;
    bool parse(std::string &err);

    std::string path_;
    const uint8_t *base_ = nullptr;
    size_t size_ = 0;
    bool mapped_ = false;
    std::vector<st_tensor> tensors_;
    std::vector<std::pair<std::string, std::string>> metadata_;
};

} // namespace actorserve
