#include "net/random_id.h"

#include <sys/random.h>

#include <cerrno>
#include <system_error>

namespace actorserve {

std::string random_id(std::string_view prefix) {
    unsigned char bits[16];
    size_t got = 0;
    while (got < sizeof bits) {
        const ssize_t n = ::getrandom(bits + got, sizeof bits - got, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw std::system_error(errno, std::generic_category(), "getrandom (ids and resume tokens)");
        got += static_cast<size_t>(n);
    }
    static constexpr char hex[] = "0123456789abcdef";
    std::string id(prefix);
    for (unsigned char b : bits) {
        id += hex[b >> 4];
        id += hex[b & 15];
    }
    return id;
}

bool same_secret(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    unsigned char diff = 0;
    for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
    return diff == 0;
}

} // namespace actorserve
