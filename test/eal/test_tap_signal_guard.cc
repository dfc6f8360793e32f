// test_tap_signal_guard.cc: TapSignalGuard takes the signals net_tap would
// take, only those, and gives back what it found.
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>

#include "lib/eal/tap_signal_guard.h"

namespace ofi_dpdk::eal {
namespace {

void program_handler(int) {}

void set_handler(int signo, void (*handler)(int)) {
  struct sigaction action {};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  ASSERT_EQ(sigaction(signo, &action, nullptr), 0);
}

void (*handler_of(int signo))(int) {
  struct sigaction now {};
  sigaction(signo, nullptr, &now);
  return now.sa_handler;
}

bool holds(const TapSignalGuard& guard, int signo) {
  return std::find(guard.held().begin(), guard.held().end(), signo) != guard.held().end();
}

// What net_tap checks: a real-time signal is free only with the default
// disposition; SIGIO (older net_tap) when default or ignored.
bool tap_would_take(int signo) {
  const auto handler = handler_of(signo);
  return handler == SIG_DFL || (signo == SIGIO && handler == SIG_IGN);
}

TEST(TapSignalGuard, LeavesNetTapNoFreeSignal) {
  const TapSignalGuard guard;
  EXPECT_FALSE(tap_would_take(SIGIO));
  for (int signo = SIGRTMIN + 1; signo < SIGRTMAX; ++signo)
    EXPECT_FALSE(tap_would_take(signo)) << "signal " << signo;
}

TEST(TapSignalGuard, GivesBackWhatItFound) {
  set_handler(SIGIO, SIG_IGN);
  set_handler(SIGRTMIN + 2, SIG_IGN);
  {
    const TapSignalGuard guard;
    EXPECT_TRUE(holds(guard, SIGIO));         // net_tap would take an ignored SIGIO
    EXPECT_TRUE(holds(guard, SIGRTMIN + 1));  // and a default real-time one
    EXPECT_FALSE(holds(guard, SIGRTMIN + 2));
    EXPECT_FALSE(holds(guard, SIGRTMIN));  // outside net_tap's search
  }
  EXPECT_EQ(handler_of(SIGIO), SIG_IGN);
  EXPECT_EQ(handler_of(SIGRTMIN + 1), SIG_DFL);
  EXPECT_EQ(handler_of(SIGRTMIN + 2), SIG_IGN);
  set_handler(SIGIO, SIG_DFL);
  set_handler(SIGRTMIN + 2, SIG_DFL);
}

TEST(TapSignalGuard, LeavesTheProgramsHandlersAlone) {
  set_handler(SIGIO, program_handler);
  set_handler(SIGRTMIN + 3, program_handler);
  {
    const TapSignalGuard guard;
    EXPECT_FALSE(holds(guard, SIGIO));
    EXPECT_FALSE(holds(guard, SIGRTMIN + 3));
    EXPECT_EQ(handler_of(SIGIO), &program_handler);
  }
  EXPECT_EQ(handler_of(SIGIO), &program_handler);
  EXPECT_EQ(handler_of(SIGRTMIN + 3), &program_handler);
  set_handler(SIGIO, SIG_DFL);
  set_handler(SIGRTMIN + 3, SIG_DFL);
}

}  // namespace
}  // namespace ofi_dpdk::eal
