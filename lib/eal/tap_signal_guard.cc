// tap_signal_guard.cc: see tap_signal_guard.h.
#include "lib/eal/tap_signal_guard.h"

namespace ofi_dpdk::eal {
namespace {

// No queue gets O_ASYNC while a guard holds the signals, so nothing raises
// them: the handler is there to be seen, not to run.
void held_signal(int) {}

}  // namespace

TapSignalGuard::TapSignalGuard() {
  hold(SIGIO, /*ignored_is_free=*/true);
  // SIGRTMAX itself is left out by net_tap's search.
  for (int signo = SIGRTMIN + 1; signo < SIGRTMAX; ++signo) hold(signo, false);
}

void TapSignalGuard::hold(int signo, bool ignored_is_free) {
  struct sigaction now {};
  if (sigaction(signo, nullptr, &now) != 0) return;
  if (now.sa_handler != SIG_DFL && !(ignored_is_free && now.sa_handler == SIG_IGN)) return;
  struct sigaction holder {};
  holder.sa_handler = held_signal;
  holder.sa_flags = SA_RESTART;
  sigemptyset(&holder.sa_mask);
  if (sigaction(signo, &holder, nullptr) != 0) return;
  held_.push_back(signo);
  previous_.push_back(now);
}

TapSignalGuard::~TapSignalGuard() {
  for (size_t i = held_.size(); i-- > 0;) sigaction(held_[i], &previous_[i], nullptr);
}

}  // namespace ofi_dpdk::eal
