// GGUF reader: files built byte by byte with gguf_writer.h read back exactly, the real model
// opens, and every corruption is rejected with an error that names the file and the problem.
#include "tests/support/paths.h"
#include "engine/gguf.h"
#include "gguf_writer.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <new>
#include <string>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

// The largest single operator new request since the last reset. It lets a test show that a
// count claimed by a header is not allocated before the file's bytes have backed it.
namespace {
std::atomic<size_t> g_largest_new{0};
}

// noinline: inlined into the standard containers, the malloc/free pair inside trips g++ 12's
// -Wmismatched-new-delete. Under the address sanitizer malloc and free are still its own.
[[gnu::noinline]] void *operator new(std::size_t n) {
    size_t seen = g_largest_new.load(std::memory_order_relaxed);
    while (n > seen && !g_largest_new.compare_exchange_weak(seen, n, std::memory_order_relaxed)) {}
    if (void *p = std::malloc(n == 0 ? 1 : n)) return p;
    throw std::bad_alloc();
}
[[gnu::noinline]] void operator delete(void *p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void *p, std::size_t) noexcept { std::free(p); }

using namespace actorserve;
using namespace actorserve::testing;

namespace {

const std::string kName = "t.gguf";
const std::string kPrefix = kName + ": ";

// The real model: where its data section starts, and its size.
constexpr size_t kModelDataStart = 1785664;
constexpr size_t kModelSize = 98362432;

struct parsed {
    std::unique_ptr<gguf_file> file;
    std::string err;
    size_t largest_alloc = 0; // largest single allocation made while parsing
};

parsed parse(const uint8_t *data, size_t size) {
    parsed p;
    g_largest_new = 0;
    p.file = gguf_file::from_memory(data, size, kName, p.err);
    p.largest_alloc = g_largest_new;
    return p;
}
parsed parse(const std::vector<uint8_t> &bytes) { return parse(bytes.data(), bytes.size()); }

// The error a file is rejected with, or "" when it opens.
std::string rejection(const std::vector<uint8_t> &bytes) {
    parsed p = parse(bytes);
    return p.file ? std::string() : p.err;
}

bool contains(std::string_view s, std::string_view needle) { return s.find(needle) != std::string_view::npos; }

// What a file cut short anywhere in its header may be rejected with: a read past the end,
// or a count that the bytes left cannot hold.
bool is_truncation_error(std::string_view err) {
    return contains(err, "truncated file") || contains(err, "more than the file can hold") ||
           contains(err, "does not fit in the");
}

#define CHECK_REJECTED(bytes, needle)                          \
    do {                                                       \
        const std::string err_ = rejection(bytes);             \
        INFO("error: ", err_);                                 \
        CHECK(err_.starts_with(kPrefix));                      \
        CHECK(contains(err_, needle));                         \
    } while (0)

// Five tensors, one of each computed type, with the byte sizes their shapes give:
//   F32 [4, 2] 32 B | F16 [8] 16 B | Q4_0 [64, 2] 4 x 18 B | Q4_1 [32, 3] 3 x 20 B | Q8_0 [32, 1, 2, 1] 2 x 34 B
gguf_writer five_tensors() {
    gguf_writer w;
    w.tensor("a.f32", tensor_type::f32, {4, 2}, pattern_bytes(32, 0))
        .tensor("b.f16", tensor_type::f16, {8}, pattern_bytes(16, 1))
        .tensor("c.q4_0", tensor_type::q4_0, {64, 2}, pattern_bytes(72, 2))
        .tensor("d.q4_1", tensor_type::q4_1, {32, 3}, pattern_bytes(60, 3))
        .tensor("e.q8_0", tensor_type::q8_0, {32, 1, 2, 1}, pattern_bytes(68, 4));
    return w;
}

// A small valid file with metadata of several kinds (alignment 64 included) and three tensors;
// the subject of the truncation and byte-flip loops.
gguf_writer sample() {
    gguf_writer w;
    w.kv("general.architecture", meta::str("llama"))
        .kv("general.alignment", meta::u32(64))
        .kv("n.u8", meta::u8(3))
        .kv("n.i64", meta::i64(-5))
        .kv("n.f32", meta::f32(1.5f))
        .kv("flag", meta::boolean(true))
        .kv("tokens", meta::strings({"<s>", "a", "bc"}))
        .kv("ids", meta::array(gguf_type::int32, {meta::i32(1), meta::i32(-2)}))
        .kv("nested", meta::array(gguf_type::array, {meta::array(gguf_type::uint16, {meta::u16(9)})}))
        .tensor("w.f32", tensor_type::f32, {4, 2}, pattern_bytes(32, 0))
        .tensor("w.q4_0", tensor_type::q4_0, {64}, pattern_bytes(36, 1))
        .tensor("w.q8_0", tensor_type::q8_0, {32, 2}, pattern_bytes(68, 2));
    return w;
}

// An array nested depth levels deep whose innermost array is the one uint8 7.
meta_value nested_array(int depth) {
    meta_value v = meta::array(gguf_type::uint8, {meta::u8(7)});
    for (int d = 1; d < depth; ++d) v = meta::array(gguf_type::array, {v});
    return v;
}

// The real model mapped read-only (reading its 98 MB would dominate the test's run time).
struct mapped_model {
    const uint8_t *data = nullptr;
    size_t size = 0;
    mapped_model() {
        const int fd = ::open(test_paths::model().c_str(), O_RDONLY | O_CLOEXEC);
        struct stat st {};
        if (fd < 0 || fstat(fd, &st) != 0) {
            if (fd >= 0) ::close(fd);
            return;
        }
        void *p = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
        ::close(fd);
        if (p == MAP_FAILED) return;
        data = static_cast<const uint8_t *>(p);
        size = static_cast<size_t>(st.st_size);
    }
    ~mapped_model() {
        if (data) munmap(const_cast<uint8_t *>(data), size);
    }
    mapped_model(const mapped_model &) = delete;
    mapped_model &operator=(const mapped_model &) = delete;
};

// A file on disk for the tests of open(), removed when the test ends.
struct temp_file {
    std::filesystem::path path;
    temp_file(const std::string &stem, const std::vector<uint8_t> &bytes)
        : path(std::filesystem::temp_directory_path() /
               ("actorserve_test_gguf_" + stem + "_" + std::to_string(::getpid()) + ".gguf")) {
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char *>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    }
    ~temp_file() {
        std::error_code ec;
        std::filesystem::remove(path, ec);
    }
};

} // namespace

