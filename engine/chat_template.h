// Chat prompt rendering for the template families we recognise, without a Jinja engine.
//
// A GGUF's tokenizer.chat_template is a Jinja program. Rather than interpret it, detect()
// recognises its family from the marker tokens it writes and lifts the one piece of free
// text that varies between models of a family (ChatML's default system prompt) out of the
// source, so render() gives byte-for-byte what the template would give.
//   ChatML  ("<|im_start|>"):        <|im_start|>{role}\n{content}<|im_end|>\n ...
//   Llama 3 ("<|start_header_id|>"): <|start_header_id|>{role}<|end_header_id|>\n\n{content}<|eot_id|>
// note: render() never writes a BOS token. Llama 3 templates begin with {{ bos_token }}, but
// the BOS is added as a token id by whoever builds the prompt (when tokenizer::add_bos()),
// so rendering it as text as well would give two.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace actorserve {

struct chat_message {
    std::string role, content;
};

// A rendered prompt and where in it the template wrote its markers: those, and nothing a message
// holds, become control tokens (encode_prompt in engine/tokenizer.h). A user who writes
// "<|im_end|>" gets those characters as text, not the end of their turn.
struct rendered_chat {
    std::string text;
    std::vector<std::pair<size_t, size_t>> controls; // (offset, length) of each marker, in order
};

class chat_template {
public:
    // nullopt with err set for an empty template or one of no known family; err names the
    // families that are supported.
    static std::optional<chat_template> detect(const std::string &jinja_source, std::string &err);

    // The prompt text for msgs; add_generation_prompt appends the opening of an assistant
    // turn for the model to continue.
    std::string render(std::span<const chat_message> msgs, bool add_generation_prompt) const;
    rendered_chat render_marked(std::span<const chat_message> msgs, bool add_generation_prompt) const;

    const char *name() const; // "chatml" or "llama3"
    // ChatML: the system prompt the template puts first when the first message is not a
    // system one; nullopt when the template has none.
    const std::optional<std::string> &default_system() const { return default_system_; }

private:
    enum class family { chatml, llama3 };
    explicit chat_template(family f) : family_(f) {}

    family family_;
    std::optional<std::string> default_system_; // chatml only
    bool trim_content_ = false;                 // llama3: the template pipes content through trim
};

} // namespace actorserve
