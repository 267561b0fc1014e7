#include "engine/gguf.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace actorserve {

namespace {

// Each bound below keeps a hostile header from making us allocate or loop without limit.
constexpr uint64_t kMaxStringBytes = 1ull << 26;  // 64 MiB for one metadata string
constexpr int kMaxArrayDepth = 4;                 // arrays of arrays of ...
constexpr uint32_t kMaxDims = 4;
// A count read from the header is only a claim until its entries have been read, and an entry
// costs far more in memory than in the file (an array element is an 88-byte gguf_value against
// as little as 1 byte), so memory reserved up front for a count is capped; past the cap a
// vector grows as entries are actually read. 2^16 covers a small model's vocabulary at once.
constexpr uint64_t kMaxReserve = 1u << 16;

constexpr tensor_type_traits kTraits[] = {
    // indexed by ggml type id; name == nullptr marks an id we do not know
    {"F32", 1, 4}, {"F16", 1, 2}, {"Q4_0", 32, 18}, {"Q4_1", 32, 20},
    {nullptr, 0, 0}, {nullptr, 0, 0}, // 4, 5: removed from ggml long ago
    {"Q5_0", 32, 22}, {"Q5_1", 32, 24}, {"Q8_0", 32, 34}, {"Q8_1", 32, 36},
    {"Q2_K", 256, 84}, {"Q3_K", 256, 110}, {"Q4_K", 256, 144}, {"Q5_K", 256, 176},
    {"Q6_K", 256, 210}, {"Q8_K", 256, 292},
    {nullptr, 0, 0}, {nullptr, 0, 0}, {nullptr, 0, 0}, {nullptr, 0, 0}, // 16..23: IQ formats,
    {nullptr, 0, 0}, {nullptr, 0, 0}, {nullptr, 0, 0}, {nullptr, 0, 0}, // reported as unknown
    {"I8", 1, 1}, {"I16", 1, 2}, {"I32", 1, 4}, {"I64", 1, 8}, {"F64", 1, 8},
    {nullptr, 0, 0}, {"BF16", 1, 2},
};

// A bounds-checked cursor over the header. Every read either succeeds or records what it
// was reading and where the file ended.
struct cursor {
    const uint8_t *base;
    size_t size;
    size_t pos = 0;
    std::string err;

