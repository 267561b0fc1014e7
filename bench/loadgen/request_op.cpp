#include "bench/loadgen/request_op.h"

#include "bench/loadgen/openai_request.h"
#include "bench/loadgen/ws_request.h"

namespace loadgen {

namespace {
double ms_between(clock::time_point a, clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
}
} // namespace

request_op::request_op(boost::asio::io_context &ioc, request_record rec, clock::time_point run_start,
                       std::chrono::milliseconds timeout, live_counters *live, done_fn done)
    : rec_(std::move(rec)), deadline_(ioc), run_start_(run_start), issued_(clock::now()), timeout_(timeout),
      live_(live), done_(std::move(done)) {
    rec_.start_ms = ms_between(run_start_, issued_);
}

void request_op::arm_deadline() {
    deadline_.expires_after(timeout_);
    deadline_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
        if (!ec) self->abort("timeout");
    });
}

void request_op::abort(const std::string &reason) {
    if (finished_) return;
    finish("error:" + reason);
}

void request_op::on_connected() { rec_.connect_ms = since_issue_ms(); }

void request_op::on_token() {
    const auto now = clock::now();
    if (rec_.token_events == 0) rec_.ttft_ms = ms_between(issued_, now);
    else rec_.itl_ms.push_back(ms_between(last_token_, now));
    last_token_ = now;
    ++rec_.token_events;
    if (live_) ++live_->token_events;
}

double request_op::since_issue_ms() const { return ms_between(issued_, clock::now()); }

void request_op::finish(const std::string &outcome) {
    if (finished_) return;
    finished_ = true;
    rec_.e2e_ms = since_issue_ms();
    rec_.outcome = outcome;
    if (rec_.output_tokens <= 0) rec_.output_tokens = rec_.token_events;
    deadline_.cancel();
    close_transport();
    auto done = std::move(done_);
    done(std::move(rec_));
}

std::shared_ptr<request_op> make_request(boost::asio::io_context &ioc, const target &tgt,
                                         const tcp::resolver::results_type &endpoints, const workload_item &item,
                                         const request_params &params, request_record rec, clock::time_point run_start,
                                         std::chrono::milliseconds timeout, live_counters *live,
                                         request_op::done_fn done) {
    if (tgt.api == api_kind::actorserve_ws)
        return std::make_shared<ws_request>(ioc, tgt, endpoints, item, params, std::move(rec), run_start, timeout, live,
                                            std::move(done));
    return std::make_shared<openai_request>(ioc, tgt, endpoints, item, params, std::move(rec), run_start, timeout, live,
                                            std::move(done));
}

} // namespace loadgen
