// Scalable endpoints (fi_endpoint(3), SCALABLE ENDPOINTS; fi_av(3)
// rx_ctx_bits and fi_rx_addr; fi_getinfo(3) FI_NAMED_RX_CTX) through stock
// libfabric.  Two sides, each a domain on one of two net_ring ports joined
// by crossed rings in this process, each with a scalable endpoint of 2
// receive and 2 transmit contexts and an AV with rx_ctx_bits 1.
//
// What must hold: a message from any transmit context to fi_rx_addr(peer,
// i) lands on receive context i's CQ only, and its source (FI_SOURCE) is
// the peer scalable endpoint's fi_addr, whichever of its transmit contexts
// sent it; tagged messages (directed receives too) and RMA go through
// contexts the same way; a plain endpoint is receive context 0 of its own
// address and reaches receive context 0 of a scalable one; calls of the
// wrong kind, bad indices, too many contexts and closing the scalable
// endpoint before its contexts fail with the documented errors.
//
// The program owns EAL, as test_threads.cc does: crossed ports need
// rte_eth_from_rings.
#include <gtest/gtest.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "test/support/crossed_ports.h"
#include "test/support/fabric_helpers.h"

namespace ofi_dpdk::test {
namespace {

constexpr int kContexts = 2;   // of each kind, on each side
constexpr int kRxCtxBits = 1;  // 2 ^ 1 >= kContexts
const char* const kPortNames[2] = {"net_ring_sep_a", "net_ring_sep_b"};

struct Side {
  fi_info* info = nullptr;
  fid_fabric* fabric = nullptr;
  fid_domain* domain = nullptr;
  fid_av* av = nullptr;
  fid_ep* sep = nullptr;
  std::array<fid_ep*, kContexts> tx{};
  std::array<fid_ep*, kContexts> rx{};
  std::array<fid_cq*, kContexts> tx_cq{};
  std::array<fid_cq*, kContexts> rx_cq{};
  uint8_t name[64] = {};
  size_t name_len = 0;
  fi_addr_t peer = FI_ADDR_NOTAVAIL;  // the other side's scalable endpoint in this AV
};

fid_cq* open_cq(fid_domain* domain) {
  fi_cq_attr attr{};
  attr.format = FI_CQ_FORMAT_TAGGED;
  fid_cq* cq = nullptr;
  EXPECT_EQ(fi_cq_open(domain, &attr, &cq, nullptr), 0);
  return cq;
}

void close_fid(fid* object) {
  if (object != nullptr) {
    EXPECT_EQ(fi_close(object), 0);
  }
}

class ScalableEp : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int s = 0; s < 2; ++s) {
      open_side(s, &sides_[s]);
      if (HasFatalFailure()) return;
    }
    for (int s = 0; s < 2; ++s) {
      const Side& other = sides_[1 - s];
      ASSERT_EQ(fi_av_insert(sides_[s].av, other.name, 1, &sides_[s].peer, 0, nullptr), 1);
    }
  }

  void TearDown() override {
    for (Side& side : sides_) {
      for (int i = 0; i < kContexts; ++i) {
        close_fid(side.tx[i] ? &side.tx[i]->fid : nullptr);
        close_fid(side.rx[i] ? &side.rx[i]->fid : nullptr);
      }
      close_fid(side.sep ? &side.sep->fid : nullptr);
      for (int i = 0; i < kContexts; ++i) {
        close_fid(side.tx_cq[i] ? &side.tx_cq[i]->fid : nullptr);
        close_fid(side.rx_cq[i] ? &side.rx_cq[i]->fid : nullptr);
      }
      close_fid(side.av ? &side.av->fid : nullptr);
      close_fid(side.domain ? &side.domain->fid : nullptr);
      close_fid(side.fabric ? &side.fabric->fid : nullptr);
      fi_freeinfo(side.info);
      side = {};
    }
  }

  static fi_info* hints_for(int s) {
    fi_info* hints = fi_allocinfo();
    hints->fabric_attr->prov_name = strdup("dpdk");
    hints->domain_attr->name = strdup(kPortNames[s]);
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_MSG | FI_TAGGED | FI_RMA | FI_NAMED_RX_CTX | FI_SOURCE | FI_DIRECTED_RECV;
    hints->domain_attr->mr_mode = FI_MR_PROV_KEY | FI_MR_VIRT_ADDR;
    hints->ep_attr->tx_ctx_cnt = kContexts;
    hints->ep_attr->rx_ctx_cnt = kContexts;
    return hints;
  }

  void open_context(Side* side, bool tx, int i) {
    fid_ep*& ctx = tx ? side->tx[i] : side->rx[i];
    fid_cq*& cq = tx ? side->tx_cq[i] : side->rx_cq[i];
    if (cq == nullptr) cq = open_cq(side->domain);
    ASSERT_NE(cq, nullptr);
    if (tx) {
      ASSERT_EQ(fi_tx_context(side->sep, i, nullptr, &ctx, nullptr), 0);
      EXPECT_EQ(ctx->fid.fclass, FI_CLASS_TX_CTX);
      ASSERT_EQ(fi_ep_bind(ctx, &cq->fid, FI_TRANSMIT), 0);
    } else {
      ASSERT_EQ(fi_rx_context(side->sep, i, nullptr, &ctx, nullptr), 0);
      EXPECT_EQ(ctx->fid.fclass, FI_CLASS_RX_CTX);
      ASSERT_EQ(fi_ep_bind(ctx, &cq->fid, FI_RECV), 0);
    }
    ASSERT_EQ(fi_enable(ctx), 0);
  }

  // fi_scalable_ep, its AV, every context bound to a CQ of its own and
  // enabled, then the scalable endpoint enabled and named.
  void open_side(int s, Side* side) {
    fi_info* hints = hints_for(s);
    const int ret = fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &side->info);
    fi_freeinfo(hints);
    ASSERT_EQ(ret, 0) << fi_strerror(-ret);
    ASSERT_TRUE(side->info->caps & FI_NAMED_RX_CTX);
    ASSERT_EQ(side->info->ep_attr->tx_ctx_cnt, size_t{kContexts});
    ASSERT_EQ(side->info->ep_attr->rx_ctx_cnt, size_t{kContexts});
    ASSERT_GE(side->info->domain_attr->max_ep_tx_ctx, size_t{kContexts});
    ASSERT_EQ(fi_fabric(side->info->fabric_attr, &side->fabric, nullptr), 0);
    ASSERT_EQ(fi_domain(side->fabric, side->info, &side->domain, nullptr), 0);
    fi_av_attr av_attr{};
    av_attr.type = FI_AV_TABLE;
    av_attr.rx_ctx_bits = kRxCtxBits;
    ASSERT_EQ(fi_av_open(side->domain, &av_attr, &side->av, nullptr), 0);
    ASSERT_EQ(fi_scalable_ep(side->domain, side->info, &side->sep, nullptr), 0);
    EXPECT_EQ(side->sep->fid.fclass, FI_CLASS_SEP);
    ASSERT_EQ(fi_scalable_ep_bind(side->sep, &side->av->fid, 0), 0);
    for (int i = 0; i < kContexts; ++i) {
      open_context(side, true, i);
      open_context(side, false, i);
    }
    ASSERT_EQ(fi_enable(side->sep), 0);
    side->name_len = sizeof(side->name);
    ASSERT_EQ(fi_getname(&side->sep->fid, side->name, &side->name_len), 0);
  }

  // Polls `target` for one entry while also reading `also`, a CQ of the
  // other port, so both ports progress; for at most 5 s.  Returns what the
  // last read of target returned.  With also_got, waits for an entry of
  // `also` too (into *also_entry when given), and *also_got is what its
  // last read returned.
  static ssize_t poll(fid_cq* target, fi_cq_tagged_entry* entry, fi_addr_t* source, fid_cq* also,
                      ssize_t* also_got = nullptr, fi_cq_tagged_entry* also_entry = nullptr) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    ssize_t ret = -FI_EAGAIN;
    ssize_t also_ret = -FI_EAGAIN;
    fi_cq_tagged_entry scratch{};
    if (also_entry == nullptr) also_entry = &scratch;
    while (std::chrono::steady_clock::now() < deadline) {
      if (ret == -FI_EAGAIN) ret = fi_cq_readfrom(target, entry, 1, source);
      if (also_ret == -FI_EAGAIN) also_ret = fi_cq_read(also, also_entry, 1);
      if (ret != -FI_EAGAIN && (also_got == nullptr || also_ret != -FI_EAGAIN)) break;
    }
    if (also_got != nullptr) *also_got = also_ret;
    return ret;
  }

  // Sends `text` from tx context j of side s to receive context i of the
  // other side (a receive is posted there first) and checks where it lands.
  void expect_delivered_to_context(int s, int j, int i, const std::string& text) {
    Side& from = sides_[s];
    Side& to = sides_[1 - s];
    std::array<std::array<char, 64>, kContexts> buffers{};
    for (int k = 0; k < kContexts; ++k)
      ASSERT_EQ(fi_recv(to.rx[k], buffers[k].data(), buffers[k].size(), nullptr, FI_ADDR_UNSPEC,
                        &buffers[k]),
                0);
    const fi_addr_t dest = fi_rx_addr(from.peer, i, kRxCtxBits);
    ASSERT_EQ(fi_send(from.tx[j], text.data(), text.size(), nullptr, dest, &from), 0);
    fi_cq_tagged_entry got{}, sent{};
    fi_addr_t source = FI_ADDR_UNSPEC;
    ssize_t sent_ret = -FI_EAGAIN;
    ASSERT_EQ(poll(to.rx_cq[i], &got, &source, from.tx_cq[j], &sent_ret, &sent), 1)
        << "side " << s << " tx " << j << " -> rx " << i;
    ASSERT_EQ(sent_ret, 1);
    EXPECT_EQ(sent.op_context, &from);
    EXPECT_EQ(got.op_context, &buffers[i]);
    EXPECT_EQ(std::string(buffers[i].data(), got.len), text);
    EXPECT_EQ(source, to.peer) << "FI_SOURCE names the sender's scalable endpoint";
    for (int k = 0; k < kContexts; ++k) {
      if (k == i) continue;
      EXPECT_TRUE(stays_empty(to.rx_cq[k], 0.02)) << "receive context " << k << " got it too";
      // Take the receive back, so the next message finds only fresh ones.
      EXPECT_EQ(fi_cancel(&to.rx[k]->fid, &buffers[k]), 0);
      fi_cq_err_entry error{};
      fi_cq_tagged_entry none;
      ASSERT_EQ(wait_for_completion(to.rx_cq[k], &none, 2.0), -FI_EAVAIL);
      ASSERT_EQ(fi_cq_readerr(to.rx_cq[k], &error, 0), 1);
      EXPECT_EQ(error.err, FI_ECANCELED);
    }
  }

  std::array<Side, 2> sides_;
};