    bool need(uint64_t n, const char *what) {
        if (n > size - pos) {
            err = "truncated file: reading " + std::string(what) + " needs " + std::to_string(n) +
                  " bytes at offset " + std::to_string(pos) + " but the file has " +
                  std::to_string(size) + " bytes";
            return false;
        }
        return true;
    }
    template <class T> bool read(T &out, const char *what) {
        if (!need(sizeof(T), what)) return false;
        std::memcpy(&out, base + pos, sizeof(T));
        pos += sizeof(T);
        return true;
    }
    bool read_string(std::string &out, const char *what) {
        uint64_t n = 0;
        if (!read(n, what)) return false;
        if (n > kMaxStringBytes) {
            err = std::string(what) + " at offset " + std::to_string(pos - 8) + " claims " +
                  std::to_string(n) + " bytes, more than the limit of " +
                  std::to_string(kMaxStringBytes);
            return false;
        }
        if (!need(n, what)) return false;
        out.assign(reinterpret_cast<const char *>(base + pos), n);
        pos += n;
        return true;
    }
};

size_t scalar_size(gguf_type t) {
    switch (t) {
    case gguf_type::uint8: case gguf_type::int8: case gguf_type::boolean: return 1;
    case gguf_type::uint16: case gguf_type::int16: return 2;
    case gguf_type::uint32: case gguf_type::int32: case gguf_type::float32: return 4;
    case gguf_type::uint64: case gguf_type::int64: case gguf_type::float64: return 8;
    case gguf_type::string: return 8; // at least its length prefix
    case gguf_type::array: return 12; // at least element type + count
    }
    return 0;
}

bool valid_type(uint32_t t) { return t <= static_cast<uint32_t>(gguf_type::float64); }

template <class T> void set_int(gguf_value &v, T x) {
    if constexpr (std::is_signed_v<T>) {
        v.i = x;
        v.u = x >= 0 ? static_cast<uint64_t>(x) : 0;
    } else {
        v.u = x;
        v.i = x <= static_cast<uint64_t>(INT64_MAX) ? static_cast<int64_t>(x) : INT64_MAX;
    }
    v.f = static_cast<double>(x);
}

bool read_value(cursor &c, gguf_value &v, gguf_type t, int depth, const std::string &key) {
    v.type = t;
    switch (t) {
    case gguf_type::uint8: { uint8_t x; if (!c.read(x, "a uint8 value")) return false; set_int(v, x); return true; }
    case gguf_type::int8: { int8_t x; if (!c.read(x, "an int8 value")) return false; set_int(v, x); return true; }
    case gguf_type::uint16: { uint16_t x; if (!c.read(x, "a uint16 value")) return false; set_int(v, x); return true; }
    case gguf_type::int16: { int16_t x; if (!c.read(x, "an int16 value")) return false; set_int(v, x); return true; }
    case gguf_type::uint32: { uint32_t x; if (!c.read(x, "a uint32 value")) return false; set_int(v, x); return true; }
    case gguf_type::int32: { int32_t x; if (!c.read(x, "an int32 value")) return false; set_int(v, x); return true; }
    case gguf_type::uint64: { uint64_t x; if (!c.read(x, "a uint64 value")) return false; set_int(v, x); return true; }
    case gguf_type::int64: { int64_t x; if (!c.read(x, "an int64 value")) return false; set_int(v, x); return true; }
    case gguf_type::float32: { float x; if (!c.read(x, "a float32 value")) return false; v.f = x; return true; }
    case gguf_type::float64: { double x; if (!c.read(x, "a float64 value")) return false; v.f = x; return true; }
    case gguf_type::boolean: {
        uint8_t x;
        if (!c.read(x, "a bool value")) return false;
        if (x > 1) {
            c.err = "metadata '" + key + "': bool value " + std::to_string(x) + " is neither 0 nor 1";
            return false;
        }
        v.u = x; v.i = x; v.f = x;
        return true;
    }
    case gguf_type::string: return c.read_string(v.s, "a string value");
    case gguf_type::array: {
        if (depth >= kMaxArrayDepth) {
            c.err = "metadata '" + key + "': arrays nested deeper than " + std::to_string(kMaxArrayDepth);
            return false;
        }
        uint32_t et = 0;
        uint64_t n = 0;
        if (!c.read(et, "an array element type") || !c.read(n, "an array length")) return false;
        if (!valid_type(et)) {
            c.err = "metadata '" + key + "': unknown array element type " + std::to_string(et);
            return false;
        }
        v.array_type = static_cast<gguf_type>(et);
        // Every element takes at least scalar_size bytes, so a count larger than the
        // rest of the file allows is a lie; reject it before reserving memory for it.
        const uint64_t min_bytes = scalar_size(v.array_type);
        if (n > (c.size - c.pos) / min_bytes) {
            c.err = "metadata '" + key + "': array of " + std::to_string(n) + " " +
                    gguf_type_name(v.array_type) + " values does not fit in the " +
                    std::to_string(c.size - c.pos) + " bytes left in the file";
            return false;
        }
        v.arr.reserve(std::min(n, kMaxReserve));
        for (uint64_t k = 0; k < n; ++k) {
            v.arr.emplace_back();
            if (!read_value(c, v.arr.back(), v.array_type, depth + 1, key)) return false;
        }
        return true;
    }
    }
    c.err = "metadata '" + key + "': unknown value type " + std::to_string(static_cast<uint32_t>(t));
    return false;
}

bool mul_overflows(uint64_t a, uint64_t b, uint64_t &out) { return __builtin_mul_overflow(a, b, &out); }

} // namespace

const char *gguf_type_name(gguf_type t) {
    switch (t) {
    case gguf_type::uint8: return "uint8";
    case gguf_type::int8: return "int8";
    case gguf_type::uint16: return "uint16";
    case gguf_type::int16: return "int16";
    case gguf_type::uint32: return "uint32";
    case gguf_type::int32: return "int32";
    case gguf_type::float32: return "float32";
    case gguf_type::boolean: return "bool";
    case gguf_type::string: return "string";
    case gguf_type::array: return "array";
    case gguf_type::uint64: return "uint64";
    case gguf_type::int64: return "int64";
    case gguf_type::float64: return "float64";
    }
    return "unknown";
}

const tensor_type_traits *tensor_traits(uint32_t type_id) {
    if (type_id >= std::size(kTraits) || kTraits[type_id].name == nullptr) return nullptr;
    return &kTraits[type_id];
}

const char *tensor_type_name(tensor_type t) {
    const tensor_type_traits *tr = tensor_traits(static_cast<uint32_t>(t));
    return tr ? tr->name : "unknown";
}

bool gguf_value::is_integer() const {
    switch (type) {
    case gguf_type::uint8: case gguf_type::int8: case gguf_type::uint16: case gguf_type::int16:
    case gguf_type::uint32: case gguf_type::int32: case gguf_type::uint64: case gguf_type::int64:
        return true;
    default: return false;
    }
}

