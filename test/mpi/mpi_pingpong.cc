// mpi_pingpong: point-to-point payload integrity between pairs of ranks
// (0-1, 2-3, ...; an odd last rank only joins the collectives).
//
// For every size 1 B, 2 B, 4 B ... 4 MiB and a few sizes that straddle
// frame, page and protocol boundaries:
//  - ping-pong: the initiator sends a pattern derived from (size, iteration,
//    sender); the peer checks it byte-exact, adds 1 to every byte and sends
//    it back; the initiator checks the reply.  Initiator and responder swap
//    every iteration so both directions carry both roles.
//  - exchange: both ranks MPI_Sendrecv at once, each checking the other's
//    pattern, so the two directions of a connection are busy together.
// Every receive checks the status (source, tag, count) too, and a guard zone
// after the receive buffer that must stay untouched.
#include "mpi_test.h"

#include <vector>

namespace {

constexpr int kTagPing = 1;
constexpr int kTagPong = 2;
constexpr int kTagExchange = 3;
constexpr std::size_t kGuard = 64;
constexpr unsigned char kGuardByte = 0xa5;

std::vector<std::size_t> sizes() {
  std::vector<std::size_t> out;
  for (std::size_t s = 1; s <= (std::size_t{4} << 20); s *= 2) out.push_back(s);
  // Odd sizes: a partial word, around an Ethernet frame, a page, 64 KiB
  // (common eager/rendezvous switch points) and just over 1 MiB.
  for (std::size_t s : {3, 1000, 1500, 4097, 9001, 65535, 65537, 1048577}) out.push_back(s);
  return out;
}

// Large messages take long when 8 ranks share 2 cores; fewer rounds suffice
// for them since each round already moves many segments.
int iterations(std::size_t size) {
  if (size <= 65536) return 4;
  if (size <= (std::size_t{1} << 20)) return 2;
  return 1;
}

// Message identity -> pattern seed.  `kind` keeps ping and exchange payloads
// of the same size and iteration apart.
std::uint64_t seed_for(int kind, std::size_t size, int iter, int sender) {
  return mpitest::seed(static_cast<std::uint64_t>(kind), size, static_cast<std::uint64_t>(iter),
                       static_cast<std::uint64_t>(sender));
}

class PingPong {
 public:
  PingPong(mpitest::Test& t, int peer) : t_(t), peer_(peer) {
    std::size_t max = std::size_t{4} << 20;
    out_.resize(max);
    in_.resize(max + kGuard);
  }

  void pingpong(std::size_t size, int iter) {
    bool initiator = ((t_.rank() & 1) == 0) == (iter % 2 == 0);
    if (initiator) {
      std::uint64_t s = seed_for(kTagPing, size, iter, t_.rank());
      mpitest::fill(out_.data(), size, s);
      MPI_Send(out_.data(), static_cast<int>(size), MPI_BYTE, peer_, kTagPing, MPI_COMM_WORLD);
      receive(size, kTagPong);
      // The reply is our pattern with every byte + 1 (mod 256).
      for (std::size_t i = 0; i < size; ++i) out_[i] = static_cast<unsigned char>(out_[i] + 1);
      t_.check_bytes(in_.data(), out_.data(), size, "pong from rank %d, size %zu, iter %d", peer_,
                     size, iter);
    } else {
      receive(size, kTagPing);
      t_.check_pattern(in_.data(), size, seed_for(kTagPing, size, iter, peer_),
                       "ping from rank %d, size %zu, iter %d", peer_, size, iter);
      for (std::size_t i = 0; i < size; ++i) out_[i] = static_cast<unsigned char>(in_[i] + 1);
      MPI_Send(out_.data(), static_cast<int>(size), MPI_BYTE, peer_, kTagPong, MPI_COMM_WORLD);
    }
  }

  void exchange(std::size_t size, int iter) {
    mpitest::fill(out_.data(), size, seed_for(kTagExchange, size, iter, t_.rank()));
    std::memset(in_.data(), kGuardByte, size + kGuard);
    MPI_Status st;
    MPI_Sendrecv(out_.data(), static_cast<int>(size), MPI_BYTE, peer_, kTagExchange, in_.data(),
                 static_cast<int>(size), MPI_BYTE, peer_, kTagExchange, MPI_COMM_WORLD, &st);
    check_status(st, size, kTagExchange);
    t_.check_pattern(in_.data(), size, seed_for(kTagExchange, size, iter, peer_),
                     "sendrecv from rank %d, size %zu, iter %d", peer_, size, iter);
    check_guard(size, kTagExchange);
  }

 private:
  void receive(std::size_t size, int tag) {
    std::memset(in_.data(), kGuardByte, size + kGuard);
    MPI_Status st;
    MPI_Recv(in_.data(), static_cast<int>(size), MPI_BYTE, peer_, tag, MPI_COMM_WORLD, &st);
    check_status(st, size, tag);
    check_guard(size, tag);
  }

  void check_status(const MPI_Status& st, std::size_t size, int tag) {
    int count = -1;
    MPI_Get_count(&st, MPI_BYTE, &count);
    t_.check(st.MPI_SOURCE == peer_ && st.MPI_TAG == tag && count == static_cast<int>(size),
             "status of tag %d size %zu from rank %d: expected source %d tag %d count %zu, got "
             "source %d tag %d count %d",
             tag, size, peer_, peer_, tag, size, st.MPI_SOURCE, st.MPI_TAG, count);
  }

  void check_guard(std::size_t size, int tag) {
    unsigned char guard[kGuard];
    std::memset(guard, kGuardByte, kGuard);
    t_.check_bytes(in_.data() + size, guard, kGuard,
                   "guard after receive buffer, tag %d size %zu from rank %d", tag, size, peer_);
  }

  mpitest::Test& t_;
  int peer_;
  std::vector<unsigned char> out_;
  std::vector<unsigned char> in_;
};

}  // namespace

int run_pingpong(mpitest::Test& t) {
  if (t.size() < 2) {
    if (t.rank() == 0) std::fprintf(stderr, "mpi_pingpong: needs at least 2 ranks\n");
    t.summary();
    return 2;
  }
  int peer = mpitest::partner_of(t.rank(), t.size());
  PingPong pp(t, peer);

  t.phase("ping-pong");
  if (peer != MPI_PROC_NULL)
    for (std::size_t size : sizes())
      for (int iter = 0; iter < iterations(size); ++iter) pp.pingpong(size, iter);
  if (!t.all_passed()) return t.summary();

  t.phase("sendrecv exchange");
  if (peer != MPI_PROC_NULL)
    for (std::size_t size : sizes())
      for (int iter = 0; iter < (iterations(size) + 1) / 2; ++iter) pp.exchange(size, iter);
  return t.summary();
}
