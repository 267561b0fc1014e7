#include "bench/loadgen/workload.h"

#include <algorithm>
#include <cctype>
#include <fstream>

namespace loadgen {

namespace json = boost::json;

namespace {

json::array user_message(const std::string &text) {
    return json::array{json::object{{"role", "user"}, {"content", text}}};
}

// Picks uniformly in [0, n) from our own arithmetic: std::uniform_int_distribution's output is
// not specified across standard libraries, and a seed must give the same run everywhere.
size_t pick(std::mt19937_64 &rng, size_t n) { return static_cast<size_t>(rng() % n); }
double unit(std::mt19937_64 &rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

} // namespace

std::vector<prompt> builtin_prompts() {
    static const char *const kTexts[] = {
        "Hi!",
        "What is the capital of France?",
        "Name three primary colors.",
        "What is 17 times 23?",
        "Translate 'good morning' into Spanish.",
        "Give me a synonym for happy.",
        "Write a haiku about the sea.",
        "What does a CPU do?",
        "Explain photosynthesis in one sentence.",
        "List five fruits that are red.",
        "Why is the sky blue? Answer briefly.",
        "Write a short poem about a cat who likes to sleep in the sun.",
        "What are the main differences between a list and a tuple in Python?",
        "Suggest a name for a small bakery in a seaside town.",
        "Describe the water cycle to a ten-year-old.",
        "Give me three tips for learning a new language quickly.",
        "What is the difference between weather and climate? Keep it short.",
        "Write a two-sentence story about a robot that learns to paint.",
        "Explain what a hash table is and when you would use one.",
        "Summarize the plot of Romeo and Juliet in a few sentences.",
        "I am planning a trip to Japan in spring. What should I pack, and which cities should I visit "
        "if I only have one week?",
        "Write an email to a colleague asking to move our Tuesday meeting to Thursday afternoon, and "
        "apologize for the short notice.",
        "Compare electric cars and petrol cars in terms of running cost, maintenance and environmental "
        "impact. Give a balanced answer.",
        "You are a helpful cooking assistant. I have eggs, spinach, cheese, half an onion and some "
        "bread. Suggest a simple dinner and explain the steps.",
        "Explain how a binary search works, why it needs sorted input, and what its running time is. "
        "Then give a short example on the list 3, 8, 15, 21, 42, 57 searching for 21.",
        "Here is a paragraph: 'The library opens at nine in the morning and closes at six in the "
        "evening on weekdays. On Saturdays it opens at ten and closes at four. It is closed on Sundays "
        "and public holidays.' Question: can I visit the library at five in the afternoon on a "
        "Saturday? Explain your answer.",
        "Write a short product description for a reusable water bottle that keeps drinks cold for 24 "
        "hours, is made of stainless steel, holds 750 ml and comes in five colors. Make it friendly "
        "and under 80 words.",
        "A farmer has 17 sheep. All but nine run away. How many sheep does the farmer have left? "
        "Think step by step and then give the final answer on its own line.",
        "Please read the following notes and turn them into a tidy bulleted list of action items with "
        "owners: Anna will book the venue. Ben has to check the budget with finance before Friday. "
        "Someone needs to send the invitations, probably Chris. We also still need a caterer, and Dana "
        "said she knows one. The projector in room B is broken, so Ben will ask facilities about it. "
        "Finally, everyone should confirm their availability for the 14th by Wednesday.",
        "Explain, as if to a new engineer joining a team, what happens between typing a web address "
        "into a browser and seeing the page: name resolution, the TCP connection, TLS, the HTTP "
        "request and response, and how the browser renders HTML, CSS and JavaScript. Keep each step "
        "to two or three sentences and say which step is usually the slowest.",
    };
    std::vector<prompt> out;
    for (const char *t : kTexts) out.push_back({user_message(t)});
    // One conversation with earlier turns and a system message.
    out.push_back({json::array{
        json::object{{"role", "system"}, {"content", "You are a concise assistant."}},
        json::object{{"role", "user"}, {"content", "What is the tallest mountain on Earth?"}},
        json::object{{"role", "assistant"}, {"content", "Mount Everest, at about 8,849 metres."}},
        json::object{{"role", "user"}, {"content", "And the tallest in Europe?"}},
    }});
    return out;
}

std::vector<prompt> load_prompts_jsonl(const std::string &path, std::string &err) {
    std::ifstream f(path);
    if (!f) {
        err = "cannot open " + path;
        return {};
    }
    std::vector<prompt> out;
    std::string line;
    for (int lineno = 1; std::getline(f, line); ++lineno) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        boost::system::error_code ec;
        json::value v = json::parse(line, ec);
        const std::string where = path + ":" + std::to_string(lineno) + ": ";
        if (ec || !v.is_object()) {
            err = where + "not a JSON object";
            return {};
        }
        const auto &o = v.get_object();
        if (const auto *p = o.if_contains("prompt"); p && p->is_string()) {
            out.push_back({user_message(std::string(p->get_string()))});
        } else if (const auto *m = o.if_contains("messages"); m && m->is_array() && !m->get_array().empty()) {
            for (const auto &msg : m->get_array()) {
                if (!msg.is_object() || !msg.get_object().contains("role") || !msg.get_object().contains("content")) {
                    err = where + "each message needs role and content";
                    return {};
                }
            }
            out.push_back({m->get_array()});
        } else {
            err = where + "needs \"prompt\" (a string) or \"messages\" (a non-empty array)";
            return {};
        }
    }
    if (out.empty()) err = path + ": no prompts";
    return out;
}

std::string paraphrase(const std::string &text, std::mt19937_64 &rng) {
    std::string s = text;
    switch (pick(rng, 4)) {
    case 0: // lower case
        for (char &c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (s != text) return s;
        [[fallthrough]];
    case 1: // end punctuation dropped, or added
        if (!s.empty() && (s.back() == '?' || s.back() == '.' || s.back() == '!')) s.pop_back();
        else s += '.';
        return s;
    case 2: // "Please " added in front, or removed
        if (s.rfind("Please ", 0) == 0) return s.substr(7);
        if (!s.empty()) s[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(s[0])));
        return "Please " + s;
    default: // ", please" before the end punctuation
        if (!s.empty() && (s.back() == '?' || s.back() == '.' || s.back() == '!')) {
            const char end = s.back();
            s.pop_back();
            return s + ", please" + end;
        }
        return s + ", please";
    }
}

workload::workload(std::vector<prompt> prompts, double repeat_fraction, uint64_t seed)
    : prompts_(std::move(prompts)), repeat_fraction_(repeat_fraction), rng_(seed) {}

workload_item workload::next() {
    workload_item item;
    if (!sent_.empty() && unit(rng_) < repeat_fraction_) {
        item.prompt_index = sent_[pick(rng_, sent_.size())];
        item.repeated = true;
        item.messages = prompts_[static_cast<size_t>(item.prompt_index)].messages;
        if (pick(rng_, 2) == 1) { // half the repeats are reworded
            auto &last = item.messages.back().as_object();
            if (auto *c = last.if_contains("content"); c && c->is_string()) {
                *c = paraphrase(std::string(c->get_string()), rng_);
                item.paraphrased = true;
            }
        }
        return item;
    }
    item.prompt_index = static_cast<int>(pick(rng_, prompts_.size()));
    item.messages = prompts_[static_cast<size_t>(item.prompt_index)].messages;
    if (sent_.size() < 4096) sent_.push_back(item.prompt_index);
    return item;
}

} // namespace loadgen
