// Retrieved passages as prompt text: numbered, fenced as quoted material, trimmed to a token
// budget, with instructions to cite them by number. See docs/rag.md for the defence against
// instructions hidden in documents, and its limits.
//
// Fencing: each passage sits between "<<<SOURCE n>>>" and "<<<END SOURCE n>>>" lines. Inside the
// text, anything that could end the fence or speak as another role is neutralised first: the
// fence markers themselves ("<<<" -> "< < <"), the chat template's special tokens
// ("<|im_start|>", "<|im_end|>", "<|endoftext|>" and any "<|...|>" -> "<| ... |>" spelled with
// spaces so the tokenizer cannot read them as special), and line-leading role labels
// ("system:", "assistant:", "user:"). A passage whose text reads as an instruction to the model
// (looks_like_injection) is flagged in its header line, and every line of it is quoted with "> ".
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "rag/chunker.h"
#include "rag/knowledge_base.h"

namespace actorserve {

// Patterns of text addressing the model: "ignore (all) (the) previous/prior/above instructions",
// "disregard ...", "forget ...", "you are now", "new instructions:", "system prompt",
// "act as", "do not follow" ... (case-insensitive). Heuristic; see docs/rag.md.
bool looks_like_injection(std::string_view text);

// The passage text with fence markers, special tokens and role labels neutralised (above).
std::string neutralise_passage(std::string_view text);

struct rag_prompt {
    std::string instructions;      // appended to the system prompt
    std::string context;           // the fenced, numbered passages, placed before the question
    std::vector<passage> cited;    // the passages kept, in order: number i+1 is cited[i]
    size_t tokens = 0;             // tokens of context, by the counter given
    size_t dropped = 0;            // passages left out by the budget
    size_t flagged = 0;            // passages flagged by looks_like_injection
};

// Keeps passages in the given (ranked) order while their fenced text fits budget_tokens (a
// passage that does not fit is dropped and later, smaller ones still tried; the first passage is
// cut at a character boundary to fit when it alone is over the budget).
rag_prompt build_rag_prompt(const std::vector<passage> &passages, size_t budget_tokens, const token_counter &count);

} // namespace actorserve
