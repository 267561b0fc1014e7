// A small GGUF writer for tests.
//
// Builds a file byte by byte so that a test can state exactly what the file holds, and records
// where each header field landed so that a test can corrupt one field at a known offset.
// Nothing is validated: the writer writes what it is given (unknown type tags, data whose size
// does not match the shape), because writing bad files is half of its job.
//
// Layout written, as in the GGUF specification (all little-endian):
//   "GGUF" | version u32 | n_tensors u64 | n_kv u64
//   n_kv      x { key: u64 len + bytes | type u32 | value }
//   n_tensors x { name: u64 len + bytes | n_dims u32 | dims u64[n_dims] | type u32 | offset u64 }
//   zero padding up to the alignment | tensor data, each tensor starting on an aligned offset
#pragma once

#include "engine/gguf.h"

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace actorserve::testing {

template <class T> void put(std::vector<uint8_t> &out, T x) {
    static_assert(std::is_trivially_copyable_v<T>);
    const size_t at = out.size();
    out.resize(at + sizeof(T));
    std::memcpy(out.data() + at, &x, sizeof(T));
}

inline void put_bytes(std::vector<uint8_t> &out, const void *p, size_t n) {
    const size_t at = out.size();
    out.resize(at + n);
    if (n) std::memcpy(out.data() + at, p, n);
}

inline void put_string(std::vector<uint8_t> &out, std::string_view s) {
    put<uint64_t>(out, s.size());
    put_bytes(out, s.data(), s.size());
}

// One metadata value as it appears after its key: the type tag, then its bytes.
// The tag is a plain integer so that a test can write one the reader does not know.
struct meta_value {
    uint32_t type = 0;
    std::vector<uint8_t> bytes;
};

namespace meta {

template <class T> meta_value scalar(gguf_type t, T x) {
    meta_value v{static_cast<uint32_t>(t), {}};
    put(v.bytes, x);
    return v;
}
inline meta_value u8(uint8_t x) { return scalar(gguf_type::uint8, x); }
inline meta_value i8(int8_t x) { return scalar(gguf_type::int8, x); }
inline meta_value u16(uint16_t x) { return scalar(gguf_type::uint16, x); }
inline meta_value i16(int16_t x) { return scalar(gguf_type::int16, x); }
inline meta_value u32(uint32_t x) { return scalar(gguf_type::uint32, x); }
inline meta_value i32(int32_t x) { return scalar(gguf_type::int32, x); }
inline meta_value f32(float x) { return scalar(gguf_type::float32, x); }
inline meta_value u64(uint64_t x) { return scalar(gguf_type::uint64, x); }
inline meta_value i64(int64_t x) { return scalar(gguf_type::int64, x); }
inline meta_value f64(double x) { return scalar(gguf_type::float64, x); }
// The byte is written as given, so boolean_byte(2) makes an invalid bool.
inline meta_value boolean_byte(uint8_t x) { return scalar(gguf_type::boolean, x); }
inline meta_value boolean(bool b) { return boolean_byte(b ? 1 : 0); }

inline meta_value str(std::string_view s) {
    meta_value v{static_cast<uint32_t>(gguf_type::string), {}};
    put_string(v.bytes, s);
    return v;
}

// Array of elem-typed items: element type u32, count u64, then each item without its tag.
// An item that is itself an array carries its own element type and count, so nesting is
// array(gguf_type::array, {array(...), array(...)}).
inline meta_value array(gguf_type elem, const std::vector<meta_value> &items) {
    meta_value v{static_cast<uint32_t>(gguf_type::array), {}};
    put(v.bytes, static_cast<uint32_t>(elem));
    put<uint64_t>(v.bytes, items.size());
    for (const meta_value &item : items) {
        assert(item.type == static_cast<uint32_t>(elem) && "array items must have the element type");
        put_bytes(v.bytes, item.bytes.data(), item.bytes.size());
    }
    return v;
}

inline meta_value strings(const std::vector<std::string> &items) {
    std::vector<meta_value> vs;
    for (const std::string &s : items) vs.push_back(str(s));
    return array(gguf_type::string, vs);
}

// Any tag with any bytes after it.
inline meta_value raw(uint32_t type, std::vector<uint8_t> bytes) { return {type, std::move(bytes)}; }

} // namespace meta

// Where each field of a built file lives, in bytes from the start of the file.
struct gguf_layout {
    static constexpr size_t magic = 0, version = 4, n_tensors = 8, n_kv = 16;
    struct kv_fields {
        size_t key;   // the key's u64 length prefix
        size_t type;  // the u32 value type tag
        size_t value; // the first byte after the tag (for an array: its element type)
    };
    struct tensor_fields {
        size_t name;   // the name's u64 length prefix
        size_t n_dims; // u32
        size_t dims;   // first of n_dims u64
        size_t type;   // u32 ggml type id
        size_t offset; // u64 offset into the data section
        uint64_t data_offset = 0; // the value written there
    };
    std::vector<kv_fields> kv;
    std::vector<tensor_fields> tensors;
    size_t header_end = 0; // first byte after the last tensor info
    size_t data_start = 0; // header_end rounded up to the alignment
    uint64_t alignment = 32;
};

struct gguf_image {
    std::vector<uint8_t> bytes;
    gguf_layout at;

    // Overwrites sizeof(T) bytes at offset with x, little-endian.
    template <class T> void poke(size_t offset, T x) {
        static_assert(std::is_trivially_copyable_v<T>);
        assert(offset + sizeof(T) <= bytes.size());
        std::memcpy(bytes.data() + offset, &x, sizeof(T));
    }
    // The first n bytes, in a buffer of exactly that size (so that the address sanitizer
    // catches a read past its end).
    std::vector<uint8_t> prefix(size_t n) const {
        assert(n <= bytes.size());
        return std::vector<uint8_t>(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
    }
};

class gguf_writer {
public:
    gguf_writer &version(uint32_t v) {
        version_ = v;
        return *this;
    }
    gguf_writer &kv(std::string key, meta_value v) {
        kv_.emplace_back(std::move(key), std::move(v));
        return *this;
    }
    // dims[0] is the row length. data is written as given, whatever the shape says.
    gguf_writer &tensor(std::string name, uint32_t type_id, std::vector<uint64_t> dims,
                        std::vector<uint8_t> data) {
        tensors_.push_back({std::move(name), type_id, std::move(dims), std::move(data)});
        return *this;
    }
    gguf_writer &tensor(std::string name, tensor_type type, std::vector<uint64_t> dims,
                        std::vector<uint8_t> data) {
        return tensor(std::move(name), static_cast<uint32_t>(type), std::move(dims), std::move(data));
    }

    gguf_image build() const {
        gguf_image img;
        gguf_layout &at = img.at;
        at.alignment = alignment();
        std::vector<uint8_t> &b = img.bytes;

        put_bytes(b, "GGUF", 4);
        put(b, version_);
        put<uint64_t>(b, tensors_.size());
        put<uint64_t>(b, kv_.size());

        for (const auto &[key, v] : kv_) {
            gguf_layout::kv_fields f{};
            f.key = b.size();
            put_string(b, key);
            f.type = b.size();
            put(b, v.type);
            f.value = b.size();
            put_bytes(b, v.bytes.data(), v.bytes.size());
            at.kv.push_back(f);
        }

        uint64_t data_end = 0; // running end of the data section
        for (const tensor_spec &t : tensors_) {
            gguf_layout::tensor_fields f{};
            f.name = b.size();
            put_string(b, t.name);
            f.n_dims = b.size();
            put(b, static_cast<uint32_t>(t.dims.size()));
            f.dims = b.size();
            for (uint64_t d : t.dims) put(b, d);
            f.type = b.size();
            put(b, t.type_id);
            f.offset = b.size();
            f.data_offset = align_up(data_end, at.alignment);
            put(b, f.data_offset);
            data_end = f.data_offset + t.data.size();
            at.tensors.push_back(f);
        }
        at.header_end = b.size();
        at.data_start = align_up(b.size(), at.alignment);

        b.resize(at.data_start + data_end, 0);
        for (size_t k = 0; k < tensors_.size(); ++k) {
            const std::vector<uint8_t> &d = tensors_[k].data;
            std::copy(d.begin(), d.end(), b.begin() + static_cast<std::ptrdiff_t>(at.data_start + at.tensors[k].data_offset));
        }
        return img;
    }

private:
    struct tensor_spec {
        std::string name;
        uint32_t type_id;
        std::vector<uint64_t> dims;
        std::vector<uint8_t> data;
    };

    static uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

    // general.alignment when it is a non-zero uint32 (the layout honours even a value that
    // is not a power of two, so that the reader, not the writer, rejects it); else 32.
    uint64_t alignment() const {
        for (const auto &[key, v] : kv_) {
            if (key != "general.alignment" || v.type != static_cast<uint32_t>(gguf_type::uint32) ||
                v.bytes.size() != 4)
                continue;
            uint32_t a = 0;
            std::memcpy(&a, v.bytes.data(), 4);
            if (a != 0) return a;
        }
        return 32;
    }

    uint32_t version_ = 3;
    std::vector<std::pair<std::string, meta_value>> kv_;
    std::vector<tensor_spec> tensors_;
};

// n bytes of a fixed pattern that differs with seed, for tensor data a test can compare.
inline std::vector<uint8_t> pattern_bytes(size_t n, uint32_t seed) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 31 + seed * 7 + 1);
    return v;
}

} // namespace actorserve::testing
