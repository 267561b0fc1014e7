// Chat prompt rendering for the template families we recognise, without a Jinja engine.
//
// A GGUF's tokenizer.chat_template is a Jinja program. Rather than interpret it, detect()
// recognises its family from the marker tokens it writes, by llama.cpp's rules
// (llm_chat_detect_template, tried in its order), and lifts the one piece of free text that
// varies between models of a family (ChatML's default system prompt) out of the source.
// ChatML and Llama 3 render byte-for-byte what their Jinja template gives; the others as
// llama.cpp's built-in renderer (llama_chat_apply_template) writes them:
//   ChatML  ("<|im_start|>"):        <|im_start|>{role}\n{content}<|im_end|>\n ...
//   Mistral v7 ("[SYSTEM_PROMPT]"):  [SYSTEM_PROMPT] {sys}[/SYSTEM_PROMPT][INST] {user}[/INST] {assistant}</s>
//   Mistral v1 / v3 / v3-tekken ("[AVAILABLE_TOOLS]" or "' [INST] ' + system_message"):
//                                    [INST] {sys}\n\n{user}[/INST] {assistant}</s> (spacing by version)
//   Llama 2 ("[INST]", variants by <<SYS>>, a BOS inside the history, content.strip()):
//                                    [INST] <<SYS>>\n{sys}\n<</SYS>>\n\n{user} [/INST]{assistant}</s>
//   Phi-3 ("<|assistant|>" and "<|end|>"): <|{role}|>\n{content}<|end|>\n
//   Gemma ("<start_of_turn>"):       <start_of_turn>{user|model}\n{content}<end_of_turn>\n, the
//                                    system prompt put before the first user message
//   Llama 3 ("<|start_header_id|>"): <|start_header_id|>{role}<|end_header_id|>\n\n{content}<|eot_id|>
// The Mistral and Llama 2 families end a prompt with [/INST] whether or not a generation
// prompt is asked for.
// note: render() never writes a BOS token. Llama 3 templates begin with {{ bos_token }}, but
// the BOS is added as a token id by whoever builds the prompt (when tokenizer::add_bos()),
// so rendering it as text as well would give two.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "include/actorserve/chat_message.h"

namespace actorserve {

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

    // "chatml", "mistral-v7", "mistral-v1", "mistral-v3", "mistral-v3-tekken", "llama2",
    // "llama2-sys", "llama2-sys-bos", "llama2-sys-strip", "phi3", "gemma", "llama3"
    const char *name() const;
    // ChatML: the system prompt the template puts first when the first message is not a
    // system one; nullopt when the template has none.
    const std::optional<std::string> &default_system() const { return default_system_; }

private:
    enum class family {
        chatml, mistral_v7, mistral_v1, mistral_v3, mistral_v3_tekken,
        llama2, llama2_sys, llama2_sys_bos, llama2_sys_strip, phi3, gemma, llama3
    };
    void render_mistral(std::span<const chat_message> msgs, rendered_chat &r) const;
    void render_llama2(std::span<const chat_message> msgs, rendered_chat &r) const;
    explicit chat_template(family f) : family_(f) {}

    family family_;
    std::optional<std::string> default_system_; // chatml only
    bool trim_content_ = false;                 // llama3: the template pipes content through trim
};

} // namespace actorserve
