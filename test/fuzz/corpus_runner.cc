// corpus_runner.cc: runs the receive-path fuzz target without libFuzzer, so
// the normal test suite (any compiler) replays the seed corpus and a fixed
// set of mutations of it under the sanitizers.  Usage:
//
//   corpus_runner CORPUS_DIR [MUTATIONS_PER_SEED]
//
// Every file of CORPUS_DIR (in name order) goes to LLVMFuzzerTestOneInput,
// then MUTATIONS_PER_SEED (default kDefaultMutations) mutations of each,
// made by a seeded generator: the same inputs on every run and platform.
// Mutations stop early past kTimeBudget of wall-clock time, so a slow,
// shared machine still finishes well inside the test's timeout.
//
// A failing input (invariant, sanitizer report, crash) is written to
// proto_fuzz_crash.bin in the working directory before the process dies;
// replay it with this program or with the libFuzzer binary.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define OFI_DPDK_RUNNER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define OFI_DPDK_RUNNER_ASAN 1
#endif
#endif
#ifdef OFI_DPDK_RUNNER_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

constexpr uint64_t kDefaultMutations = 600;
constexpr auto kTimeBudget = std::chrono::seconds(15);
constexpr size_t kMaxInput = 1 << 16;
// Where FrameHeader sits in a record: ctl, length (2), Ethernet header (14).
constexpr size_t kRecordHeader = 3;
constexpr size_t kEtherHeader = 14;
constexpr size_t kFrameHeader = 64;

// splitmix64: the same sequence everywhere.
class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  size_t below(size_t bound) { return bound == 0 ? 0 : static_cast<size_t>(next() % bound); }

 private:
  uint64_t state_;
};

// The input being run, for the crash handlers.
const std::vector<uint8_t>* g_current = nullptr;
char g_crash_path[4096] = "proto_fuzz_crash.bin";

