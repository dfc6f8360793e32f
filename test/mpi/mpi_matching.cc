// mpi_matching: MPI's tag-matching rules between pairs of ranks (0-1, 2-3,
// ...; an odd last rank only joins the collectives), both ranks of a pair
// taking the sender's role in turn.  Every received message is checked for
// source, tag, count and payload.
//  - posted receives (MPI_Irecv before the send; a barrier orders them) and
//    unexpected messages (sent, barrier, then received);
//  - non-overtaking: messages of mixed sizes, eager and large, with one
//    (source, tag) arrive in send order, posted or unexpected; so do
//    messages of distinct tags received with MPI_ANY_TAG; with
//    MPI_ANY_SOURCE, every other rank sends to rank 0, which sees each
//    sender's messages in order and each exactly once;
//  - tag selection: tags 3, 1, 2 sent, received as 1, 2, 3;
//  - MPI_Probe, MPI_Iprobe, MPI_Mprobe/MPI_Mrecv, MPI_Improbe/MPI_Imrecv: the
//    probed source, tag and count, then a receive of exactly that; a matched
//    probe takes its message out of matching; probing for an unsent tag finds
//    nothing;
//  - truncation: a message longer than the receive buffer gives
//    MPI_ERR_TRUNCATE (returned by MPI_Recv and MPI_Wait, and in the status
//    with MPI_Waitall), leaves memory past the buffer alone, and the next
//    message on that tag arrives intact;
//  - zero-byte messages, posted, unexpected, probed and in order with others.
// Each phase runs on its own duplicate of MPI_COMM_WORLD so a message
// misrouted in one phase cannot satisfy a receive of the next.
#include "mpi_test.h"

#include <functional>
#include <string_view>
#include <vector>

namespace {

// Every receive buffer holds the largest message of the test.
constexpr int kMaxMsg = 256 * 1024;

class Comm {
 public:
  Comm() { MPI_Comm_dup(MPI_COMM_WORLD, &c_); }
  ~Comm() { MPI_Comm_free(&c_); }
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;
  operator MPI_Comm() const { return c_; }

 private:
  MPI_Comm c_ = MPI_COMM_NULL;
};

// One message of a check: who sends it, with which tag and size, and its
// place in the send order.  Its payload is derived from all of these.
struct Msg {
  const char* label;
  int index;
  int source;
  int tag;
  std::size_t size;

  std::uint64_t seed() const {
    return mpitest::seed(std::hash<std::string_view>{}(label), static_cast<std::uint64_t>(source),
                         static_cast<std::uint64_t>(tag),
                         (static_cast<std::uint64_t>(index) << 32) | size);
  }
};

// Nonblocking sends whose buffers live until wait(): a message may have to
// stay unexpected at the receiver while the sender moves on to a barrier.
class Outbox {
 public:
  void isend(MPI_Comm comm, int dest, const Msg& m) {
    bufs_.emplace_back(m.size);
    mpitest::fill(bufs_.back().data(), m.size, m.seed());
    reqs_.emplace_back();
    MPI_Isend(bufs_.back().data(), static_cast<int>(m.size), MPI_BYTE, dest, m.tag, comm,
              &reqs_.back());
  }
  int wait() {
    int rc = MPI_Waitall(static_cast<int>(reqs_.size()), reqs_.data(), MPI_STATUSES_IGNORE);
    reqs_.clear();
    bufs_.clear();
    return rc;
  }

