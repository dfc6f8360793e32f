// Several application threads on FI_THREAD_SAFE endpoints and shared CQs,
// all at once: every thread posts sends and receives on both endpoints of its
// side and reaps whatever its side's one CQ holds, whichever thread posted
// it.  Two sides, each a domain on one of two net_ring ports joined by
// crossed rings in this process, send to each other at the same time, so
// frames cross from one port lock to the other through the rte_ring.
//
// What must hold (fi_domain(3) FI_THREAD_SAFE, fi_cq(3), fi_msg(3),
// fi_tagged(3)): every message is delivered exactly once and byte for byte;
// every send and every receive completes exactly once; nothing is left in a
// CQ afterwards.  Run with manual and automatic progress, plain and tagged
// messages, and meant for ThreadSanitizer too (`dpdk-fi-test.sh --sanitize
// thread`): a data race in the provider fails the test there.
//
// The program owns EAL (way 3 into EAL) because crossed ports need
// rte_eth_from_rings; a single net_ring vdev loops back to itself, where one
// port lock would serialise everything.
#include <gtest/gtest.h>
#include <rdma/fi_tagged.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "test/support/crossed_ports.h"
#include "test/support/fabric_helpers.h"

namespace ofi_dpdk::test {
namespace {

constexpr int kSides = 2;
constexpr int kThreads = 2;     // per side; also the endpoints per side (TearDown closes two)
constexpr int kMessages = 200;  // sent by each thread (and received for it)
constexpr size_t kBufferSize = 12 * 1024;
// Sizes cycle through the smallest that holds the sender's id, one frame,
// just over one frame (the payload per frame is 1436 bytes at MTU 1500), the
// inject limit and several frames.
constexpr std::array<size_t, 6> kSizes = {8, 64, 1436, 1437, 4096, 10000};
constexpr auto kLimit = std::chrono::seconds(90);  // ThreadSanitizer is slow

const char* const kPortNames[kSides] = {"net_ring_threads_a", "net_ring_threads_b"};

// The bytes of message `seq` from (side, thread): a pattern nobody else's
// message shares, so a misdelivered or torn buffer shows.
uint8_t pattern_byte(int side, int thread, int seq, size_t offset) {
  uint64_t x = (uint64_t(side) << 56) ^ (uint64_t(thread) << 48) ^ (uint64_t(seq) << 24) ^ offset;
  x *= 0x9E3779B97F4A7C15ull;
  return static_cast<uint8_t>(x >> 56);
}

size_t message_size(int seq) {
  return kSizes[seq % kSizes.size()];
}

uint64_t message_tag(int side, int thread, int seq) {
  return (uint64_t(side) << 40) | (uint64_t(thread) << 32) | uint64_t(seq);
}

// One posted operation; its address is the operation's context.
struct Op {
  bool is_send;
  int side;    // where it was posted
  int thread;  // who posted it
  int seq;
  std::atomic<int> completions{0};
  std::vector<uint8_t> buffer;
};

struct Side {
  fid_fabric* fabric = nullptr;
  fid_domain* domain = nullptr;
  fid_av* av = nullptr;
  fid_cq* cq = nullptr;  // shared: transmit and receive of every endpoint
  std::array<fid_ep*, kThreads> eps{};
  std::array<fi_addr_t, kThreads> peer{};  // the other side's endpoints in this AV
  fi_info* info = nullptr;
};

struct Params {
  fi_progress progress;
  bool tagged;
};

std::string param_name(const ::testing::TestParamInfo<Params>& p) {
  return std::string(p.param.progress == FI_PROGRESS_AUTO ? "Auto" : "Manual") +
         (p.param.tagged ? "Tagged" : "Msg");
}

class Threads : public ::testing::TestWithParam<Params> {
 protected:
  void SetUp() override {
    for (int s = 0; s < kSides; ++s) open_side(s, &sides_[s]);
    if (HasFatalFailure()) return;
    for (int s = 0; s < kSides; ++s) {
      Side& other = sides_[1 - s];
      for (int e = 0; e < kThreads; ++e) {
        uint8_t name[64];
        size_t len = sizeof(name);
        ASSERT_EQ(fi_getname(&other.eps[e]->fid, name, &len), 0);
        ASSERT_EQ(fi_av_insert(sides_[s].av, name, 1, &sides_[s].peer[e], 0, nullptr), 1);
      }
    }
  }

  void TearDown() override {
    for (Side& side : sides_) {
      for (fid* object :
           {side.eps[0] ? &side.eps[0]->fid : nullptr, side.eps[1] ? &side.eps[1]->fid : nullptr,
            side.cq ? &side.cq->fid : nullptr, side.av ? &side.av->fid : nullptr,
            side.domain ? &side.domain->fid : nullptr, side.fabric ? &side.fabric->fid : nullptr}) {
        if (object != nullptr) {
          EXPECT_EQ(fi_close(object), 0);
        }
      }
      fi_freeinfo(side.info);
      side = {};
    }
  }

