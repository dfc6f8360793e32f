// remote_op.h: the RMA/atomic request header (wire::RemoteOpHeader) in host
// order, and its encoding.  The initiator (drivers/ofi) encodes it in front
// of a request's data; the target (target.cc) decodes it.
#pragma once

#include <endian.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "lib/proto/wire.h"

namespace ofi_dpdk::remote {

using wire::RemoteKind;
inline constexpr size_t kRemoteOpSize = sizeof(wire::RemoteOpHeader);

struct RemoteOp {
  RemoteKind kind;
  uint8_t flags;  // wire::kRemoteHasData
  uint16_t datatype;
  uint16_t op;
  uint64_t key;
  uint64_t addr;
  uint64_t length;
  uint64_t cq_data;
};

inline void encode(const RemoteOp& op, uint8_t* out) {
  wire::RemoteOpHeader h{};
  h.kind = static_cast<uint8_t>(op.kind);
  h.flags = op.flags;
  h.datatype = htobe16(op.datatype);
  h.op = htobe16(op.op);
  h.key = htobe64(op.key);
  h.addr = htobe64(op.addr);
  h.length = htobe64(op.length);
  h.cq_data = htobe64(op.cq_data);
  std::memcpy(out, &h, sizeof(h));
}

// False when fewer than kRemoteOpSize bytes are there.
inline bool decode(const uint8_t* in, size_t length, RemoteOp* op) {
  if (length < kRemoteOpSize) return false;
  wire::RemoteOpHeader h;
  std::memcpy(&h, in, sizeof(h));
  op->kind = static_cast<RemoteKind>(h.kind);
  op->flags = h.flags;
  op->datatype = be16toh(h.datatype);
  op->op = be16toh(h.op);
  op->key = be64toh(h.key);
  op->addr = be64toh(h.addr);
  op->length = be64toh(h.length);
  op->cq_data = be64toh(h.cq_data);
  return true;
}

}  // namespace ofi_dpdk::remote
