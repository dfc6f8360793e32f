// Scaffolding shared by the MPI tests (mpi_pingpong, mpi_matching, mpi_rma:
// the parts of one program, mpi_checks, which runs those it is given one
// after another in one job, since starting eight ranks costs more than
// most parts' work).
//
// A Test counts a part's checks; a failed check prints one line to stderr
// naming the part, the rank and what differed (the first five failures of
// each rank).  Between phases the parts ask all_passed(), so a failure stops
// the part before later phases pile up follow-on errors, and summary()
// prints rank 0's line for the part and turns failures into a non-zero
// status; finish() ends the job (MPI_Finalize).  A watchdog (alarm(), 120 s
// per part unless the environment variable MPI_TEST_TIMEOUT gives other
// seconds; mpirun passes it on with -x) ends a hung rank with exit status 3
// and says in which part and phase it hung, since a stuck transport would
// otherwise hold the job forever.
//
// Payloads are filled from pattern(): a hash of the byte's offset and a seed
// built from the message's identity, so a byte written to the wrong offset,
// a stale buffer or another message's data all show up as a mismatch.
#ifndef OFI_DPDK_TEST_MPI_TEST_H
#define OFI_DPDK_TEST_MPI_TEST_H

// Only the C API is used; keep Open MPI's and MPICH's C++ bindings out.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace mpitest {

inline std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

inline std::uint64_t seed(std::uint64_t a, std::uint64_t b = 0, std::uint64_t c = 0,
                          std::uint64_t d = 0) {
  return mix(mix(mix(mix(a) ^ b) ^ c) ^ d);
}

inline unsigned char pattern(std::uint64_t s, std::size_t i) {
  return static_cast<unsigned char>(mix(s + i) >> 56);
}

inline void fill(unsigned char* buf, std::size_t n, std::uint64_t s) {
  for (std::size_t i = 0; i < n; ++i) buf[i] = pattern(s, i);
}

// The watchdog's message is built before alarm() can fire: a signal handler
// may only write() and read lock-free atomics.  The prefix names the rank
// once MPI_Init has said which it is.
inline char watchdog_before_init[160];
inline char watchdog_prefixes[2][160];  // the part's, written while the other is in use
inline std::atomic<const char*> watchdog_prefix{""};
inline std::atomic<const char*> watchdog_phase{"MPI_Init"};
static_assert(std::atomic<const char*>::is_always_lock_free);

extern "C" inline void watchdog_fired(int) {
  // One write(), so the lines of ranks timing out together do not interleave.
  char line[sizeof watchdog_prefixes[0] + 96];
  std::size_t len = 0;
  for (const char* p = watchdog_prefix.load(); *p != '\0' && len < sizeof line - 1; ++p)
    line[len++] = *p;
  for (const char* p = watchdog_phase.load(); *p != '\0' && len < sizeof line - 1; ++p)
    line[len++] = *p;
  line[len++] = '\n';
  if (write(STDERR_FILENO, line, len) < 0) {
    // Nothing more can be said from here.
  }
  _exit(3);
}

class Test {
 public:
  Test(const char* name, int* argc, char*** argv) : name_(name) {
    // Armed before MPI_Init, which waits for the other ranks and the
    // transport and can hang as well as any later call.
    if (const char* env = std::getenv("MPI_TEST_TIMEOUT"); env && std::atoi(env) > 0)
      seconds_ = static_cast<unsigned>(std::atoi(env));
    std::snprintf(watchdog_before_init, sizeof watchdog_before_init,
                  "%s: timed out after %u s in phase: ", name, seconds_);
    watchdog_prefix.store(watchdog_before_init);
    std::signal(SIGALRM, watchdog_fired);
    alarm(seconds_);

    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    begin(name);
    watchdog_phase.store("start-up");
  }
  Test(const Test&) = delete;
  Test& operator=(const Test&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }

  // Starts a part (`name` a string literal): its name in the summary, the
  // failure lines and the watchdog's, its own counts and a fresh watchdog.
  void begin(const char* name) {
    name_ = name;
    checks_ = failures_ = 0;
    char* prefix = watchdog_prefixes[++prefix_in_use_ % 2];
    std::snprintf(prefix, sizeof watchdog_prefixes[0],
                  "%s: rank %d: timed out after %u s in phase: ", name, rank_, seconds_);
    watchdog_prefix.store(prefix);
    watchdog_phase.store("start");
    alarm(seconds_);
  }

