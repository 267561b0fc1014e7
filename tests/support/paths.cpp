#include "tests/support/paths.h"

#include <filesystem>

namespace test_paths {

const std::string &model() {
    static const std::string p = ACTORSERVE_MODEL_PATH;
    return p;
}

std::string embed_model_dir() { return (std::filesystem::path(model()).parent_path() / "all-MiniLM-L6-v2").string(); }

const std::string &fixtures() {
    static const std::string p = ACTORSERVE_SOURCE_DIR "/tests/fixtures";
    return p;
}

const std::string &source() {
    static const std::string p = ACTORSERVE_SOURCE_DIR;
    return p;
}

} // namespace test_paths