// Async-signal-safe: open, write, close only.
void save_current_input() {
  if (g_current == nullptr) return;
  const int fd = open(g_crash_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return;
  const uint8_t* at = g_current->data();
  size_t left = g_current->size();
  while (left > 0) {
    const ssize_t n = write(fd, at, left);
    if (n <= 0) break;
    at += n;
    left -= static_cast<size_t>(n);
  }
  close(fd);
  static constexpr char kNote[] = "corpus_runner: failing input saved to ";
  [[maybe_unused]] ssize_t ignored = write(2, kNote, sizeof(kNote) - 1);
  ignored = write(2, g_crash_path, std::strlen(g_crash_path));
  ignored = write(2, "\n", 1);
}

void on_fatal_signal(int signal_number) {
  save_current_input();
  ::signal(signal_number, SIG_DFL);
  ::raise(signal_number);
}

void install_crash_handlers() {
  if (getcwd(g_crash_path, sizeof(g_crash_path) - 32) != nullptr) {
    std::strcat(g_crash_path, "/proto_fuzz_crash.bin");
  } else {
    std::strcpy(g_crash_path, "proto_fuzz_crash.bin");
  }
#ifdef OFI_DPDK_RUNNER_ASAN
  // Sanitizer reports end in the runtime's Die(), not in a signal.
  __sanitizer_set_death_callback(save_current_input);
#endif
  for (int s : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) ::signal(s, on_fatal_signal);
}

void run(const std::vector<uint8_t>& input) {
  g_current = &input;
  LLVMFuzzerTestOneInput(input.data(), input.size());
  g_current = nullptr;
}

// Offsets of the FrameHeader bytes of every record long enough to hold one.
std::vector<size_t> header_starts(const std::vector<uint8_t>& input) {
  std::vector<size_t> starts;
  size_t at = 0;
  while (input.size() - at >= kRecordHeader) {
    const size_t length = std::min<size_t>(size_t{input[at + 1]} << 8 | input[at + 2],
                                           input.size() - at - kRecordHeader);
    if (length >= kEtherHeader + kFrameHeader) starts.push_back(at + kRecordHeader + kEtherHeader);
    at += kRecordHeader + length;
  }
  return starts;
}

constexpr uint64_t kInteresting[] = {0,          1,          2,          0x7F,       0x80,
                                     0xFF,       0x100,      0x101,      0x7FFF,     0x8000,
                                     0xFFFF,     0x10000,    0x7FFFFFFF, 0x80000000, 0xFFFFFFFF,
                                     0xFFFFFFFE, 0x80000001, 0xFFFFFF00};

void put_be(std::vector<uint8_t>& bytes, size_t at, size_t width, uint64_t value) {
  for (size_t i = 0; i < width && at + i < bytes.size(); ++i)
    bytes[at + i] = static_cast<uint8_t>(value >> (8 * (width - 1 - i)));
}

// One mutation, chosen like a byte-level fuzzer would, with a bias to the
// FrameHeader fields of sealed records (whose checksum the target restores).
void mutate_once(std::vector<uint8_t>& input, const std::vector<std::vector<uint8_t>>& seeds,
                 Random& random) {
  const std::vector<size_t> headers = header_starts(input);
  if (!headers.empty() && random.below(2) == 0) {
    const size_t start = headers[random.below(headers.size())];
    // A field-sized write at a field-aligned offset of the header.
    static constexpr size_t kWidths[] = {1, 2, 4, 8};
    const size_t width = kWidths[random.below(std::size(kWidths))];
    const size_t at = start + random.below(kFrameHeader / width) * width;
    const uint64_t value =
        random.below(3) == 0
            ? random.next()
            : kInteresting[random.below(std::size(kInteresting))] + random.below(3) - 1;
    put_be(input, at, width, value);
    return;
  }
  switch (random.below(7)) {
    case 0:  // flip a bit
      if (!input.empty())
        input[random.below(input.size())] ^= static_cast<uint8_t>(1u << random.below(8));
      break;
    case 1:  // an interesting byte
      if (!input.empty())
        input[random.below(input.size())] =
            static_cast<uint8_t>(kInteresting[random.below(std::size(kInteresting))]);
      break;
    case 2: {  // erase a range
      if (input.empty()) break;
      const size_t at = random.below(input.size());
      const size_t n = std::min(input.size() - at, 1 + random.below(16));
      input.erase(input.begin() + static_cast<ptrdiff_t>(at),
                  input.begin() + static_cast<ptrdiff_t>(at + n));
      break;
    }
    case 3: {  // insert random bytes
      const size_t at = random.below(input.size() + 1);
      std::vector<uint8_t> bytes(1 + random.below(16));
      for (uint8_t& b : bytes) b = static_cast<uint8_t>(random.next());
      input.insert(input.begin() + static_cast<ptrdiff_t>(at), bytes.begin(), bytes.end());
      break;
    }
    case 4: {  // repeat a chunk (whole records, often): replays, duplicates
      if (input.empty()) break;
      const size_t from = random.below(input.size());
      const size_t n = std::min(input.size() - from, 1 + random.below(400));
      const std::vector<uint8_t> chunk(input.begin() + static_cast<ptrdiff_t>(from),
                                       input.begin() + static_cast<ptrdiff_t>(from + n));
      const size_t at = random.below(input.size() + 1);
      input.insert(input.begin() + static_cast<ptrdiff_t>(at), chunk.begin(), chunk.end());
      break;
    }
    case 5: {  // splice: the tail of another seed after a prefix of this one
      const std::vector<uint8_t>& other = seeds[random.below(seeds.size())];
      input.resize(random.below(input.size() + 1));
      const size_t from = random.below(other.size() + 1);
      input.insert(input.end(), other.begin() + static_cast<ptrdiff_t>(from), other.end());
      break;
    }
    default:  // truncate
      input.resize(random.below(input.size() + 1));
      break;
  }
  if (input.size() > kMaxInput) input.resize(kMaxInput);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR [MUTATIONS_PER_SEED]\n", argv[0]);
    return 2;
  }
  const uint64_t mutations = argc == 3 ? std::strtoull(argv[2], nullptr, 10) : kDefaultMutations;
  std::vector<std::filesystem::path> paths;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(argv[1], error))
    if (entry.is_regular_file()) paths.push_back(entry.path());
  if (error || paths.empty()) {
    std::fprintf(stderr, "%s: no corpus files (%s)\n", argv[1], error.message().c_str());
    return 1;
  }
  std::sort(paths.begin(), paths.end());
  std::vector<std::vector<uint8_t>> seeds;
  for (const auto& path : paths) {
    std::ifstream in(path, std::ios::binary);
    seeds.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  install_crash_handlers();

  const auto start = std::chrono::steady_clock::now();
  uint64_t inputs = 0;
  for (const auto& seed : seeds) {
    run(seed);
    ++inputs;
  }
  bool out_of_time = false;
  for (uint64_t round = 0; round < mutations && !out_of_time; ++round) {
    for (size_t i = 0; i < seeds.size(); ++i) {
      // Each (seed, round) has its own stream: inputs do not depend on how
      // many ran before.
      Random random(0x0F1D9D4Dull * (round + 1) ^ (uint64_t{i} << 40));
      std::vector<uint8_t> input = seeds[i];
      const size_t steps = 1 + random.below(4);
      for (size_t s = 0; s < steps; ++s) mutate_once(input, seeds, random);
      run(input);
      ++inputs;
    }
    out_of_time = std::chrono::steady_clock::now() - start > kTimeBudget;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("corpus_runner: %zu seed files, %llu inputs run (seeds and mutations) in %.1f s%s\n",
              seeds.size(), static_cast<unsigned long long>(inputs), seconds,
              out_of_time ? "; stopped early at the time budget" : "");
  return 0;
}
