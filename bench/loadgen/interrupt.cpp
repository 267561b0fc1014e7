#include "bench/loadgen/interrupt.h"

#include <atomic>
#include <csignal>

namespace loadgen {

namespace {
std::atomic<int> g_sigints{0}; // lock-free: safe to touch from a signal handler
static_assert(std::atomic<int>::is_always_lock_free);

extern "C" void on_sigint(int) { g_sigints.fetch_add(1, std::memory_order_relaxed); }
} // namespace

void install_sigint_handler() {
    struct sigaction sa {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
}

int sigint_count() { return g_sigints.load(std::memory_order_relaxed); }
void raise_interrupt() { g_sigints.fetch_add(1, std::memory_order_relaxed); }
void reset_interrupts() { g_sigints.store(0, std::memory_order_relaxed); }

} // namespace loadgen
