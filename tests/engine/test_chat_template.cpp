// Chat templates: SmolLM2's real template (read from the model file) and a Llama 3 template
// render exactly what Jinja renders for them (expected strings produced with jinja2 from the
// same template sources); unknown templates are errors that name the supported families.
#include "tests/support/paths.h"
#include "engine/chat_template.h"
#include "engine/gguf.h"

#include <doctest/doctest.h>

#include <vector>

using namespace actorserve;

namespace {

const std::string kSmolSystem =
    "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n";

// The template stored in the model. A missing model fails the test, never skips it.
chat_template smollm_template() {
    std::string err;
    auto file = gguf_file::open(test_paths::model().c_str(), err);
    REQUIRE_MESSAGE(file, err, " (run scripts/setup.sh to fetch the model)");
    const auto src = file->get_string("tokenizer.chat_template");
    REQUIRE(src);
    auto t = chat_template::detect(*src, err);
    REQUIRE_MESSAGE(t, err);
    return *t;
}

// Meta's Llama 3 Instruct template, as shipped in its GGUFs.
const std::string kLlama3Source =
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
    "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + "
    "'<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}"
    "{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant"
    "<|end_header_id|>\\n\\n' }}{% endif %}";

} // namespace

TEST_CASE("chatml: SmolLM2's template is ChatML with its default system prompt lifted out") {
    const chat_template t = smollm_template();
    CHECK(std::string(t.name()) == "chatml");
    REQUIRE(t.default_system());
    CHECK(*t.default_system() == "You are a helpful AI assistant named SmolLM, trained by Hugging Face");
}

TEST_CASE("chatml: a lone user message gets SmolLM2's default system prompt first") {
    const std::vector<chat_message> msgs = {{"user", "Hi"}};
    CHECK(smollm_template().render(msgs, true) ==
          kSmolSystem + "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

TEST_CASE("chatml: a system message of its own replaces the default") {
    const std::vector<chat_message> msgs = {{"system", "Be brief."}, {"user", "Hi"}};
    CHECK(smollm_template().render(msgs, true) ==
          "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

TEST_CASE("chatml: multi-turn without a generation prompt ends after the last message") {
    const std::vector<chat_message> msgs = {{"user", "Hi"}, {"assistant", "Hello!"}, {"user", "Bye"}};
    CHECK(smollm_template().render(msgs, false) ==
          kSmolSystem +
              "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n"
              "<|im_start|>user\nBye<|im_end|>\n");
}

TEST_CASE("chatml: no messages render only the generation prompt") {
    CHECK(smollm_template().render({}, true) == "<|im_start|>assistant\n");
}

TEST_CASE("chatml: a template whose system text comes from a message has no default") {
    std::string err;
    const auto t = chat_template::detect(
        "{% for m in messages %}{{'<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n'}}"
        "{% endfor %}{% if add_generation_prompt %}{{'<|im_start|>system\\n' + x }}{% endif %}",
        err);
    REQUIRE_MESSAGE(t, err);
    CHECK_FALSE(t->default_system());
    const std::vector<chat_message> msgs = {{"user", "Hi"}};
    CHECK(t->render(msgs, false) == "<|im_start|>user\nHi<|im_end|>\n");
}

TEST_CASE("llama3: headers, trimmed content, <|eot_id|>, and no BOS text") {
    std::string err;
    const auto t = chat_template::detect(kLlama3Source, err);
    REQUIRE_MESSAGE(t, err);
    CHECK(std::string(t->name()) == "llama3");
    const std::vector<chat_message> msgs = {{"system", "Be brief."}, {"user", " Hi \n"}};
    CHECK(t->render(msgs, true) ==
          "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
          "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
          "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST_CASE("detect: an empty or unknown template is an error naming the supported families") {
    std::string err;
    CHECK_FALSE(chat_template::detect("", err));
    CHECK(err == "the model has no chat template (tokenizer.chat_template is empty); "
                 "supported families: ChatML (writes <|im_start|>) and Llama 3 (writes <|start_header_id|>)");
    CHECK_FALSE(chat_template::detect("{{ bos_token }}[INST] {{ m }} [/INST]", err));
    CHECK(err == "unrecognised chat template (it begins \"{{ bos_token }}[INST] {{ m }} [/INST]\"); "
                 "supported families: ChatML (writes <|im_start|>) and Llama 3 (writes <|start_header_id|>)");
}
