// dpdk_remote_op.h: the header an RMA or atomic request carries in front of
// its data (dpdk_rma.cc, dpdk_atomic.cc).  Big-endian, 40 bytes:
//   0 kind   1 flags   2-3 datatype   4-5 op   6-7 zero
//   8 key    16 addr   24 length (bytes, or elements for atomics)   32 cq_data
// then a write's data, or an atomic's operands and compare values.
#pragma once

#include <endian.h>

#include <cstdint>
#include <cstring>

#include "drivers/ofi/dpdk_prov.h"

namespace ofi_dpdk::ofi {

enum class RemoteKind : uint8_t {
  kWrite = 1,
  kRead = 2,
  kAtomic = 3,         // fi_atomic: no result
  kFetchAtomic = 4,    // fi_fetch_atomic: old values come back
  kCompareAtomic = 5,  // fi_compare_atomic: compare values follow the operands
};
inline constexpr uint8_t kRemoteHasData = 1;  // cq_data is for the target's CQ

struct RemoteOp {
  RemoteKind kind;
  uint8_t flags;
  uint16_t datatype;
  uint16_t op;
  uint64_t key;
  uint64_t addr;
  uint64_t length;
  uint64_t cq_data;
};
inline constexpr size_t kRemoteOpSize = 40;

inline void encode(const RemoteOp& op, uint8_t* out) {
  std::memset(out, 0, kRemoteOpSize);
  out[0] = static_cast<uint8_t>(op.kind);
  out[1] = op.flags;
  const uint16_t small[] = {htobe16(op.datatype), htobe16(op.op)};
  std::memcpy(out + 2, small, sizeof(small));
  const uint64_t fields[] = {htobe64(op.key), htobe64(op.addr), htobe64(op.length),
                             htobe64(op.cq_data)};
  std::memcpy(out + 8, fields, sizeof(fields));
}

inline bool decode(const uint8_t* in, size_t length, RemoteOp* op) {
  if (length < kRemoteOpSize) return false;
  op->kind = static_cast<RemoteKind>(in[0]);
  op->flags = in[1];
  uint16_t small[2];
  std::memcpy(small, in + 2, sizeof(small));
  op->datatype = be16toh(small[0]);
  op->op = be16toh(small[1]);
  uint64_t fields[4];
  std::memcpy(fields, in + 8, sizeof(fields));
  op->key = be64toh(fields[0]);
  op->addr = be64toh(fields[1]);
  op->length = be64toh(fields[2]);
  op->cq_data = be64toh(fields[3]);
  return true;
}

// Target side, port lock held.  The bytes [addr, addr + length) of region
// `key`, checked for `access` (dpdk_rma.cc): 0 and *out, or the FI_E*
// error the initiator gets.  *region_cntr, when given, receives the counter
// fi_mr_bind attached to the region if the access modifies it and the
// endpoint has FI_RMA_EVENT, else null.
int resolve_remote(Endpoint& ep, uint64_t key, uint64_t addr, uint64_t length, uint64_t access,
                   uint8_t** out, Cntr** region_cntr = nullptr);
// An atomic request (dpdk_atomic.cc); `data` is what follows the header.
proto::Response serve_atomic(Endpoint* ep, const RemoteOp& op, const uint8_t* data,
                             size_t length);
// The transport's send result as an fi_errno.
ssize_t send_errno(int ret);
// Sends an RMA or atomic request to `peer`: copied at the call (only its
// header with request.copy_header), completed by the response; a CQ entry as the endpoint's selective completion and
// `flags` say, and `counter` (may be null) counts it.  Lock held.
ssize_t send_request(Endpoint& ep, const proto::PeerAddress& peer, proto::SendRequest& request,
                     Cntr* counter, uint64_t flags);

}  // namespace ofi_dpdk::ofi