  void open_side(int s, Side* side) {
    fi_info* hints = fi_allocinfo();
    hints->fabric_attr->prov_name = strdup("dpdk");
    hints->domain_attr->name = strdup(kPortNames[s]);
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_MSG | FI_TAGGED;
    hints->domain_attr->threading = FI_THREAD_SAFE;
    hints->domain_attr->data_progress = GetParam().progress;
    const int ret = fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &side->info);
    fi_freeinfo(hints);
    ASSERT_EQ(ret, 0) << fi_strerror(-ret);
    ASSERT_EQ(side->info->domain_attr->threading, FI_THREAD_SAFE);
    ASSERT_EQ(side->info->domain_attr->data_progress, GetParam().progress);
    ASSERT_EQ(fi_fabric(side->info->fabric_attr, &side->fabric, nullptr), 0);
    ASSERT_EQ(fi_domain(side->fabric, side->info, &side->domain, nullptr), 0);
    fi_av_attr av_attr{};
    av_attr.type = FI_AV_TABLE;
    ASSERT_EQ(fi_av_open(side->domain, &av_attr, &side->av, nullptr), 0);
    fi_cq_attr cq_attr{};
    cq_attr.format = FI_CQ_FORMAT_TAGGED;
    cq_attr.size = 4 * kThreads * kMessages;
    ASSERT_EQ(fi_cq_open(side->domain, &cq_attr, &side->cq, nullptr), 0);
    for (fid_ep*& ep : side->eps) {
      ASSERT_EQ(fi_endpoint(side->domain, side->info, &ep, nullptr), 0);
      ASSERT_EQ(fi_ep_bind(ep, &side->av->fid, 0), 0);
      ASSERT_EQ(fi_ep_bind(ep, &side->cq->fid, FI_TRANSMIT | FI_RECV), 0);
      ASSERT_EQ(fi_enable(ep), 0);
    }
  }

  // Thread `thread` of side `s`: posts its sends and receives, interleaved,
  // and reaps the side's CQ until every operation of both sides completed.
  void run_thread(int s, int thread) {
    Side& side = sides_[s];
    const bool tagged = GetParam().tagged;
    std::vector<Op>& sends = sends_[s][thread];
    std::vector<Op>& recvs = recvs_[s][thread];
    int next_send = 0, next_recv = 0;
    while (!done() && std::chrono::steady_clock::now() < deadline_) {
      if (next_recv < kMessages) {
        // Receive `seq` is for message `seq` of the peer thread with the
        // same index, which arrives on endpoint seq % kThreads.
        Op& op = recvs[next_recv];
        fid_ep* ep = side.eps[op.seq % kThreads];
        const ssize_t ret =
            tagged ? fi_trecv(ep, op.buffer.data(), op.buffer.size(), nullptr, FI_ADDR_UNSPEC,
                              message_tag(1 - s, thread, op.seq), 0, &op)
                   : fi_recv(ep, op.buffer.data(), op.buffer.size(), nullptr, FI_ADDR_UNSPEC, &op);
        if (ret == 0)
          ++next_recv;
        else if (ret != -FI_EAGAIN)
          fail("fi_recv", ret);
      }
      if (next_send < kMessages) {
        // Sends leave from both endpoints and go to both of the peer's.
        Op& op = sends[next_send];
        fid_ep* ep = side.eps[(thread + op.seq) % kThreads];
        const fi_addr_t dest = side.peer[op.seq % kThreads];
        const size_t len = message_size(op.seq);
        const ssize_t ret = tagged ? fi_tsend(ep, op.buffer.data(), len, nullptr, dest,
                                              message_tag(s, thread, op.seq), &op)
                                   : fi_send(ep, op.buffer.data(), len, nullptr, dest, &op);
        if (ret == 0)
          ++next_send;
        else if (ret != -FI_EAGAIN)
          fail("fi_send", ret);
      }
      reap(s);
    }
  }

  void reap(int s) {
    fi_cq_tagged_entry entries[8];
    const ssize_t got = fi_cq_read(sides_[s].cq, entries, 8);
    if (got == -FI_EAGAIN) return;
    if (got < 0) {
      fi_cq_err_entry err{};
      fi_cq_readerr(sides_[s].cq, &err, 0);
      fail("fi_cq_read", got, err.err);
      return;
    }
    for (ssize_t i = 0; i < got; ++i) check(s, entries[i]);
  }

