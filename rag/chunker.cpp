// Chunking: sections (Markdown headings) first, then, inside a section, chunks that end at the
// strongest boundary that still gives a reasonably full chunk. See rag/chunker.h.
//
// How a chunk's end is found: the candidate ends are the ends of words (the start of each
// whitespace run), each with a strength: paragraph (a blank line), line break, sentence end
// (".", "?" or "!" before a space), space. The farthest candidate whose text fits max_tokens is
// found by a first guess (as many words as the previous chunk took), then galloping and bisecting
// over the candidates, so each counter call reads at most about twice a chunk's text. Measured:
// about 14 counter calls and 12 times its own bytes counted per chunk (200 word pieces, 40 of
// overlap), some 30 s of WordPiece for an 8 MiB document, against about 35 minutes to embed it.
// Then the end moves back to the strongest boundary that keeps at least a third of that text (in
// bytes); a chunk that would be shorter stays at the weaker boundary. (A third: a chunk ends at a
// paragraph whenever one falls in the last two thirds, so chunks rarely mix paragraphs, and none
// is cut down to a sliver just to end at one.)
//
// note: heading lines are not chunk text; they become the heading path of the chunks below them
// (and reach the retrievers through indexed_text()). Coverage holds for all other text: every
// non-whitespace byte outside heading lines is in at least one chunk.
// note: the search assumes the counter grows (or stays) as text grows at a word end, which holds
// for word and WordPiece counts; every chunk kept has been counted and fits, whatever the counter.
#include "rag/chunker.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <utility>

namespace actorserve {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

enum strength : uint8_t { space_break = 0, sentence_break, line_break, paragraph_break };

// A section's body: [begin, end) of the document, with its heading path.
struct section {
    size_t begin = 0, end = 0;
    std::string heading;
};

// "#... title" -> level (1-6) and title; 0 when the line is no heading.
int heading_level(std::string_view line, std::string &title) {
    size_t n = 0;
    while (n < line.size() && line[n] == '#') ++n;
    if (n == 0 || n > 6 || n == line.size() || (line[n] != ' ' && line[n] != '\t')) return 0;
    std::string_view t = line.substr(n);
    while (!t.empty() && is_space(t.front())) t.remove_prefix(1);
    while (!t.empty() && is_space(t.back())) t.remove_suffix(1);
    // A closing run of '#' ("## Title ##") is not part of the title.
    size_t close = t.size();
    while (close > 0 && t[close - 1] == '#') --close;
    if (close < t.size() && (close == 0 || is_space(t[close - 1]))) {
        t = t.substr(0, close);
        while (!t.empty() && is_space(t.back())) t.remove_suffix(1);
    }
    title.assign(t);
    return static_cast<int>(n);
}

std::vector<section> split_sections(std::string_view text, doc_format format) {
    if (format == doc_format::text) return {section{0, text.size(), ""}};
    std::vector<section> out;
    std::vector<std::pair<int, std::string>> path;  // (level, title) of the open headings
    const auto path_string = [&] {
        std::string s;
        for (size_t i = 0; i < path.size(); ++i) {
            if (i) s += " > ";
            s += path[i].second;
        }
        return s;
    };
    section cur{0, 0, ""};
    bool in_fence = false;  // inside ``` or ~~~: "# comment" lines are code, not headings
    for (size_t pos = 0; pos < text.size();) {
        size_t eol = text.find('\n', pos);
        const size_t next = eol == std::string_view::npos ? text.size() : eol + 1;
        const std::string_view line = text.substr(pos, next - pos);
        if (line.starts_with("```") || line.starts_with("~~~")) in_fence = !in_fence;
        std::string title;
        const int level = in_fence ? 0 : heading_level(line, title);
        if (level > 0) {
            cur.end = pos;
            out.push_back(std::move(cur));
            while (!path.empty() && path.back().first >= level) path.pop_back();
            path.emplace_back(level, std::move(title));
            cur = section{next, next, path_string()};
        }
        pos = next;
    }
    cur.end = text.size();
    out.push_back(std::move(cur));
    return out;
}

// Below this many bytes, whether a chunk can reach the end of the next word is asked directly.
constexpr size_t kDirectBytes = 4096;

class section_chunker {
public:
    section_chunker(std::string_view text, const section &sec, const chunk_settings &s, const token_counter &count,
                    std::vector<text_chunk> &out)
        : text_(text), sec_(sec), settings_(s), count_(count), out_(out) {}