// fi_rx_addr(peer, i, rx_ctx_bits) names receive context i: every transmit
// context of each side reaches every receive context of the other, and
// only that one; FI_SOURCE gives the sending scalable endpoint's fi_addr.
TEST_F(ScalableEp, EachTransmitContextReachesEachNamedReceiveContext) {
  for (int s = 0; s < 2; ++s)
    for (int j = 0; j < kContexts; ++j)
      for (int i = 0; i < kContexts; ++i)
        expect_delivered_to_context(s, j, i,
                                    "side " + std::to_string(s) + " tx " + std::to_string(j) +
                                        " to rx " + std::to_string(i));
}

// The scalable endpoint's name is (MAC, base queue) with no session; the
// contexts report the same name.
TEST_F(ScalableEp, ContextsShareTheScalableEndpointsName) {
  for (const Side& side : sides_) {
    for (fid_ep* ctx : {side.tx[1], side.rx[1]}) {
      uint8_t name[64];
      size_t len = sizeof(name);
      ASSERT_EQ(fi_getname(&ctx->fid, name, &len), 0);
      ASSERT_EQ(len, side.name_len);
      EXPECT_EQ(std::memcmp(name, side.name, len), 0);
    }
  }
}

// Tagged messages through contexts: a directed receive on a receive
// context takes only messages from the scalable endpoint it names, from
// whichever of its transmit contexts.
TEST_F(ScalableEp, TaggedMessagesAndDirectedReceivesThroughContexts) {
  Side& a = sides_[0];
  Side& b = sides_[1];
  char from_a[16] = {}, from_nobody[16] = {};
  // b's AV: a's scalable endpoint, and one address no frame comes from.
  fi_addr_t nobody = FI_ADDR_NOTAVAIL;
  ASSERT_EQ(fi_av_insertsvc(b.av, "02:00:00:00:00:99", "7", &nobody, 0, nullptr), 1);
  ASSERT_EQ(
      fi_trecv(b.rx[1], from_nobody, sizeof(from_nobody), nullptr, nobody, 0x77, 0, from_nobody),
      0);
  ASSERT_EQ(fi_trecv(b.rx[1], from_a, sizeof(from_a), nullptr, b.peer, 0x77, 0, from_a), 0);
  ASSERT_EQ(
      fi_tsend(a.tx[1], "tagged", 6, nullptr, fi_rx_addr(a.peer, 1, kRxCtxBits), 0x77, nullptr), 0);
  fi_cq_tagged_entry got{};
  fi_addr_t source = FI_ADDR_UNSPEC;
  ssize_t sent_ret = -FI_EAGAIN;
  ASSERT_EQ(poll(b.rx_cq[1], &got, &source, a.tx_cq[1], &sent_ret), 1);
  EXPECT_EQ(sent_ret, 1);
  EXPECT_EQ(got.op_context, from_a) << "the receive directed at a's scalable endpoint took it";
  EXPECT_TRUE(got.flags & FI_TAGGED);
  EXPECT_EQ(got.tag, 0x77u);
  EXPECT_EQ(std::string(from_a, got.len), "tagged");
  EXPECT_EQ(source, b.peer);
  EXPECT_TRUE(stays_empty(b.rx_cq[0], 0.02));
  // A tagged message to context 0 does not match context 1's receive.
  char at_zero[16] = {};
  ASSERT_EQ(fi_trecv(b.rx[0], at_zero, sizeof(at_zero), nullptr, FI_ADDR_UNSPEC, 0x78, 0, at_zero),
            0);
  ASSERT_EQ(fi_tsend(a.tx[0], "zero", 4, nullptr, fi_rx_addr(a.peer, 0, kRxCtxBits), 0x78, nullptr),
            0);
  ASSERT_EQ(poll(b.rx_cq[0], &got, &source, a.tx_cq[0], &sent_ret), 1);
  EXPECT_EQ(sent_ret, 1);
  EXPECT_EQ(got.op_context, at_zero);
  EXPECT_EQ(std::string(at_zero, got.len), "zero");
  EXPECT_TRUE(stays_empty(b.rx_cq[1], 0.02)) << "the receive for nobody took nothing";
}

