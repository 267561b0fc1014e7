// A temporary folder for the tests that write files (caches, knowledge bases, documents).
//
//   test_support::temp_dir dir("exact_rt");   // $TMPDIR/actorserve_exact_rt_Ab12Cd, empty
//   c.save(dir.file("exact.cache"));
//   CHECK(dir.names() == std::vector<std::string>{"exact.cache"});
//
// note: the name is made by mkdtemp, so it is unique per process and per instance: two test
// binaries run at once (ctest -j) or two folders in one test never share one, and nothing left
// by an earlier run can be in it. The folder and everything in it is removed on destruction.
#pragma once

#include <doctest/doctest.h>

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

namespace test_support {

struct temp_dir {
    std::filesystem::path path;

    explicit temp_dir(const std::string &tag = "test") {
        std::string name = (std::filesystem::temp_directory_path() / ("actorserve_" + tag + "_XXXXXX")).string();
        REQUIRE(::mkdtemp(name.data()) != nullptr);
        path = name;
    }
    ~temp_dir() {
        std::error_code ec; // a destructor must not throw; a folder left in /tmp fails nothing
        std::filesystem::remove_all(path, ec);
    }
    temp_dir(const temp_dir &) = delete;
    temp_dir &operator=(const temp_dir &) = delete;

    // The path of `name` inside the folder.
    std::string file(const std::string &name) const { return (path / name).string(); }

    // `content` written to `name` inside the folder; its path.
    std::string write(const std::string &name, const std::string &content) const {
        const auto p = path / name;
        std::ofstream(p, std::ios::binary) << content;
        return p.string();
    }

    // The names of the folder's entries, sorted.
    std::vector<std::string> names() const {
        std::vector<std::string> out;
        for (auto &e : std::filesystem::directory_iterator(path)) out.push_back(e.path().filename().string());
        std::sort(out.begin(), out.end());
        return out;
    }
};

} // namespace test_support
