#include "policy/labelled_set.h"

#include <boost/json.hpp>

#include <fstream>

namespace actorserve {

namespace json = boost::json;

bool read_labelled_set(const std::string &path, std::string_view label_field,
                       const std::function<bool(labelled_line &&, std::string &why)> &add, std::string &err) {
    std::ifstream in(path);
    if (!in) {
        err = "cannot read the labelled set " + path;
        return false;
    }
    auto string_of = [](const json::object &o, std::string_view key) -> const json::string * {
        const json::value *v = o.if_contains(key);
        return v ? v->if_string() : nullptr;
    };
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        const std::string where = path + ":" + std::to_string(n) + ": ";
        boost::system::error_code ec;
        json::value v = json::parse(line, ec);
        const json::object *o = ec ? nullptr : v.if_object();
        const json::string *text = o ? string_of(*o, "text") : nullptr;
        const json::string *label = o ? string_of(*o, label_field) : nullptr;
        if (!text || !label) {
            err = where + "a line is {\"text\": ..., \"" + std::string(label_field) + "\": ..., \"split\": \"tune\" | \"held_out\"}";
            return false;
        }
        labelled_line l;
        l.text = std::string(*text);
        l.label = std::string(*label);
        const json::string *split = string_of(*o, "split");
        l.tune = !o->if_contains("split") || (split && *split == "tune");
        if (const json::string *src = string_of(*o, "source")) l.source = std::string(*src);
        std::string why;
        if (!add(std::move(l), why)) {
            err = where + why;
            return false;
        }
    }
    return true;
}

} // namespace actorserve