// RMA from a transmit context to a named receive context: writes land in
// the target's region, reads bring it back.
TEST_F(ScalableEp, RmaThroughContexts) {
  Side& a = sides_[0];
  Side& b = sides_[1];
  std::vector<uint8_t> region(8192, 0);
  fid_mr* mr = nullptr;
  ASSERT_EQ(fi_mr_reg(b.domain, region.data(), region.size(), FI_REMOTE_READ | FI_REMOTE_WRITE, 0,
                      0, 0, &mr, nullptr),
            0);
  const uint64_t key = fi_mr_key(mr);
  const uint64_t base = reinterpret_cast<uint64_t>(region.data());
  std::vector<uint8_t> out(3000);
  for (size_t k = 0; k < out.size(); ++k) out[k] = static_cast<uint8_t>(k * 7 + 3);
  fi_cq_tagged_entry done{};
  ASSERT_EQ(fi_write(a.tx[0], out.data(), out.size(), nullptr, fi_rx_addr(a.peer, 1, kRxCtxBits),
                     base + 100, key, &out),
            0);
  ASSERT_EQ(poll(a.tx_cq[0], &done, nullptr, b.rx_cq[1]), 1);
  EXPECT_EQ(done.op_context, &out);
  EXPECT_EQ(std::memcmp(region.data() + 100, out.data(), out.size()), 0);
  std::vector<uint8_t> back(out.size(), 0);
  ASSERT_EQ(fi_read(a.tx[1], back.data(), back.size(), nullptr, fi_rx_addr(a.peer, 0, kRxCtxBits),
                    base + 100, key, &back),
            0);
  ASSERT_EQ(poll(a.tx_cq[1], &done, nullptr, b.rx_cq[0]), 1);
  EXPECT_EQ(done.op_context, &back);
  EXPECT_EQ(back, out);
  // A receive context initiates nothing.
  EXPECT_EQ(fi_write(b.rx[0], out.data(), 8, nullptr, b.peer, 0, 0, nullptr), -FI_EOPNOTSUPP);
  EXPECT_EQ(fi_read(b.rx[0], back.data(), 8, nullptr, b.peer, 0, 0, nullptr), -FI_EOPNOTSUPP);
  EXPECT_EQ(fi_close(&mr->fid), 0);
}