std::string gguf_tensor::shape_string() const {
    std::string s = "[";
    for (uint32_t d = 0; d < n_dims; ++d) s += (d ? ", " : "") + std::to_string(ne[d]);
    return s + "]";
}

std::unique_ptr<gguf_file> gguf_file::open(const std::string &path, std::string &err) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        err = path + ": cannot open: " + std::strerror(errno);
        return nullptr;
    }
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        err = path + ": not a regular file";
        ::close(fd);
        return nullptr;
    }
    if (st.st_size == 0) {
        err = path + ": file is empty";
        ::close(fd);
        return nullptr;
    }
    void *p = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd); // the mapping keeps its own reference
    if (p == MAP_FAILED) {
        err = path + ": mmap failed: " + std::strerror(errno);
        return nullptr;
    }
    std::unique_ptr<gguf_file> f(new gguf_file());
    f->path_ = path;
    f->base_ = static_cast<const uint8_t *>(p);
    f->size_ = static_cast<size_t>(st.st_size);
    f->mapped_ = true;
    if (!f->parse(err)) {
        err = path + ": " + err;
        return nullptr;
    }
    return f;
}

std::unique_ptr<gguf_file> gguf_file::from_memory(const uint8_t *data, size_t size,
                                                  const std::string &name, std::string &err) {
    std::unique_ptr<gguf_file> f(new gguf_file());
    f->path_ = name;
    f->base_ = data;
    f->size_ = size;
    if (!f->parse(err)) {
        err = name + ": " + err;
        return nullptr;
    }
    return f;
}

gguf_file::~gguf_file() {
    if (mapped_) munmap(const_cast<uint8_t *>(base_), size_);
}

void gguf_file::release(const gguf_tensor &t) const {
    if (!mapped_ || t.nbytes == 0) return;
    const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    const uintptr_t begin = (reinterpret_cast<uintptr_t>(t.data) + page - 1) / page * page;
    const uintptr_t end = (reinterpret_cast<uintptr_t>(t.data) + t.nbytes) / page * page;
    // A private read-only mapping: dropped pages are read back from the file if touched.
    if (begin < end) madvise(reinterpret_cast<void *>(begin), end - begin, MADV_DONTNEED);
}

