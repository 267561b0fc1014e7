// The JSON Schema subset of engine/json_grammar.h compiled to grammar nodes.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "engine/json_grammar.h"
#include "engine/json_reader.h"

namespace actorserve {

namespace {

constexpr int kMaxSchemaDepth = 32;
constexpr size_t kMaxNodes = 4096;

// JSON text of a value, as the matcher will require it byte for byte.
json_value string_value(const std::string &text) {
    json_value v;
    v.type = json_value::kind::string;
    v.string = text;
    return v;
}

void serialize(const json_value &v, std::string &out) {
    switch (v.type) {
    case json_value::kind::null: out += "null"; break;
    case json_value::kind::boolean: out += v.boolean ? "true" : "false"; break;
    case json_value::kind::number: {
        char buf[32];
        if (auto i = v.as_int()) std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(*i));
        else std::snprintf(buf, sizeof buf, "%.17g", v.number);
        out += buf;
        break;
    }
    case json_value::kind::string:
        out += '"';
        for (unsigned char c : v.string) {
            if (c == '"' || c == '\\') {
                out += '\\';
                out += static_cast<char>(c);
            } else if (c < 0x20) {
                char buf[8];
                std::snprintf(buf, sizeof buf, "\\u%04x", c);
                out += buf;
            } else {
                out += static_cast<char>(c);
            }
        }
        out += '"';
        break;
    case json_value::kind::array:
        out += '[';
        for (size_t i = 0; i < v.items.size(); ++i) {
            if (i) out += ',';
            serialize(v.items[i], out);
        }
        out += ']';
        break;
    case json_value::kind::object:
        out += '{';
        for (size_t i = 0; i < v.members.size(); ++i) {
            if (i) out += ',';
            serialize(string_value(v.members[i].first), out);
            out += ':';
            serialize(v.members[i].second, out);
        }
        out += '}';
        break;
    }
}

struct compiler {
    json_grammar g;
    std::string error, keyword;

    json_node *make(json_node::kind_t k) {
        if (g.nodes.size() >= kMaxNodes) return nullptr;
        g.nodes.push_back(std::make_unique<json_node>());
        g.nodes.back()->kind = k;
        return g.nodes.back().get();
    }
    const json_node *fail(const std::string &where, const std::string &key, const std::string &why) {
        if (error.empty()) {
            keyword = key;
            error = (where.empty() ? key : where + "." + key) + " " + why;
        }
        return nullptr;
    }
    bool count(const json_value &v, const std::string &where, const char *key, int &out) {
        const json_value *c = v.find(key);
        if (!c) return true;
        auto i = c->as_int();
        if (!i || *i < 0 || *i > 1000000) {
            fail(where, key, "must be an integer in [0, 1000000]");
            return false;
        }
        out = static_cast<int>(*i);
        return true;
    }

    const json_node *any_value(); // object, array, string, number, true, false, null