// A transmit context only sends and a receive context only receives; the
// scalable endpoint itself moves no data (fi_endpoint(3)).
TEST_F(ScalableEp, CallsOfTheOtherKindAreRefused) {
  Side& a = sides_[0];
  char buffer[8];
  EXPECT_EQ(fi_recv(a.tx[0], buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, nullptr),
            -FI_EOPNOTSUPP);
  EXPECT_EQ(fi_trecv(a.tx[0], buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, 1, 0, nullptr),
            -FI_EOPNOTSUPP);
  EXPECT_EQ(fi_send(a.rx[0], "x", 1, nullptr, a.peer, nullptr), -FI_EOPNOTSUPP);
  EXPECT_EQ(fi_inject(a.rx[0], "x", 1, a.peer), -FI_EOPNOTSUPP);
  EXPECT_EQ(fi_tsend(a.rx[0], "x", 1, nullptr, a.peer, 1, nullptr), -FI_EOPNOTSUPP);
  EXPECT_EQ(fi_send(a.sep, "x", 1, nullptr, a.peer, nullptr), -FI_EOPNOTSUPP);
  EXPECT_EQ(fi_recv(a.sep, buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, nullptr),
            -FI_EOPNOTSUPP);
  EXPECT_EQ(fi_tsend(a.sep, "x", 1, nullptr, a.peer, 1, nullptr), -FI_EOPNOTSUPP);
  EXPECT_EQ(fi_read(a.sep, buffer, 8, nullptr, a.peer, 0, 0, nullptr), -FI_EOPNOTSUPP);
  // Bindings: a context takes CQs and counters of its own direction, and
  // no AV (its scalable endpoint's is its own); the scalable endpoint binds
  // only an AV, once.
  fid_cq* cq = open_cq(a.domain);
  ASSERT_NE(cq, nullptr);
  fid_ep* tx = nullptr;
  fid_ep* rx = nullptr;
  fid_ep* sep = nullptr;
  fi_info* info = fi_dupinfo(a.info);
  std::free(info->src_addr);
  info->src_addr = nullptr;
  info->src_addrlen = 0;
  ASSERT_EQ(fi_scalable_ep(a.domain, info, &sep, nullptr), 0);
  ASSERT_EQ(fi_tx_context(sep, 0, nullptr, &tx, nullptr), 0);
  ASSERT_EQ(fi_rx_context(sep, 0, nullptr, &rx, nullptr), 0);
  EXPECT_EQ(fi_ep_bind(tx, &cq->fid, FI_RECV), -FI_EINVAL);
  EXPECT_EQ(fi_ep_bind(rx, &cq->fid, FI_TRANSMIT), -FI_EINVAL);
  EXPECT_EQ(fi_ep_bind(tx, &a.av->fid, 0), -FI_EINVAL);
  EXPECT_EQ(fi_scalable_ep_bind(sep, &cq->fid, FI_TRANSMIT), -FI_EINVAL);
  EXPECT_EQ(fi_enable(tx), -FI_ENOAV) << "the scalable endpoint has no AV yet";
  EXPECT_EQ(fi_enable(sep), -FI_ENOAV);
  ASSERT_EQ(fi_scalable_ep_bind(sep, &a.av->fid, 0), 0);
  EXPECT_EQ(fi_scalable_ep_bind(sep, &a.av->fid, 0), -FI_EALREADY);
  ASSERT_EQ(fi_ep_bind(tx, &cq->fid, FI_TRANSMIT), 0);
  EXPECT_EQ(fi_enable(tx), 0) << "contexts opened before the AV bind take it too";
  EXPECT_EQ(fi_close(&tx->fid), 0);
  EXPECT_EQ(fi_close(&rx->fid), 0);
  EXPECT_EQ(fi_close(&sep->fid), 0);
  EXPECT_EQ(fi_close(&cq->fid), 0);
  fi_freeinfo(info);
}

