#include "engine/chat_template.h"

#include <string_view>

namespace actorserve {
namespace {

constexpr std::string_view kSupported =
    "supported families: ChatML (writes <|im_start|>), Mistral and Llama 2 ([INST]), Phi-3 (<|assistant|> "
    "and <|end|>), Gemma (<start_of_turn>) and Llama 3 (<|start_header_id|>)";

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
    auto has = [&src](std::string_view m) { return src.find(m) != std::string::npos; };
    if (has("<|im_start|>")) {
        chat_template t(family::chatml);
        t.default_system_ = chatml_default_system(src);
        return t;
    }
    if (src.rfind("mistral", 0) == 0 || has("[INST]")) {
        if (has("[SYSTEM_PROMPT]")) return chat_template(family::mistral_v7);
        if (has("' [INST] ' + system_message") || has("[AVAILABLE_TOOLS]")) {
            if (has(" [INST]")) return chat_template(family::mistral_v1);
            if (has("\"[INST]\"")) return chat_template(family::mistral_v3_tekken);
            return chat_template(family::mistral_v3);
        }
        if (has("content.strip()")) return chat_template(family::llama2_sys_strip);
        if (has("bos_token + '[INST]")) return chat_template(family::llama2_sys_bos);
        if (has("<<SYS>>")) return chat_template(family::llama2_sys);
        return chat_template(family::llama2);
    }
    if (has("<|assistant|>") && has("<|end|>")) return chat_template(family::phi3);
    if (has("<start_of_turn>")) return chat_template(family::gemma);
    if (has("<|start_header_id|>")) {
        chat_template t(family::llama3);
        t.trim_content_ = has("| trim") || has("|trim");
        return t;
    }
    std::string start = src.substr(0, 60);
    for (char &c : start)
        if (c == '\n') c = ' ';
    err = "unrecognised chat template (it begins \"" + start + (src.size() > 60 ? "...\"); " : "\"); ") +
          std::string(kSupported);
    return std::nullopt;
}

namespace {
void add_marker(rendered_chat &r, std::string_view m) {
    r.controls.emplace_back(r.text.size(), m.size());
    r.text += m;
}
} // namespace

// Mistral v7: [SYSTEM_PROMPT] / [INST] around system and user turns, an assistant turn ends
// in </s>. v1, v3, v3-tekken: one [INST] ... [/INST] around the system and user messages
// before each assistant turn; they differ in spacing (and v3 trims the assistant's text).
void chat_template::render_mistral(std::span<const chat_message> msgs, rendered_chat &r) const {
    if (family_ == family::mistral_v7) {
        for (const chat_message &m : msgs) {
            if (m.role == "system") {
                add_marker(r, "[SYSTEM_PROMPT]");
                r.text += " " + m.content;
                add_marker(r, "[/SYSTEM_PROMPT]");
            } else if (m.role == "user") {
                add_marker(r, "[INST]");
                r.text += " " + m.content;
                add_marker(r, "[/INST]");
            } else {
                r.text += " " + m.content;
                add_marker(r, "</s>");
            }
        }
        return;
    }
    const std::string_view lead = family_ == family::mistral_v1 ? " " : "";
    const std::string_view trail = family_ == family::mistral_v3_tekken ? "" : " ";
    bool in_turn = false;
    for (const chat_message &m : msgs) {
        if (!in_turn) {
            r.text += lead;
            add_marker(r, "[INST]");
            r.text += trail;
            in_turn = true;
        }
        if (m.role == "system") {
            r.text += m.content + "\n\n";
        } else if (m.role == "user") {
            r.text += m.content;
            r.text += lead;
            add_marker(r, "[/INST]");
        } else {
            r.text += trail;
            r.text += family_ == family::mistral_v3 ? trim(m.content) : std::string_view(m.content);
            add_marker(r, "</s>");
            in_turn = false;
        }
    }
}

// Llama 2: [INST] <<SYS>>...<</SYS>> user [/INST] assistant</s>, the next turn opening with
// [INST] (or <s>[INST] in the variant whose template writes a BOS inside the history).
void chat_template::render_llama2(std::span<const chat_message> msgs, rendered_chat &r) const {
    const bool sys = family_ != family::llama2, bos_inside = family_ == family::llama2_sys_bos,
               strip = family_ == family::llama2_sys_strip;
    add_marker(r, "[INST]");
    r.text += " ";
    bool in_turn = true;
    for (const chat_message &m : msgs) {
        const std::string_view content = strip ? trim(m.content) : std::string_view(m.content);
        if (!in_turn) {
            in_turn = true;
            if (bos_inside) add_marker(r, "<s>");
            add_marker(r, "[INST]");
            r.text += " ";
        }
        if (m.role == "system") {
            if (sys) {
                r.text += "<<SYS>>\n";
                r.text += content;
                r.text += "\n<</SYS>>\n\n";
            } else { // no system slot: the text goes first in the turn
                r.text += content;
                r.text += "\n";
            }
        } else if (m.role == "user") {
            r.text += content;
            r.text += " ";
            add_marker(r, "[/INST]");
        } else {
            r.text += content;
            add_marker(r, "</s>");
            in_turn = false;
        }
    }
}

rendered_chat chat_template::render_marked(std::span<const chat_message> msgs, bool add_generation_prompt) const {
    rendered_chat r;
    auto marker = [&r](std::string_view m) { add_marker(r, m); };
    switch (family_) {
    case family::chatml:
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
    case family::mistral_v7:
    case family::mistral_v1:
    case family::mistral_v3:
    case family::mistral_v3_tekken:
        render_mistral(msgs, r);
        return r;
    case family::llama2:
    case family::llama2_sys:
    case family::llama2_sys_bos:
    case family::llama2_sys_strip:
        render_llama2(msgs, r);
        return r;
    case family::phi3:
        for (const chat_message &m : msgs) {
            marker("<|" + m.role + "|>");
            r.text += "\n" + m.content;
            marker("<|end|>");
            r.text += "\n";
        }
        if (add_generation_prompt) {
            marker("<|assistant|>");
            r.text += "\n";
        }
        return r;
    case family::gemma: {
        std::string system; // Gemma has no system turn: its text opens the next user message
        for (const chat_message &m : msgs) {
            if (m.role == "system") {
                system += trim(m.content);
                continue;
            }
            const bool model = m.role == "assistant";
            marker("<start_of_turn>");
            r.text += (model ? std::string("model") : m.role) + "\n";
            if (!system.empty() && !model) {
                r.text += system + "\n\n";
                system.clear();
            }
            r.text += trim(m.content);
            marker("<end_of_turn>");
            r.text += "\n";
        }
        if (add_generation_prompt) {
            marker("<start_of_turn>");
            r.text += "model\n";
        }
        return r;
    }
    case family::llama3:
        break;
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

const char *chat_template::name() const {
    switch (family_) {
    case family::chatml: return "chatml";
    case family::mistral_v7: return "mistral-v7";
    case family::mistral_v1: return "mistral-v1";
    case family::mistral_v3: return "mistral-v3";
    case family::mistral_v3_tekken: return "mistral-v3-tekken";
    case family::llama2: return "llama2";
    case family::llama2_sys: return "llama2-sys";
    case family::llama2_sys_bos: return "llama2-sys-bos";
    case family::llama2_sys_strip: return "llama2-sys-strip";
    case family::phi3: return "phi3";
    case family::gemma: return "gemma";
    case family::llama3: return "llama3";
    }
    return "?";
}

} // namespace actorserve
