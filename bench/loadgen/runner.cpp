#include "bench/loadgen/runner.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <random>

#include <unistd.h>

#include "bench/loadgen/interrupt.h"

namespace loadgen {

namespace asio = boost::asio;
using std::chrono::duration;
using std::chrono::duration_cast;
using std::chrono::milliseconds;

namespace {

constexpr milliseconds kTick{100};

class runner {
public:
    explicit runner(const run_options &opt)
        : opt_(opt), wl_(opt.prompts, opt.repeat_fraction, opt.seed), tick_(ioc_), arrival_(ioc_),
          arrival_rng_(opt.seed ^ 0x9e3779b97f4a7c15ull), tty_(isatty(STDERR_FILENO) != 0) {
        res_.mode = opt.load.rate > 0 ? "open" : "closed";
        res_.concurrency = opt.load.rate > 0 ? 0 : opt.load.concurrency;
        res_.rate = opt.load.rate;
    }

    run_result run() {
        if (opt_.prompts.empty()) return fail("no prompts");
        if (opt_.load.requests == 0 && opt_.load.duration_s <= 0) return fail("neither a request count nor a duration");
        if (opt_.load.rate <= 0 && opt_.load.concurrency < 1) return fail("concurrency must be >= 1");
        boost::system::error_code ec;
        tcp::resolver resolver(ioc_);
        endpoints_ = resolver.resolve(opt_.tgt.host, opt_.tgt.port, ec);
        if (ec) return fail("cannot resolve " + opt_.tgt.host + ":" + opt_.tgt.port + ": " + ec.message());

        start_ = last_end_ = last_progress_ = clock::now();
        do_tick();
        if (open_loop()) {
            next_arrival_ = start_;
            on_arrival();
        } else {
            for (int u = 0; u < opt_.load.concurrency && can_issue(); ++u) issue(u);
        }
        check_finished();
        // note: every handler is bounded: requests by their deadline, the run by timeout_s.
        ioc_.run();
        if (opt_.progress) {
            print_progress();
            std::fputc('\n', stderr);
        }
        res_.wall_s = res_.records.empty() ? 0 : seconds(start_, last_end_);
        return std::move(res_);
    }

private:
    static double seconds(clock::time_point a, clock::time_point b) { return duration<double>(b - a).count(); }
    bool open_loop() const { return opt_.load.rate > 0; }
    double elapsed() const { return seconds(start_, clock::now()); }

    run_result fail(std::string why) {
        res_.error = std::move(why);
        return std::move(res_);
    }

    // More requests may start: within the count and the time, not interrupted.
    bool can_issue() {
        if (!issuing_) return false;
        if (opt_.load.requests > 0 && budget_used_ >= opt_.load.requests) issuing_ = false;
        if (opt_.load.duration_s > 0 && elapsed() >= opt_.load.duration_s) issuing_ = false;
        return issuing_;
    }

    void issue(int user) {
        ++budget_used_;
        const workload_item item = wl_.next();
        request_record rec;
        rec.id = next_id_++;
        rec.prompt_index = item.prompt_index;
        rec.repeated = item.repeated;
        rec.paraphrased = item.paraphrased;
        const auto timeout = milliseconds(static_cast<int64_t>(opt_.load.request_timeout_s * 1000));
        const uint64_t id = rec.id;
        auto op = make_request(ioc_, opt_.tgt, endpoints_, item, opt_.params, std::move(rec), start_, timeout, &live_,
                               [this, user](request_record r) { on_done(user, std::move(r)); });
        inflight_.emplace(id, op);
        op->start();
    }

    void on_done(int user, request_record rec) {
        inflight_.erase(rec.id);
        last_end_ = clock::now();
        res_.records.push_back(std::move(rec));
        if (user >= 0 && can_issue()) {
            // posted, not called: a server that fails at once must not recurse us into the ground
            ++pending_users_;
            if (opt_.load.think_ms > 0) {
                auto t = std::make_shared<asio::steady_timer>(ioc_, milliseconds(static_cast<int64_t>(opt_.load.think_ms)));
                t->async_wait([this, t, user](boost::system::error_code) { resume_user(user); });
            } else {
                asio::post(ioc_, [this, user] { resume_user(user); });
            }
        }
        check_finished();
    }

    void resume_user(int user) {
        --pending_users_;
        if (can_issue()) issue(user);
        check_finished();
    }