// Context indices run from 0 to the count; one context per index at a time.
// Counts beyond max_ep_tx_ctx / max_ep_rx_ctx, FI_SHARED_CONTEXT, and more
// queue ids than the port has free are refused.
TEST_F(ScalableEp, IndicesAndCountsOutOfRangeAreRefused) {
  Side& a = sides_[0];
  fid_ep* ctx = nullptr;
  EXPECT_EQ(fi_tx_context(a.sep, kContexts, nullptr, &ctx, nullptr), -FI_EINVAL);
  EXPECT_EQ(fi_rx_context(a.sep, kContexts, nullptr, &ctx, nullptr), -FI_EINVAL);
  EXPECT_EQ(fi_tx_context(a.sep, -1, nullptr, &ctx, nullptr), -FI_EINVAL);
  EXPECT_EQ(fi_tx_context(a.sep, 0, nullptr, &ctx, nullptr), -FI_EBUSY) << "already open";
  EXPECT_EQ(fi_rx_context(a.sep, 1, nullptr, &ctx, nullptr), -FI_EBUSY);
  // An attr asking for more than the scalable endpoint has.
  fi_tx_attr tx_attr = *a.info->tx_attr;
  tx_attr.caps = FI_ATOMIC;
  fid_ep* sep = nullptr;
  fi_info* info = fi_dupinfo(a.info);
  std::free(info->src_addr);
  info->src_addr = nullptr;
  info->src_addrlen = 0;
  ASSERT_EQ(fi_scalable_ep(a.domain, info, &sep, nullptr), 0);
  EXPECT_EQ(fi_tx_context(sep, 0, &tx_attr, &ctx, nullptr), -FI_EINVAL);
  tx_attr = *a.info->tx_attr;
  tx_attr.size = a.info->tx_attr->size + 1;
  EXPECT_EQ(fi_tx_context(sep, 0, &tx_attr, &ctx, nullptr), -FI_EINVAL);
  // A narrower one is given, and the attributes come back.
  tx_attr = *a.info->tx_attr;
  tx_attr.caps = FI_MSG | FI_SEND;
  tx_attr.op_flags = FI_COMPLETION;
  ASSERT_EQ(fi_tx_context(sep, 0, &tx_attr, &ctx, nullptr), 0);
  EXPECT_EQ(tx_attr.caps, FI_MSG | FI_SEND);
  EXPECT_EQ(tx_attr.op_flags, uint64_t{FI_COMPLETION});
  EXPECT_EQ(tx_attr.size, a.info->tx_attr->size);
  EXPECT_EQ(fi_tsend(ctx, "x", 1, nullptr, a.peer, 1, nullptr), -FI_EOPNOTSUPP)
      << "the context was opened without FI_TAGGED";
  EXPECT_EQ(fi_close(&ctx->fid), 0);
  EXPECT_EQ(fi_close(&sep->fid), 0);

  for (size_t count : {size_t{33}, size_t{FI_SHARED_CONTEXT}}) {
    info->ep_attr->tx_ctx_cnt = count;
    EXPECT_EQ(fi_scalable_ep(a.domain, info, &sep, nullptr), -FI_EINVAL) << count;
    info->ep_attr->tx_ctx_cnt = 1;
    info->ep_attr->rx_ctx_cnt = count;
    EXPECT_EQ(fi_scalable_ep(a.domain, info, &sep, nullptr), -FI_EINVAL) << count;
    info->ep_attr->rx_ctx_cnt = 1;
  }
  fi_info* hints = hints_for(0);
  hints->ep_attr->rx_ctx_cnt = 33;
  fi_info* none = nullptr;
  EXPECT_EQ(fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &none), -FI_ENODATA);
  fi_freeinfo(none);
  fi_freeinfo(hints);

  // The fixture's scalable endpoint holds 4 of the port's 64 queue ids: 32
  // + 32 more do not fit, 30 + 30 do and leave none for an endpoint.
  info->ep_attr->tx_ctx_cnt = 32;
  info->ep_attr->rx_ctx_cnt = 32;
  EXPECT_EQ(fi_scalable_ep(a.domain, info, &sep, nullptr), -FI_ENOSPC);
  info->ep_attr->tx_ctx_cnt = 30;
  info->ep_attr->rx_ctx_cnt = 30;
  ASSERT_EQ(fi_scalable_ep(a.domain, info, &sep, nullptr), 0);
  fid_ep* plain = nullptr;
  EXPECT_EQ(fi_endpoint(a.domain, info, &plain, nullptr), -FI_ENOSPC)
      << "the held queue ids are not given to endpoints";
  EXPECT_EQ(fi_close(&sep->fid), 0);
  ASSERT_EQ(fi_endpoint(a.domain, info, &plain, nullptr), 0);
  EXPECT_EQ(fi_close(&plain->fid), 0);
  fi_freeinfo(info);
}