 private:
  std::vector<std::vector<unsigned char>> bufs_;
  std::vector<MPI_Request> reqs_;
};

void expect(mpitest::Test& t, const MPI_Status& st, const unsigned char* buf, const Msg& m) {
  int count = -1;
  MPI_Get_count(&st, MPI_BYTE, &count);
  if (!t.check(
          st.MPI_SOURCE == m.source && st.MPI_TAG == m.tag && count == static_cast<int>(m.size),
          "%s #%d: expected source %d tag %d size %zu, got source %d tag %d size %d", m.label,
          m.index, m.source, m.tag, m.size, st.MPI_SOURCE, st.MPI_TAG, count))
    return;
  t.check_pattern(buf, m.size, m.seed(), "%s #%d (source %d tag %d size %zu) payload", m.label,
                  m.index, m.source, m.tag, m.size);
}

// Receive buffers, each big enough for any message of the test so a
// mismatched message is reported by expect() rather than as a truncation.
std::vector<std::vector<unsigned char>> buffers(std::size_t n) {
  return std::vector<std::vector<unsigned char>>(n,
                                                 std::vector<unsigned char>(std::size_t{kMaxMsg}));
}

class Matching {
 public:
  explicit Matching(mpitest::Test& t) : t_(t), peer_(mpitest::partner_of(t.rank(), t.size())) {}

  // Each pair phase runs twice, the even and then the odd rank sending.
  template <class Phase>
  void in_pairs(Phase phase) {
    Comm comm;
    for (int round = 0; round < 2; ++round) {
      if (peer_ == MPI_PROC_NULL) {
        phase(comm, Role::kIdle);
      } else {
        bool sends = ((t_.rank() & 1) == 0) == (round == 0);
        phase(comm, sends ? Role::kSender : Role::kReceiver);
      }
    }
  }

  enum class Role { kSender, kReceiver, kIdle };

  void posted_and_unexpected(MPI_Comm comm, Role role) {
    static constexpr std::size_t kSizes[] = {1, 8, 4000, 65536, 200003};
    constexpr int n = std::size(kSizes);
    int src = role == Role::kSender ? t_.rank() : peer_;
    auto msg = [&](const char* label, int i) { return Msg{label, i, src, 10 + i, kSizes[i]}; };

    // Posted: every receive is up before the barrier lets the sends go.
    if (role == Role::kReceiver) {
      auto bufs = buffers(n);
      std::vector<MPI_Request> reqs(n);
      std::vector<MPI_Status> sts(n);
      for (int i = 0; i < n; ++i)
        MPI_Irecv(bufs[i].data(), kMaxMsg, MPI_BYTE, peer_, 10 + i, comm, &reqs[i]);
      MPI_Barrier(comm);
      MPI_Waitall(n, reqs.data(), sts.data());
      for (int i = 0; i < n; ++i) expect(t_, sts[i], bufs[i].data(), msg("posted", i));
    } else {
      MPI_Barrier(comm);
      Outbox out;
      if (role == Role::kSender)
        for (int i = 0; i < n; ++i) out.isend(comm, peer_, msg("posted", i));
      out.wait();
    }

    // Unexpected: every send is started before the barrier lets the
    // receives be posted.
    Outbox out;
    if (role == Role::kSender)
      for (int i = 0; i < n; ++i) out.isend(comm, peer_, msg("unexpected", i));
    MPI_Barrier(comm);
    if (role == Role::kReceiver) {
      auto bufs = buffers(1);
      for (int i = 0; i < n; ++i) {
        MPI_Status st;
        MPI_Recv(bufs[0].data(), kMaxMsg, MPI_BYTE, peer_, 10 + i, comm, &st);
        expect(t_, st, bufs[0].data(), msg("unexpected", i));
      }
    }
    out.wait();
  }

  // Sizes alternate between small and large so a small message cannot
  // overtake a large one sent before it by taking a faster path.
  static constexpr std::size_t kOrderSizes[] = {64, 200000, 8, 0, 100003, 16, 70000, 32};
  static constexpr int kOrderCount = std::size(kOrderSizes);