    void run() {
        size_t b = sec_.begin, e = sec_.end;
        while (b < e && is_space(text_[b])) ++b;
        while (e > b && is_space(text_[e - 1])) --e;
        if (b == e) return;
        find_boundaries(b, e);

        size_t start = b;   // where the next chunk starts
        size_t floor = b;   // the next chunk must end after this (the previous chunk's end)
        while (floor < e) {
            // The first candidate end after floor; candidates are sorted, the last is e.
            const size_t i0 = static_cast<size_t>(
                std::upper_bound(ends_.begin(), ends_.end(), floor) - ends_.begin());
            assert(i0 < ends_.size());
            // Does the text up to the end of the next word fit? Asked directly when that is short;
            // otherwise by galloping, so that a word of megabytes is not counted whole per chunk.
            const size_t w_end = ends_[i0];
            size_t reach = 0;  // how far [start, ...) fits, up to w_end; 0 = not known
            if (w_end - start > kDirectBytes) reach = farthest_prefix(start, w_end);
            else if (fits(start, w_end)) reach = w_end;
            if (reach != w_end) {
                if (start < floor) {
                    // The overlap leaves no room for the next word: start afresh after floor.
                    start = resume_after(floor);
                    continue;
                }
                // One word over the limit (or the rest of a word already cut).
                const size_t cut = reach ? reach : farthest_prefix(start, w_end);
                emit(start, cut);
                start = floor = cut;
                continue;
            }
            const size_t f = farthest_fitting(start, i0);
            const size_t j = f + 1 == ends_.size() ? f : strongest_near(start, i0, f);
            const size_t end = ends_[j];
            emit(start, end);
            floor = end;
            if (end == e) break;
            start = overlap_start(start, end);
            if (start == end) start = resume_after(end);
        }
    }

private:
    // Candidate ends: the start of every whitespace run inside [b, e), then e.
    void find_boundaries(size_t b, size_t e) {
        word_starts_.push_back(b);
        for (size_t i = b; i < e;) {
            if (!is_space(text_[i])) {
                ++i;
                continue;
            }
            size_t j = i;
            int newlines = 0;
            while (j < e && is_space(text_[j])) newlines += text_[j++] == '\n';
            const char before = text_[i - 1];
            strength s = space_break;
            if (newlines >= 2) s = paragraph_break;
            else if (newlines == 1) s = line_break;
            else if (before == '.' || before == '?' || before == '!') s = sentence_break;
            ends_.push_back(i);
            strength_.push_back(s);
            word_starts_.push_back(j);
            i = j;
        }
        ends_.push_back(e);
        strength_.push_back(paragraph_break);
    }

    // The first word start after a chunk's end (end itself when the end is inside a word).
    size_t resume_after(size_t end) const {
        auto it = std::lower_bound(word_starts_.begin(), word_starts_.end(), end);
        if (it != word_starts_.end() && *it == end) return end;
        size_t p = end;
        while (p < text_.size() && is_space(text_[p])) ++p;
        return p;
    }

    // The counter, remembering its last few answers (a chunk is usually counted while searched).
    size_t tokens(size_t b, size_t e) {
        for (const memo &m : memo_)
            if (m.begin == b && m.end == e) return m.tokens;
        memo &m = memo_[memo_next_++ % memo_.size()];
        m = memo{b, e, count_(text_.substr(b, e - b))};
        return m.tokens;
    }
    bool fits(size_t b, size_t e) { return tokens(b, e) <= settings_.max_tokens; }

    // The largest i in [i0, size) with text [start, ends_[i]) fitting, given that i0 fits. The
    // first probe is as many candidates ahead as the previous chunk took (prose is regular, so it
    // is usually a few words off); then gallop (1, 2, 4 ... candidates) away from it and bisect.
    size_t farthest_fitting(size_t start, size_t i0) {
        size_t lo = i0, hi = ends_.size();  // lo fits; hi is the first known not to (or the end)
        const size_t guess = std::min(i0 + span_, hi - 1);
        bool upwards = true;
        if (guess > lo) {
            if (fits(start, ends_[guess])) {
                lo = guess;
            } else {
                hi = guess;
                upwards = false;
            }
        }
        for (size_t step = 1; upwards && lo + 1 < hi; step *= 2) {
            const size_t i = std::min(lo + step, hi - 1);
            if (!fits(start, ends_[i])) {
                hi = i;
                break;
            }
            lo = i;
        }
        for (size_t step = 1; !upwards && hi - lo > step; step *= 2) {
            const size_t i = hi - step;
            if (fits(start, ends_[i])) {
                lo = i;
                break;
            }
            hi = i;
        }
        while (lo + 1 < hi) {
            const size_t mid = lo + (hi - lo) / 2;
            if (fits(start, ends_[mid])) lo = mid;
            else hi = mid;
        }
        span_ = std::max<size_t>(lo - i0, 1);
        return lo;
    }

    // Among candidates [i0, f], the farthest of the strongest kind that keeps at least a third of
    // the bytes of [start, ends_[f]).
    size_t strongest_near(size_t start, size_t i0, size_t f) const {
        const size_t min_end = start + (ends_[f] - start) / 3;
        for (int s = paragraph_break; s > space_break; --s) {
            for (size_t j = f + 1; j-- > i0;) {
                if (ends_[j] < min_end) break;
                if (strength_[j] >= s) return j;
            }
        }
        return f;
    }