// fi_endpoint(3) fi_close: "there must be no opened transmit contexts, or
// receive contexts ... the call will return -FI_EBUSY."  A context closed
// and opened again is a new incarnation: a send still addressed to the old
// one fails (FI_EIO, as for a peer that restarted), the next one arrives.
TEST_F(ScalableEp, CloseOrderAndReopenedContexts) {
  Side& a = sides_[0];
  Side& b = sides_[1];
  expect_delivered_to_context(0, 0, 1, "before");
  EXPECT_EQ(fi_close(&b.sep->fid), -FI_EBUSY);
  ASSERT_EQ(fi_close(&b.rx[1]->fid), 0);
  b.rx[1] = nullptr;
  EXPECT_EQ(fi_close(&b.sep->fid), -FI_EBUSY) << "three contexts still open";
  open_context(&b, false, 1);
  char buffer[16] = {};
  ASSERT_EQ(fi_recv(b.rx[1], buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, buffer), 0);
  ASSERT_EQ(fi_send(a.tx[0], "stale", 5, nullptr, fi_rx_addr(a.peer, 1, kRxCtxBits), nullptr), 0);
  fi_cq_tagged_entry entry{};
  ASSERT_EQ(poll(a.tx_cq[0], &entry, nullptr, b.tx_cq[0]), -FI_EAVAIL);
  fi_cq_err_entry error{};
  ASSERT_EQ(fi_cq_readerr(a.tx_cq[0], &error, 0), 1);
  EXPECT_EQ(error.err, FI_EIO);
  EXPECT_TRUE(stays_empty(b.rx_cq[1], 0.02))
      << "the new context received nothing meant for the old one";
  ASSERT_EQ(fi_send(a.tx[0], "fresh", 5, nullptr, fi_rx_addr(a.peer, 1, kRxCtxBits), nullptr), 0);
  fi_addr_t source = FI_ADDR_UNSPEC;
  ssize_t a_ret = -FI_EAGAIN;
  ASSERT_EQ(poll(b.rx_cq[1], &entry, &source, a.tx_cq[0], &a_ret), 1);
  EXPECT_EQ(a_ret, 1);
  EXPECT_EQ(std::string(buffer, entry.len), "fresh");
  EXPECT_EQ(source, b.peer);
  for (int i = 0; i < kContexts; ++i) {
    ASSERT_EQ(fi_close(&b.tx[i]->fid), 0);
    ASSERT_EQ(fi_close(&b.rx[i]->fid), 0);
    b.tx[i] = b.rx[i] = nullptr;
  }
  EXPECT_EQ(fi_close(&b.sep->fid), 0);
  b.sep = nullptr;
}

