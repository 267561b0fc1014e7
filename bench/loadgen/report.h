// What a run tells a person: the table on stdout and the JSON report (--out).
#pragma once

#include <boost/json.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "bench/loadgen/runner.h"
#include "bench/loadgen/stats.h"

namespace loadgen {

struct report_point {
    run_result result;
    run_summary summary;
};

report_point make_point(run_result r);

// One run: counts, rates and a P50/P90/P99/max table of TTFT, ITL and end-to-end latency.
void print_run_table(std::FILE *out, const report_point &p);
// A sweep: one row per concurrency.
void print_sweep_table(std::FILE *out, const std::vector<report_point> &points);

boost::json::object summary_json(const run_summary &s);
boost::json::object record_json(const request_record &r);
// {"tool", "target", "config", "runs": [{mode, concurrency, rate, interrupted, timed_out,
//  summary: {...}, records: [...]}]}; `config` is whatever the caller wants kept with it.
boost::json::object report_json(const target &tgt, const boost::json::object &config,
                                const std::vector<report_point> &points);

bool write_text_file(const std::string &path, const std::string &text, std::string &err);

} // namespace loadgen
