// Sentence embeddings (all-MiniLM-L6-v2): token ids and vectors against sentence-transformers
// (tests/fixtures/embeddings_minilm.json, from scripts/gen_embed_reference.sh), batch against
// one-by-one, and bad input (corrupt safetensors, wrong shapes, missing files, invalid UTF-8)
// rejected with an error that names the problem.
#include "tests/support/paths.h"
#include "engine/bert.h"
#include "engine/embedder.h"
#include "engine/json_reader.h"
#include "engine/safetensors.h"
#include "engine/wordpiece.h"

#include <unistd.h>
#include <doctest/doctest.h>
#include <simdjson.h>

#include <cmath>
#include <iomanip>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using namespace actorserve;
namespace fs = std::filesystem;

namespace {

// Where scripts/setup.sh puts the model: beside the default GGUF, in models/.
std::string model_dir() {
    if (const char *d = std::getenv("ACTORSERVE_EMBED_MODEL_DIR")) return d;
    return test_paths::embed_model_dir();
}

constexpr double kMinCosine = 0.999; // against PyTorch float32, fixture rounded to 6 decimals

struct ref_case {
    std::string text;
    std::vector<int32_t> ids;
    std::vector<float> embedding;
};

const std::vector<ref_case> &fixture() {
    static const std::vector<ref_case> cases = [] {
        simdjson::dom::parser parser;
        simdjson::dom::element doc;
        const std::string path = test_paths::fixtures() + "/embeddings_minilm.json";
        REQUIRE_MESSAGE(parser.load(path).get(doc) == simdjson::SUCCESS, "cannot read " << path);
        std::vector<ref_case> out;
        for (simdjson::dom::element c : doc["cases"].get_array()) {
            ref_case r;
            r.text = std::string(std::string_view(c["text"]));
            for (int64_t v : c["ids"].get_array()) r.ids.push_back(static_cast<int32_t>(v));
            for (double v : c["embedding"].get_array()) r.embedding.push_back(static_cast<float>(v));
            out.push_back(std::move(r));
        }
        return out;
    }();
    return cases;
}

embedder &shared_embedder() {
    static std::unique_ptr<embedder> e = [] {
        std::string err;
        auto p = embedder::load(model_dir(), err, 1);
        if (!p) FAIL("cannot load the embedding model (run scripts/setup.sh): " << err);
        return p;
    }();
    return *e;
}

double cosine(const std::vector<float> &a, const std::vector<float> &b) {
    double ab = 0, aa = 0, bb = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        ab += double(a[i]) * b[i];
        aa += double(a[i]) * a[i];
        bb += double(b[i]) * b[i];
    }
    return ab / std::sqrt(aa * bb);
}

