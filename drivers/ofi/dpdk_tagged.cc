// dpdk_tagged.cc: fi_tagged(3) on RDM endpoints.  Tagged messages travel as
// the wire's TAGGED opcode through the same send and receive path as
// fi_msg(3) (Endpoint::send / Endpoint::post_recv in dpdk_msg.cc); the
// transport matches them by tag and ignore mask, in posting order, and never
// against untagged receives (lib/proto/receiver.cc).  fi_trecvmsg's FI_PEEK,
// FI_CLAIM and FI_DISCARD map onto Engine::peek_recv and Engine::claim_recv.
//
// Choices where fi_tagged(3) leaves room:
//   - A peek returns no data: its completion has buf NULL and len the
//     message's length (the man page allows NULL "even if the peek operation
//     completes successfully").  A message counts as arrived once its first
//     segment has: its length, tag and CQ data are known then.
//   - A peek always writes its completion, with or without FI_COMPLETION on
//     a selective CQ: the completion is the peek's only result.  It needs a
//     receive CQ (-FI_ENOCQ otherwise), and runs a progress pass first
//     (manual progress) so messages already on the port are seen.
//   - FI_PEEK|FI_DISCARD completes like a peek (len = message length);
//     FI_CLAIM|FI_DISCARD completes with len 0 and buf NULL.
//   - FI_CLAIM needs a context (fi_tagged(3): a struct fi_context); NULL is
//     -FI_EINVAL, and so is an FI_CLAIM whose context reserved no message.
//   - FI_DELIVERY_COMPLETE is taken, as fi_sendmsg takes it: the send
//     completes on the receiver's delivery notice, once a receive took the
//     message whole (doc/wire-protocol.md).  FI_MATCH_COMPLETE ("matched
//     with a tagged buffer or discarded") is given the same way: the notice
//     comes when a receive took the message or FI_DISCARD dropped it,
//     which is never before it matched.
#include <cstring>

#include "drivers/ofi/dpdk_clock.h"
#include "drivers/ofi/dpdk_endpoint.h"
#include "drivers/ofi/dpdk_iov.h"
#include "drivers/ofi/dpdk_limits.h"
#include "drivers/ofi/dpdk_op_flags.h"
#include "drivers/ofi/dpdk_ops.h"
#include "drivers/ofi/dpdk_port.h"