// ---- round trips ---------------------------------------------------------------------------

TEST_CASE("gguf metadata: every scalar value type reads back with its type and value") {
    gguf_writer w;
    w.kv("t.u8", meta::u8(200))
        .kv("t.i8", meta::i8(-100))
        .kv("t.u16", meta::u16(60000))
        .kv("t.i16", meta::i16(-30000))
        .kv("t.u32", meta::u32(4000000000u))
        .kv("t.i32", meta::i32(-2000000000))
        .kv("t.f32", meta::f32(0.25f))
        .kv("t.true", meta::boolean(true))
        .kv("t.false", meta::boolean(false))
        .kv("t.string", meta::str("h\xc3\xa9llo"))
        .kv("t.u64", meta::u64(0x8000000000000005ull))
        .kv("t.i64", meta::i64(-(int64_t{1} << 62)))
        .kv("t.f64", meta::f64(1e300))
        .kv("t.empty", meta::str(""));
    const parsed p = parse(w.build().bytes);
    INFO("error: ", p.err);
    REQUIRE(p.file);
    const gguf_file &f = *p.file;

    REQUIRE(f.metadata().size() == 14);
    CHECK(f.metadata()[0].first == "t.u8");
    CHECK(f.metadata()[13].first == "t.empty");

    CHECK(f.find("t.u8")->type == gguf_type::uint8);
    CHECK(f.get_uint("t.u8") == 200u);
    CHECK(f.find("t.i8")->type == gguf_type::int8);
    CHECK(f.find("t.i8")->i == -100);
    CHECK(f.find("t.u16")->type == gguf_type::uint16);
    CHECK(f.get_uint("t.u16") == 60000u);
    CHECK(f.find("t.i16")->type == gguf_type::int16);
    CHECK(f.find("t.i16")->i == -30000);
    CHECK(f.find("t.u32")->type == gguf_type::uint32);
    CHECK(f.get_uint("t.u32") == 4000000000u);
    CHECK(f.find("t.i32")->type == gguf_type::int32);
    CHECK(f.find("t.i32")->i == -2000000000);
    CHECK(f.find("t.f32")->type == gguf_type::float32);
    CHECK(f.get_float("t.f32") == 0.25);
    CHECK(f.find("t.true")->type == gguf_type::boolean);
    CHECK(f.get_bool("t.true") == true);
    CHECK(f.get_bool("t.false") == false);
    CHECK(f.find("t.string")->type == gguf_type::string);
    CHECK(f.get_string("t.string") == "h\xc3\xa9llo");
    CHECK(f.get_string("t.empty") == "");
    CHECK(f.find("t.u64")->type == gguf_type::uint64);
    CHECK(f.get_uint("t.u64") == 0x8000000000000005ull);
    CHECK(f.find("t.i64")->type == gguf_type::int64);
    CHECK(f.find("t.i64")->i == -(int64_t{1} << 62));
    CHECK(f.find("t.f64")->type == gguf_type::float64);
    CHECK(f.get_float("t.f64") == 1e300);

    // integers also read as floats
    CHECK(f.get_float("t.i8") == -100.0);
    CHECK(f.get_float("t.u32") == 4000000000.0);
}