std::string read_bytes(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const fs::path &path, std::string_view bytes) {
    std::ofstream out(path, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A safetensors file built from parts: header JSON as given, data as given.
std::string safetensors_bytes(const std::string &header, const std::string &data) {
    std::string out(8, '\0');
    const uint64_t n = header.size();
    std::memcpy(out.data(), &n, 8);
    return out + header + data;
}

// A BERT of toy size (d = 4, 2 heads, 1 layer, n_ff = 8, 12 tokens, 8 positions) written out
// as config.json, vocab.txt and model.safetensors, with deterministic weights. shape_of lets a
// test give one tensor a wrong shape.
struct tiny_tensor {
    std::string name;
    std::vector<int64_t> shape;
};
std::vector<tiny_tensor> tiny_tensors() {
    std::vector<tiny_tensor> t = {
        {"embeddings.word_embeddings.weight", {12, 4}}, {"embeddings.position_embeddings.weight", {8, 4}},
        {"embeddings.token_type_embeddings.weight", {2, 4}}, {"embeddings.LayerNorm.weight", {4}},
        {"embeddings.LayerNorm.bias", {4}},
    };
    const std::string p = "encoder.layer.0.";
    for (const char *m : {"attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"}) {
        t.push_back({p + m + ".weight", {4, 4}});
        t.push_back({p + m + ".bias", {4}});
    }
    t.push_back({p + "attention.output.LayerNorm.weight", {4}});
    t.push_back({p + "attention.output.LayerNorm.bias", {4}});
    t.push_back({p + "intermediate.dense.weight", {8, 4}});
    t.push_back({p + "intermediate.dense.bias", {8}});
    t.push_back({p + "output.dense.weight", {4, 8}});
    t.push_back({p + "output.dense.bias", {4}});
    t.push_back({p + "output.LayerNorm.weight", {4}});
    t.push_back({p + "output.LayerNorm.bias", {4}});
    return t;
}

fs::path write_tiny_model(const std::string &name, std::vector<tiny_tensor> tensors) {
    const fs::path dir = fs::temp_directory_path() / ("actorserve_test_embed_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    write_bytes(dir / "config.json",
                R"({"model_type": "bert", "hidden_act": "gelu", "vocab_size": 12, "hidden_size": 4,
                    "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 8,
                    "max_position_embeddings": 8, "type_vocab_size": 2, "layer_norm_eps": 1e-12})");
    write_bytes(dir / "vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\ncat\n##s\nsat\n.\n,\nhello\nworld\n");
    std::string header = "{", data;
    for (const tiny_tensor &t : tensors) {
        int64_t n = 1;
        std::string shape;
        for (int64_t d : t.shape) {
            n *= d;
            if (!shape.empty()) shape += ',';
            shape += std::to_string(d);
        }
        const size_t begin = data.size();
        for (int64_t i = 0; i < n; ++i) {
            const float v = t.name.find("LayerNorm.weight") != std::string::npos
                                ? 1.0f
                                : 0.1f + 0.5f * std::cos(static_cast<float>(i + begin));
            data.append(reinterpret_cast<const char *>(&v), sizeof v);
        }
        if (header.size() > 1) header += ',';
        header += "\"" + t.name + "\":{\"dtype\":\"F32\",\"shape\":[" + shape + "],\"data_offsets\":[" +
                  std::to_string(begin) + "," + std::to_string(data.size()) + "]}";
    }
    header += "}";
    while ((8 + header.size()) % 8) header += ' '; // padded as the reference writer does
    write_bytes(dir / "model.safetensors", safetensors_bytes(header, data));
    return dir;
}

} // namespace

TEST_CASE("wordpiece: token ids equal the reference tokenizer's for every fixture sentence") {
    std::string err;
    auto tok = wordpiece_tokenizer::load(model_dir() + "/vocab.txt", err);
    REQUIRE_MESSAGE(tok, err);
    REQUIRE(fixture().size() >= 50);
    int n_truncated = 0;
    for (const ref_case &c : fixture()) {
        std::vector<int32_t> ids;
        REQUIRE(tok->encode(c.text, 256, ids, err));
        CHECK_MESSAGE(ids == c.ids, "text: " << c.text);
        n_truncated += ids.size() == 256;
    }
    CHECK(n_truncated >= 1); // the fixture covers truncation
}

TEST_CASE("wordpiece: normalization, splitting and the word-piece rules") {
    std::string err;
    auto tok = wordpiece_tokenizer::load(model_dir() + "/vocab.txt", err);
    REQUIRE_MESSAGE(tok, err);
    // lowercase, accents stripped by NFD, punctuation alone, CJK ideographs alone, controls gone
    CHECK(tok->split_words("Héllo, Wörld!") == std::vector<std::string>{"hello", ",", "world", "!"});
    CHECK(tok->split_words("東京tower") == std::vector<std::string>{"東", "京", "tower"});
    CHECK(tok->split_words(std::string_view("a\0b\tc\u200bd", 9)) == std::vector<std::string>{"ab", "cd"});
    CHECK(tok->split_words("\xC3\x85ngstr\xC3\xB6m \xC5\x81\xC3\xB3\x64\xC5\xBA") ==
          std::vector<std::string>{"angstrom", "łodz"}); // Ł has no decomposition: lowercased only
    std::vector<int32_t> ids;
    // greedy longest match with ## continuations
    REQUIRE(tok->encode("unaffable", 256, ids, err));
    std::vector<std::string> pieces;
    for (int32_t id : ids) pieces.push_back(tok->piece(id));
    CHECK(pieces.front() == "[CLS]");
    CHECK(pieces.back() == "[SEP]");
    CHECK(pieces.size() > 3);
    for (size_t i = 2; i + 1 < pieces.size(); ++i) CHECK(pieces[i].rfind("##", 0) == 0);
    // a word over 100 characters is one [UNK]; so is a word with an unmatched piece
    REQUIRE(tok->encode(std::string(101, 'a'), 256, ids, err));
    CHECK(ids == std::vector<int32_t>{tok->cls(), tok->unk(), tok->sep()});
    REQUIRE(tok->encode(std::string(100, 'a'), 256, ids, err));
    CHECK(ids.size() > 3);
    // truncation keeps [CLS] + the first max - 2 pieces + [SEP]
    REQUIRE(tok->encode("the the the the the", 4, ids, err));
    CHECK(ids == std::vector<int32_t>{tok->cls(), tok->find("the"), tok->find("the"), tok->sep()});
    REQUIRE(tok->encode("", 4, ids, err));
    CHECK(ids == std::vector<int32_t>{tok->cls(), tok->sep()});
    // invalid UTF-8 names the byte
    CHECK_FALSE(tok->encode("ok \xC3\x28", 256, ids, err));
    CHECK(err == "text is not valid UTF-8 (byte 3)");
    CHECK_FALSE(tok->encode("\xED\xA0\x80", 256, ids, err)); // a surrogate
    CHECK_FALSE(tok->encode("abc\xF0\x9F\x98", 256, ids, err)); // cut short
}

