// dpdk_rma.cc: fi_rma(3).  Every RMA operation is a transport request
// (lib/proto engine_rma.cc): the initiator sends a RemoteOp header (plus the
// data of a write); the target (lib/remote's Target, over the TargetHost
// below) checks the key, the range and the access of the region before any
// byte moves, does the copy, and answers with a status (and the data of a
// read).  The request rides the ordinary stream, so it is executed once
// however often it was retransmitted, and in order with the messages of the
// same sender.
//
// Error completions at the initiator carry the target's verdict:
//   FI_EKEYREJECTED  no region with that key at the target
//   FI_EACCES        the region lacks FI_REMOTE_READ / FI_REMOTE_WRITE
//   FI_EFAULT        the range is not inside the region
//   FI_EOPNOTSUPP    the target endpoint has no FI_RMA / remote capability
//   FI_EINVAL        a malformed request
#include <endian.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "drivers/ofi/dpdk_av.h"
#include "drivers/ofi/dpdk_clock.h"
#include "drivers/ofi/dpdk_cntr.h"
#include "drivers/ofi/dpdk_cq.h"
#include "drivers/ofi/dpdk_domain.h"
#include "drivers/ofi/dpdk_endpoint.h"
#include "drivers/ofi/dpdk_engine_errno.h"
#include "drivers/ofi/dpdk_iov.h"
#include "drivers/ofi/dpdk_limits.h"
#include "drivers/ofi/dpdk_mr.h"
#include "drivers/ofi/dpdk_op_flags.h"
#include "drivers/ofi/dpdk_ops.h"
#include "drivers/ofi/dpdk_port.h"
#include "drivers/ofi/dpdk_remote_op.h"
#include "drivers/ofi/dpdk_trigger.h"

namespace ofi_dpdk::ofi {
namespace {

// The endpoint as lib/remote's Target sees it.  A region's counter
// (remote::Region::counter) is the Cntr fi_mr_bind attached (or null),
// which counts what modifies the region through an endpoint with
// FI_RMA_EVENT.
class TargetHost final : public remote::Host {
 public:
  // (The capabilities are the endpoint's for good from fi_endpoint on.)
  explicit TargetHost(Endpoint* ep) : ep_(ep), rma_event_(ep->has_cap(FI_RMA_EVENT)) {}

  uint64_t caps() const override { return ep_->info->caps; }
  void count_remote(bool as_write, void* region_counter, bool modified) override {
    Cntr* counter = as_write ? ep_->remote_write_cntr : ep_->remote_read_cntr;
    if (counter != nullptr) counter->add(1);
    if (modified && region_counter != nullptr && rma_event_)
      static_cast<Cntr*>(region_counter)->add(1);
  }
  bool may_lend_reads() const override { return ep_->remote_read_cntr == nullptr; }
  bool remote_cq_room() const override { return ep_->rx_cq == nullptr || !ep_->rx_cq->full(); }
  void remote_cq_data(uint64_t peer_key, uint64_t data, uint64_t length) override {
    if (ep_->rx_cq == nullptr) return;
    const fi_addr_t source = ep_->av != nullptr && ep_->has_cap(FI_SOURCE)
                                 ? ep_->av->lookup_source(peer_key)
                                 : FI_ADDR_NOTAVAIL;
    ep_->rx_cq->push({nullptr, FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA,
                      static_cast<size_t>(length), nullptr, data, 0, source});
  }