TEST_CASE("gguf metadata: a lookup of a missing key or of another type returns nothing") {
    gguf_writer w;
    w.kv("neg", meta::i32(-1)).kv("f", meta::f32(2.0f)).kv("b", meta::boolean(true)).kv("s", meta::str("x"));
    const parsed p = parse(w.build().bytes);
    REQUIRE(p.file);
    const gguf_file &f = *p.file;

    CHECK(f.find("missing") == nullptr);
    CHECK(f.get_uint("missing") == std::nullopt);
    CHECK(f.get_string("missing") == std::nullopt);
    CHECK(f.get_uint("neg") == std::nullopt); // negative
    CHECK(f.get_uint("f") == std::nullopt);
    CHECK(f.get_uint("b") == std::nullopt);
    CHECK(f.get_float("b") == std::nullopt);
    CHECK(f.get_float("s") == std::nullopt);
    CHECK(f.get_bool("neg") == std::nullopt);
    CHECK(f.get_string("neg") == std::nullopt);
    CHECK(f.get_array("s", gguf_type::string) == nullptr);
}

TEST_CASE("gguf metadata: arrays of numbers, of strings, of arrays, and empty arrays read back") {
    gguf_writer w;
    w.kv("a.u32", meta::array(gguf_type::uint32, {meta::u32(1), meta::u32(2), meta::u32(3)}))
        .kv("a.str", meta::strings({"a", "", "ccc"}))
        .kv("a.nested", meta::array(gguf_type::array,
                                    {meta::array(gguf_type::int16, {meta::i16(1), meta::i16(-2)}),
                                     meta::array(gguf_type::int16, {meta::i16(3)})}))
        .kv("a.empty", meta::array(gguf_type::float32, {}))
        .kv("a.f64", meta::array(gguf_type::float64, {meta::f64(-0.5)}))
        .kv("a.bool", meta::array(gguf_type::boolean, {meta::boolean(false), meta::boolean(true)}));
    const parsed p = parse(w.build().bytes);
    INFO("error: ", p.err);
    REQUIRE(p.file);
    const gguf_file &f = *p.file;

    const auto *u = f.get_array("a.u32", gguf_type::uint32);
    REQUIRE(u);
    REQUIRE(u->size() == 3);
    CHECK((*u)[0].u == 1);
    CHECK((*u)[1].u == 2);
    CHECK((*u)[2].u == 3);
    CHECK((*u)[2].type == gguf_type::uint32);
    CHECK(f.get_array("a.u32", gguf_type::int32) == nullptr); // wrong element type

    const auto *s = f.get_array("a.str", gguf_type::string);
    REQUIRE(s);
    REQUIRE(s->size() == 3);
    CHECK((*s)[0].s == "a");
    CHECK((*s)[1].s == "");
    CHECK((*s)[2].s == "ccc");

    const auto *n = f.get_array("a.nested", gguf_type::array);
    REQUIRE(n);
    REQUIRE(n->size() == 2);
    CHECK((*n)[0].array_type == gguf_type::int16);
    REQUIRE((*n)[0].arr.size() == 2);
    CHECK((*n)[0].arr[0].i == 1);
    CHECK((*n)[0].arr[1].i == -2);
    REQUIRE((*n)[1].arr.size() == 1);
    CHECK((*n)[1].arr[0].i == 3);

    const auto *e = f.get_array("a.empty", gguf_type::float32);
    REQUIRE(e);
    CHECK(e->empty());

    const auto *d = f.get_array("a.f64", gguf_type::float64);
    REQUIRE(d);
    REQUIRE(d->size() == 1);
    CHECK((*d)[0].f == -0.5);

    const auto *b = f.get_array("a.bool", gguf_type::boolean);
    REQUIRE(b);
    REQUIRE(b->size() == 2);
    CHECK((*b)[0].u == 0);
    CHECK((*b)[1].u == 1);
}

TEST_CASE("gguf metadata: arrays nested 4 deep read back, 5 deep are rejected") {
    gguf_writer ok;
    ok.kv("deep", nested_array(4));
    const parsed p = parse(ok.build().bytes);
    INFO("error: ", p.err);
    REQUIRE(p.file);
    const gguf_value *v = p.file->find("deep");
    for (int d = 1; d < 4; ++d) {
        REQUIRE(v->type == gguf_type::array);
        REQUIRE(v->arr.size() == 1);
        v = &v->arr[0];
    }
    CHECK(v->array_type == gguf_type::uint8);
    REQUIRE(v->arr.size() == 1);
    CHECK(v->arr[0].u == 7);

    gguf_writer bad;
    bad.kv("deep", nested_array(5));
    CHECK_REJECTED(bad.build().bytes, "metadata 'deep': arrays nested deeper than 4");
}