TEST_CASE("embedder: vectors match sentence-transformers (cosine >= 0.999) and are unit length") {
    embedder &e = shared_embedder();
    REQUIRE(e.dim() == 384);
    double min_cos = 1.0;
    std::string worst;
    for (const ref_case &c : fixture()) {
        const std::vector<float> v = e.embed(c.text);
        REQUIRE_MESSAGE(v.size() == 384, e.last_error());
        const double cs = cosine(v, c.embedding);
        if (cs < min_cos) {
            min_cos = cs;
            worst = c.text.substr(0, 60);
        }
        CHECK_MESSAGE(cs >= kMinCosine, "cosine " << cs << " for: " << c.text);
        double norm = 0;
        for (float x : v) norm += double(x) * x;
        CHECK(std::fabs(std::sqrt(norm) - 1.0) < 1e-5);
    }
    MESSAGE("minimum cosine over " << fixture().size() << " sentences: " << std::setprecision(12) << min_cos
                                     << " (1 - " << std::setprecision(3) << 1.0 - min_cos << "; " << worst << ")");
}

TEST_CASE("embedder: embed_batch gives exactly embed's vectors, one by one") {
    embedder &e = shared_embedder();
    std::vector<std::string> texts;
    for (const ref_case &c : fixture()) texts.push_back(c.text);
    // more than one internal chunk of 2048 tokens
    for (int i = 0; i < 10; ++i) texts.push_back(fixture()[static_cast<size_t>(fixture().size() - 2)].text);
    const std::vector<std::vector<float>> batch = e.embed_batch(texts);
    REQUIRE(batch.size() == texts.size());
    CHECK(e.last_error().empty());
    for (size_t i = 0; i < texts.size(); ++i) CHECK_MESSAGE(batch[i] == e.embed(texts[i]), "text " << i);
    CHECK(e.embed_batch({}).empty());
}

TEST_CASE("embedder: the thread count changes no bits") {
    std::string err;
    auto e2 = embedder::load(model_dir(), err, 2);
    REQUIRE_MESSAGE(e2, err);
    for (size_t i = 0; i < fixture().size(); i += 5) CHECK(e2->embed(fixture()[i].text) == shared_embedder().embed(fixture()[i].text));
}

TEST_CASE("embedder: invalid UTF-8 gives an empty vector and an error, other texts still embed") {
    embedder &e = shared_embedder();
    CHECK(e.embed("bad \xFF byte").empty());
    CHECK(e.last_error() == "text is not valid UTF-8 (byte 4)");
    const auto batch = e.embed_batch({"fine", "bad \xC0\xAF", "also fine"});
    REQUIRE(batch.size() == 3);
    CHECK(batch[0] == e.embed("fine"));
    CHECK(batch[1].empty());
    CHECK(batch[2].size() == 384);
    e.embed_batch({"fine", "bad \xC0\xAF"});
    CHECK(e.last_error() == "text 1: text is not valid UTF-8 (byte 4)");
    e.embed("fine");
    CHECK(e.last_error().empty());
}

