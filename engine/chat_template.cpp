#include "engine/chat_template.h"

#include <string_view>

namespace actorserve {
namespace {

constexpr std::string_view kSupported =
    "supported families: ChatML (writes <|im_start|>) and Llama 3 (writes <|start_header_id|>)";

// The Jinja string literal that starts at src[at], whose opening quote is src[at - 1], with
// its escapes decoded; nullopt when it never closes.
std::optional<std::string> literal_from(const std::string &src, size_t at) {
    const char quote = src[at - 1];
    std::string lit;
    for (size_t i = at; i < src.size(); ++i) {
        const char c = src[i];
        if (c == quote) return lit;
        if (c == '\\' && i + 1 < src.size()) {
            const char e = src[++i];
            lit += e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e; // \\ \' \" keep the char
            continue;
        }
        lit += c;
    }
    return std::nullopt;
}

// ChatML templates that supply a default system prompt write it as one literal,
//   '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, ...<|im_end|>\n'
// (SmolLM2, Qwen2). A literal that stops after "system\n" takes the text from a message and
// is not a default.
std::optional<std::string> chatml_default_system(const std::string &src) {
    const std::string head = "<|im_start|>system\n", marker = "<|im_start|>system";
    for (size_t at = src.find(marker); at != std::string::npos; at = src.find(marker, at + 1)) {
        if (at == 0 || (src[at - 1] != '\'' && src[at - 1] != '"')) continue;
        const std::optional<std::string> lit = literal_from(src, at);
        if (!lit || lit->compare(0, head.size(), head) != 0) continue;
        const size_t end = lit->find("<|im_end|>");
        if (end == std::string::npos) continue;
        return lit->substr(head.size(), end - head.size());
    }
    return std::nullopt;
}

// Jinja's trim filter (Python str.strip()), for ASCII whitespace.
std::string_view trim(std::string_view s) {
    constexpr std::string_view ws = " \t\n\r\f\v";
    const size_t b = s.find_first_not_of(ws);
    if (b == std::string_view::npos) return {};
    return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

} // namespace

std::optional<chat_template> chat_template::detect(const std::string &src, std::string &err) {
    if (src.empty()) {
        err = "the model has no chat template (tokenizer.chat_template is empty); " + std::string(kSupported);
        return std::nullopt;
    }
    if (src.find("<|im_start|>") != std::string::npos) {
        chat_template t(family::chatml);
        t.default_system_ = chatml_default_system(src);
        return t;
    }
    if (src.find("<|start_header_id|>") != std::string::npos) {
        chat_template t(family::llama3);
        t.trim_content_ = src.find("| trim") != std::string::npos || src.find("|trim") != std::string::npos;
        return t;
    }
    std::string start = src.substr(0, 60);
    for (char &c : start)
        if (c == '\n') c = ' ';
    err = "unrecognised chat template (it begins \"" + start + (src.size() > 60 ? "...\"); " : "\"); ") +
          std::string(kSupported);
    return std::nullopt;
}

rendered_chat chat_template::render_marked(std::span<const chat_message> msgs, bool add_generation_prompt) const {
    rendered_chat r;
    auto marker = [&r](std::string_view m) {
        r.controls.emplace_back(r.text.size(), m.size());
        r.text += m;
    };
    if (family_ == family::chatml) {
        // note: like SmolLM2's template, the default goes in only when there is a first message
        if (default_system_ && !msgs.empty() && msgs[0].role != "system") {
            marker("<|im_start|>");
            r.text += "system\n" + *default_system_;
            marker("<|im_end|>");
            r.text += "\n";
        }
        for (const chat_message &m : msgs) {
            marker("<|im_start|>");
            r.text += m.role + "\n" + m.content;
            marker("<|im_end|>");
            r.text += "\n";
        }
        if (add_generation_prompt) {
            marker("<|im_start|>");
            r.text += "assistant\n";
        }
        return r;
    }
    for (const chat_message &m : msgs) {
        marker("<|start_header_id|>");
        r.text += m.role;
        marker("<|end_header_id|>");
        r.text += "\n\n";
        r.text += trim_content_ ? trim(m.content) : std::string_view(m.content);
        marker("<|eot_id|>");
    }
    if (add_generation_prompt) {
        marker("<|start_header_id|>");
        r.text += "assistant";
        marker("<|end_header_id|>");
        r.text += "\n\n";
    }
    return r;
}

std::string chat_template::render(std::span<const chat_message> msgs, bool add_generation_prompt) const {
    return render_marked(msgs, add_generation_prompt).text;
}

const char *chat_template::name() const { return family_ == family::chatml ? "chatml" : "llama3"; }

} // namespace actorserve