TEST_CASE("gguf tensors: name, shape, type, byte size, offset and data of each tensor are exact") {
    const gguf_image img = five_tensors().build();
    const parsed p = parse(img.bytes);
    INFO("error: ", p.err);
    REQUIRE(p.file);
    const gguf_file &f = *p.file;

    CHECK(f.version() == 3);
    CHECK(f.alignment() == 32);
    CHECK(f.file_size() == img.bytes.size());
    CHECK(f.data_offset() == img.at.data_start);
    CHECK(f.data_offset() % 32 == 0);
    REQUIRE(f.tensors().size() == 5);

    struct expected {
        const char *name;
        tensor_type type;
        uint32_t n_dims;
        int64_t ne[4];
        uint64_t nbytes, offset;
        const char *shape;
    };
    const expected want[] = {
        {"a.f32", tensor_type::f32, 2, {4, 2, 1, 1}, 32, 0, "[4, 2]"},
        {"b.f16", tensor_type::f16, 1, {8, 1, 1, 1}, 16, 32, "[8]"},
        {"c.q4_0", tensor_type::q4_0, 2, {64, 2, 1, 1}, 72, 64, "[64, 2]"},
        {"d.q4_1", tensor_type::q4_1, 2, {32, 3, 1, 1}, 60, 160, "[32, 3]"}, // 64 + 72 = 136 -> 160
        {"e.q8_0", tensor_type::q8_0, 4, {32, 1, 2, 1}, 68, 224, "[32, 1, 2, 1]"}, // 220 -> 224
    };
    for (uint32_t k = 0; k < 5; ++k) {
        const expected &e = want[k];
        CAPTURE(e.name);
        const gguf_tensor *t = f.tensor(e.name);
        REQUIRE(t);
        CHECK(t == &f.tensors()[k]);
        CHECK(t->name == e.name);
        CHECK(t->type == e.type);
        CHECK(t->n_dims == e.n_dims);
        for (int d = 0; d < 4; ++d) CHECK(t->ne[d] == e.ne[d]);
        CHECK(t->nbytes == e.nbytes);
        CHECK(t->offset == e.offset);
        CHECK(t->shape_string() == e.shape);
        CHECK(t->data == img.bytes.data() + f.data_offset() + e.offset);
        const std::vector<uint8_t> data = pattern_bytes(e.nbytes, k);
        CHECK(std::equal(data.begin(), data.end(), t->data));
    }
    CHECK(f.tensor("e.q8_0")->n_elements() == 64);
    CHECK(f.tensor("missing") == nullptr);
    CHECK(f.data_offset() + 224 + 68 == f.file_size());
}

TEST_CASE("gguf tensors: general.alignment 64 puts the data section and every tensor on 64-byte boundaries") {
    gguf_writer w = five_tensors();
    w.kv("general.alignment", meta::u32(64));
    const gguf_image img = w.build();
    const parsed p = parse(img.bytes);
    INFO("error: ", p.err);
    REQUIRE(p.file);
    const gguf_file &f = *p.file;

    CHECK(f.alignment() == 64);
    CHECK(f.data_offset() % 64 == 0);
    CHECK(f.data_offset() == img.at.data_start);
    const uint64_t offsets[] = {0, 64, 128, 256, 320}; // 128 + 72 = 200 -> 256, 256 + 60 = 316 -> 320
    REQUIRE(f.tensors().size() == 5);
    for (uint32_t k = 0; k < 5; ++k) {
        const gguf_tensor &t = f.tensors()[k];
        CAPTURE(t.name);
        CHECK(t.offset == offsets[k]);
        CHECK(t.data == img.bytes.data() + f.data_offset() + offsets[k]);
        const std::vector<uint8_t> data = pattern_bytes(t.nbytes, k);
        CHECK(std::equal(data.begin(), data.end(), t.data));
    }
}

TEST_CASE("gguf: a version 2 file reads the same as version 3") {
    gguf_writer w = five_tensors();
    w.version(2).kv("k", meta::u32(7));
    const parsed p = parse(w.build().bytes);
    INFO("error: ", p.err);
    REQUIRE(p.file);
    CHECK(p.file->version() == 2);
    CHECK(p.file->get_uint("k") == 7u);
    CHECK(p.file->tensors().size() == 5);
}

TEST_CASE("gguf: a file with no metadata and no tensors opens") {
    const parsed p = parse(gguf_writer().build().bytes); // 24 bytes: magic, version, two counts
    INFO("error: ", p.err);
    REQUIRE(p.file);
    CHECK(p.file->metadata().empty());
    CHECK(p.file->tensors().empty());
}

// ---- files on disk ---------------------------------------------------------------------------