  void order(MPI_Comm comm, Role role) {
    int src = role == Role::kSender ? t_.rank() : peer_;
    // kAnyTag messages carry distinct, decreasing tags: the receiver must
    // follow the send order, not the tag order.
    enum Variant { kSameTagUnexpected, kSameTagPosted, kAnyTagUnexpected, kAnyTagPosted };
    static constexpr const char* kLabels[] = {"same tag, unexpected", "same tag, posted",
                                              "any tag, unexpected", "any tag, posted"};
    for (int v = 0; v < 4; ++v) {
      bool any_tag = v == kAnyTagUnexpected || v == kAnyTagPosted;
      bool posted = v == kSameTagPosted || v == kAnyTagPosted;
      auto msg = [&](int i) {
        return Msg{kLabels[v], i, src, any_tag ? 100 + kOrderCount - i : 7, kOrderSizes[i]};
      };
      int recv_tag = any_tag ? MPI_ANY_TAG : 7;
      Outbox out;
      auto bufs = buffers(posted ? kOrderCount : 1);
      std::vector<MPI_Request> reqs(kOrderCount, MPI_REQUEST_NULL);
      if (role == Role::kReceiver && posted)
        for (int i = 0; i < kOrderCount; ++i)
          MPI_Irecv(bufs[i].data(), kMaxMsg, MPI_BYTE, peer_, recv_tag, comm, &reqs[i]);
      if (role == Role::kSender && !posted)
        for (int i = 0; i < kOrderCount; ++i) out.isend(comm, peer_, msg(i));
      MPI_Barrier(comm);
      if (role == Role::kSender && posted)
        for (int i = 0; i < kOrderCount; ++i) out.isend(comm, peer_, msg(i));
      if (role == Role::kReceiver) {
        for (int i = 0; i < kOrderCount; ++i) {
          MPI_Status st;
          if (posted)
            MPI_Wait(&reqs[i], &st);
          else
            MPI_Recv(bufs[0].data(), kMaxMsg, MPI_BYTE, peer_, recv_tag, comm, &st);
          expect(t_, st, bufs[posted ? i : 0].data(), msg(i));
        }
      }
      out.wait();
    }
  }

  // Every rank but 0 sends to rank 0, which receives from MPI_ANY_SOURCE.
  void any_source() {
    Comm comm;
    static constexpr std::size_t kSizes[] = {32, 5000, 0, 100000, 8, 1};
    constexpr int n = std::size(kSizes);
    constexpr int kTag = 9;
    auto msg = [](int src, int i) { return Msg{"any source", i, src, kTag, kSizes[i]}; };
    if (t_.rank() != 0) {
      Outbox out;
      for (int i = 0; i < n; ++i) out.isend(comm, 0, msg(t_.rank(), i));
      out.wait();
      MPI_Barrier(comm);
      return;
    }
    std::vector<int> next(t_.size(), 0);
    auto bufs = buffers(1);
    for (int k = 0; k < (t_.size() - 1) * n; ++k) {
      MPI_Status st;
      MPI_Recv(bufs[0].data(), kMaxMsg, MPI_BYTE, MPI_ANY_SOURCE, kTag, comm, &st);
      int src = st.MPI_SOURCE;
      if (!t_.check(src > 0 && src < t_.size() && next[src] < n,
                    "any source: receive %d came from rank %d, which had sent %d of %d messages", k,
                    src, src >= 0 && src < t_.size() ? next[src] : -1, n))
        continue;
      expect(t_, st, bufs[0].data(), msg(src, next[src]));
      ++next[src];
    }
    // Any duplicate has had the barrier's time to arrive.
    MPI_Barrier(comm);
    int extra = 0;
    MPI_Status st;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &extra, &st);
    t_.check(!extra, "any source: an extra message from rank %d tag %d after all %d were received",
             extra ? st.MPI_SOURCE : -1, extra ? st.MPI_TAG : -1, (t_.size() - 1) * n);
  }

