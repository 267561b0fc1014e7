// Stop strings over streamed text: text is passed on as soon as it can no longer be the start
// of a stop string, and generation ends at the first complete one, which is never emitted.
//   stop_filter f({"\nUser:"});
//   f.push("Hi!\nUs") -> {"Hi!", false}   ("\nUs" held back: it may become "\nUser:")
//   f.push("er: x")   -> {"",    true}    (everything from the match on is dropped)
// note: when the text pushed is valid UTF-8 and so is every stop string, every emitted piece
// is valid UTF-8 too: a held-back suffix begins where a stop string begins, on a character.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace actorserve {

class stop_filter {
public:
    // Empty strings in `stops` are ignored; with no stops every push passes its text through.
    explicit stop_filter(std::vector<std::string> stops);

    struct result {
        std::string emit; // text that is now certain to precede any stop
        bool stopped;     // a stop string was completed; emit holds the text before it
    };

    // Appends text to what is held back. When several stop strings occur, the one starting
    // earliest decides what is emitted. After a stop, every push returns {"", true}.
    // cost: O(held + text) * total stop length per push; held < the longest stop string.
    result push(std::string_view text);

    // End of the stream: returns the held-back text (it completed no stop) and clears it.
    std::string flush();

    bool stopped() const { return stopped_; }

private:
    std::vector<std::string> stops_;
    std::string pending_; // held-back suffix: a proper prefix of some stop string
    bool stopped_ = false;
};

} // namespace actorserve