TEST_CASE("gguf: open() maps a file on disk and reads what from_memory reads") {
    const gguf_image img = sample().build();
    temp_file tmp("sample", img.bytes);
    std::string err;
    const auto f = gguf_file::open(tmp.path.string(), err);
    INFO("error: ", err);
    REQUIRE(f);
    CHECK(f->path() == tmp.path.string());
    CHECK(f->file_size() == img.bytes.size());
    CHECK(f->get_string("general.architecture") == "llama");
    REQUIRE(f->tensors().size() == 3);
    const gguf_tensor *t = f->tensor("w.q8_0");
    REQUIRE(t);
    const std::vector<uint8_t> data = pattern_bytes(68, 2);
    CHECK(std::equal(data.begin(), data.end(), t->data));
}

TEST_CASE("gguf: the SmolLM2 model opens with 272 llama tensors of the expected types and shapes") {
    std::string err;
    const auto f = gguf_file::open(test_paths::model().c_str(), err);
    INFO("error: ", err);
    REQUIRE(f);
    CHECK(f->version() == 3);
    CHECK(f->file_size() == kModelSize);
    CHECK(f->data_offset() == kModelDataStart);
    CHECK(f->tensors().size() == 272);
    CHECK(f->metadata().size() == 33);
    CHECK(f->get_string("general.architecture") == "llama");
    CHECK(f->get_uint("llama.block_count") == 30u);
    CHECK(f->get_uint("llama.embedding_length") == 576u);
    const auto *tokens = f->get_array("tokenizer.ggml.tokens", gguf_type::string);
    REQUIRE(tokens);
    REQUIRE(tokens->size() == 49152);
    CHECK((*tokens)[1].s == "<|im_start|>");

    const gguf_tensor *emb = f->tensor("token_embd.weight");
    REQUIRE(emb);
    CHECK(emb->type == tensor_type::q8_0);
    CHECK(emb->n_dims == 2);
    CHECK(emb->ne[0] == 576);
    CHECK(emb->ne[1] == 49152);
    CHECK(emb->offset == 0);
    CHECK(emb->nbytes == 576ull * 49152 / 32 * 34);

    const gguf_tensor *q = f->tensor("blk.0.attn_q.weight");
    REQUIRE(q);
    CHECK(q->type == tensor_type::q4_1);
    CHECK(q->n_dims == 2);
    CHECK(q->ne[0] == 576);
    CHECK(q->ne[1] == 576);
    CHECK(q->nbytes == 576ull * 576 / 32 * 20);
}

TEST_CASE("gguf: open() on a missing path names the path and says it cannot open it") {
    const std::string path = "/nonexistent/actorserve/missing.gguf";
    std::string err;
    INFO("error: ", err);
    CHECK(gguf_file::open(path, err) == nullptr);
    CHECK(err.starts_with(path + ": "));
    CHECK(contains(err, "cannot open"));
}

TEST_CASE("gguf: an empty file is rejected, on disk and in memory") {
    temp_file tmp("empty", {});
    std::string err;
    INFO("error: ", err);
    CHECK(gguf_file::open(tmp.path.string(), err) == nullptr);
    CHECK(err == tmp.path.string() + ": file is empty");

    CHECK_REJECTED(std::vector<uint8_t>{}, "truncated file: reading the magic number");
}

// ---- corrupt headers -------------------------------------------------------------------------

TEST_CASE("gguf corrupt: a wrong magic is rejected") {
    gguf_image img = five_tensors().build();
    img.bytes[3] = 'X'; // "GGUX"
    CHECK_REJECTED(img.bytes, "not a GGUF file (bad magic");
}

TEST_CASE("gguf corrupt: versions 1 and 99 are rejected") {
    CHECK_REJECTED(five_tensors().version(1).build().bytes, "GGUF version 1 is not supported");
    CHECK_REJECTED(five_tensors().version(99).build().bytes, "unsupported GGUF version 99");
}

TEST_CASE("gguf corrupt: a small file truncated at every offset is rejected with a truncation error") {
    const gguf_image img = sample().build();
    REQUIRE(img.at.header_end < img.at.data_start); // some padding to cut inside
    for (size_t n = 0; n < img.bytes.size(); ++n) {
        const std::string err = rejection(img.prefix(n));
        INFO("truncated to ", n, " of ", img.bytes.size(), " bytes: ", err);
        REQUIRE(err.starts_with(kPrefix));
        if (n >= img.at.data_start) CHECK(contains(err, "points outside the file"));
        else if (n >= img.at.header_end) CHECK(contains(err, "the data section would start"));
        else CHECK(is_truncation_error(err));
    }
}