  // A completion of this side's CQ: which thread reads it does not matter.
  void check(int s, const fi_cq_tagged_entry& entry) {
    Op* op = static_cast<Op*>(entry.op_context);
    if (op == nullptr || op->side != s) return fail("completion with a foreign context", 0);
    if (op->completions.fetch_add(1) != 0) return fail("operation completed twice", 0);
    if (op->is_send) {
      if (!(entry.flags & FI_SEND)) fail("send completion without FI_SEND", 0);
      completed_.fetch_add(1);
      return;
    }
    if (!(entry.flags & FI_RECV)) fail("receive completion without FI_RECV", 0);
    // Every message starts with its sender's thread and sequence number;
    // a tagged receive was posted for message `seq` of the peer thread with
    // its own index, and must have got exactly that one.
    int32_t id[2];
    std::memcpy(id, op->buffer.data(), sizeof(id));
    const int from_thread = id[0], from_seq = id[1];
    if (GetParam().tagged && (entry.tag != message_tag(1 - s, op->thread, op->seq) ||
                              from_thread != op->thread || from_seq != op->seq))
      return fail("a tagged receive got another message", 0);
    if (from_thread < 0 || from_thread >= kThreads || from_seq < 0 || from_seq >= kMessages)
      return fail("a message nobody sent", 0);
    if (entry.len != message_size(from_seq)) return fail("wrong length", 0);
    for (size_t i = sizeof(id); i < entry.len; ++i)
      if (op->buffer[i] != pattern_byte(1 - s, from_thread, from_seq, i))
        return fail("payload differs", 0);
    if (delivered_[1 - s][from_thread][from_seq].fetch_add(1) != 0)
      return fail("message delivered twice", 0);
    completed_.fetch_add(1);
  }

  bool done() const {
    return completed_.load() == 2 * kSides * kThreads * kMessages || failures_.load() > 0;
  }

  void fail(const char* what, ssize_t ret, int err = 0) {
    if (failures_.fetch_add(1) == 0) {
      std::lock_guard guard(first_failure_lock_);
      first_failure_ =
          std::string(what) + " (" + std::to_string(ret) + ", err " + std::to_string(err) + ")";
    }
  }

  void prepare_ops() {
    for (int s = 0; s < kSides; ++s)
      for (int t = 0; t < kThreads; ++t) {
        sends_[s][t] = std::vector<Op>(kMessages);
        recvs_[s][t] = std::vector<Op>(kMessages);
        for (int q = 0; q < kMessages; ++q) {
          Op& send = sends_[s][t][q];
          send.is_send = true;
          send.side = s;
          send.thread = t;
          send.seq = q;
          send.buffer.resize(message_size(q));
          for (size_t i = 0; i < send.buffer.size(); ++i) send.buffer[i] = pattern_byte(s, t, q, i);
          const int32_t id[2] = {t, q};
          std::memcpy(send.buffer.data(), id, sizeof(id));
          Op& recv = recvs_[s][t][q];
          recv.is_send = false;
          recv.side = s;
          recv.thread = t;
          recv.seq = q;
          recv.buffer.assign(kBufferSize, 0);
        }
      }
  }

  void run() {
    prepare_ops();
    deadline_ = std::chrono::steady_clock::now() + kLimit;
    std::vector<std::thread> threads;
    for (int s = 0; s < kSides; ++s)
      for (int t = 0; t < kThreads; ++t) threads.emplace_back([this, s, t] { run_thread(s, t); });
    for (std::thread& thread : threads) thread.join();
    ASSERT_EQ(failures_.load(), 0) << first_failure_;
    ASSERT_EQ(completed_.load(), 2 * kSides * kThreads * kMessages)
        << "not every operation completed within " << kLimit.count() << " s";
    for (int s = 0; s < kSides; ++s)
      for (int t = 0; t < kThreads; ++t)
        for (int q = 0; q < kMessages; ++q) {
          EXPECT_EQ(delivered_[s][t][q].load(), 1)
              << "side " << s << " thread " << t << " seq " << q;
          EXPECT_EQ(sends_[s][t][q].completions.load(), 1);
          EXPECT_EQ(recvs_[s][t][q].completions.load(), 1);
        }
    // Nothing more may surface: every operation has had its one completion.
    for (int s = 0; s < kSides; ++s) EXPECT_TRUE(stays_empty(sides_[s].cq, 0.1));
  }

  std::array<Side, kSides> sides_;
  std::array<std::array<std::vector<Op>, kThreads>, kSides> sends_, recvs_;
  // delivered_[s][t][q]: message q of thread t of side s arrived this often.
  std::array<std::array<std::array<std::atomic<int>, kMessages>, kThreads>, kSides> delivered_{};
  std::atomic<int> completed_{0};
  std::atomic<int> failures_{0};
  std::mutex first_failure_lock_;
  std::string first_failure_;
  std::chrono::steady_clock::time_point deadline_;
};

TEST_P(Threads, EveryMessageArrivesOnceAndIntact) {
  run();
}

INSTANTIATE_TEST_SUITE_P(Progress, Threads,
                         ::testing::Values(Params{FI_PROGRESS_MANUAL, false},
                                           Params{FI_PROGRESS_MANUAL, true},
                                           Params{FI_PROGRESS_AUTO, false},
                                           Params{FI_PROGRESS_AUTO, true}),
                         param_name);

}  // namespace
}  // namespace ofi_dpdk::test

int main(int argc, char** argv) {
  return ofi_dpdk::test::run_over_crossed_ports(argc, argv, "threads");
}
