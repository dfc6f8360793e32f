// transport_net.cc: see transport_net.h.
#include "test/proto/transport_net.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace ofi_dpdk::proto {

namespace {

// ---------------------------------------------------------------------------
// Payload patterns: byte j of message `seed` is a hash of (seed, j / 8), so a
// misplaced, repeated or stale segment shows up as a mismatch.

uint64_t mix64(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t pattern_word(uint64_t seed, size_t word) {
  return mix64(seed * 0x9E3779B97F4A7C15ull + word + 1);
}

}  // namespace

void fill_pattern(uint8_t* p, size_t n, uint64_t seed) {
  size_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const uint64_t w = pattern_word(seed, j / 8);
    std::memcpy(p + j, &w, 8);
  }
  if (j < n) {
    const uint64_t w = pattern_word(seed, j / 8);
    std::memcpy(p + j, &w, n - j);
  }
}

// Returns n when p holds the pattern, else the first differing offset.
size_t pattern_mismatch(const uint8_t* p, size_t n, uint64_t seed) {
  size_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const uint64_t w = pattern_word(seed, j / 8);
    if (std::memcmp(p + j, &w, 8) != 0) {
      for (size_t k = 0; k < 8; ++k)
        if (p[j + k] != reinterpret_cast<const uint8_t*>(&w)[k]) return j + k;
    }
  }
  if (j < n) {
    const uint64_t w = pattern_word(seed, j / 8);
    for (size_t k = 0; j + k < n; ++k)
      if (p[j + k] != reinterpret_cast<const uint8_t*>(&w)[k]) return j + k;
  }
  return n;
}

std::vector<uint8_t> pattern(size_t n, uint64_t seed) {
  std::vector<uint8_t> v(n);
  fill_pattern(v.data(), n, seed);
  return v;
}

// Mixed sizes for the lossless stream: 0 B, 1 B, one full segment, one byte
// more, 64 KiB and 1 MiB.  1 MiB is every 48th message (so a run moves
// ~80 MB, not 370 MB: the checksum is bit-serial without SSE4.2).
std::vector<size_t> lossless_sizes(size_t n) {
  static constexpr size_t kSizes[] = {0, 1, 1444, 1445, 64 << 10, 1 << 20};
  std::vector<size_t> sizes(n);
  for (size_t i = 0; i < n; ++i) {
    sizes[i] = kSizes[i % 6];
    if (sizes[i] == (1u << 20) && i % 48 != 5) sizes[i] = 64 << 10;
  }
  return sizes;
}

// 1 B .. max_bytes, log-uniform, with the edges (1 B, one segment, one byte
// more, the maximum) in every hundred.
std::vector<size_t> random_sizes(size_t n, size_t max_bytes, uint64_t seed) {
  Random rng(seed);
  std::vector<size_t> sizes(n);
  const double top = std::log(static_cast<double>(max_bytes));
  for (size_t i = 0; i < n; ++i) {
    sizes[i] = std::clamp<size_t>(static_cast<size_t>(std::exp(rng.unit() * top)), 1, max_bytes);
    switch (i % 100) {
      case 0:
        sizes[i] = 1;
        break;
      case 1:
        sizes[i] = 1444;
        break;
      case 2:
        sizes[i] = 1445;
        break;
      case 3:
        sizes[i] = max_bytes;
        break;
      default:
        break;
    }
  }
  return sizes;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// ---------------------------------------------------------------------------
// Direct helpers for tests that drive single operations.

int send_bytes(Net& net, size_t from, size_t to, const std::vector<uint8_t>& bytes, void* context,
               bool tagged, uint64_t tag, bool with_session) {
  iovec iov{const_cast<uint8_t*>(bytes.data()), bytes.size()};
  SendRequest s;
  s.iov = &iov;
  s.iov_count = 1;
  s.context = context;
  s.tagged = tagged;
  s.tag = tag;
  return net.engine(from).send(net.link.address(to, with_session), s, net.link.now());
}

int post_bytes(Net& net, size_t at, std::vector<uint8_t>& buf, void* context, bool tagged,
               uint64_t tag, uint64_t ignore, const uint64_t* source_key) {
  RecvRequest r;
  r.iov[0] = {buf.data(), buf.size()};
  r.iov_count = 1;
  r.context = context;
  r.tagged = tagged;
  r.tag = tag;
  r.ignore = ignore;
  if (source_key != nullptr) {
    r.any_source = false;
    r.source_key = *source_key;
  }
  return net.engine(at).post_recv(r, net.link.now());
}

// Steps until engine e has produced `count` completions not owned by a flow
// (kept in net.other[e]); false on timeout.
bool wait_completions(Net& net, size_t e, size_t count, uint64_t max_sim_ns) {
  return net.run_until([&] { return net.other[e].size() >= count; }, max_sim_ns);
}

// Moves `count` messages A->B (direct receives) so both sides know each
// other's session and the RTT is measured.
void warm_up(Net& net, size_t a, size_t b, size_t count) {
  std::vector<std::vector<uint8_t>> in(count, std::vector<uint8_t>(64)), out;
  for (size_t i = 0; i < count; ++i) ASSERT_EQ(post_bytes(net, b, in[i], ctx(900 + i)), 0);
  for (size_t i = 0; i < count; ++i) {
    out.push_back(pattern(64, 900 + i));  // zero-copy: lives until the send completes
    ASSERT_EQ(send_bytes(net, a, b, out[i], ctx(800 + i)), 0);
  }
  ASSERT_TRUE(net.run_until(
      [&] { return net.other[a].size() >= count && net.other[b].size() >= count; }, 100 * kMs));
  for (const Completion& c : net.take(a)) ASSERT_EQ(c.error, 0);
  for (const Completion& c : net.take(b)) ASSERT_EQ(c.error, 0);
}

}  // namespace ofi_dpdk::proto
