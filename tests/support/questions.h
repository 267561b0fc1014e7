// Sixteen short chat questions the batching tests send at once (scheduler and runtime): each
// greedy answer is compared with what the same question gets alone.
#pragma once

namespace test_support {

inline constexpr const char *kQuestions[16] = {
    "What is the capital of France?", "Name three colours.", "Write a haiku about the sea.",
    "How many legs does a spider have?", "What is 12 times 12?", "Say hello in Spanish.",
    "Why is the sky blue?", "List two prime numbers.", "What does a cat say?", "Describe rain in one line.",
    "Who wrote Hamlet?", "What is water made of?", "Give a synonym for happy.", "What is the opposite of cold?",
    "Count from one to five.", "What do bees make?",
};

} // namespace test_support