 private:
  Endpoint* ep_;
  const bool rma_event_;  // region counters count through this endpoint
};

}  // namespace

std::unique_ptr<remote::Host> make_target_host(Endpoint* ep) {
  return std::make_unique<TargetHost>(ep);
}

ssize_t Endpoint::remote(const fi_msg_rma& msg, uint64_t flags, bool write) {
  if (!enabled) return -FI_EOPBADSTATE;
  if (!has_cap(FI_RMA) || !has_cap(write ? FI_WRITE : FI_READ)) return -FI_EOPNOTSUPP;
  if (!usable_iov(msg.msg_iov, msg.iov_count, write ? "an RMA write" : "an RMA read"))
    return -FI_EINVAL;
  if (msg.rma_iov_count != 1 || msg.rma_iov == nullptr) return -FI_EINVAL;
  size_t local = 0;
  for (size_t i = 0; i < msg.iov_count; ++i) local += msg.msg_iov[i].iov_len;
  const fi_rma_iov& remote_iov = msg.rma_iov[0];
  if (remote_iov.len != local) return -FI_EINVAL;
  if (local > kMaxMsgSize - kRemoteOpSize) return -FI_EMSGSIZE;
  if ((flags & FI_INJECT) && local > info->tx_attr->inject_size) return -FI_EMSGSIZE;
  if (flags & FI_TRIGGER) {
    return trigger(msg.context, [kept = keep_iov(msg.msg_iov, msg.iov_count, flags), remote_iov,
                                 msg, flags, write](Endpoint& ep) {
      fi_msg_rma later = msg;
      later.msg_iov = kept.parts.data();
      later.iov_count = kept.parts.size();
      later.desc = nullptr;
      later.rma_iov = &remote_iov;
      return ep.remote(later, flags & ~FI_TRIGGER, write);
    });
  }
  // RMA and atomics match no receive: a peer group in msg.addr is ignored.
  proto::PeerAddress peer;
  if (const int ret = destination(msg.addr, &peer, nullptr); ret != 0) return ret;

  RemoteOp op{};
  op.kind = write ? RemoteKind::kWrite : RemoteKind::kRead;
  op.flags = write && (flags & FI_REMOTE_CQ_DATA) ? kRemoteHasData : 0;
  op.key = remote_iov.key;
  op.addr = remote_iov.addr;
  op.length = local;
  op.cq_data = msg.data;
  uint8_t header[kRemoteOpSize];
  encode(op, header);
  // The header is copied at the call; a write's data is sent from the
  // application's buffer, which fi_rma(3) leaves ours until the write
  // completes, except with FI_INJECT, where it is copied too.
  iovec request_iov[kIovLimit + 1];
  request_iov[0] = {header, kRemoteOpSize};
  size_t count = 1;
  if (write)
    for (size_t i = 0; i < msg.iov_count; ++i) request_iov[count++] = msg.msg_iov[i];

  proto::SendRequest request;
  request.iov = request_iov;
  request.iov_count = count;
  request.context = msg.context;
  request.user_flags = FI_RMA | (write ? FI_WRITE : FI_READ);
  request.copy_header = write && !(flags & FI_INJECT);
  if (!write) {
    std::copy(msg.msg_iov, msg.msg_iov + msg.iov_count, request.response_iov);
    request.response_iov_count = msg.iov_count;
  }
  return send_request(*this, peer, request, write ? write_cntr : read_cntr, flags);
}

ssize_t send_request(Endpoint& ep, const proto::PeerAddress& peer, proto::SendRequest& request,
                     Cntr* counter, uint64_t flags) {
  request.copy = !request.copy_header;
  request.request = true;
  const bool cq_entry = ep.tx_cq != nullptr && wants_completion(ep.tx_selective, flags);
  request.completion = cq_entry || counter != nullptr;
  if (!cq_entry) request.user_flags |= kNoCqEntry;
  const int ret = engine_call([&] { return ep.engine->send(peer, request, now_ns()); });
  if (ret == -EAGAIN)
    ep.port().progress_if_manual(ep.lane.load(std::memory_order_relaxed), now_ns());
  ep.flush_unless_held();
  return engine_errno(ret);
}

namespace {

ssize_t rma_call(fid_ep* ep_fid, const iovec* iov, size_t count, fi_addr_t peer, uint64_t addr,
                 uint64_t key, void* context, uint64_t flags, uint64_t data, bool write) {
  Endpoint* ep = endpoint_of(ep_fid);
  fi_rma_iov remote{addr, 0, key};
  for (size_t i = 0; i < count && iov != nullptr; ++i) remote.len += iov[i].iov_len;
  fi_msg_rma msg{};
  msg.msg_iov = iov;
  msg.iov_count = count;
  msg.addr = peer;
  msg.rma_iov = &remote;
  msg.rma_iov_count = 1;
  msg.context = context;
  msg.data = data;
  LaneGuard guard(ep->port(), ep->lane);
  return ep->remote(msg, flags, write);
}

ssize_t rma_read(fid_ep* ep, void* buf, size_t len, void*, fi_addr_t src, uint64_t addr,
                 uint64_t key, void* context) {
  iovec iov{buf, len};
  return rma_call(ep, &iov, 1, src, addr, key, context, caller_of(ep).tx_op_flags, 0, false);
}

ssize_t rma_readv(fid_ep* ep, const iovec* iov, void**, size_t count, fi_addr_t src, uint64_t addr,
                  uint64_t key, void* context) {
  return rma_call(ep, iov, count, src, addr, key, context, caller_of(ep).tx_op_flags, 0, false);
}

constexpr uint64_t kRmaMsgFlags = FI_COMPLETION | FI_MORE | FI_INJECT | FI_REMOTE_CQ_DATA |
                                  FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE |
                                  FI_FENCE | FI_TRIGGER;

ssize_t rma_readmsg(fid_ep* ep_fid, const fi_msg_rma* msg, uint64_t flags) {
  if (msg == nullptr) return -FI_EINVAL;
  if (flags & ~kRmaMsgFlags) return -FI_EBADFLAGS;
  if (flags & (FI_INJECT | FI_REMOTE_CQ_DATA)) return -FI_EINVAL;  // meaningless for a read
  Endpoint* ep = endpoint_of(ep_fid);
  LaneGuard guard(ep->port(), ep->lane);
  return ep->remote(*msg, flags, false);
}

ssize_t rma_write(fid_ep* ep, const void* buf, size_t len, void*, fi_addr_t dest, uint64_t addr,
                  uint64_t key, void* context) {
  iovec iov{const_cast<void*>(buf), len};
  return rma_call(ep, &iov, 1, dest, addr, key, context, caller_of(ep).tx_op_flags, 0, true);
}

ssize_t rma_writev(fid_ep* ep, const iovec* iov, void**, size_t count, fi_addr_t dest,
                   uint64_t addr, uint64_t key, void* context) {
  return rma_call(ep, iov, count, dest, addr, key, context, caller_of(ep).tx_op_flags, 0, true);
}

ssize_t rma_writemsg(fid_ep* ep_fid, const fi_msg_rma* msg, uint64_t flags) {
  if (msg == nullptr) return -FI_EINVAL;
  if (flags & ~kRmaMsgFlags) return -FI_EBADFLAGS;
  Endpoint* ep = endpoint_of(ep_fid);
  LaneGuard guard(ep->port(), ep->lane);
  return ep->remote(*msg, flags, true);
}

ssize_t rma_inject(fid_ep* ep, const void* buf, size_t len, fi_addr_t dest, uint64_t addr,
                   uint64_t key) {
  iovec iov{const_cast<void*>(buf), len};
  return rma_call(ep, &iov, 1, dest, addr, key, nullptr, FI_INJECT | kNoCompletion, 0, true);
}

ssize_t rma_writedata(fid_ep* ep, const void* buf, size_t len, void*, uint64_t data, fi_addr_t dest,
                      uint64_t addr, uint64_t key, void* context) {
  iovec iov{const_cast<void*>(buf), len};
  return rma_call(ep, &iov, 1, dest, addr, key, context,
                  caller_of(ep).tx_op_flags | FI_REMOTE_CQ_DATA, data, true);
}

ssize_t rma_injectdata(fid_ep* ep, const void* buf, size_t len, uint64_t data, fi_addr_t dest,
                       uint64_t addr, uint64_t key) {
  iovec iov{const_cast<void*>(buf), len};
  return rma_call(ep, &iov, 1, dest, addr, key, nullptr,
                  FI_INJECT | FI_REMOTE_CQ_DATA | kNoCompletion, data, true);
}

}  // namespace

fi_ops_rma g_rma_ops = {
    .size = sizeof(fi_ops_rma),
    .read = rma_read,
    .readv = rma_readv,
    .readmsg = rma_readmsg,
    .write = rma_write,
    .writev = rma_writev,
    .writemsg = rma_writemsg,
    .inject = rma_inject,
    .writedata = rma_writedata,
    .injectdata = rma_injectdata,
};

}  // namespace ofi_dpdk::ofi
