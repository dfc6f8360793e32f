// tap_signal_guard.h: keeping DPDK's net_tap from signalling the program.
//
// net_tap has the kernel raise a signal on every frame its queues receive
// (O_ASYNC on the queue's file), with a handler of its own, so that an
// empty poll costs no system call.  It takes the first real-time signal
// from SIGRTMIN + 1 whose disposition is the default (22.11, 24.11; older
// releases took SIGIO when it was default or ignored) as it opens a queue.
// A signal per frame cuts the program's own timed blocking calls short,
// which SA_RESTART does not cover: recv() with SO_RCVTIMEO, poll(),
// nanosleep() fail with EINTR.  Stock fi_pingpong lost its control
// connection so, at random.
//
// While a TapSignalGuard lives, every signal net_tap would take has a
// handler of ours: net_tap finds none free, sets no O_ASYNC and reads its
// queues on every poll (it logs "All rt-signals are in use").  The guard
// gives each signal back as it found it.
#pragma once

#include <csignal>
#include <vector>

namespace ofi_dpdk::eal {

class TapSignalGuard {
 public:
  TapSignalGuard();
  ~TapSignalGuard();
  TapSignalGuard(const TapSignalGuard&) = delete;
  TapSignalGuard& operator=(const TapSignalGuard&) = delete;

  // The signals this guard holds (those that were free).
  const std::vector<int>& held() const { return held_; }

 private:
  // Takes `signo` if it has the default disposition (or, with
  // `ignored_is_free`, is ignored).
  void hold(int signo, bool ignored_is_free);

  std::vector<int> held_;
  std::vector<struct sigaction> previous_;
};

}  // namespace ofi_dpdk::eal