  void tag_selection(MPI_Comm comm, Role role) {
    int src = role == Role::kSender ? t_.rank() : peer_;
    static constexpr std::size_t kSizes[] = {0, 100, 70000, 20};  // by tag
    for (bool posted : {false, true}) {
      const char* label = posted ? "tag selection, posted" : "tag selection, unexpected";
      auto msg = [&](int tag) { return Msg{label, tag, src, tag, kSizes[tag]}; };
      Outbox out;
      auto bufs = buffers(4);
      MPI_Request reqs[4] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL,
                             MPI_REQUEST_NULL};
      if (role == Role::kReceiver && posted)
        for (int tag = 1; tag <= 3; ++tag)
          MPI_Irecv(bufs[tag].data(), kMaxMsg, MPI_BYTE, peer_, tag, comm, &reqs[tag]);
      if (role == Role::kSender && !posted)
        for (int tag : {3, 1, 2}) out.isend(comm, peer_, msg(tag));
      MPI_Barrier(comm);
      if (role == Role::kSender && posted)
        for (int tag : {3, 1, 2}) out.isend(comm, peer_, msg(tag));
      if (role == Role::kReceiver) {
        for (int tag = 1; tag <= 3; ++tag) {
          MPI_Status st;
          if (posted)
            MPI_Wait(&reqs[tag], &st);
          else
            MPI_Recv(bufs[tag].data(), kMaxMsg, MPI_BYTE, peer_, tag, comm, &st);
          expect(t_, st, bufs[tag].data(), msg(tag));
        }
      }
      out.wait();
    }
  }

  void probes(MPI_Comm comm, Role role) {
    int src = role == Role::kSender ? t_.rank() : peer_;
    const Msg a{"probe", 0, src, 21, 777};
    const Msg b{"iprobe", 1, src, 22, 150000};
    const Msg c1{"mprobe", 2, src, 23, 5000};
    const Msg c2{"recv after mprobe", 3, src, 23, 123};
    const Msg d{"improbe", 4, src, 24, 250000};
    Outbox out;
    if (role == Role::kSender)
      for (const Msg* m : {&a, &b, &c1, &c2, &d}) out.isend(comm, peer_, *m);
    if (role == Role::kReceiver) {
      auto matches = [&](const MPI_Status& st, const Msg& m) {
        int count = -1;
        MPI_Get_count(&st, MPI_BYTE, &count);
        return t_.check(
            st.MPI_SOURCE == m.source && st.MPI_TAG == m.tag && count == static_cast<int>(m.size),
            "%s: probe expected source %d tag %d size %zu, got source %d tag %d "
            "size %d",
            m.label, m.source, m.tag, m.size, st.MPI_SOURCE, st.MPI_TAG, count);
      };
      // A receive of exactly what the probe said, even when that was not the
      // expected message: expect() then names the difference, and the
      // message does not stay behind to block its sender.
      auto receive_probed = [&](const MPI_Status& pst, const Msg& m) {
        int count = 0;
        MPI_Get_count(&pst, MPI_BYTE, &count);
        std::vector<unsigned char> buf(count);
        MPI_Status st;
        MPI_Recv(buf.data(), count, MPI_BYTE, pst.MPI_SOURCE, pst.MPI_TAG, comm, &st);
        expect(t_, st, buf.data(), m);
      };

      // Nothing is ever sent with tag 99.
      int flag = 1;
      MPI_Status st;
      MPI_Iprobe(peer_, 99, comm, &flag, &st);
      t_.check(!flag, "iprobe for unsent tag 99 found a message (source %d tag %d)", st.MPI_SOURCE,
               st.MPI_TAG);
      MPI_Message none = MPI_MESSAGE_NULL;
      flag = 1;
      MPI_Improbe(peer_, 99, comm, &flag, &none, &st);
      t_.check(!flag && none == MPI_MESSAGE_NULL, "improbe for unsent tag 99 found a message");

      // Probes follow the send order as receives do: the first wildcard
      // probe must see a.
      MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &st);
      matches(st, a);
      receive_probed(st, a);

      for (flag = 0; !flag;) MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, &st);
      matches(st, b);
      receive_probed(st, b);

      // A matched probe takes c1 out of matching: the plain receive on the
      // same tag gets c2, and MPI_Mrecv still gets c1.
      MPI_Message handle = MPI_MESSAGE_NULL;
      MPI_Mprobe(peer_, 23, comm, &handle, &st);
      int count = 0;
      MPI_Get_count(&st, MPI_BYTE, &count);
      matches(st, c1);
      auto bufs = buffers(2);
      MPI_Recv(bufs[0].data(), kMaxMsg, MPI_BYTE, peer_, 23, comm, &st);
      expect(t_, st, bufs[0].data(), c2);
      MPI_Mrecv(bufs[1].data(), count, MPI_BYTE, &handle, &st);
      expect(t_, st, bufs[1].data(), c1);

      for (flag = 0; !flag;) MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, &handle, &st);
      if (matches(st, d)) {
        MPI_Request req;
        MPI_Imrecv(bufs[0].data(), static_cast<int>(d.size), MPI_BYTE, &handle, &req);
        MPI_Wait(&req, &st);
        expect(t_, st, bufs[0].data(), d);
      } else {
        // Drain whatever was matched so the phase can still end.
        MPI_Mrecv(bufs[0].data(), kMaxMsg, MPI_BYTE, &handle, &st);
      }
    }
    out.wait();
    MPI_Barrier(comm);
  }

  // On a communicator with MPI_ERRORS_RETURN.  Each case sends one message
  // too long for the receive buffer, then one that fits, on the same tag.
  void truncation(MPI_Comm comm, Role role) {
    int src = role == Role::kSender ? t_.rank() : peer_;
    constexpr std::size_t kGuard = 64;
    constexpr unsigned char kGuardByte = 0x5a;
    enum class How { kRecv, kWait, kWaitall };
    struct Case {
      const char* label;
      How how;
      int tag;
      std::size_t sent, posted, after;
    };
    // Small and large: a transport may truncate an eager message and a
    // rendezvous one on different paths.
    static constexpr Case kCases[] = {
        {"MPI_Recv, small", How::kRecv, 31, 100, 40, 40},
        {"MPI_Recv, large", How::kRecv, 32, 200000, 1000, 900},
        {"MPI_Irecv+MPI_Wait", How::kWait, 33, 5000, 64, 64},
        {"MPI_Irecv+MPI_Waitall", How::kWaitall, 34, 150000, 4096, 4096},
    };
    constexpr int kCompanionTag = 35;  // completes alongside the Waitall case
    const Msg companion{"MPI_Waitall companion", 0, src, kCompanionTag, 50};
    auto too_long = [&](const Case& c) { return Msg{c.label, 0, src, c.tag, c.sent}; };
    auto fits = [&](const Case& c) { return Msg{c.label, 1, src, c.tag, c.after}; };

    if (role == Role::kSender) {
      // MPI makes truncation the receiver's error and says nothing of the
      // sender's request, which some transports fail too; only the messages
      // that fit must succeed.  Both sets complete before the phase ends.
      Outbox truncated, fitting;
      for (const Case& c : kCases) {
        truncated.isend(comm, peer_, too_long(c));
        fitting.isend(comm, peer_, fits(c));
      }
      fitting.isend(comm, peer_, companion);
      int rc = fitting.wait();
      t_.check(rc == MPI_SUCCESS,
               "truncation: the sends that fit their receives completed with error %d", rc);
      truncated.wait();
    }
    if (role == Role::kReceiver) {
      // Room for every whole message: a transport that writes past the
      // posted count fails the guard check instead of corrupting the heap.
      std::vector<unsigned char> buf(std::size_t{kMaxMsg} + kGuard);
      auto class_of = [](int rc) {
        int cls = rc;
        if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
        return cls;
      };
      // Open MPI 4.1's ob1 fetches a whole rendezvous message with one
      // RDMA get, truncated or not, so its receive buffer overruns with any
      // BTL that has get (vader's single copy, the OFI BTL); run_mpi.sh
      // names the size from which that is expected, and only there is the
      // memory after the buffer left unchecked.
      std::size_t overrun_from = SIZE_MAX;
      if (const char* env = std::getenv("MPI_TEST_TRUNCATION_OVERRUN_FROM"); env && *env)
        overrun_from = std::strtoull(env, nullptr, 10);
      auto guard_intact = [&](const Case& c) {
        if (c.sent >= overrun_from) {
          if (t_.rank() == 0 || t_.rank() == 1)
            std::printf(
                "mpi_matching: rank %d: not checking memory past the buffer for %s "
                "(%zu bytes, overrun expected from %zu)\n",
                t_.rank(), c.label, c.sent, overrun_from);
          return;
        }
        std::vector<unsigned char> guard(kGuard, kGuardByte);
        t_.check_bytes(buf.data() + c.posted, guard.data(), kGuard,
                       "truncation, %s: memory past the %zu-byte receive buffer", c.label,
                       c.posted);
      };
      for (const Case& c : kCases) {
        std::memset(buf.data(), kGuardByte, buf.size());
        int posted = static_cast<int>(c.posted);
        MPI_Status st;
        int rc = MPI_SUCCESS;
        if (c.how == How::kRecv) {
          rc = MPI_Recv(buf.data(), posted, MPI_BYTE, peer_, c.tag, comm, &st);
        } else if (c.how == How::kWait) {
          MPI_Request req;
          MPI_Irecv(buf.data(), posted, MPI_BYTE, peer_, c.tag, comm, &req);
          rc = MPI_Wait(&req, &st);
        } else {
          // A multiple-completion call reports MPI_ERR_IN_STATUS and puts
          // each request's own error class in its status.
          std::vector<unsigned char> cbuf(companion.size);
          MPI_Request reqs[2];
          MPI_Status sts[2];
          MPI_Irecv(buf.data(), posted, MPI_BYTE, peer_, c.tag, comm, &reqs[0]);
          MPI_Irecv(cbuf.data(), static_cast<int>(cbuf.size()), MPI_BYTE, peer_, kCompanionTag,
                    comm, &reqs[1]);
          rc = MPI_Waitall(2, reqs, sts);
          t_.check(class_of(rc) == MPI_ERR_IN_STATUS,
                   "truncation, %s: expected MPI_ERR_IN_STATUS (class %d), got class %d", c.label,
                   MPI_ERR_IN_STATUS, class_of(rc));
          if (class_of(rc) == MPI_ERR_IN_STATUS) {
            rc = sts[0].MPI_ERROR;
            // MPI_ERR_PENDING: not failed but not finished either.
            if (sts[1].MPI_ERROR == MPI_ERR_PENDING) {
              MPI_Wait(&reqs[1], &sts[1]);
            } else {
              t_.check(sts[1].MPI_ERROR == MPI_SUCCESS,
                       "truncation, %s: companion's status error %d, expected MPI_SUCCESS", c.label,
                       sts[1].MPI_ERROR);
            }
            expect(t_, sts[1], cbuf.data(), companion);
          } else {
            rc = MPI_ERR_TRUNCATE;  // reported above; keep the phase going
          }
        }
        t_.check(class_of(rc) == MPI_ERR_TRUNCATE,
                 "truncation, %s: %zu bytes into %zu: expected MPI_ERR_TRUNCATE (class %d), got "
                 "class %d",
                 c.label, c.sent, c.posted, MPI_ERR_TRUNCATE, class_of(rc));
        guard_intact(c);

        rc = MPI_Recv(buf.data(), posted, MPI_BYTE, peer_, c.tag, comm, &st);
        if (t_.check(rc == MPI_SUCCESS,
                     "truncation, %s: the receive after the truncated one returned class %d",
                     c.label, class_of(rc)))
          expect(t_, st, buf.data(), fits(c));
      }
    }
    MPI_Barrier(comm);
  }

  void zero_bytes(MPI_Comm comm, Role role) {
    int src = role == Role::kSender ? t_.rank() : peer_;
    const Msg posted{"zero bytes, posted", 0, src, 41, 0};
    const Msg unexpected{"zero bytes, unexpected and probed", 1, src, 42, 0};
    const Msg first{"zero bytes, then data: the empty one", 2, src, 43, 0};
    const Msg second{"zero bytes, then data: the data", 3, src, 43, 10};
    constexpr int kBuf = 16;

    MPI_Request req = MPI_REQUEST_NULL;
    std::vector<unsigned char> buf(kBuf, 0xee), untouched(kBuf, 0xee);
    if (role == Role::kReceiver)
      MPI_Irecv(buf.data(), kBuf, MPI_BYTE, peer_, posted.tag, comm, &req);
    Outbox out;
    if (role == Role::kSender) {
      out.isend(comm, peer_, unexpected);
    }
    MPI_Barrier(comm);
    if (role == Role::kSender) {
      // A null buffer is fine for zero elements, and programs do pass one.
      MPI_Send(nullptr, 0, MPI_BYTE, peer_, posted.tag, comm);
      out.isend(comm, peer_, first);
      out.isend(comm, peer_, second);
    }
    if (role == Role::kReceiver) {
      MPI_Status st;
      MPI_Wait(&req, &st);
      expect(t_, st, buf.data(), posted);
      t_.check_bytes(buf.data(), untouched.data(), kBuf,
                     "zero bytes, posted: the receive buffer was written");

      MPI_Probe(peer_, unexpected.tag, comm, &st);
      expect(t_, st, buf.data(), unexpected);
      MPI_Recv(nullptr, 0, MPI_BYTE, peer_, unexpected.tag, comm, &st);
      expect(t_, st, buf.data(), unexpected);

      MPI_Recv(buf.data(), kBuf, MPI_BYTE, peer_, first.tag, comm, &st);
      expect(t_, st, buf.data(), first);
      MPI_Recv(buf.data(), kBuf, MPI_BYTE, peer_, second.tag, comm, &st);
      expect(t_, st, buf.data(), second);
    }
    out.wait();
  }

 private:
  mpitest::Test& t_;
  int peer_;
};

}  // namespace