    const json_node *type_node(const std::string &type, const json_value &v, const std::string &where, int depth);
    const json_node *node(const json_value &v, const std::string &where, int depth);
};

const json_node *compiler::any_value() {
    json_node *any = make(json_node::any_of);
    json_node *obj = make(json_node::free_object), *arr = make(json_node::array), *str = make(json_node::string),
              *num = make(json_node::number), *lit = make(json_node::literals);
    if (!any || !obj || !arr || !str || !num || !lit) return nullptr;
    obj->item = any;
    arr->item = any;
    lit->texts = {"true", "false", "null"};
    any->options = {obj, arr, str, num, lit};
    return any;
}

const json_node *compiler::type_node(const std::string &type, const json_value &v, const std::string &where, int depth) {
    if (type == "object") {
        const json_value *props = v.find("properties");
        const json_value *extra = v.find("additionalProperties");
        if (extra && !(extra->type == json_value::kind::boolean && !extra->boolean))
            return fail(where, "additionalProperties", "is supported only as false (strict structured output)");
        if (!props) {
            json_node *n = make(json_node::free_object);
            if (!n) return fail(where, "properties", "make the schema too large");
            n->item = any_value();
            return n;
        }
        if (props->type != json_value::kind::object) return fail(where, "properties", "must be an object");
        json_node *n = make(json_node::object);
        if (!n) return fail(where, "properties", "make the schema too large");
        for (const auto &[name, sub] : props->members) {
            std::string key;
            serialize(string_value(name), key);
            for (const std::string &k : n->keys)
                if (k == key) return fail(where, "properties", "names '" + name.substr(0, 64) + "' twice");
            const json_node *c = node(sub, where.empty() ? "properties." + name : where + ".properties." + name, depth + 1);
            if (!c) return nullptr;
            n->keys.push_back(std::move(key));
            n->values.push_back(c);
            n->required.push_back(0);
        }
        if (const json_value *req = v.find("required")) {
            if (req->type != json_value::kind::array) return fail(where, "required", "must be an array of property names");
            for (const json_value &r : req->items) {
                bool found = false;
                for (size_t i = 0; i < props->members.size(); ++i)
                    if (r.type == json_value::kind::string && props->members[i].first == r.string) found = true, n->required[i] = 1;
                if (!found) return fail(where, "required", "names a property that properties does not define");
            }
        }
        return n;
    }
    if (type == "array") {
        json_node *n = make(json_node::array);
        if (!n) return fail(where, "items", "make the schema too large");
        const json_value *items = v.find("items");
        n->item = items ? node(*items, where.empty() ? "items" : where + ".items", depth + 1) : any_value();
        if (!n->item) return nullptr;
        if (!count(v, where, "minItems", n->min_items) || !count(v, where, "maxItems", n->max_items)) return nullptr;
        if (n->max_items >= 0 && n->max_items < n->min_items) return fail(where, "maxItems", "is below minItems");
        return n;
    }
    if (type == "string") {
        json_node *n = make(json_node::string);
        if (!n) return fail(where, "type", "makes the schema too large");
        if (!count(v, where, "minLength", n->min_length) || !count(v, where, "maxLength", n->max_length)) return nullptr;
        if (n->max_length >= 0 && n->max_length < n->min_length) return fail(where, "maxLength", "is below minLength");
        return n;
    }
    if (type == "number" || type == "integer") return make(type == "number" ? json_node::number : json_node::integer);
    if (type == "boolean" || type == "null") {
        json_node *n = make(json_node::literals);
        if (!n) return fail(where, "type", "makes the schema too large");
        n->texts = type == "null" ? std::vector<std::string>{"null"} : std::vector<std::string>{"true", "false"};
        return n;
    }
    return fail(where, "type", "'" + type.substr(0, 32) + "' is not a JSON Schema type");
}

const json_node *compiler::node(const json_value &v, const std::string &where, int depth) {
    if (depth > kMaxSchemaDepth) return fail(where, "properties", "nest deeper than 32 levels");
    if (v.type == json_value::kind::boolean && v.boolean) return any_value();
    if (v.type != json_value::kind::object) return fail(where, "schema", "must be an object");
    static const char *const known[] = {"type", "properties", "required", "additionalProperties", "items", "minItems",
                                        "maxItems", "minLength", "maxLength", "enum", "const", "anyOf", "title",
                                        "description", "default", "examples", "$schema", "$id", "strict"};
    for (const auto &m : v.members) {
        bool ok = false;
        for (const char *k : known) ok |= m.first == k;
        if (!ok) return fail(where, m.first.substr(0, 64), "is not supported (structured output takes type, properties, required, "
                                                           "items, enum, const, anyOf, min/maxItems, min/maxLength)");
    }
    if (const json_value *c = v.find("const")) {
        json_node *n = make(json_node::literals);
        if (!n) return fail(where, "const", "makes the schema too large");
        n->texts.emplace_back();
        serialize(*c, n->texts.back());
        return n;
    }
    if (const json_value *e = v.find("enum")) {
        if (e->type != json_value::kind::array || e->items.empty()) return fail(where, "enum", "must be a non-empty array");
        json_node *n = make(json_node::literals);
        if (!n) return fail(where, "enum", "makes the schema too large");
        for (const json_value &x : e->items) {
            n->texts.emplace_back();
            serialize(x, n->texts.back());
        }
        return n;
    }
    if (const json_value *a = v.find("anyOf")) {
        if (a->type != json_value::kind::array || a->items.empty()) return fail(where, "anyOf", "must be a non-empty array");
        json_node *n = make(json_node::any_of);
        if (!n) return fail(where, "anyOf", "makes the schema too large");
        for (size_t i = 0; i < a->items.size(); ++i) {
            const json_node *c = node(a->items[i], (where.empty() ? "anyOf." : where + ".anyOf.") + std::to_string(i), depth + 1);
            if (!c) return nullptr;
            n->options.push_back(c);
        }
        return n;
    }
    const json_value *t = v.find("type");
    if (!t) return any_value();
    if (t->type == json_value::kind::string) return type_node(t->string, v, where, depth);
    if (t->type != json_value::kind::array || t->items.empty()) return fail(where, "type", "must be a type name or a list of them");
    json_node *n = make(json_node::any_of);
    if (!n) return fail(where, "type", "makes the schema too large");
    for (const json_value &x : t->items) {
        if (x.type != json_value::kind::string) return fail(where, "type", "must list type names");
        const json_node *c = type_node(x.string, v, where, depth);
        if (!c) return nullptr;
        n->options.push_back(c);
    }
    return n;
}

// The fewest bytes of a value of n. Terminates on any_value's cycle: its containers may be empty.
int min_bytes_of(const json_node *n, int depth = 0) {
    if (depth > 2 * kMaxSchemaDepth) return 2;
    switch (n->kind) {
    case json_node::object: {
        int total = 2, count = 0;
        for (size_t j = 0; j < n->keys.size(); ++j)
            if (n->required[j]) total += static_cast<int>(n->keys[j].size()) + 1 + min_bytes_of(n->values[j], depth + 1), ++count;
        return total + std::max(0, count - 1);
    }
    case json_node::free_object: return 2;
    case json_node::array: {
        if (n->min_items == 0) return 2;
        return 2 + n->min_items * min_bytes_of(n->item, depth + 1) + n->min_items - 1;
    }
    case json_node::string: return 2 + n->min_length; // a character is at least one byte
    case json_node::number:
    case json_node::integer: return 1;
    case json_node::literals: {
        size_t m = n->texts[0].size();
        for (const std::string &t : n->texts) m = std::min(m, t.size());
        return static_cast<int>(m);
    }
    case json_node::any_of: {
        int m = 1 << 30;
        for (const json_node *o : n->options) m = std::min(m, min_bytes_of(o, depth + 1));
        return m;
    }
    }
    return 1;
}

} // namespace

schema_result compile_json_schema(std::string_view schema) {
    schema_result r;
    json_value v;
    std::string err;
    if (!parse_json(schema, v, err)) {
        r.error = "the schema is not JSON: " + err;
        r.keyword = "schema";
        return r;
    }
    compiler c;
    const json_node *root = c.node(v, "", 0);
    if (!root) {
        r.error = c.error.empty() ? "the schema is too large" : c.error;
        r.keyword = c.keyword;
        return r;
    }
    c.g.root = root;
    for (auto &n : c.g.nodes) n->min_bytes = min_bytes_of(n.get());
    r.grammar = std::make_shared<json_grammar>(std::move(c.g));
    return r;
}

std::shared_ptr<const json_grammar> any_json_object() {
    auto r = compile_json_schema(R"({"type": "object"})");
    return r.grammar;
}

} // namespace actorserve