    // The farthest character boundary p in (start, w_end] with [start, p) fitting, at least one
    // character (even if the counter says one character is over the limit: progress first).
    // Gallop then bisect over bytes: O(log) counter calls on at most twice the text that fits.
    size_t farthest_prefix(size_t start, size_t w_end) {
        const auto is_start = [&](size_t p) { return p == w_end || !is_continuation(text_[p]); };
        const auto next_char = [&](size_t p) {
            do ++p;
            while (!is_start(p));
            return p;
        };
        size_t lo = next_char(start);  // fits (or is forced)
        if (!fits(start, lo) || lo == w_end) return lo;
        size_t hi = w_end + 1;  // the positions in (lo, hi) are not yet tried
        const auto probe = [&](size_t p) {  // a character start in (lo, hi) at or before p, or hi
            while (p > lo && !is_start(p)) --p;
            if (p <= lo) p = next_char(lo);
            return std::min(p, hi);
        };
        for (size_t step = 1;; step *= 2) {
            const size_t p = probe(std::min(lo + step, w_end));
            if (!fits(start, p)) {
                hi = p;
                break;
            }
            lo = p;
            if (lo == w_end) return lo;
        }
        for (;;) {
            const size_t p = probe(lo + (hi - lo) / 2);
            if (p >= hi) break;
            if (fits(start, p)) lo = p;
            else hi = p;
        }
        return lo;
    }

    // The earliest word start in (start, end) from which [ws, end) has at most overlap_tokens;
    // end when there is none (no overlap).
    size_t overlap_start(size_t start, size_t end) {
        if (settings_.overlap_tokens == 0) return end;
        const auto first = std::upper_bound(word_starts_.begin(), word_starts_.end(), start);
        const auto last = std::lower_bound(word_starts_.begin(), word_starts_.end(), end);
        if (first >= last) return end;
        const auto ok = [&](size_t i) { return tokens(word_starts_[i], end) <= settings_.overlap_tokens; };
        // Word indexes lo..hi (lo >= 1: word 0 starts the section, at or before start); ok() holds
        // from some index on. First probe: as many words back as the previous overlap took; then
        // gallop away from it and bisect. bad: known not ok (or before lo); good: known ok (or past hi).
        const size_t lo = static_cast<size_t>(first - word_starts_.begin());
        const size_t hi = static_cast<size_t>(last - word_starts_.begin()) - 1;
        size_t bad = lo - 1, good = hi + 1;
        const size_t guess = hi - std::min(overlap_span_, hi - lo);
        if (ok(guess)) {
            good = guess;
            for (size_t step = 1; good - bad > 1; step *= 2) {
                const size_t i = good - std::min(step, good - bad - 1);
                if (!ok(i)) {
                    bad = i;
                    break;
                }
                good = i;
            }
        } else {
            bad = guess;
            for (size_t step = 1; good - bad > 1; step *= 2) {
                const size_t i = bad + std::min(step, good - bad - 1);
                if (ok(i)) {
                    good = i;
                    break;
                }
                bad = i;
            }
        }
        while (good - bad > 1) {
            const size_t mid = bad + (good - bad) / 2;
            if (ok(mid)) good = mid;
            else bad = mid;
        }
        if (good == hi + 1) return end;  // not even the last word fits in the overlap
        overlap_span_ = hi - good;
        return word_starts_[good];
    }

    void emit(size_t b, size_t e) {
        text_chunk c;
        c.text.assign(text_.substr(b, e - b));
        c.heading = sec_.heading;
        c.offset = b;
        c.tokens = tokens(b, e);
        out_.push_back(std::move(c));
    }

    std::string_view text_;
    const section &sec_;
    const chunk_settings &settings_;
    const token_counter &count_;
    std::vector<text_chunk> &out_;
    std::vector<size_t> ends_;          // candidate chunk ends, increasing; the last is the body's end
    std::vector<strength> strength_;    // (ends_.size(),)
    std::vector<size_t> word_starts_;   // increasing
    struct memo {
        size_t begin = 1, end = 0, tokens = 0;  // (1, 0): a range never asked
    };
    std::array<memo, 4> memo_{};
    size_t memo_next_ = 0;
    size_t span_ = 1;          // candidates the previous chunk spanned: the first guess for the next
    size_t overlap_span_ = 0;  // words (less one) the previous overlap took: likewise
};

} // namespace

size_t count_words(std::string_view text) {
    size_t n = 0;
    bool in_word = false;
    for (char c : text) {
        const bool sp = is_space(c);
        if (!sp && !in_word) ++n;
        in_word = !sp;
    }
    return n;
}

std::vector<text_chunk> chunk_document(std::string_view text, doc_format format, const chunk_settings &settings,
                                       const token_counter &count) {
    std::vector<text_chunk> out;
    for (const section &sec : split_sections(text, format)) section_chunker(text, sec, settings, count, out).run();
    return out;
}

} // namespace actorserve
