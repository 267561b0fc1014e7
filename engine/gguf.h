// GGUF reader over a read-only memory map.
//
// The file is validated completely at open: header, every metadata value, every tensor info,
// alignment, and that each tensor's bytes lie inside the file. Afterwards every accessor is a
// plain lookup. A bad file yields an error message naming the file and the problem; nothing in
// here aborts or throws on untrusted input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace actorserve {

// Metadata value types, numbered as in the GGUF specification.
enum class gguf_type : uint32_t {
    uint8 = 0, int8 = 1, uint16 = 2, int16 = 3, uint32 = 4, int32 = 5, float32 = 6,
    boolean = 7, string = 8, array = 9, uint64 = 10, int64 = 11, float64 = 12,
};
const char *gguf_type_name(gguf_type t);

// Tensor element types, numbered as in ggml. Only some are computed on (see model.cpp);
// the others are known so that an error can name them.
enum class tensor_type : uint32_t {
    f32 = 0, f16 = 1, q4_0 = 2, q4_1 = 3, q5_0 = 6, q5_1 = 7, q8_0 = 8, q8_1 = 9,
    q2_k = 10, q3_k = 11, q4_k = 12, q5_k = 13, q6_k = 14, q8_k = 15,
    i8 = 24, i16 = 25, i32 = 26, i64 = 27, f64 = 28, bf16 = 30,
};

struct tensor_type_traits {
    const char *name;
    uint32_t block_size; // elements per block
    uint32_t type_size;  // bytes per block
};
// nullptr for a type id this reader does not know.
const tensor_type_traits *tensor_traits(uint32_t type_id);
const char *tensor_type_name(tensor_type t);

struct gguf_value {
    gguf_type type = gguf_type::uint8;
    gguf_type array_type = gguf_type::uint8; // element type when type == array
    uint64_t u = 0;       // unsigned integers and booleans
    int64_t i = 0;        // signed integers (also set for unsigned ones that fit)
    double f = 0.0;       // floats (also set for every integer)
    std::string s;        // strings
    std::vector<gguf_value> arr;

    bool is_integer() const;
};

struct gguf_tensor {
    std::string name;
    uint32_t n_dims = 0;
    int64_t ne[4] = {1, 1, 1, 1}; // ne[0] is the contiguous (row) dimension
    tensor_type type = tensor_type::f32;
    uint64_t offset = 0;           // from the start of the data section
    uint64_t nbytes = 0;
    const uint8_t *data = nullptr; // inside the mapping

    int64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
    std::string shape_string() const;
};

class gguf_file {
public:
    // Maps and validates the file. On failure returns nullptr and sets err to
    // "<path>: <problem>".
    static std::unique_ptr<gguf_file> open(const std::string &path, std::string &err);
    // Same checks over bytes the caller keeps alive (tests, files already in memory).
    static std::unique_ptr<gguf_file> from_memory(const uint8_t *data, size_t size,
                                                  const std::string &name, std::string &err);
    ~gguf_file();
    gguf_file(const gguf_file &) = delete;
    gguf_file &operator=(const gguf_file &) = delete;

    const std::string &path() const { return path_; }
    uint32_t version() const { return version_; }
    uint64_t alignment() const { return alignment_; }
    size_t file_size() const { return size_; }
    uint64_t data_offset() const { return data_offset_; }

    const std::vector<std::pair<std::string, gguf_value>> &metadata() const { return kv_; }
    const gguf_value *find(std::string_view key) const;
    std::optional<uint64_t> get_uint(std::string_view key) const;
    std::optional<double> get_float(std::string_view key) const;
    std::optional<bool> get_bool(std::string_view key) const;
    std::optional<std::string> get_string(std::string_view key) const;
    // Array of the given element type, or nullptr.
    const std::vector<gguf_value> *get_array(std::string_view key, gguf_type elem) const;

    const std::vector<gguf_tensor> &tensors() const { return tensors_; }
    const gguf_tensor *tensor(std::string_view name) const;

    // Tells the kernel that a tensor's bytes will not be read again, so the mapped pages
    // wholly inside it leave this process's resident set (the file stays in the page cache).
    // Used after a tensor was converted into memory of its own. Nothing for from_memory bytes.
    // note: the bytes stay valid; reading them again faults them back in from the file.
    void release(const gguf_tensor &t) const;

private:
    gguf_file() = default;
    bool parse(std::string &err);

    std::string path_;
    const uint8_t *base_ = nullptr;
    size_t size_ = 0;
    bool mapped_ = false;
    uint32_t version_ = 0;
    uint64_t alignment_ = 32;
    uint64_t data_offset_ = 0;
    std::vector<std::pair<std::string, gguf_value>> kv_;
    std::unordered_map<std::string, size_t> kv_index_;
    std::vector<gguf_tensor> tensors_;
    std::unordered_map<std::string, size_t> tensor_index_;
};

} // namespace actorserve
