// One request in flight, whatever the protocol: the timing every client shares (issue, first
// token, gaps, end), a deadline, and exactly one completion callback.
//
// Everything runs on the run's single io_context thread: no locks. The op keeps itself alive
// (shared_from_this in every pending handler) until its last handler has run.
#pragma once

#include <boost/asio.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "bench/loadgen/record.h"
#include "bench/loadgen/target.h"
#include "bench/loadgen/workload.h"

namespace loadgen {

using clock = std::chrono::steady_clock;
using tcp = boost::asio::ip::tcp;

struct request_params {
    int max_tokens = 64;
    double temperature = 0;
};

// Counters shown by the progress line while requests run.
struct live_counters {
    uint64_t token_events = 0;
};

class request_op : public std::enable_shared_from_this<request_op> {
public:
    using done_fn = std::function<void(request_record)>;

    virtual ~request_op() = default;
    virtual void start() = 0;
    // Ends the request now as "error:<reason>" (the run's hard timeout, a second ctrl-C).
    void abort(const std::string &reason);

protected:
    request_op(boost::asio::io_context &ioc, request_record rec, clock::time_point run_start,
               std::chrono::milliseconds timeout, live_counters *live, done_fn done);

    void arm_deadline();                // call first in start()
    void on_connected();                // connection (and upgrade) ready
    void on_token();                    // a token event / non-empty content delta arrived
    void finish(const std::string &outcome); // idempotent: the first call wins
    bool finished() const { return finished_; }
    double since_issue_ms() const;
    virtual void close_transport() = 0; // abort pending I/O; handlers then see an error

    request_record rec_;

private:
    boost::asio::steady_timer deadline_;
    clock::time_point run_start_;
    clock::time_point issued_;
    clock::time_point last_token_;
    std::chrono::milliseconds timeout_;
    live_counters *live_;
    done_fn done_;
    bool finished_ = false;
};

// Builds the op for target.api; start() issues it.
std::shared_ptr<request_op> make_request(boost::asio::io_context &ioc, const target &tgt,
                                         const tcp::resolver::results_type &endpoints, const workload_item &item,
                                         const request_params &params, request_record rec, clock::time_point run_start,
                                         std::chrono::milliseconds timeout, live_counters *live,
                                         request_op::done_fn done);

} // namespace loadgen
