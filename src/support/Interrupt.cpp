#include "support/Interrupt.h"

#include <atomic>
#include <csignal>
#include <mutex>

namespace hone::support {

namespace {

std::atomic<int> received{0}; // lock-free: safe to write from a signal handler
static_assert(std::atomic<int>::is_always_lock_free);

extern "C" void onSignal(int signal) {
  int expected = 0;
  if (!received.compare_exchange_strong(expected, signal)) {
    // The second one: the default action (terminate), now.
    std::signal(signal, SIG_DFL);
    std::raise(signal);
  }
}

} // namespace

void installInterruptHandlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa {};
    sa.sa_handler = onSignal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART; // reads and waits resume; the loops poll the flag
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
  });
}

bool interrupted() { return received.load() != 0; }

int interruptSignal() { return received.load(); }

void clearInterrupt() { received.store(0); }

} // namespace hone::support