TEST_CASE("embedder: a toy BERT written from scratch loads and embeds to a unit vector") {
    const fs::path dir = write_tiny_model("ok", tiny_tensors());
    std::string err;
    auto e = embedder::load(dir.string(), err, 2);
    REQUIRE_MESSAGE(e, err);
    CHECK(e->dim() == 4);
    const auto v = e->embed("The cats sat, hello world.");
    REQUIRE(v.size() == 4);
    double norm = 0;
    for (float x : v) norm += double(x) * x;
    CHECK(std::fabs(norm - 1.0) < 1e-5);
    // longer than the 8 positions: truncated, not refused
    CHECK(e->embed("the the the the the the the the the the the the").size() == 4);
    fs::remove_all(dir);
}

TEST_CASE("embedder: missing files, corrupt weights and wrong shapes are errors that say what is wrong") {
    std::string err;
    CHECK_FALSE(embedder::load("/nonexistent/model/dir", err));
    CHECK(err.find("not a directory") != std::string::npos);

    const fs::path dir = write_tiny_model("bad", tiny_tensors());
    const std::string weights = (dir / "model.safetensors").string();
    const std::string good = read_bytes(weights);

    fs::remove(dir / "vocab.txt");
    CHECK_FALSE(embedder::load(dir.string(), err));
    CHECK(err == (dir / "vocab.txt").string() + ": missing from the model folder");
    write_bytes(dir / "vocab.txt", "[PAD]\n[UNK]\nthe\n");
    CHECK_FALSE(embedder::load(dir.string(), err));
    CHECK(err.find("no [CLS] token") != std::string::npos);
    write_bytes(dir / "vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\ncat\n##s\nsat\n.\n,\nhello\nworld\n");

    write_bytes(weights, good.substr(0, good.size() - 10)); // truncated
    CHECK_FALSE(embedder::load(dir.string(), err));
    CHECK(err.find("model.safetensors: truncated file or bad offsets") != std::string::npos);
    write_bytes(weights, good.substr(0, 5));
    CHECK_FALSE(embedder::load(dir.string(), err));
    CHECK(err.find("truncated file") != std::string::npos);
    write_bytes(weights, "");
    CHECK_FALSE(embedder::load(dir.string(), err));
    CHECK(err.find("file is empty") != std::string::npos);

    auto wrong = tiny_tensors();
    wrong[5].shape = {4, 3}; // attention.self.query.weight
    write_tiny_model("bad", wrong);
    CHECK_FALSE(embedder::load(dir.string(), err));
    CHECK(err.find("tensor 'encoder.layer.0.attention.self.query.weight' has shape [4, 3], config.json implies [4, 4]") !=
          std::string::npos);

    auto missing = tiny_tensors();
    missing.pop_back();
    write_tiny_model("bad", missing);
    CHECK_FALSE(embedder::load(dir.string(), err));
    CHECK(err.find("tensor 'encoder.layer.0.output.LayerNorm.bias' is missing") != std::string::npos);

    write_tiny_model("bad", tiny_tensors());
    write_bytes(dir / "config.json", R"({"model_type": "bert", "hidden_act": "relu"})");
    CHECK_FALSE(embedder::load(dir.string(), err));
    CHECK(err.find("hidden_act is 'relu'") != std::string::npos);
    write_bytes(dir / "config.json", R"({"model_type": "bert", "hidden_act": "gelu", "vocab_size": 12)");
    CHECK_FALSE(embedder::load(dir.string(), err));
    CHECK(err.find("config.json: not valid JSON") != std::string::npos);
    fs::remove_all(dir);
}