TEST_CASE("gguf corrupt: the real model cut at 200 offsets of its header and in its data is rejected") {
    const mapped_model model;
    REQUIRE(model.size == kModelSize);
    CHECK(parse(model.data, model.size).file != nullptr);

    // longest first: once the first buffer is freed, malloc serves the shorter ones from the heap
    for (size_t k = 200; k-- > 0;) {
        const size_t n = k * kModelDataStart / 200;
        const std::vector<uint8_t> head(model.data, model.data + n); // exactly n bytes, for the sanitizer
        const std::string err = rejection(head);
        INFO("truncated to ", n, " bytes: ", err);
        REQUIRE(err.starts_with(kPrefix));
        CHECK(is_truncation_error(err));
    }
    // The data section is not read at open, so these are views of the mapping.
    const size_t token_embd_end = kModelDataStart + 576ull * 49152 / 32 * 34;
    for (size_t n : {kModelDataStart, kModelDataStart + 1, token_embd_end - 1, token_embd_end, kModelSize - 1}) {
        const parsed p = parse(model.data, n);
        INFO("truncated to ", n, " bytes: ", p.err);
        CHECK(p.file == nullptr);
        CHECK(p.err.starts_with(kPrefix));
        CHECK(contains(p.err, "points outside the file"));
    }
}

TEST_CASE("gguf corrupt: huge tensor, metadata, string and array counts are rejected without allocating") {
    constexpr size_t kSmall = 64 * 1024; // far above what a valid file this size needs
    gguf_writer w;
    w.kv("name", meta::str("x"))
        .kv("ids", meta::array(gguf_type::uint32, {meta::u32(1)}))
        .tensor("w", tensor_type::f32, {8}, pattern_bytes(32, 0));
    const gguf_image img = w.build();

    struct corruption {
        size_t at;
        uint64_t value;
        std::string error;
    };
    const std::string at_string = std::to_string(img.at.kv[0].value);
    const std::string at_name = std::to_string(img.at.tensors[0].name);
    const corruption cases[] = {
        {gguf_layout::n_tensors, 1ull << 60, "header claims 1152921504606846976 tensors, more than the file can hold"},
        {gguf_layout::n_kv, 1ull << 60, "header claims 1152921504606846976 metadata entries, more than the file can hold"},
        {img.at.kv[0].key, 1ull << 62, "a metadata key at offset 24 claims 4611686018427387904 bytes, more than the limit"},
        {img.at.kv[0].value, 1ull << 62, "a string value at offset " + at_string + " claims 4611686018427387904 bytes"},
        {img.at.kv[1].value + 4, 1ull << 61, "metadata 'ids': array of 2305843009213693952 uint32 values does not fit in the"},
        {img.at.tensors[0].name, 1ull << 62, "a tensor name at offset " + at_name + " claims 4611686018427387904 bytes"},
    };
    for (const corruption &c : cases) {
        gguf_image bad = img;
        bad.poke(c.at, c.value);
        const parsed p = parse(bad.bytes);
        INFO("error: ", p.err);
        CHECK(p.file == nullptr);
        CHECK(p.err.starts_with(kPrefix));
        CHECK(contains(p.err, c.error));
        CHECK(p.largest_alloc < kSmall);
    }
}

// Three files padded to file_size whose first entry is bad but whose header claims as many
// entries as file_size could hold at the smallest entry size: an array of bools, metadata
// entries, tensors. Returns each file with the error it must fail with and its claimed count.
struct claim {
    gguf_image img;
    const char *error;
    uint64_t count;
    size_t entry_size; // memory one claimed entry takes once parsed
};
std::vector<claim> overclaiming_files(size_t file_size) {
    std::vector<claim> out;

    gguf_image arr = gguf_writer().kv("flags", meta::array(gguf_type::boolean, {meta::boolean_byte(2)})).build();
    const uint64_t n_arr = file_size - 64;
    arr.poke(arr.at.kv[0].value + 4, n_arr);
    arr.bytes.resize(file_size, 0);
    out.push_back({arr, "metadata 'flags': bool value 2 is neither 0 nor 1", n_arr, sizeof(gguf_value)});

    gguf_image kvs = gguf_writer().kv("k", meta::raw(13, {})).build();
    const uint64_t n_kv = file_size / 13 - 8;
    kvs.poke(gguf_layout::n_kv, n_kv);
    kvs.bytes.resize(file_size, 0);
    out.push_back({kvs, "metadata 'k': unknown value type 13", n_kv, sizeof(std::pair<std::string, gguf_value>)});

    gguf_image tensors = gguf_writer().tensor("w", tensor_type::f32, {8}, pattern_bytes(32, 0)).build();
    const uint64_t n_tensors = file_size / 32 - 8;
    tensors.poke<uint32_t>(tensors.at.tensors[0].n_dims, 0);
    tensors.poke(gguf_layout::n_tensors, n_tensors);
    tensors.bytes.resize(file_size, 0);
    out.push_back({tensors, "tensor 'w' has 0 dimensions", n_tensors, sizeof(gguf_tensor)});
    return out;
}

