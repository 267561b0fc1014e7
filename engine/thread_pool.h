// A persistent pool of worker threads for data-parallel loops in the forward pass.
// Workers are created once; a parallel_for wakes them, the caller works too, and it returns
// when every chunk is done. Waits spin, then yield the core for a while, then block on the
// atomic (a futex), both for workers waiting for work and for the caller waiting for them.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

namespace actorserve {

class thread_pool {
public:
    // How long a waiter polls before it blocks (thread_pool.cpp says why 200 us for decoding).
    static constexpr std::chrono::microseconds kDefaultSpin{200};

    // n_threads counts the calling thread: 1 means no workers at all. spin: how long a worker
    // waiting for work, and the caller waiting for the workers, poll before they block.
    explicit thread_pool(int n_threads, std::chrono::microseconds spin = kDefaultSpin);
    ~thread_pool();
    thread_pool(const thread_pool &) = delete;
    thread_pool &operator=(const thread_pool &) = delete;

    int size() const { return n_threads_; }

    // Calls fn(begin, end) over [0, n) split into one contiguous range per thread.
    // note: not re-entrant; one parallel_for at a time per pool.
    void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)> &fn);
    // The same, also passing the index of the thread running the range (0 .. size() - 1; each
    // range runs on a different thread), for per-thread scratch.
    void parallel_for(int64_t n, const std::function<void(int64_t, int64_t, int)> &fn);
    // fn(begin, end) over [0, n) in chunks of `grain` that the threads take as they come free,
    // so a thread slowed by anything else on the machine does less of the work. fn may run
    // several times on a thread, in no particular order.
    void parallel_for_dynamic(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)> &fn);

    // Physical cores as the OS reports them (falls back to hardware_concurrency).
    static int default_threads();

private:
    void worker(int index);
    void run_share(int index);
    void run(int64_t n);

    int n_threads_;
    std::chrono::microseconds spin_;
    std::vector<std::thread> workers_;
    std::atomic<uint64_t> generation_{0};
    std::atomic<int> pending_{0};
    std::atomic<bool> stop_{false};
    // note: written by parallel_for before generation_ moves (release), read by workers after
    // they see it move (acquire).
    const std::function<void(int64_t, int64_t)> *fn_ = nullptr;
    const std::function<void(int64_t, int64_t, int)> *fn_indexed_ = nullptr; // when fn_ is null
    int64_t n_ = 0;
    int64_t grain_ = 0;               // > 0: chunks taken from next_ (parallel_for_dynamic)
    std::atomic<int64_t> next_{0};
};

} // namespace actorserve