TEST_CASE("safetensors: every corruption of the header is rejected by name") {
    const std::string data(16, '\0');
    const auto open = [](const std::string &bytes, std::string &err) {
        return safetensors_file::from_memory(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size(), "t", err);
    };
    std::string err;
    auto ok = open(safetensors_bytes(R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})", data), err);
    REQUIRE_MESSAGE(ok, err);
    REQUIRE(ok->tensors().size() == 1);
    CHECK(ok->tensor("a")->shape == std::vector<int64_t>{2, 2});
    CHECK(ok->tensor("a")->nbytes == 16);
    CHECK(ok->metadata() == std::vector<std::pair<std::string, std::string>>{{"format", "pt"}});

    const struct {
        std::string bytes;
        const char *expect;
    } bad[] = {
        {"abc", "t: truncated file: 3 bytes"},
        {std::string("\xff\xff\xff\xff\xff\xff\xff\x7f", 8) + "{}", "t: header size 9223372036854775807 is over the limit"},
        {safetensors_bytes("{}", "").substr(0, 9), "t: truncated file: the header claims 2 bytes but only 1 follow"},
        {safetensors_bytes("{\"a\":", data), "t: header is not valid JSON: unexpected end of input at byte 5"},
        {safetensors_bytes("[]", data), "t: header is a JSON array, not an object"},
        {safetensors_bytes(R"({"a":{"dtype":"F7","shape":[4],"data_offsets":[0,16]}})", data), "t: tensor 'a': unknown dtype 'F7'"},
        {safetensors_bytes(R"({"a":{"dtype":"F32","shape":[-4],"data_offsets":[0,16]}})", data), "shape holds something other"},
        {safetensors_bytes(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,17]}})", data), "spans bytes [0, 17) of a data section of 16 bytes"},
        {safetensors_bytes(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}})", data), "shape [3] of F32 does not match its 16 bytes"},
        {safetensors_bytes(R"({"a":{"dtype":"F32","shape":[4503599627370496,4503599627370496],"data_offsets":[0,16]}})", data), "does not match its 16 bytes"},
        {safetensors_bytes(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0]}})", data), "data_offsets is not a pair"},
        {safetensors_bytes(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", data), "appears twice"},
    };
    for (const auto &b : bad) {
        CHECK_FALSE(open(b.bytes, err));
        CHECK_MESSAGE(err.find(b.expect) != std::string::npos, err);
    }
}

TEST_CASE("safetensors: every single-byte change of a real header is opened or refused, never a crash") {
    const fs::path dir = write_tiny_model("flip", tiny_tensors());
    const std::string good = read_bytes((dir / "model.safetensors").string());
    fs::remove_all(dir);
    uint64_t n_header = 0;
    std::memcpy(&n_header, good.data(), 8);
    int n_refused = 0, n_bad_error = 0, n_outside = 0;
    for (size_t i = 0; i < 8 + n_header; ++i) {
        for (const char x : {'\x01', '\x80', '"', '9'}) {
            std::string bytes = good;
            bytes[i] = static_cast<char>(bytes[i] ^ x);
            std::string err;
            auto f = safetensors_file::from_memory(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size(), "t", err);
            if (!f) {
                ++n_refused;
                n_bad_error += err.rfind("t: ", 0) != 0;
                continue;
            }
            const auto *lo = reinterpret_cast<const uint8_t *>(bytes.data()), *hi = lo + bytes.size();
            for (const st_tensor &t : f->tensors()) n_outside += t.data < lo || t.data + t.nbytes > hi;
        }
    }
    CHECK(n_refused > 0);
    CHECK(n_bad_error == 0); // every refusal names the file
    CHECK(n_outside == 0);   // whatever opened lies inside the buffer
}

TEST_CASE("json reader: escapes, numbers and the nesting limit") {
    json_value v;
    std::string err;
    REQUIRE(parse_json(R"( {"s": "a\"b\\c\u00e9\ud83d\ude00", "n": -1.5e3, "f": 2.5, "i": 42, "t": true, "z": null, "a": [1, [2]]} )", v, err));
    CHECK(v.find("s")->string == "a\"b\\c\xC3\xA9\xF0\x9F\x98\x80");
    CHECK(v.find("n")->number == -1500.0);
    CHECK(v.find("i")->as_int() == 42);
    CHECK(v.find("n")->as_int() == -1500);
    CHECK_FALSE(v.find("f")->as_int());
    CHECK(v.find("t")->boolean);
    CHECK(v.find("z")->type == json_value::kind::null);
    CHECK(v.find("a")->items[1].items[0].as_int() == 2);
    CHECK_FALSE(parse_json("[1, 2] x", v, err));
    CHECK(err == "trailing characters after the value at byte 7");
    CHECK_FALSE(parse_json(std::string(100, '['), v, err));
    CHECK(err.find("nesting deeper than 64") != std::string::npos);
    CHECK_FALSE(parse_json("\"\xFF\"", v, err));
    CHECK_FALSE(parse_json("01", v, err));
    CHECK_FALSE(parse_json("1e999", v, err));
}