int run_matching(mpitest::Test& t) {
  if (t.size() < 2) {
    if (t.rank() == 0) std::fprintf(stderr, "mpi_matching: needs at least 2 ranks\n");
    t.summary();
    return 2;
  }
  Matching m(t);
  using Role = Matching::Role;

  t.phase("posted and unexpected receives");
  m.in_pairs([&](MPI_Comm c, Role r) { m.posted_and_unexpected(c, r); });
  if (!t.all_passed()) return t.summary();

  t.phase("non-overtaking order");
  m.in_pairs([&](MPI_Comm c, Role r) { m.order(c, r); });
  if (!t.all_passed()) return t.summary();

  // With two ranks this is one sender; from three on, several interleave.
  t.phase("MPI_ANY_SOURCE from every rank to rank 0");
  m.any_source();
  if (!t.all_passed()) return t.summary();

  t.phase("tag selection");
  m.in_pairs([&](MPI_Comm c, Role r) { m.tag_selection(c, r); });
  if (!t.all_passed()) return t.summary();

  t.phase("probe, iprobe, mprobe, improbe");
  m.in_pairs([&](MPI_Comm c, Role r) { m.probes(c, r); });
  if (!t.all_passed()) return t.summary();

  t.phase("truncation");
  m.in_pairs([&](MPI_Comm c, Role r) {
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    m.truncation(c, r);
  });
  if (!t.all_passed()) return t.summary();

  t.phase("zero-byte messages");
  m.in_pairs([&](MPI_Comm c, Role r) { m.zero_bytes(c, r); });
  return t.summary();
}