TEST_CASE("gguf corrupt: memory reserved for a count the file size allows does not grow with the count") {
    // Reserving for the claim would take tens of megabytes here, and twice that for a file twice
    // the size; the reader caps what it reserves before the entries are read.
    const std::vector<claim> four = overclaiming_files(4 << 20);
    const std::vector<claim> eight = overclaiming_files(8 << 20);
    for (size_t k = 0; k < four.size(); ++k) {
        const parsed p4 = parse(four[k].img.bytes);
        const parsed p8 = parse(eight[k].img.bytes);
        INFO("errors: ", p4.err, " | ", p8.err);
        CHECK(contains(p4.err, four[k].error));
        CHECK(contains(p8.err, eight[k].error));
        CHECK(p4.largest_alloc < four[k].count * four[k].entry_size);
        CHECK(p4.largest_alloc == p8.largest_alloc);
    }
}

TEST_CASE("gguf corrupt: an unknown metadata value type or array element type is rejected") {
    CHECK_REJECTED(gguf_writer().kv("k", meta::raw(13, {})).build().bytes, "metadata 'k': unknown value type 13");

    gguf_image img = gguf_writer().kv("arr", meta::array(gguf_type::uint32, {meta::u32(1)})).build();
    img.poke<uint32_t>(img.at.kv[0].value, 13);
    CHECK_REJECTED(img.bytes, "metadata 'arr': unknown array element type 13");
}

TEST_CASE("gguf corrupt: an unknown tensor type id is rejected naming the tensor, IQ ids included") {
    // 4 and 5 were removed from ggml, 16..23 are IQ formats, 29 is unassigned.
    for (uint32_t id : {4u, 5u, 16u, 23u, 29u, 31u, 200u}) {
        CAPTURE(id);
        gguf_writer w;
        w.tensor("w", id, {32}, pattern_bytes(128, 0));
        CHECK_REJECTED(w.build().bytes, "tensor 'w' has unknown tensor type id " + std::to_string(id));
    }
}

TEST_CASE("gguf corrupt: a tensor of 0 or 5 dimensions is rejected") {
    CHECK_REJECTED(gguf_writer().tensor("w", tensor_type::f32, {}, pattern_bytes(4, 0)).build().bytes,
                   "tensor 'w' has 0 dimensions (1 to 4 allowed)");
    CHECK_REJECTED(gguf_writer().tensor("w", tensor_type::f32, {1, 1, 1, 1, 4}, pattern_bytes(16, 0)).build().bytes,
                   "tensor 'w' has 5 dimensions (1 to 4 allowed)");
}

TEST_CASE("gguf corrupt: a dimension of 0 or above INT64_MAX is rejected") {
    CHECK_REJECTED(gguf_writer().tensor("w", tensor_type::f32, {4, 0}, {}).build().bytes,
                   "tensor 'w' has invalid dimension 1 = 0");
    CHECK_REJECTED(gguf_writer().tensor("w", tensor_type::i8, {1ull << 63}, {}).build().bytes,
                   "tensor 'w' has invalid dimension 0 = 9223372036854775808");
}

TEST_CASE("gguf corrupt: a shape whose element count or byte size overflows 64 bits is rejected") {
    CHECK_REJECTED(gguf_writer().tensor("w", tensor_type::f32, {1ull << 32, 1ull << 32}, {}).build().bytes,
                   "tensor 'w' shape [4294967296, 4294967296] overflows 64 bits");
    CHECK_REJECTED(gguf_writer().tensor("w", tensor_type::f32, {1ull << 62}, {}).build().bytes,
                   "tensor 'w' byte size overflows 64 bits");
    // 2^63 elements fit in uint64 but not in int64; the 9 * 2^59 bytes they need are not there
    CHECK_REJECTED(gguf_writer().tensor("w", tensor_type::q4_0, {1ull << 32, 1ull << 31}, {}).build().bytes,
                   "tensor 'w' (Q4_0 [4294967296, 2147483648], 5188146770730811392 bytes at data offset 0) "
                   "points outside the file");
}

TEST_CASE("gguf corrupt: a row length that is not a multiple of the block size is rejected") {
    CHECK_REJECTED(gguf_writer().tensor("w", tensor_type::q4_0, {48, 2}, pattern_bytes(54, 0)).build().bytes,
                   "tensor 'w' row length 48 is not a multiple of the Q4_0 block size 32");
    CHECK_REJECTED(gguf_writer().tensor("w", tensor_type::q8_0, {16}, pattern_bytes(17, 0)).build().bytes,
                   "tensor 'w' row length 16 is not a multiple of the Q8_0 block size 32");
}