namespace ofi_dpdk::ofi {
namespace {

constexpr uint64_t kTsendmsgFlags = FI_COMPLETION | FI_INJECT | FI_INJECT_COMPLETE |
                                    FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE |
                                    FI_MATCH_COMPLETE | FI_REMOTE_CQ_DATA | FI_MORE | FI_TRIGGER;
// fi_msg(3)'s receive flags (as msg_recvmsg takes them) plus the tagged ones.
constexpr uint64_t kTrecvmsgFlags = FI_COMPLETION | FI_MORE | FI_REMOTE_CQ_DATA |
                                    FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE | FI_PEEK | FI_CLAIM |
                                    FI_DISCARD | kAuthKeyFlag | FI_MULTI_RECV | FI_TRIGGER;
constexpr uint64_t kMatchFlags = FI_PEEK | FI_CLAIM | FI_DISCARD;

// The endpoint was opened with FI_TAGGED and, when it names modifiers at
// all, the one for this direction (fi_getinfo(3): no modifier means all).
bool allowed(const Endpoint* ep, uint64_t direction) {
  if (!ep->has_cap(FI_TAGGED)) return false;
  return !ep->has_cap(FI_SEND | FI_RECV) || ep->has_cap(direction);
}

size_t iov_length(const iovec* iov, size_t count) {
  size_t length = 0;
  for (size_t i = 0; i < count; ++i) length += iov[i].iov_len;
  return length;
}

// Every send variant ends here.  Returns what Endpoint::send does, or
// -FI_EOPNOTSUPP without FI_TAGGED, -FI_EINVAL for a bad iov,
// -FI_EMSGSIZE for an inject above inject_size.
ssize_t tagged_send(fid_ep* ep_fid, const iovec* iov, size_t count, fi_addr_t dest, void* context,
                    uint64_t flags, uint64_t data, uint64_t tag) {
  Endpoint* ep = endpoint_of(ep_fid);
  if (!allowed(ep, FI_SEND)) return -FI_EOPNOTSUPP;
  if (!usable_iov(iov, count, "a tagged send")) return -FI_EINVAL;
  if ((flags & FI_INJECT) && iov_length(iov, count) > ep->info->tx_attr->inject_size)
    return -FI_EMSGSIZE;
  LaneGuard guard(ep->port(), ep->lane);
  return ep->send(iov, count, dest, context, flags, data, true, tag);
}

ssize_t tagged_sendv(fid_ep* ep_fid, const iovec* iov, void** /*desc*/, size_t count,
                     fi_addr_t dest_addr, uint64_t tag, void* context) {
  const uint64_t flags = caller_of(ep_fid).tx_op_flags;
  return tagged_send(ep_fid, iov, count, dest_addr, context, flags, 0, tag);
}

ssize_t tagged_tsend(fid_ep* ep_fid, const void* buf, size_t len, void* desc, fi_addr_t dest_addr,
                     uint64_t tag, void* context) {
  iovec iov{const_cast<void*>(buf), len};
  return tagged_sendv(ep_fid, &iov, &desc, 1, dest_addr, tag, context);
}

ssize_t tagged_sendmsg(fid_ep* ep_fid, const fi_msg_tagged* msg, uint64_t flags) {
  if (msg == nullptr) return -FI_EINVAL;
  if (flags & ~kTsendmsgFlags) return -FI_EBADFLAGS;
  return tagged_send(ep_fid, msg->msg_iov, msg->iov_count, msg->addr, msg->context, flags,
                     msg->data, msg->tag);
}

ssize_t tagged_senddata(fid_ep* ep_fid, const void* buf, size_t len, void* /*desc*/, uint64_t data,
                        fi_addr_t dest_addr, uint64_t tag, void* context) {
  iovec iov{const_cast<void*>(buf), len};
  const uint64_t flags = caller_of(ep_fid).tx_op_flags | FI_REMOTE_CQ_DATA;
  return tagged_send(ep_fid, &iov, 1, dest_addr, context, flags, data, tag);
}

ssize_t tagged_inject(fid_ep* ep_fid, const void* buf, size_t len, fi_addr_t dest_addr,
                      uint64_t tag) {
  iovec iov{const_cast<void*>(buf), len};
  return tagged_send(ep_fid, &iov, 1, dest_addr, nullptr, FI_INJECT | kNoCompletion, 0, tag);
}

ssize_t tagged_injectdata(fid_ep* ep_fid, const void* buf, size_t len, uint64_t data,
                          fi_addr_t dest_addr, uint64_t tag) {
  iovec iov{const_cast<void*>(buf), len};
  return tagged_send(ep_fid, &iov, 1, dest_addr, nullptr,
                     FI_INJECT | FI_REMOTE_CQ_DATA | kNoCompletion, data, tag);
}

ssize_t tagged_recvv(fid_ep* ep_fid, const iovec* iov, void** /*desc*/, size_t count,
                     fi_addr_t src_addr, uint64_t tag, uint64_t ignore, void* context) {
  const Caller caller = caller_of(ep_fid);
  Endpoint* ep = caller.ep;
  if (!allowed(ep, FI_RECV)) return -FI_EOPNOTSUPP;
  if (!usable_iov(iov, count, "a tagged receive")) return -FI_EINVAL;
  LaneGuard guard(ep->port(), ep->lane);
  return ep->post_recv(iov, count, src_addr, context, caller.rx_op_flags & ~kMatchFlags, true, tag,
                       ignore);
}

ssize_t tagged_recv(fid_ep* ep_fid, void* buf, size_t len, void* desc, fi_addr_t src_addr,
                    uint64_t tag, uint64_t ignore, void* context) {
  iovec iov{buf, len};
  return tagged_recvv(ep_fid, &iov, &desc, 1, src_addr, tag, ignore, context);
}

// The receive request of a peek or claim, as Endpoint::post_recv builds
// one.  Lock held.  Returns 0 or -FI_EINVAL for an unknown source.
int match_request(Endpoint* ep, const fi_msg_tagged& msg, uint64_t flags,
                  proto::RecvRequest* request) {
  std::copy(msg.msg_iov, msg.msg_iov + msg.iov_count, request->iov);
  request->iov_count = msg.iov_count;
  request->context = msg.context;
  request->user_flags = FI_RECV | FI_TAGGED;
  request->tagged = true;
  request->tag = msg.tag;
  request->ignore = msg.ignore;
  const bool cq_entry = ep->rx_cq != nullptr && wants_completion(ep->rx_selective, flags);
  request->completion = cq_entry || ep->recv_cntr != nullptr;
  if (!cq_entry) request->user_flags |= kNoCqEntry;
  return ep->receive_filter(msg.addr, flags, request);
}

// FI_PEEK (with FI_CLAIM or FI_DISCARD), or FI_CLAIM (with FI_DISCARD).
ssize_t tagged_match_op(Endpoint* ep, const fi_msg_tagged& msg, uint64_t flags) {
  const bool peek = flags & FI_PEEK, claim = flags & FI_CLAIM, discard = flags & FI_DISCARD;
  if (peek && claim && discard) return -FI_EBADFLAGS;
  if (claim && msg.context == nullptr) return -FI_EINVAL;  // the claim's key
  LaneGuard guard(ep->port(), ep->lane);
  if (!ep->enabled) return -FI_EOPBADSTATE;
  if (peek && ep->rx_cq == nullptr) return -FI_ENOCQ;
  proto::RecvRequest request;
  if (const int ret = match_request(ep, msg, flags, &request)) return ret;
  int ret;
  if (peek) {
    // The peek's completion is its answer: always written.
    request.completion = true;
    request.user_flags &= ~kNoCqEntry;
    ep->port().progress_if_manual(ep->lane.load(std::memory_order_relaxed), now_ns());
    const auto action = claim     ? proto::Engine::PeekAction::kClaim
                        : discard ? proto::Engine::PeekAction::kDiscard
                                  : proto::Engine::PeekAction::kPeek;
    ret = ep->engine->peek_recv(request, action);
  } else {
    ret = ep->engine->claim_recv(request, discard);
  }
  ep->flush();
  return ret == 0 ? 0 : -FI_EINVAL;
}

ssize_t tagged_recvmsg(fid_ep* ep_fid, const fi_msg_tagged* msg, uint64_t flags) {
  if (msg == nullptr) return -FI_EINVAL;
  Endpoint* ep = endpoint_of(ep_fid);
  if (flags & ~kTrecvmsgFlags) return -FI_EBADFLAGS;
  // fi_tagged(3): FI_DISCARD goes with FI_PEEK or FI_CLAIM.
  if ((flags & FI_DISCARD) && !(flags & (FI_PEEK | FI_CLAIM))) return -FI_EBADFLAGS;
  // FI_MULTI_RECV is a posted buffer's (FI_TAGGED_MULTI_RECV, 2.x), never a peek's.
  if ((flags & FI_MULTI_RECV) && (flags & (FI_PEEK | FI_CLAIM))) return -FI_EBADFLAGS;
  if (!allowed(ep, FI_RECV)) return -FI_EOPNOTSUPP;
  // With FI_DISCARD the buffers are ignored (fi_tagged(3)).
  const bool ignore_buffers = flags & FI_DISCARD;
  fi_msg_tagged checked = *msg;
  if (ignore_buffers) {
    checked.msg_iov = nullptr;
    checked.iov_count = 0;
  } else if (!usable_iov(msg->msg_iov, msg->iov_count, "fi_trecvmsg")) {
    return -FI_EINVAL;
  }
  if (flags & (FI_PEEK | FI_CLAIM)) return tagged_match_op(ep, checked, flags);
  LaneGuard guard(ep->port(), ep->lane);
  return ep->post_recv(checked.msg_iov, checked.iov_count, checked.addr, checked.context, flags,
                       true, checked.tag, checked.ignore);
}

}  // namespace

fi_ops_tagged g_tagged_ops = {
    .size = sizeof(fi_ops_tagged),
    .recv = tagged_recv,
    .recvv = tagged_recvv,
    .recvmsg = tagged_recvmsg,
    .send = tagged_tsend,
    .sendv = tagged_sendv,
    .sendmsg = tagged_sendmsg,
    .inject = tagged_inject,
    .senddata = tagged_senddata,
    .injectdata = tagged_injectdata,
};

}  // namespace ofi_dpdk::ofi