    void on_arrival() {
        if (!can_issue()) return check_finished();
        if (static_cast<int>(inflight_.size()) >= opt_.load.max_inflight) {
            ++budget_used_;
            ++res_.dropped_by_client;
        } else {
            issue(-1);
        }
        // exponential gap: -ln(1 - u) / rate, u uniform in [0, 1)
        const double u = static_cast<double>(arrival_rng_() >> 11) * 0x1.0p-53;
        const double gap_s = -std::log1p(-u) / opt_.load.rate;
        next_arrival_ += duration_cast<clock::duration>(duration<double>(gap_s));
        arrival_.expires_at(next_arrival_);
        arrival_.async_wait([this](boost::system::error_code ec) {
            if (!ec) on_arrival();
        });
    }

    void do_tick() {
        tick_.expires_after(kTick);
        tick_.async_wait([this](boost::system::error_code ec) {
            if (ec) return;
            on_tick();
            if (!done_) do_tick();
        });
    }

    void on_tick() {
        const int sigints = sigint_count() - sigints_at_start_;
        if (sigints >= 1 && !res_.interrupted) {
            res_.interrupted = true;
            issuing_ = false;
            arrival_.cancel();
            drain_deadline_ = clock::now() + duration_cast<clock::duration>(duration<double>(opt_.load.drain_s));
            std::fprintf(stderr, "\nactorserve-bench: interrupted; waiting up to %.0f s for %zu requests in flight "
                                 "(ctrl-C again to abandon them)\n", opt_.load.drain_s, inflight_.size());
        }
        if (res_.interrupted && (sigints >= 2 || clock::now() >= drain_deadline_)) abort_all();
        if (elapsed() >= opt_.load.timeout_s && !done_) {
            res_.timed_out = true;
            issuing_ = false;
            arrival_.cancel();
            abort_all();
        }
        can_issue(); // the duration may have run out
        if (opt_.progress && clock::now() - last_progress_ >= std::chrono::seconds(1)) print_progress();
        check_finished();
    }

    void abort_all() {
        std::vector<std::shared_ptr<request_op>> ops;
        for (auto &[id, op] : inflight_) ops.push_back(op);
        for (auto &op : ops) op->abort("aborted"); // each ends through on_done, which erases it
    }

    void check_finished() {
        if (done_) return;
        const bool more = open_loop() ? can_issue() : (can_issue() || pending_users_ > 0);
        if (more || !inflight_.empty()) return;
        if (pending_users_ > 0) return; // a think timer still runs; it finds nothing to do
        done_ = true;
        tick_.cancel();
        arrival_.cancel();
        ioc_.stop();
    }

    void print_progress() {
        const auto now = clock::now();
        const double dt = seconds(last_progress_, now);
        const double tok_s = dt > 0 ? static_cast<double>(live_.token_events - tokens_at_progress_) / dt : 0;
        last_progress_ = now;
        tokens_at_progress_ = live_.token_events;
        uint64_t ok = 0, ovl = 0;
        for (const auto &r : res_.records) {
            if (r.ok()) ++ok;
            else if (r.outcome == kOverloaded) ++ovl;
        }
        const uint64_t done = res_.records.size();
        std::fprintf(stderr, "%s[%6.1fs] done %llu  ok %llu  errors %llu  overloaded %llu  inflight %zu  tok/s %.1f%s",
                     tty_ ? "\r" : "", elapsed(), static_cast<unsigned long long>(done),
                     static_cast<unsigned long long>(ok), static_cast<unsigned long long>(done - ok - ovl),
                     static_cast<unsigned long long>(ovl), inflight_.size(), tok_s, tty_ ? "   " : "\n");
        std::fflush(stderr);
    }

    asio::io_context ioc_; // first: destroyed last, after everything holding its handlers
    run_options opt_;
    workload wl_;
    tcp::resolver::results_type endpoints_;
    asio::steady_timer tick_;
    asio::steady_timer arrival_;
    std::mt19937_64 arrival_rng_;
    clock::time_point start_, last_end_, last_progress_, next_arrival_, drain_deadline_;
    std::map<uint64_t, std::shared_ptr<request_op>> inflight_;
    live_counters live_;
    uint64_t tokens_at_progress_ = 0;
    uint64_t next_id_ = 0;
    uint64_t budget_used_ = 0;
    int pending_users_ = 0;
    int sigints_at_start_ = sigint_count();
    bool issuing_ = true;
    bool done_ = false;
    bool tty_;
    run_result res_;
};

} // namespace

run_result run_load(const run_options &opt) {
    runner r(opt);
    return r.run();
}

} // namespace loadgen
