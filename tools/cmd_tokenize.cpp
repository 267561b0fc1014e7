// actorserve tokenize: print the token ids of a text.
#include <string>
#include <vector>

#include "tools/cli_common.h"
#include "tools/commands.h"

namespace actorserve::cli {

int cmd_tokenize(const tokenize_options &o) {
    std::string err;
    auto m = load_model(o.model, err);
    if (!m) return fail(err);
    const tokenizer &tok = *m->tok;
    std::vector<int32_t> ids;
    if (tok.add_bos() && tok.bos() >= 0) ids.push_back(tok.bos());
    const std::vector<int32_t> body = tok.encode(o.text, /*parse_special=*/!o.no_special);
    ids.insert(ids.end(), body.begin(), body.end());
    std::string out;
    for (size_t i = 0; i < ids.size(); ++i) {
        if (o.pieces) {
            out += std::to_string(ids[i]) + "\t" + printable(tok.token_bytes(ids[i], /*render_special=*/true)) + "\n";
        } else {
            // note: two appends, not (i ? " " : "") + ..., which trips a false -Wrestrict in GCC 12.
            if (i) out += ' ';
            out += std::to_string(ids[i]);
        }
    }
    if (!o.pieces) out += "\n";
    write_out(out);
    return 0;
}

} // namespace actorserve::cli