bool gguf_file::parse(std::string &err) {
    cursor c{base_, size_, 0, {}};
    auto fail = [&](std::string msg) { err = std::move(msg); return false; };

    uint32_t magic = 0;
    if (!c.read(magic, "the magic number")) return fail(c.err);
    if (std::memcmp(base_, "GGUF", 4) != 0)
        return fail("not a GGUF file (bad magic: expected \"GGUF\")");
    if (!c.read(version_, "the version")) return fail(c.err);
    if (version_ == 1) return fail("GGUF version 1 is not supported (only versions 2 and 3)");
    if (version_ != 2 && version_ != 3)
        return fail("unsupported GGUF version " + std::to_string(version_) + " (only versions 2 and 3)");

    uint64_t n_tensors = 0, n_kv = 0;
    if (!c.read(n_tensors, "the tensor count") || !c.read(n_kv, "the metadata count")) return fail(c.err);
    // A metadata entry takes at least 8 + 4 + 1 bytes and a tensor info 8 + 4 + 8 + 4 + 8.
    if (n_kv > (size_ - c.pos) / 13)
        return fail("header claims " + std::to_string(n_kv) + " metadata entries, more than the file can hold");
    if (n_tensors > (size_ - c.pos) / 32)
        return fail("header claims " + std::to_string(n_tensors) + " tensors, more than the file can hold");

    // note: the checks above bound a count by the file size, not by what the file holds.
    kv_.reserve(std::min(n_kv, kMaxReserve));
    for (uint64_t k = 0; k < n_kv; ++k) {
        std::string key;
        if (!c.read_string(key, "a metadata key")) return fail(c.err);
        uint32_t t = 0;
        if (!c.read(t, "a metadata value type")) return fail(c.err);
        if (!valid_type(t))
            return fail("metadata '" + key + "': unknown value type " + std::to_string(t));
        gguf_value v;
        if (!read_value(c, v, static_cast<gguf_type>(t), 0, key)) return fail(c.err);
        if (!kv_index_.emplace(key, kv_.size()).second) return fail("duplicate metadata key '" + key + "'");
        kv_.emplace_back(std::move(key), std::move(v));
    }

    if (const gguf_value *a = find("general.alignment")) {
        if (a->type != gguf_type::uint32)
            return fail(std::string("general.alignment has type ") + gguf_type_name(a->type) + ", expected uint32");
        if (a->u == 0 || (a->u & (a->u - 1)) != 0)
            return fail("general.alignment " + std::to_string(a->u) + " is not a power of two");
        alignment_ = a->u;
    }

    tensors_.reserve(std::min(n_tensors, kMaxReserve));
    for (uint64_t k = 0; k < n_tensors; ++k) {
        gguf_tensor &t = tensors_.emplace_back();
        if (!c.read_string(t.name, "a tensor name")) return fail(c.err);
        const std::string who = "tensor '" + t.name + "'";
        if (!c.read(t.n_dims, "a tensor's dimension count")) return fail(c.err);
        if (t.n_dims == 0 || t.n_dims > kMaxDims)
            return fail(who + " has " + std::to_string(t.n_dims) + " dimensions (1 to 4 allowed)");
        for (uint32_t d = 0; d < t.n_dims; ++d) {
            uint64_t n = 0;
            if (!c.read(n, "a tensor dimension")) return fail(c.err);
            if (n == 0 || n > static_cast<uint64_t>(INT64_MAX))
                return fail(who + " has invalid dimension " + std::to_string(d) + " = " + std::to_string(n));
            t.ne[d] = static_cast<int64_t>(n);
        }
        uint32_t type_id = 0;
        if (!c.read(type_id, "a tensor type") || !c.read(t.offset, "a tensor offset")) return fail(c.err);
        const tensor_type_traits *tr = tensor_traits(type_id);
        if (!tr) return fail(who + " has unknown tensor type id " + std::to_string(type_id));
        t.type = static_cast<tensor_type>(type_id);

        uint64_t n_el = 1;
        for (uint32_t d = 0; d < t.n_dims; ++d)
            if (mul_overflows(n_el, static_cast<uint64_t>(t.ne[d]), n_el))
                return fail(who + " shape " + t.shape_string() + " overflows 64 bits");
        if (static_cast<uint64_t>(t.ne[0]) % tr->block_size != 0)
            return fail(who + " row length " + std::to_string(t.ne[0]) + " is not a multiple of the " +
                        tr->name + " block size " + std::to_string(tr->block_size));
        if (mul_overflows(n_el / tr->block_size, tr->type_size, t.nbytes))
            return fail(who + " byte size overflows 64 bits");
        if (t.offset % alignment_ != 0)
            return fail(who + " offset " + std::to_string(t.offset) + " is not aligned to " + std::to_string(alignment_));
        if (!tensor_index_.emplace(t.name, k).second) return fail("duplicate tensor name '" + t.name + "'");
    }

    data_offset_ = (c.pos + alignment_ - 1) / alignment_ * alignment_;
    if (n_tensors > 0 && data_offset_ > size_)
        return fail("truncated file: the data section would start at offset " + std::to_string(data_offset_) +
                    " but the file has " + std::to_string(size_) + " bytes");
    const uint64_t data_size = size_ > data_offset_ ? size_ - data_offset_ : 0;
    for (gguf_tensor &t : tensors_) {
        if (t.offset > data_size || t.nbytes > data_size - t.offset)
            return fail("tensor '" + t.name + "' (" + tensor_type_name(t.type) + " " + t.shape_string() +
                        ", " + std::to_string(t.nbytes) + " bytes at data offset " + std::to_string(t.offset) +
                        ") points outside the file: the data section has " + std::to_string(data_size) + " bytes");
        t.data = base_ + data_offset_ + t.offset;
    }
    return true;
}

const gguf_value *gguf_file::find(std::string_view key) const {
    auto it = kv_index_.find(std::string(key));
    return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

std::optional<uint64_t> gguf_file::get_uint(std::string_view key) const {
    const gguf_value *v = find(key);
    if (!v || !v->is_integer() || v->i < 0) return std::nullopt;
    return v->u;
}

std::optional<double> gguf_file::get_float(std::string_view key) const {
    const gguf_value *v = find(key);
    if (!v || !(v->type == gguf_type::float32 || v->type == gguf_type::float64 || v->is_integer()))
        return std::nullopt;
    return v->f;
}

std::optional<bool> gguf_file::get_bool(std::string_view key) const {
    const gguf_value *v = find(key);
    if (!v || v->type != gguf_type::boolean) return std::nullopt;
    return v->u != 0;
}

std::optional<std::string> gguf_file::get_string(std::string_view key) const {
    const gguf_value *v = find(key);
    if (!v || v->type != gguf_type::string) return std::nullopt;
    return v->s;
}

const std::vector<gguf_value> *gguf_file::get_array(std::string_view key, gguf_type elem) const {
    const gguf_value *v = find(key);
    if (!v || v->type != gguf_type::array || v->array_type != elem) return nullptr;
    return &v->arr;
}

const gguf_tensor *gguf_file::tensor(std::string_view name) const {
    auto it = tensor_index_.find(std::string(name));
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

} // namespace actorserve
