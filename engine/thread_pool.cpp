#include "engine/thread_pool.h"

#include <chrono>
#include <fstream>
#include <immintrin.h>
#include <set>
#include <string>

namespace actorserve {

namespace {
// Polls before blocking. A decode step issues a few hundred short loops with serial work
// between them (norms, RoPE, the KV writes: tens of microseconds at 16 sequences), so a futex
// sleep and wake per loop would cost more than the loop: with the earlier spin of 1000 pauses
// (11 ns each on the Xeon measured, so 11 us) workers went to sleep between the loops of a
// step, and sleeping and waking were 14% of a 16-sequence decode step (perf, 2-vCPU VM). So a
// waiter spins for up to thread_pool::kDefaultSpin, long enough to span the serial work, then
// blocks. (The embedder asks for longer: bert.cpp.)
// note: the spin does not yield: tried with a compiler running at nice 10, sched_yield handed it
// the core for whole time slices (one sequence decoded at 22 tokens/s). A spin that long does
// hold a core that another thread of this process could use; the cap bounds that.
constexpr int kPausesPerClockRead = 32;

// One waiting step; `spins` counts the calls so far. Returns false when it is time to block.
bool wait_step(int spins, std::chrono::steady_clock::time_point &since, std::chrono::microseconds spin_for) {
    if (spins == 0) since = std::chrono::steady_clock::now();
    else if (spins % kPausesPerClockRead == 0 && std::chrono::steady_clock::now() - since >= spin_for) return false;
    _mm_pause();
    return true;
}
} // namespace

thread_pool::thread_pool(int n_threads, std::chrono::microseconds spin)
    : n_threads_(n_threads < 1 ? 1 : n_threads), spin_(spin) {
    for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker(i); });
}

thread_pool::~thread_pool() {
    stop_.store(true);
    generation_.fetch_add(1, std::memory_order_release);
    generation_.notify_all();
    for (auto &t : workers_) t.join();
}

void thread_pool::run_share(int index) {
    if (grain_ > 0) {
        for (;;) {
            const int64_t b = next_.fetch_add(grain_, std::memory_order_relaxed);
            if (b >= n_) return;
            (*fn_)(b, b + grain_ < n_ ? b + grain_ : n_);
        }
    }
    const int64_t chunk = (n_ + n_threads_ - 1) / n_threads_;
    const int64_t begin = index * chunk;
    const int64_t end = begin + chunk < n_ ? begin + chunk : n_;
    if (begin < end) {
        if (fn_) (*fn_)(begin, end);
        else (*fn_indexed_)(begin, end, index);
    }
}

void thread_pool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)> &fn) {
    if (n <= 0) return;
    if (n_threads_ == 1 || n == 1) {
        fn(0, n);
        return;
    }
    fn_ = &fn;
    fn_indexed_ = nullptr;
    grain_ = 0;
    run(n);
}

void thread_pool::parallel_for_dynamic(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)> &fn) {
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    if (n_threads_ == 1 || n <= grain) {
        fn(0, n);
        return;
    }
    fn_ = &fn;
    fn_indexed_ = nullptr;
    grain_ = grain;
    next_.store(0, std::memory_order_relaxed); // published with the rest by run()
    run(n);
}

void thread_pool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t, int)> &fn) {
    if (n <= 0) return;
    if (n_threads_ == 1 || n == 1) {
        fn(0, n, 0);
        return;
    }
    fn_ = nullptr;
    fn_indexed_ = &fn;
    grain_ = 0;
    run(n);
}

void thread_pool::run(int64_t n) {
    n_ = n;
    pending_.store(n_threads_ - 1, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release); // publishes fn_, n_, pending_
    generation_.notify_all();
    run_share(0);
    std::chrono::steady_clock::time_point since;
    for (int spins = 0;; ++spins) {
        const int p = pending_.load(std::memory_order_acquire);
        if (p == 0) break;
        if (!wait_step(spins, since, spin_)) pending_.wait(p, std::memory_order_acquire);
    }
}

void thread_pool::worker(int index) {
    uint64_t seen = 0;
    for (;;) {
        std::chrono::steady_clock::time_point since;
        for (int spins = 0; generation_.load(std::memory_order_acquire) == seen; ++spins)
            if (!wait_step(spins, since, spin_)) generation_.wait(seen, std::memory_order_acquire);
        seen = generation_.load(std::memory_order_acquire);
        if (stop_.load()) return;
        run_share(index);
        if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
    }
}

int thread_pool::default_threads() {
    // Count distinct (physical id, core id) pairs; SMT siblings share one.
    std::ifstream in("/proc/cpuinfo");
    std::set<std::pair<std::string, std::string>> cores;
    std::string line, phys = "0";
    while (std::getline(in, line)) {
        auto value = [&] { auto p = line.find(':'); return p == std::string::npos ? std::string() : line.substr(p + 2); };
        if (line.rfind("physical id", 0) == 0) phys = value();
        else if (line.rfind("core id", 0) == 0) cores.emplace(phys, value());
    }
    if (!cores.empty()) return static_cast<int>(cores.size());
    const unsigned hc = std::thread::hardware_concurrency();
    return hc ? static_cast<int>(hc) : 1;
}

} // namespace actorserve