// A plain endpoint is receive context 0 of its own address: it reaches
// receive context 0 of a scalable endpoint, and a transmit context reaches
// it; each side's FI_SOURCE names the other.
TEST_F(ScalableEp, PlainEndpointTalksToReceiveContextZero) {
  Side& a = sides_[0];
  Side& b = sides_[1];
  fi_info* info = fi_dupinfo(a.info);
  std::free(info->src_addr);
  info->src_addr = nullptr;
  info->src_addrlen = 0;
  fid_ep* plain = nullptr;
  fid_cq* cq = open_cq(a.domain);
  ASSERT_NE(cq, nullptr);
  ASSERT_EQ(fi_endpoint(a.domain, info, &plain, nullptr), 0);
  fi_freeinfo(info);
  ASSERT_EQ(fi_ep_bind(plain, &a.av->fid, 0), 0);
  ASSERT_EQ(fi_ep_bind(plain, &cq->fid, FI_TRANSMIT | FI_RECV), 0);
  ASSERT_EQ(fi_enable(plain), 0);
  uint8_t name[64];
  size_t len = sizeof(name);
  ASSERT_EQ(fi_getname(&plain->fid, name, &len), 0);
  fi_addr_t plain_in_b = FI_ADDR_NOTAVAIL;
  ASSERT_EQ(fi_av_insert(b.av, name, 1, &plain_in_b, 0, nullptr), 1);

  char buffer[16] = {};
  ASSERT_EQ(fi_recv(b.rx[0], buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, buffer), 0);
  ASSERT_EQ(fi_send(plain, "plain", 5, nullptr, a.peer, nullptr), 0);
  fi_cq_tagged_entry entry{};
  fi_addr_t source = FI_ADDR_UNSPEC;
  ssize_t sent_ret = -FI_EAGAIN;
  ASSERT_EQ(poll(b.rx_cq[0], &entry, &source, cq, &sent_ret), 1);
  EXPECT_EQ(sent_ret, 1);
  EXPECT_EQ(std::string(buffer, entry.len), "plain");
  EXPECT_EQ(source, plain_in_b);

  char back[16] = {};
  ASSERT_EQ(fi_recv(plain, back, sizeof(back), nullptr, FI_ADDR_UNSPEC, back), 0);
  ASSERT_EQ(fi_send(b.tx[1], "back", 4, nullptr, fi_rx_addr(plain_in_b, 0, kRxCtxBits), nullptr),
            0);
  ASSERT_EQ(poll(cq, &entry, &source, b.tx_cq[1], &sent_ret), 1);
  EXPECT_EQ(sent_ret, 1);
  EXPECT_EQ(entry.op_context, back);
  EXPECT_EQ(std::string(back, entry.len), "back");
  EXPECT_EQ(source, a.peer) << "b's transmit context 1 is known by b's scalable endpoint";
  EXPECT_EQ(fi_close(&plain->fid), 0);
  EXPECT_EQ(fi_close(&cq->fid), 0);
}