TEST_CASE("gguf corrupt: a tensor offset that is not a multiple of the alignment is rejected") {
    gguf_image img = five_tensors().build();
    img.poke<uint64_t>(img.at.tensors[1].offset, 40);
    CHECK_REJECTED(img.bytes, "tensor 'b.f16' offset 40 is not aligned to 32");

    gguf_writer w = five_tensors();
    w.kv("general.alignment", meta::u32(64));
    gguf_image img64 = w.build();
    img64.poke<uint64_t>(img64.at.tensors[1].offset, 32);
    CHECK_REJECTED(img64.bytes, "tensor 'b.f16' offset 32 is not aligned to 64");
}

TEST_CASE("gguf corrupt: a tensor whose bytes end past the end of the file is rejected") {
    gguf_image img = gguf_writer().tensor("w", tensor_type::f32, {8}, pattern_bytes(32, 0)).build();
    img.poke<uint64_t>(img.at.tensors[0].offset, 32);
    CHECK_REJECTED(img.bytes, "tensor 'w' (F32 [8], 32 bytes at data offset 32) points outside the file: "
                              "the data section has 32 bytes");

    gguf_image shortened = gguf_writer().tensor("w", tensor_type::f32, {8}, pattern_bytes(31, 0)).build();
    CHECK_REJECTED(shortened.bytes, "the data section has 31 bytes");

    gguf_image far = gguf_writer().tensor("w", tensor_type::f32, {8}, pattern_bytes(32, 0)).build();
    far.poke<uint64_t>(far.at.tensors[0].offset, ~uint64_t{31}); // aligned, and offset + nbytes wraps
    CHECK_REJECTED(far.bytes, "points outside the file");
}

TEST_CASE("gguf corrupt: a duplicate metadata key or tensor name is rejected") {
    CHECK_REJECTED(gguf_writer().kv("a", meta::u32(1)).kv("b", meta::u32(2)).kv("a", meta::str("x")).build().bytes,
                   "duplicate metadata key 'a'");
    gguf_writer w;
    w.tensor("w", tensor_type::f32, {8}, pattern_bytes(32, 0)).tensor("w", tensor_type::f32, {8}, pattern_bytes(32, 1));
    CHECK_REJECTED(w.build().bytes, "duplicate tensor name 'w'");
}

TEST_CASE("gguf corrupt: a bool byte other than 0 or 1 is rejected, alone or in an array") {
    CHECK_REJECTED(gguf_writer().kv("flag", meta::boolean_byte(2)).build().bytes,
                   "metadata 'flag': bool value 2 is neither 0 nor 1");
    CHECK_REJECTED(gguf_writer()
                       .kv("flags", meta::array(gguf_type::boolean, {meta::boolean(true), meta::boolean_byte(255)}))
                       .build()
                       .bytes,
                   "metadata 'flags': bool value 255 is neither 0 nor 1");
}

TEST_CASE("gguf corrupt: general.alignment that is not a power of two or not a uint32 is rejected") {
    CHECK_REJECTED(five_tensors().kv("general.alignment", meta::u32(48)).build().bytes,
                   "general.alignment 48 is not a power of two");
    CHECK_REJECTED(five_tensors().kv("general.alignment", meta::u32(0)).build().bytes,
                   "general.alignment 0 is not a power of two");
    CHECK_REJECTED(five_tensors().kv("general.alignment", meta::u64(32)).build().bytes,
                   "general.alignment has type uint64, expected uint32");
    CHECK_REJECTED(five_tensors().kv("general.alignment", meta::str("32")).build().bytes,
                   "general.alignment has type string, expected uint32");
}

// ---- fuzz -----------------------------------------------------------------------------------

TEST_CASE("gguf fuzz: flipping any one header byte never crashes, and a file that still opens stays inside its bytes") {
    const gguf_image img = sample().build();
    size_t n_opened = 0, n_rejected = 0;
    for (uint8_t mask : {uint8_t{0xFF}, uint8_t{0x01}}) {
        for (size_t i = 0; i < img.at.data_start; ++i) {
            std::vector<uint8_t> bytes = img.bytes;
            bytes[i] ^= mask;
            const parsed p = parse(bytes);
            INFO("byte ", i, " xor ", int{mask}, ": ", p.err);
            if (!p.file) {
                ++n_rejected;
                CHECK(p.err.starts_with(kPrefix));
                continue;
            }
            ++n_opened;
            for (const gguf_tensor &t : p.file->tensors()) {
                CHECK(t.data >= bytes.data() + p.file->data_offset());
                CHECK(t.nbytes <= static_cast<size_t>(bytes.data() + bytes.size() - t.data));
            }
        }
    }
    // flips inside names and values leave a valid file; flips in counts and tags do not
    CHECK(n_opened > 0);
    CHECK(n_rejected > 0);
}
