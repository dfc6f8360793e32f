// bench_patterns.cc: each pattern's loop, client and server side.  Every
// buffer lives in one registered block (`Buffers`), so providers that want
// local registration (FI_MR_LOCAL) get their descriptors.
#include <rdma/fi_atomic.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <random>
#include <thread>

#include "app/bench/bench.h"

namespace ofi_dpdk::bench {

namespace {

// Every message has the same bytes at the same offsets (a pattern of the
// offset), stamped with its index every kStampEvery bytes and in its last 8
// bytes: a misplaced segment breaks the pattern, a stale or duplicated one
// carries another index.  Checked with memcmp, so the check does not limit
// what is measured (a byte-by-byte check capped streams near 1 GB/s).
constexpr size_t kStampEvery = 1024;
std::vector<uint8_t> g_pattern;

}  // namespace

void prepare_pattern(size_t max_size) {
  g_pattern.resize(max_size + kStampEvery);
  for (size_t i = 0; i < g_pattern.size(); ++i)
    g_pattern[i] = static_cast<uint8_t>((i * 2654435761u) >> 13 ^ i);
}

// Stamps go every kStampEvery bytes where a whole one fits before the last
// eight bytes, which hold the final stamp.
void stamp(uint8_t* buf, size_t size, uint64_t index) {
  if (size < 8) return;
  for (size_t at = 0; at + 16 <= size; at += kStampEvery) std::memcpy(buf + at, &index, 8);
  std::memcpy(buf + size - 8, &index, 8);
}

void fill(uint8_t* buf, size_t size, uint64_t index) {
  std::memcpy(buf, g_pattern.data(), size);
  stamp(buf, size, index);
}

bool verify(const uint8_t* buf, size_t size, uint64_t index) {
  if (size < 8) return std::memcmp(buf, g_pattern.data(), size) == 0;
  const size_t tail = size - 8;
  size_t at = 0;  // the next byte not yet checked
  for (size_t stamp_at = 0; stamp_at + 16 <= size; stamp_at += kStampEvery) {
    if (std::memcmp(buf + at, g_pattern.data() + at, stamp_at - at) != 0) return false;
    if (std::memcmp(buf + stamp_at, &index, 8) != 0) return false;
    at = stamp_at + 8;
  }
  return std::memcmp(buf + at, g_pattern.data() + at, tail - at) == 0 &&
         std::memcmp(buf + tail, &index, 8) == 0;
}

namespace {

// Slots of `slot_size` bytes in one block, registered when the provider
// wants local registration.
class Buffers {
 public:
  Buffers(Bench& b, size_t slots, size_t slot_size, uint64_t access = FI_SEND | FI_RECV)
      : slot_size_(std::max<size_t>(slot_size, 8)), bytes_(slots * slot_size_) {
    if (b.local_mr_ || access != (FI_SEND | FI_RECV))
      mr_ = b.register_memory(bytes_.data(), bytes_.size(), access, &desc_);
  }
  ~Buffers() {
    if (mr_ != nullptr) fi_close(&mr_->fid);
  }
  Buffers(const Buffers&) = delete;
  Buffers& operator=(const Buffers&) = delete;
  uint8_t* slot(size_t i) { return bytes_.data() + i * slot_size_; }
  void* desc() const { return desc_; }
  fid_mr* mr() const { return mr_; }
  size_t slot_size() const { return slot_size_; }

 private:
  size_t slot_size_;
  std::vector<uint8_t> bytes_;
  fid_mr* mr_ = nullptr;
  void* desc_ = nullptr;
};

// Sizes of the mixed pattern: 90 % up to 4 KiB, 9 % up to 64 KiB, 1 % up to
// max_size, each uniform in its band; the same sequence on both sides.
class SizeSequence {
 public:
  SizeSequence(uint64_t seed, size_t max_size) : rng_(seed), max_(max_size) {}
  size_t next() {
    const uint32_t band = rng_() % 100;
    const size_t top = band < 90 ? 4096 : band < 99 ? 65536 : max_;
    return 1 + rng_() % std::min(top, max_);
  }

