// dpdk_atomic.cc: fi_atomic(3).  An atomic is a transport request like an
// RMA (dpdk_rma.cc): the header names the datatype, the op and the class,
// the operands (and compare values) follow.  The target (lib/remote's
// Target) checks key, range and access, then applies the op through
// lib/atomic's dispatch table with real CPU atomics, so concurrent atomics
// from any peer or lcore on the same element never tear.  Fetch and compare atomics get the old
// values back in the response, which the transport keeps until acknowledged: a retransmitted
// request is never executed twice.
#include <algorithm>
#include <cstring>
#include <vector>

#include "drivers/ofi/dpdk_endpoint.h"
#include "drivers/ofi/dpdk_iov.h"
#include "drivers/ofi/dpdk_limits.h"
#include "drivers/ofi/dpdk_op_flags.h"
#include "drivers/ofi/dpdk_ops.h"
#include "drivers/ofi/dpdk_port.h"
#include "drivers/ofi/dpdk_remote_op.h"
#include "lib/atomic/atomic_table.h"

namespace ofi_dpdk::ofi {
namespace {

using atomic::Class;

RemoteKind kind_of(Class c) {
  return c == Class::kBase    ? RemoteKind::kAtomic
         : c == Class::kFetch ? RemoteKind::kFetchAtomic
                              : RemoteKind::kCompareAtomic;
}

// fi_atomicvalid and fi_query_atomic: what the target accepts (lib/remote).
int valid(fi_datatype datatype, fi_op op, Class c, size_t* size, size_t* count) {
  return remote::atomic_limits(datatype, op, c, size, count);
}

size_t total(const fi_ioc* iov, size_t count) {
  size_t elements = 0;
  for (size_t i = 0; i < count; ++i) elements += iov[i].count;
  return elements;
}

}  // namespace

ssize_t Endpoint::atomic_op(const fi_msg_atomic& msg, const fi_ioc* compare, size_t compare_count,
                            fi_ioc* result, size_t result_count, uint64_t flags, int op_class) {
  const auto c = static_cast<Class>(op_class);
  if (!enabled) return -FI_EOPBADSTATE;
  if (!has_cap(FI_ATOMIC) || !has_cap(c == Class::kBase ? FI_WRITE : FI_READ))
    return -FI_EOPNOTSUPP;
  size_t size = 0, max_count = 0;
  if (int ret = valid(msg.datatype, msg.op, c, &size, &max_count); ret != 0) return ret;
  if (msg.iov_count > kIovLimit || compare_count > kIovLimit || result_count > kIovLimit)
    return -FI_EINVAL;
  if (!usable_ioc(msg.msg_iov, msg.iov_count, "an atomic's operands") ||
      !usable_ioc(compare, compare_count, "an atomic's compare values") ||
      !usable_ioc(result, result_count, "an atomic's results"))
    return -FI_EINVAL;
  if (msg.rma_iov_count != 1 || msg.rma_iov == nullptr) return -FI_EINVAL;
  const size_t operand_count = msg.msg_iov == nullptr ? 0 : total(msg.msg_iov, msg.iov_count);
  const bool no_operands = msg.op == FI_ATOMIC_READ && operand_count == 0;
  const size_t count = no_operands ? msg.rma_iov[0].count : operand_count;
  if (count == 0 || msg.rma_iov[0].count != count) return -FI_EINVAL;
  if (count > max_count) return -FI_EMSGSIZE;
  if (c == Class::kCompare && (compare == nullptr || total(compare, compare_count) != count))
    return -FI_EINVAL;
  if (c != Class::kBase && (result == nullptr || total(result, result_count) != count))
    return -FI_EINVAL;
  if ((flags & FI_INJECT) && count * size > info->tx_attr->inject_size) return -FI_EMSGSIZE;
  if (flags & FI_TRIGGER) {
    // Operands are copied when the operation is posted (below); until then
    // the arrays that name them are kept.
    std::vector<fi_ioc> operands(msg.msg_iov, msg.msg_iov + (msg.msg_iov ? msg.iov_count : 0));
    std::vector<fi_ioc> compares(compare, compare + (compare ? compare_count : 0));
    std::vector<fi_ioc> results(result, result + (result ? result_count : 0));
    std::shared_ptr<std::vector<uint8_t>> bytes;
    if ((flags & FI_INJECT) && !operands.empty()) {
      bytes = std::make_shared<std::vector<uint8_t>>();
      for (const fi_ioc& part : operands) {
        const auto* from = static_cast<const uint8_t*>(part.addr);
        bytes->insert(bytes->end(), from, from + part.count * size);
      }
      operands = {fi_ioc{bytes->data(), count}};
    }
    const fi_rma_ioc target = msg.rma_iov[0];
    return trigger(msg.context, [operands, compares, results, bytes, target, msg, flags,
                                 op_class](Endpoint& ep) mutable {
      fi_msg_atomic later = msg;
      later.msg_iov = operands.empty() ? nullptr : operands.data();
      later.iov_count = operands.size();
      later.desc = nullptr;
      later.rma_iov = &target;
      return ep.atomic_op(later, compares.empty() ? nullptr : compares.data(), compares.size(),
                          results.empty() ? nullptr : results.data(), results.size(),
                          flags & ~FI_TRIGGER, op_class);
    });
  }
  // RMA and atomics match no receive: a peer group in msg.addr is ignored.
  proto::PeerAddress peer;
  if (const int ret = destination(msg.addr, &peer, nullptr); ret != 0) return ret;

  RemoteOp op{};
  op.kind = kind_of(c);
  op.datatype = static_cast<uint16_t>(msg.datatype);
  op.op = static_cast<uint16_t>(msg.op);
  op.key = msg.rma_iov[0].key;
  op.addr = msg.rma_iov[0].addr;
  op.length = count;
  uint8_t header[kRemoteOpSize];
  encode(op, header);
  // Operands and compare values are copied at the call.  The engine takes
  // at most proto::kMaxIov parts; a compare atomic whose operand and
  // compare arrays together have more (up to 2 * kIovLimit) has them
  // gathered into one first.
  const size_t operand_parts = no_operands ? 0 : msg.iov_count;
  const size_t compare_parts = c == Class::kCompare ? compare_count : 0;
  iovec request_iov[proto::kMaxIov];
  std::vector<uint8_t> gathered;
  size_t parts = 0;
  request_iov[parts++] = {header, kRemoteOpSize};
  if (1 + operand_parts + compare_parts <= proto::kMaxIov) {
    for (size_t i = 0; i < operand_parts; ++i)
      request_iov[parts++] = {msg.msg_iov[i].addr, msg.msg_iov[i].count * size};
    for (size_t i = 0; i < compare_parts; ++i)
      request_iov[parts++] = {compare[i].addr, compare[i].count * size};
  } else {
    gathered.reserve((operand_parts == 0 ? 1 : 2) * count * size);
    auto append = [&](const fi_ioc& part) {
      const auto* from = static_cast<const uint8_t*>(part.addr);
      gathered.insert(gathered.end(), from, from + part.count * size);
    };
    std::for_each(msg.msg_iov, msg.msg_iov + operand_parts, append);
    std::for_each(compare, compare + compare_parts, append);
    request_iov[parts++] = {gathered.data(), gathered.size()};
  }

  proto::SendRequest request;
  request.iov = request_iov;
  request.iov_count = parts;
  request.context = msg.context;
  request.user_flags = FI_ATOMIC | (c == Class::kBase ? FI_WRITE : FI_READ);
  if (c != Class::kBase) {
    for (size_t i = 0; i < result_count; ++i)
      request.response_iov[i] = {result[i].addr, result[i].count * size};
    request.response_iov_count = result_count;
  }
  return send_request(*this, peer, request, c == Class::kBase ? write_cntr : read_cntr, flags);
}

namespace {

constexpr uint64_t kAtomicMsgFlags = FI_COMPLETION | FI_MORE | FI_INJECT | FI_INJECT_COMPLETE |
                                     FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE | FI_FENCE |
                                     FI_TRIGGER;

// The *msg calls' flags: 0, -FI_EOPNOTSUPP for FI_TAGGED (atomics on tagged
// receive buffers are not built; fi_query_atomic says the same), or
// -FI_EBADFLAGS for anything else fi_atomic(3) does not list.
int check_msg_flags(uint64_t flags) {
  if (flags & FI_TAGGED) return -FI_EOPNOTSUPP;
  return (flags & ~kAtomicMsgFlags) ? -FI_EBADFLAGS : 0;
}

ssize_t call(fid_ep* ep_fid, const fi_ioc* iov, size_t count, const fi_ioc* compare,
             size_t compare_count, fi_ioc* result, size_t result_count, fi_addr_t dest,
             uint64_t addr, uint64_t key, fi_datatype datatype, fi_op op, void* context,
             uint64_t flags, Class c) {
  Endpoint* ep = endpoint_of(ep_fid);
  fi_rma_ioc remote{addr, iov == nullptr ? 0 : total(iov, count), key};
  if (op == FI_ATOMIC_READ && remote.count == 0 && result != nullptr)
    remote.count = total(result, result_count);
  fi_msg_atomic msg{};
  msg.msg_iov = iov;
  msg.iov_count = count;
  msg.addr = dest;
  msg.rma_iov = &remote;
  msg.rma_iov_count = 1;
  msg.datatype = datatype;
  msg.op = op;
  msg.context = context;
  LaneGuard guard(ep->port(), ep->lane);
  return ep->atomic_op(msg, compare, compare_count, result, result_count, flags,
                       static_cast<int>(c));
}

// fi_atomic(3): a NULL buf with FI_ATOMIC_READ means no operands.
fi_ioc operand(const void* buf, size_t count) {
  return {const_cast<void*>(buf), buf == nullptr ? 0 : count};
}

ssize_t atomic_write(fid_ep* ep, const void* buf, size_t count, void*, fi_addr_t dest,
                     uint64_t addr, uint64_t key, fi_datatype datatype, fi_op op, void* context) {
  fi_ioc iov = operand(buf, count);
  return call(ep, &iov, 1, nullptr, 0, nullptr, 0, dest, addr, key, datatype, op, context,
              caller_of(ep).tx_op_flags, Class::kBase);
}

ssize_t atomic_writev(fid_ep* ep, const fi_ioc* iov, void**, size_t count, fi_addr_t dest,
                      uint64_t addr, uint64_t key, fi_datatype datatype, fi_op op, void* context) {
  return call(ep, iov, count, nullptr, 0, nullptr, 0, dest, addr, key, datatype, op, context,
              caller_of(ep).tx_op_flags, Class::kBase);
}

ssize_t atomic_writemsg(fid_ep* ep_fid, const fi_msg_atomic* msg, uint64_t flags) {
  if (msg == nullptr) return -FI_EINVAL;
  if (int ret = check_msg_flags(flags); ret != 0) return ret;
  Endpoint* ep = endpoint_of(ep_fid);
  LaneGuard guard(ep->port(), ep->lane);
  return ep->atomic_op(*msg, nullptr, 0, nullptr, 0, flags, static_cast<int>(Class::kBase));
}

ssize_t atomic_inject(fid_ep* ep, const void* buf, size_t count, fi_addr_t dest, uint64_t addr,
                      uint64_t key, fi_datatype datatype, fi_op op) {
  fi_ioc iov = operand(buf, count);
  return call(ep, &iov, 1, nullptr, 0, nullptr, 0, dest, addr, key, datatype, op, nullptr,
              FI_INJECT | kNoCompletion, Class::kBase);
}

ssize_t atomic_readwrite(fid_ep* ep, const void* buf, size_t count, void*, void* result, void*,
                         fi_addr_t dest, uint64_t addr, uint64_t key, fi_datatype datatype,
                         fi_op op, void* context) {
  fi_ioc iov = operand(buf, count);
  fi_ioc out{result, count};
  return call(ep, &iov, 1, nullptr, 0, &out, 1, dest, addr, key, datatype, op, context,
              caller_of(ep).tx_op_flags, Class::kFetch);
}

ssize_t atomic_readwritev(fid_ep* ep, const fi_ioc* iov, void**, size_t count, fi_ioc* resultv,
                          void**, size_t result_count, fi_addr_t dest, uint64_t addr, uint64_t key,
                          fi_datatype datatype, fi_op op, void* context) {
  return call(ep, iov, count, nullptr, 0, resultv, result_count, dest, addr, key, datatype, op,
              context, caller_of(ep).tx_op_flags, Class::kFetch);
}

ssize_t atomic_readwritemsg(fid_ep* ep_fid, const fi_msg_atomic* msg, fi_ioc* resultv, void**,
                            size_t result_count, uint64_t flags) {
  if (msg == nullptr) return -FI_EINVAL;
  if (int ret = check_msg_flags(flags); ret != 0) return ret;
  Endpoint* ep = endpoint_of(ep_fid);
  LaneGuard guard(ep->port(), ep->lane);
  return ep->atomic_op(*msg, nullptr, 0, resultv, result_count, flags,
                       static_cast<int>(Class::kFetch));
}

ssize_t atomic_compwrite(fid_ep* ep, const void* buf, size_t count, void*, const void* compare,
                         void*, void* result, void*, fi_addr_t dest, uint64_t addr, uint64_t key,
                         fi_datatype datatype, fi_op op, void* context) {
  fi_ioc iov = operand(buf, count);
  fi_ioc cmp{const_cast<void*>(compare), count};
  fi_ioc out{result, count};
  return call(ep, &iov, 1, &cmp, 1, &out, 1, dest, addr, key, datatype, op, context,
              caller_of(ep).tx_op_flags, Class::kCompare);
}

ssize_t atomic_compwritev(fid_ep* ep, const fi_ioc* iov, void**, size_t count,
                          const fi_ioc* comparev, void**, size_t compare_count, fi_ioc* resultv,
                          void**, size_t result_count, fi_addr_t dest, uint64_t addr, uint64_t key,
                          fi_datatype datatype, fi_op op, void* context) {
  return call(ep, iov, count, comparev, compare_count, resultv, result_count, dest, addr, key,
              datatype, op, context, caller_of(ep).tx_op_flags, Class::kCompare);
}

ssize_t atomic_compwritemsg(fid_ep* ep_fid, const fi_msg_atomic* msg, const fi_ioc* comparev,
                            void**, size_t compare_count, fi_ioc* resultv, void**,
                            size_t result_count, uint64_t flags) {
  if (msg == nullptr) return -FI_EINVAL;
  if (int ret = check_msg_flags(flags); ret != 0) return ret;
  Endpoint* ep = endpoint_of(ep_fid);
  LaneGuard guard(ep->port(), ep->lane);
  return ep->atomic_op(*msg, comparev, compare_count, resultv, result_count, flags,
                       static_cast<int>(Class::kCompare));
}

int valid_on(fid_ep* ep_fid, fi_datatype datatype, fi_op op, size_t* count, Class c) {
  if (count == nullptr) return -FI_EINVAL;
  if (!endpoint_of(ep_fid)->has_cap(FI_ATOMIC)) return -FI_EOPNOTSUPP;
  return valid(datatype, op, c, nullptr, count);
}

int atomic_writevalid(fid_ep* ep, fi_datatype datatype, fi_op op, size_t* count) {
  return valid_on(ep, datatype, op, count, Class::kBase);
}
int atomic_readwritevalid(fid_ep* ep, fi_datatype datatype, fi_op op, size_t* count) {
  return valid_on(ep, datatype, op, count, Class::kFetch);
}
int atomic_compwritevalid(fid_ep* ep, fi_datatype datatype, fi_op op, size_t* count) {
  return valid_on(ep, datatype, op, count, Class::kCompare);
}

}  // namespace

// fi_query_atomic (fi_atomic(3)): flags 0, FI_FETCH_ATOMIC or
// FI_COMPARE_ATOMIC (not both); FI_TAGGED asks about atomics on tagged
// messages, which we do not have.
int query_atomic(fid_domain*, fi_datatype datatype, fi_op op, fi_atomic_attr* attr,
                 uint64_t flags) {
  if (attr == nullptr) return -FI_EINVAL;
  if ((flags & FI_FETCH_ATOMIC) && (flags & FI_COMPARE_ATOMIC)) return -FI_EINVAL;
  if (flags & ~(FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC | FI_TAGGED)) return -FI_EINVAL;
  if (flags & FI_TAGGED) return -FI_EOPNOTSUPP;
  const Class c = (flags & FI_COMPARE_ATOMIC) ? Class::kCompare
                  : (flags & FI_FETCH_ATOMIC) ? Class::kFetch
                                              : Class::kBase;
  return valid(datatype, op, c, &attr->size, &attr->count);
}

fi_ops_atomic g_atomic_ops = {
    .size = sizeof(fi_ops_atomic),
    .write = atomic_write,
    .writev = atomic_writev,
    .writemsg = atomic_writemsg,
    .inject = atomic_inject,
    .readwrite = atomic_readwrite,
    .readwritev = atomic_readwritev,
    .readwritemsg = atomic_readwritemsg,
    .compwrite = atomic_compwrite,
    .compwritev = atomic_compwritev,
    .compwritemsg = atomic_compwritemsg,
    .writevalid = atomic_writevalid,
    .readwritevalid = atomic_readwritevalid,
    .compwritevalid = atomic_compwritevalid,
};

}  // namespace ofi_dpdk::ofi