// fi_getinfo(3) FI_SOURCE: an info whose src_addr names queue 40 gives the
// scalable endpoint base 40 (its name says so), and the queue ids it holds
// are not given to an endpoint that asks for one of them.
TEST_F(ScalableEp, SourceAddressPicksTheBaseQueue) {
  auto info_at = [](const char* service) {
    fi_info* hints = hints_for(0);
    fi_info* info = nullptr;
    EXPECT_EQ(fi_getinfo(FI_VERSION(1, 17), nullptr, service, FI_SOURCE, hints, &info), 0);
    fi_freeinfo(hints);
    return info;
  };
  fi_info* at40 = info_at("40");
  ASSERT_NE(at40, nullptr);
  fid_ep* sep = nullptr;
  ASSERT_EQ(fi_scalable_ep(sides_[0].domain, at40, &sep, nullptr), 0);
  uint8_t name[16];
  size_t len = sizeof(name);
  ASSERT_EQ(fi_getname(&sep->fid, name, &len), 0);
  ASSERT_EQ(len, sizeof(name));
  EXPECT_EQ((name[8] << 8) | name[9], 40) << "native address: queue, big-endian, at byte 8";
  EXPECT_EQ(name[12] | name[13] | name[14] | name[15], 0) << "no session";
  fid_ep* again = nullptr;
  EXPECT_EQ(fi_scalable_ep(sides_[0].domain, at40, &again, nullptr), -FI_EADDRINUSE);
  fi_info* at42 = info_at("42");
  ASSERT_NE(at42, nullptr);
  fid_ep* plain = nullptr;
  EXPECT_EQ(fi_endpoint(sides_[0].domain, at42, &plain, nullptr), -FI_EADDRINUSE);
  EXPECT_EQ(fi_close(&sep->fid), 0);
  ASSERT_EQ(fi_endpoint(sides_[0].domain, at42, &plain, nullptr), 0);
  EXPECT_EQ(fi_close(&plain->fid), 0);
  fi_freeinfo(at40);
  fi_freeinfo(at42);
}

}  // namespace
}  // namespace ofi_dpdk::test

int main(int argc, char** argv) {
  return ofi_dpdk::test::run_over_crossed_ports(argc, argv, "sep");
}
