#include "engine/safetensors.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/json_reader.h"

namespace actorserve {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");

namespace {

// The reference implementation refuses headers above 100 MB; so do we, before reading one.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
constexpr size_t kMaxDims = 8;

struct dtype_entry {
    const char *name;
    st_dtype type;
    size_t size;
};
constexpr dtype_entry kDtypes[] = {
    {"BOOL", st_dtype::boolean, 1}, {"U8", st_dtype::u8, 1},     {"I8", st_dtype::i8, 1},
    {"U16", st_dtype::u16, 2},      {"I16", st_dtype::i16, 2},   {"F16", st_dtype::f16, 2},
    {"BF16", st_dtype::bf16, 2},    {"U32", st_dtype::u32, 4},   {"I32", st_dtype::i32, 4},
    {"F32", st_dtype::f32, 4},      {"U64", st_dtype::u64, 8},   {"I64", st_dtype::i64, 8},
    {"F64", st_dtype::f64, 8},
};

const dtype_entry *find_dtype(std::string_view name) {
    for (const auto &d : kDtypes)
        if (name == d.name) return &d;
    return nullptr;
}

} // namespace

const char *st_dtype_name(st_dtype t) {
    for (const auto &d : kDtypes)
        if (d.type == t) return d.name;
    return "?";
}

size_t st_dtype_size(st_dtype t) {
    for (const auto &d : kDtypes)
        if (d.type == t) return d.size;
    return 0;
}

int64_t st_tensor::n_elements() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d; // note: bounded at open (nbytes fits the file)
    return n;
}

std::string st_tensor::shape_string() const {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) {
        if (i) s += ", ";
        s += std::to_string(shape[i]);
    }
    return s + "]";
}

bool safetensors_file::parse(std::string &err) {
    if (size_ < 8) {
        err = "truncated file: " + std::to_string(size_) + " bytes, too short for the 8-byte header size";
        return false;
    }
    uint64_t n_header = 0;
    std::memcpy(&n_header, base_, 8);
    if (n_header > kMaxHeaderBytes) {
        err = "header size " + std::to_string(n_header) + " is over the limit of " + std::to_string(kMaxHeaderBytes) +
              " bytes (not a safetensors file?)";
        return false;
    }
    if (n_header > size_ - 8) {
        err = "truncated file: the header claims " + std::to_string(n_header) + " bytes but only " +
              std::to_string(size_ - 8) + " follow the header size";
        return false;
    }
    const std::string_view text(reinterpret_cast<const char *>(base_ + 8), n_header);
    json_value root;
    std::string jerr;
    if (!parse_json(text, root, jerr)) {
        err = "header is not valid JSON: " + jerr;
        return false;
    }
    if (root.type != json_value::kind::object) {
        err = std::string("header is a JSON ") + json_kind_name(root.type) + ", not an object";
        return false;
    }
    const uint8_t *data = base_ + 8 + n_header;
    const uint64_t n_data = size_ - 8 - n_header;
    for (const auto &[name, v] : root.members) {
        if (name == "__metadata__") {
            if (v.type != json_value::kind::object) {
                err = "__metadata__ is not an object";
                return false;
            }
            for (const auto &[k, mv] : v.members) {
                if (mv.type != json_value::kind::string) {
                    err = "__metadata__ value '" + k + "' is not a string";
                    return false;
                }
                metadata_.emplace_back(k, mv.string);
            }
            continue;
        }
        const std::string where = "tensor '" + name + "'";
        if (tensor(name) != nullptr) {
            err = where + " appears twice in the header";
            return false;
        }
        if (v.type != json_value::kind::object) {
            err = where + ": entry is not an object";
            return false;
        }
        const json_value *dt = v.find("dtype"), *shape = v.find("shape"), *offs = v.find("data_offsets");
        if (!dt || dt->type != json_value::kind::string) {
            err = where + ": missing dtype";
            return false;
        }
        const dtype_entry *de = find_dtype(dt->string);
        if (!de) {
            err = where + ": unknown dtype '" + dt->string + "'";
            return false;
        }
        if (!shape || shape->type != json_value::kind::array || shape->items.size() > kMaxDims) {
            err = where + ": missing shape, or more than " + std::to_string(kMaxDims) + " dimensions";
            return false;
        }
        st_tensor t;
        t.name = name;
        t.dtype = de->type;
        // Bytes = product of dims x element size, each step checked against the data size so
        // that nothing overflows.
        uint64_t bytes = de->size;
        bool too_big = false, empty = false;
        for (const json_value &d : shape->items) {
            const auto n = d.as_int();
            if (!n || *n < 0) {
                err = where + ": shape holds something other than a non-negative integer";
                return false;
            }
            t.shape.push_back(*n);
            if (*n == 0) empty = true;
            else if (bytes > n_data / static_cast<uint64_t>(*n)) too_big = true;
            else bytes *= static_cast<uint64_t>(*n);
        }
        if (empty) {
            bytes = 0;
            too_big = false;
        }
        if (!offs || offs->type != json_value::kind::array || offs->items.size() != 2 || !offs->items[0].as_int() ||
            !offs->items[1].as_int()) {
            err = where + ": data_offsets is not a pair of integers";
            return false;
        }
        const int64_t begin = *offs->items[0].as_int(), end = *offs->items[1].as_int();
        if (begin < 0 || end < begin || static_cast<uint64_t>(end) > n_data) {
            err = "truncated file or bad offsets: " + where + " spans bytes [" + std::to_string(begin) + ", " +
                  std::to_string(end) + ") of a data section of " + std::to_string(n_data) + " bytes";
            return false;
        }
        if (too_big || bytes != static_cast<uint64_t>(end - begin)) {
            err = where + ": shape " + t.shape_string() + " of " + de->name + " does not match its " +
                  std::to_string(end - begin) + " bytes";
            return false;
        }
        t.data = data + begin;
        t.nbytes = static_cast<size_t>(bytes);
        tensors_.push_back(std::move(t));
    }
    return true;
}

const st_tensor *safetensors_file::tensor(std::string_view name) const {
    // note: linear; a BERT file has ~100 tensors, looked up once each at load.
    for (const auto &t : tensors_)
        if (t.name == name) return &t;
    return nullptr;
}

std::unique_ptr<safetensors_file> safetensors_file::open(const std::string &path, std::string &err) {
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
    std::unique_ptr<safetensors_file> f(new safetensors_file());
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

std::unique_ptr<safetensors_file> safetensors_file::from_memory(const uint8_t *data, size_t size,
                                                                const std::string &name, std::string &err) {
    std::unique_ptr<safetensors_file> f(new safetensors_file());
    f->path_ = name;
    f->base_ = data;
    f->size_ = size;
    if (!f->parse(err)) {
        err = name + ": " + err;
        return nullptr;
    }
    return f;
}

safetensors_file::~safetensors_file() {
    if (mapped_) munmap(const_cast<uint8_t *>(base_), size_);
}

} // namespace actorserve
