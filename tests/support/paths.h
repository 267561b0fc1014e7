// Where the tests find the model, the fixtures and the source tree. The paths are compiled into
// paths.cpp alone: no other test object depends on where the tree lies, so a compiler cache
// shared between clones of the repository serves them all (scripts/build.sh).
#pragma once

#include <string>

namespace test_paths {

const std::string &model();    // the GGUF the golden tests run on (CMake's ACTORSERVE_MODEL)
std::string embed_model_dir(); // all-MiniLM-L6-v2, beside the model
const std::string &fixtures(); // tests/fixtures: reference outputs of llama.cpp and others
const std::string &source();   // the source tree's root

} // namespace test_paths
