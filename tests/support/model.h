// The default model (test_paths::model(), CMake's ACTORSERVE_MODEL) and its tokenizer, loaded
// once per test binary on first use: loading takes seconds, and every test reads it only.
//
//   const llama_model &m = *test_support::default_model().model;
//   auto prompt = test_support::default_model().tok->encode("Hi", false);
//
// A missing model fails the test, never skips it. The model is held by a shared_ptr so that an
// executor actor can hold it too (spawn_executor).
#pragma once

#include <doctest/doctest.h>

#include <memory>
#include <string>

#include "engine/model.h"
#include "engine/tokenizer.h"
#include "tests/support/paths.h"

namespace test_support {

struct loaded_model {
    std::shared_ptr<const actorserve::llama_model> model;
    std::unique_ptr<actorserve::tokenizer> tok;

    loaded_model() {
        std::string err;
        model = actorserve::llama_model::load(test_paths::model(), err);
        REQUIRE_MESSAGE(model, "cannot load the model (run scripts/setup.sh): " << err);
        tok = actorserve::tokenizer::from_gguf(model->file(), err);
        REQUIRE_MESSAGE(tok, err);
    }
};

inline const loaded_model &default_model() {
    static const loaded_model m; // a failed load throws (REQUIRE), so the next call tries again
    return m;
}

} // namespace test_support