 private:
  std::mt19937_64 rng_;
  size_t max_;
};

constexpr uint64_t kTag = 0x5EED;

void* as_context(size_t n) {
  return reinterpret_cast<void*>(n + 1);
}
size_t from_context(void* context) {
  return reinterpret_cast<uintptr_t>(context) - 1;
}

ssize_t post_receive(const Options& o, const Endpoint& e, void* buf, size_t len, void* desc,
                     void* context) {
  return o.pattern == "tagged" ? fi_trecv(e.ep, buf, len, desc, FI_ADDR_UNSPEC, kTag, 0, context)
                               : fi_recv(e.ep, buf, len, desc, FI_ADDR_UNSPEC, context);
}

ssize_t post_send(const Options& o, const Endpoint& e, const void* buf, size_t len, void* desc,
                  fi_addr_t to, void* context) {
  return o.pattern == "tagged" ? fi_tsend(e.ep, buf, len, desc, to, kTag, context)
                               : fi_send(e.ep, buf, len, desc, to, context);
}

// Polls `cq` once; adds what completed to done (contexts) and returns the
// count, or -1 after an error completion.
ssize_t reap(Bench& b, fid_cq* cq, std::vector<void*>* done) {
  fi_cq_tagged_entry entries[16];
  const ssize_t n = fi_cq_read(cq, entries, 16);
  if (n > 0) {
    for (ssize_t i = 0; i < n; ++i) done->push_back(entries[i].op_context);
    return n;
  }
  if (n == -FI_EAVAIL) {
    fi_cq_tagged_entry one;
    b.wait(cq, &one);  // prints the error
    return -1;
  }
  return 0;
}

// Room for the results of `count` operations, up to a million: a run
// meant to go on until it is stopped (a huge --count) must not fill
// gigabytes before its first operation (with MALLOC_PERTURB_, as meson
// runs tests, that took seconds).
size_t results_room(uint64_t count) {
  return static_cast<size_t>(std::min<uint64_t>(count, 1 << 20));
}

}  // namespace

Result latency_client(Bench& b, const Endpoint& e, fi_addr_t peer) {
  Result r;
  Buffers buf(b, 2, b.o_.size);
  uint8_t* tx = buf.slot(0);
  uint8_t* rx = buf.slot(1);
  fill(tx, b.o_.size, 7);
  r.latencies_us.reserve(results_room(b.o_.count));
  const auto start = Clock::now();
  for (uint64_t i = 0; i < b.o_.count && r.ok; ++i) {
    const auto t0 = Clock::now();
    BENCH_CHECK(post_receive(b.o_, e, rx, b.o_.size, buf.desc(), nullptr));
    fi_cq_tagged_entry entry;
    ssize_t ret;
    while ((ret = post_send(b.o_, e, tx, b.o_.size, buf.desc(), peer, nullptr)) == -FI_EAGAIN)
      fi_cq_read(e.tx_cq, &entry, 0);
    r.ok = ret == 0 && b.wait(e.tx_cq, &entry) && b.wait(e.rx_cq, &entry) &&
           entry.len == b.o_.size && verify(rx, b.o_.size, 7);
    r.latencies_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() /
                             2);
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  r.messages = b.o_.count;
  r.bytes = b.o_.count * b.o_.size;
  return r;
}

Result latency_server(Bench& b, const Endpoint& e, fi_addr_t peer) {
  Result r;
  Buffers buf(b, 1, b.o_.size);
  for (uint64_t i = 0; i < b.o_.count && r.ok; ++i) {
    BENCH_CHECK(post_receive(b.o_, e, buf.slot(0), b.o_.size, buf.desc(), nullptr));
    fi_cq_tagged_entry entry;
    r.ok = b.wait(e.rx_cq, &entry);
    if (!r.ok) break;
    ssize_t ret;
    while ((ret = post_send(b.o_, e, buf.slot(0), entry.len, buf.desc(), peer, nullptr)) ==
           -FI_EAGAIN)
      fi_cq_read(e.tx_cq, &entry, 0);
    r.ok = ret == 0 && b.wait(e.tx_cq, &entry);
  }
  r.messages = b.o_.count;
  return r;
}

Result stream_client(Bench& b, const Endpoint& e, fi_addr_t peer, uint64_t seed) {
  Result r;
  const size_t slot_size = b.o_.pattern == "mixed" ? b.o_.max_size : b.o_.size;
  Buffers slots(b, b.o_.window, slot_size);
  std::vector<size_t> free_slots;
  for (size_t i = 0; i < b.o_.window; ++i) free_slots.push_back(i);
  SizeSequence sizes(seed, b.o_.max_size);
  std::vector<void*> done;
  // The pattern goes in once; each send only stamps its index, so the
  // sender does not copy every message once more than it must.
  for (size_t i = 0; i < b.o_.window; ++i) fill(slots.slot(i), slot_size, 0);
  const auto start = Clock::now();
  uint64_t sent = 0, completed = 0;
  while (completed < b.o_.count && r.ok) {
    while (sent < b.o_.count && !free_slots.empty()) {
      const size_t slot = free_slots.back();
      const size_t size = b.o_.pattern == "mixed" ? sizes.next() : b.o_.size;
      if (b.o_.pattern == "mixed")
        fill(slots.slot(slot), size, sent);  // the last 8 bytes move
      else
        stamp(slots.slot(slot), size, sent);
      const ssize_t ret =
          post_send(b.o_, e, slots.slot(slot), size, slots.desc(), peer, as_context(slot));
      if (ret == -FI_EAGAIN) break;
      if (ret != 0) {
        r.ok = false;
        break;
      }
      free_slots.pop_back();
      r.bytes += size;
      ++sent;
    }
    done.clear();
    const ssize_t n = reap(b, e.tx_cq, &done);
    if (n < 0) r.ok = false;
    for (void* context : done) free_slots.push_back(from_context(context));
    completed += done.size();
    if (n == 0 && std::chrono::duration<double>(Clock::now() - start).count() > b.o_.timeout * 10) {
      std::fprintf(stderr, "dpdk-fi-bench: stream did not finish\n");
      r.ok = false;
    }
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  r.messages = completed;
  return r;
}

Result stream_server(Bench& b, const Endpoint& e, int senders, uint64_t seed) {
  Result r;
  const size_t slot_size = b.o_.pattern == "mixed" ? b.o_.max_size : b.o_.size;
  Buffers slots(b, b.o_.window, slot_size);
  const size_t buffer = slots.slot_size();
  for (size_t i = 0; i < b.o_.window; ++i)
    BENCH_CHECK(post_receive(b.o_, e, slots.slot(i), buffer, slots.desc(), as_context(i)));
  SizeSequence sizes(seed, b.o_.max_size);
  std::vector<size_t> expected_sizes;
  std::vector<uint64_t> next(senders, 0);
  std::vector<uint64_t> per_sender_bytes(senders, 0);
  std::vector<Clock::time_point> per_sender_last(senders);
  std::vector<std::vector<uint64_t>> series_bytes(senders);  // --interval
  const uint64_t total = b.o_.count * static_cast<uint64_t>(senders);
  Clock::time_point start;
  for (uint64_t got = 0; got < total && r.ok; ++got) {
    fi_cq_tagged_entry entry;
    if (!b.wait(e.rx_cq, &entry)) {
      r.ok = false;
      break;
    }
    if (got == 0) {  // the clock starts at the first arrival
      start = Clock::now();
      r.first_arrival_unix =
          std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
              .count();
    }
    const size_t slot = from_context(entry.op_context);
    const uint8_t* data = slots.slot(slot);
    // Fixed-size streams carry the index in their first 8 bytes; with
    // several senders the sender is found by which expected index matches.
    int sender = 0;
    if (senders > 1) {
      uint64_t index;
      std::memcpy(&index, data, 8);
      sender = -1;
      for (int s = 0; s < senders; ++s)
        if (next[s] == index && verify(data, entry.len, index)) sender = s;
      if (sender < 0) {
        std::fprintf(stderr, "dpdk-fi-bench: message out of order, duplicated or corrupt\n");
        r.ok = false;
        break;
      }
    }
    const uint64_t index = next[sender]++;
    size_t want = b.o_.size;
    if (b.o_.pattern == "mixed") {
      while (expected_sizes.size() <= index) expected_sizes.push_back(sizes.next());
      want = expected_sizes[index];
    }
    if (entry.len != want || !verify(data, entry.len, index)) {
      std::fprintf(stderr, "dpdk-fi-bench: message %" PRIu64 " wrong: %zu bytes (want %zu)\n",
                   index, entry.len, want);
      r.ok = false;
      break;
    }
    per_sender_bytes[sender] += entry.len;
    per_sender_last[sender] = Clock::now();
    if (b.o_.interval_ms != 0) {
      const auto bucket = static_cast<size_t>(
          std::chrono::duration_cast<std::chrono::milliseconds>(per_sender_last[sender] - start)
              .count() /
          static_cast<int64_t>(b.o_.interval_ms));
      if (series_bytes[sender].size() <= bucket) series_bytes[sender].resize(bucket + 1);
      series_bytes[sender][bucket] += entry.len;
    }
    r.bytes += entry.len;
    ++r.messages;
    BENCH_CHECK(post_receive(b.o_, e, slots.slot(slot), buffer, slots.desc(), entry.op_context));
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  // Each sender's goodput over its own time, from the first arrival to its
  // last message: a sender held back finishes late and shows it (an equal
  // share of the whole run would make every sender look the same).
  for (int s = 0; s < senders; ++s) {
    const double seconds = std::chrono::duration<double>(per_sender_last[s] - start).count();
    r.sender_goodput.push_back(seconds > 0 ? per_sender_bytes[s] / seconds / 1e6 : 0.0);
  }
  // Every sender's series as long as the longest: a sender done early shows
  // its zeros.  (The last interval is partial and says less.)
  size_t intervals = 0;
  for (const auto& series : series_bytes) intervals = std::max(intervals, series.size());
  for (auto& series : series_bytes) {
    series.resize(intervals);
    std::vector<double> rates;
    for (uint64_t bytes : series)
      rates.push_back(static_cast<double>(bytes) * 1000.0 / static_cast<double>(b.o_.interval_ms) /
                      1e6);
    r.sender_series.push_back(std::move(rates));
  }
  return r;
}

Result pair_stream(Bench& b, const Endpoint& sender, const Endpoint& receiver,
                   fi_addr_t receiver_addr, std::latch& start_line) {
  Result r;
  const size_t window = b.o_.window, size = b.o_.size;
  Buffers send_slots(b, window, size), receive_slots(b, window, size);
  const size_t buffer = receive_slots.slot_size();
  for (size_t i = 0; i < window; ++i) {
    fill(send_slots.slot(i), size, 0);
    BENCH_CHECK(post_receive(b.o_, receiver, receive_slots.slot(i), buffer, receive_slots.desc(),
                             as_context(i)));
  }
  std::vector<size_t> free_slots;
  for (size_t i = 0; i < window; ++i) free_slots.push_back(i);
  std::vector<void*> done;
  uint64_t sent = 0, send_completions = 0, received = 0;
  start_line.arrive_and_wait();
  const auto start = Clock::now();
  auto last_progress = start;
  while ((received < b.o_.count || send_completions < b.o_.count) && r.ok) {
    while (sent < b.o_.count && !free_slots.empty()) {
      const size_t slot = free_slots.back();
      stamp(send_slots.slot(slot), size, sent);
      const ssize_t ret = post_send(b.o_, sender, send_slots.slot(slot), size, send_slots.desc(),
                                    receiver_addr, as_context(slot));
      if (ret == -FI_EAGAIN) break;
      if (ret != 0) {
        r.ok = false;
        break;
      }
      free_slots.pop_back();
      ++sent;
    }
    done.clear();
    const ssize_t sends = reap(b, sender.tx_cq, &done);
    for (void* context : done) free_slots.push_back(from_context(context));
    send_completions += done.size();
    // Messages arrive in order (one sender, one receiver, RDM's default
    // ordering for sends): each must carry the next index.
    fi_cq_tagged_entry entries[16];
    const ssize_t n = fi_cq_read(receiver.rx_cq, entries, 16);
    if (n == -FI_EAVAIL) {
      fi_cq_tagged_entry one;
      b.wait(receiver.rx_cq, &one);  // prints the error
      r.ok = false;
    }
    for (ssize_t i = 0; i < n; ++i) {
      const size_t slot = from_context(entries[i].op_context);
      if (entries[i].len != size || !verify(receive_slots.slot(slot), size, received)) {
        std::fprintf(stderr, "dpdk-fi-bench: message %" PRIu64 " wrong (%zu bytes)\n", received,
                     entries[i].len);
        r.ok = false;
        break;
      }
      ++received;
      r.bytes += size;
      BENCH_CHECK(post_receive(b.o_, receiver, receive_slots.slot(slot), buffer,
                               receive_slots.desc(), entries[i].op_context));
    }
    if (sends < 0) r.ok = false;
    const auto now = Clock::now();
    if (sends > 0 || n > 0) {
      last_progress = now;
    } else if (std::chrono::duration<double>(now - last_progress).count() > b.o_.timeout) {
      std::fprintf(stderr, "dpdk-fi-bench: thread's stream stalled\n");
      r.ok = false;
    }
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  r.messages = received;
  return r;
}

Result rma_client(Bench& b, const Endpoint& e, fi_addr_t peer, const RemoteRegion& region) {
  Result r;
  const bool write = b.o_.pattern == "write";
  Buffers slots(b, b.o_.window, b.o_.size, write ? FI_WRITE : FI_READ);
  std::vector<size_t> free_slots;
  for (size_t i = 0; i < b.o_.window; ++i) {
    free_slots.push_back(i);
    fill(slots.slot(i), b.o_.size, i);
  }
  std::vector<void*> done;
  const auto start = Clock::now();
  uint64_t issued = 0, completed = 0;
  while (completed < b.o_.count && r.ok) {
    while (issued < b.o_.count && !free_slots.empty()) {
      const size_t slot = free_slots.back();
      // Each operation has its own --size slice of the server's region.
      const uint64_t at = region.address + slot * slots.slot_size();
      const ssize_t ret = write ? fi_write(e.ep, slots.slot(slot), b.o_.size, slots.desc(), peer,
                                           at, region.key, as_context(slot))
                                : fi_read(e.ep, slots.slot(slot), b.o_.size, slots.desc(), peer, at,
                                          region.key, as_context(slot));
      if (ret == -FI_EAGAIN) break;
      if (ret != 0) {
        std::fprintf(stderr, "dpdk-fi-bench: fi_%s: %s\n", write ? "write" : "read",
                     fi_strerror(static_cast<int>(-ret)));
        r.ok = false;
        break;
      }
      free_slots.pop_back();
      ++issued;
    }
    done.clear();
    if (reap(b, e.tx_cq, &done) < 0) r.ok = false;
    for (void* context : done) {
      const size_t slot = from_context(context);
      // A read brings back what the server's slot holds: the pattern the
      // server filled it with.
      if (!write && !verify(slots.slot(slot), b.o_.size, slot)) {
        std::fprintf(stderr, "dpdk-fi-bench: read %zu returned wrong bytes\n", slot);
        r.ok = false;
      }
      free_slots.push_back(slot);
    }
    completed += done.size();
    if (std::chrono::duration<double>(Clock::now() - start).count() > b.o_.timeout * 10) {
      std::fprintf(stderr, "dpdk-fi-bench: RMA did not finish\n");
      r.ok = false;
    }
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  r.messages = completed;
  r.bytes = completed * b.o_.size;
  // Tell the server it can check and stop.
  static const char kDone[8] = "done";
  fi_cq_tagged_entry entry;
  r.ok = b.send(e, kDone, sizeof(kDone), peer, nullptr) && b.wait(e.tx_cq, &entry) && r.ok;
  return r;
}

Result remote_server(Bench& b, const Endpoint& e) {
  Result r;
  Buffers closing(b, 1, 8);
  BENCH_CHECK(fi_recv(e.ep, closing.slot(0), 8, closing.desc(), FI_ADDR_UNSPEC, nullptr));
  fi_cq_tagged_entry entry;
  // Reading the CQ drives progress for providers that need it (RMA and
  // atomics are served inside it).  Remote CQ data of writes that others
  // make is not the closing message.
  do {
    r.ok = b.wait(e.rx_cq, &entry);
  } while (r.ok && (entry.flags & FI_REMOTE_CQ_DATA) && (entry.flags & FI_RMA));
  return r;
}

Result atomic_clients(Bench& b, std::vector<Endpoint>& clients, fi_addr_t server,
                      const RemoteRegion& counter, const uint64_t* local_counter) {
  Result r;
  std::vector<std::vector<uint64_t>> fetched(clients.size());
  std::vector<std::vector<double>> latencies(clients.size());
  std::vector<bool> ok(clients.size(), true);
  const auto start = Clock::now();
  auto run = [&](size_t who) {
    const Endpoint& e = clients[who];
    Buffers results(b, b.o_.window + 1, sizeof(uint64_t), FI_READ | FI_WRITE);
    const uint64_t one = 1;
    std::memcpy(results.slot(b.o_.window), &one, sizeof(one));
    std::vector<Clock::time_point> posted(b.o_.window);
    std::vector<size_t> free_slots;
    for (size_t i = 0; i < b.o_.window; ++i) free_slots.push_back(i);
    std::vector<void*> done;
    uint64_t issued = 0, completed = 0;
    fetched[who].reserve(results_room(b.o_.count));
    latencies[who].reserve(results_room(b.o_.count));
    while (completed < b.o_.count && ok[who]) {
      while (issued < b.o_.count && !free_slots.empty()) {
        const size_t slot = free_slots.back();
        const ssize_t ret = fi_fetch_atomic(
            e.ep, results.slot(b.o_.window), 1, results.desc(), results.slot(slot), results.desc(),
            server, counter.address, counter.key, FI_UINT64, FI_SUM, as_context(slot));
        if (ret == -FI_EAGAIN) break;
        if (ret != 0) {
          std::fprintf(stderr, "dpdk-fi-bench: fi_fetch_atomic: %s\n",
                       fi_strerror(static_cast<int>(-ret)));
          ok[who] = false;
          return;
        }
        posted[slot] = Clock::now();
        free_slots.pop_back();
        ++issued;
      }
      done.clear();
      if (reap(b, e.tx_cq, &done) < 0) {
        ok[who] = false;
        return;
      }
      const auto now = Clock::now();
      for (void* context : done) {
        const size_t slot = from_context(context);
        latencies[who].push_back(
            std::chrono::duration<double, std::micro>(now - posted[slot]).count());
        uint64_t value;
        std::memcpy(&value, results.slot(slot), sizeof(value));
        fetched[who].push_back(value);
        free_slots.push_back(slot);
      }
      completed += done.size();
      if (std::chrono::duration<double>(now - start).count() > b.o_.timeout * 10) {
        std::fprintf(stderr, "dpdk-fi-bench: atomics did not finish\n");
        ok[who] = false;
        return;
      }
    }
  };
  std::vector<std::thread> threads;
  for (size_t i = 1; i < clients.size(); ++i) threads.emplace_back(run, i);
  run(0);
  for (auto& t : threads) t.join();
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<uint64_t> all;
  for (size_t i = 0; i < clients.size(); ++i) {
    r.ok = r.ok && ok[i];
    all.insert(all.end(), fetched[i].begin(), fetched[i].end());
    r.latencies_us.insert(r.latencies_us.end(), latencies[i].begin(), latencies[i].end());
  }
  const uint64_t total = b.o_.count * clients.size();
  std::sort(all.begin(), all.end());
  for (uint64_t i = 0; i < all.size() && r.ok; ++i) {
    if (all[i] != i) {
      std::fprintf(stderr, "dpdk-fi-bench: fetched values are not 0..%" PRIu64 " once each\n",
                   total - 1);
      r.ok = false;
    }
  }
  if (all.size() != total || (local_counter != nullptr && *local_counter != total)) {
    std::fprintf(stderr, "dpdk-fi-bench: %zu values fetched, want %" PRIu64 "\n", all.size(),
                 total);
    r.ok = false;
  }
  r.messages = all.size();
  r.bytes = all.size() * sizeof(uint64_t);
  return r;
}

}  // namespace ofi_dpdk::bench