  // `what` must outlive the phase (a string literal): the watchdog reads it.
  void phase(const char* what) { watchdog_phase.store(what); }

  [[gnu::format(printf, 3, 4)]] bool check(bool ok, const char* fmt, ...) {
    ++checks_;
    if (ok) return true;
    std::va_list ap;
    va_start(ap, fmt);
    char what[512];
    std::vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    report(what);
    return false;
  }

  // One check for a whole buffer; a mismatch names the first differing byte
  // and how many differ, which tells a shifted copy from a torn one.
  [[gnu::format(printf, 5, 6)]] bool check_bytes(const unsigned char* got,
                                                 const unsigned char* want, std::size_t n,
                                                 const char* fmt, ...) {
    std::va_list ap;
    va_start(ap, fmt);
    bool ok = compare(
        got, n, [want](std::size_t i) { return want[i]; }, fmt, ap);
    va_end(ap);
    return ok;
  }

  // Same, against the pattern of seed s.
  [[gnu::format(printf, 5, 6)]] bool check_pattern(const unsigned char* got, std::size_t n,
                                                   std::uint64_t s, const char* fmt, ...) {
    std::va_list ap;
    va_start(ap, fmt);
    bool ok = compare(
        got, n, [s](std::size_t i) { return pattern(s, i); }, fmt, ap);
    va_end(ap);
    return ok;
  }

  // Collective over MPI_COMM_WORLD.
  bool all_passed() {
    long any = failures_;
    MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    return any == 0;
  }

  // Collective: the part's summary on rank 0, then its status (0: passed).
  int summary() {
    long totals[2] = {checks_, failures_};
    MPI_Allreduce(MPI_IN_PLACE, totals, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank_ == 0) {
      if (totals[1] == 0)
        std::printf("%s: %ld checks passed\n", name_, totals[0]);
      else
        std::fprintf(stderr, "%s: FAILED: %ld of %ld checks failed (stopped after phase: %s)\n",
                     name_, totals[1], totals[0], watchdog_phase.load());
      std::fflush(stdout);
    }
    return totals[1] == 0 ? 0 : 1;
  }

  // Collective: ends the job (MPI_Finalize, watched as a phase of its own).
  void finish() {
    watchdog_phase.store("MPI_Finalize");
    alarm(seconds_);
    MPI_Finalize();
    alarm(0);
  }

 private:
  template <class Want>
  bool compare(const unsigned char* got, std::size_t n, Want want, const char* fmt,
               std::va_list ap) {
    ++checks_;
    std::size_t first = n, differ = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (got[i] == want(i)) continue;
      if (differ++ == 0) first = i;
    }
    if (differ == 0) return true;
    char ctx[384];
    std::vsnprintf(ctx, sizeof ctx, fmt, ap);
    char what[512];
    std::snprintf(what, sizeof what,
                  "%s: byte %zu of %zu expected 0x%02x got 0x%02x (%zu bytes differ)", ctx, first,
                  n, static_cast<unsigned>(want(first)), static_cast<unsigned>(got[first]), differ);
    report(what);
    return false;
  }

  void report(const char* what) {
    // A broken transport can fail thousands of checks the same way; the first
    // few lines say everything and the summary gives the count.
    if (++failures_ > kMaxReported) return;
    std::fprintf(stderr, "%s: rank %d: FAIL %s\n", name_, rank_, what);
    std::fflush(stderr);
  }

  static constexpr long kMaxReported = 5;
  const char* name_;
  unsigned seconds_ = 120;
  unsigned prefix_in_use_ = 0;
  int rank_ = 0;
  int size_ = 0;
  long checks_ = 0;
  long failures_ = 0;
};

// Pairs for point-to-point phases: 0-1, 2-3, ...; with an odd number of ranks
// the last one has no partner and only joins the collectives.
inline int partner_of(int rank, int size) {
  int p = rank ^ 1;
  return p < size ? p : MPI_PROC_NULL;
}

}  // namespace mpitest

#endif  // OFI_DPDK_TEST_MPI_TEST_H
