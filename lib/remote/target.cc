// target.cc: checks, then executes, one RMA or atomic request (target.h).
#include "lib/remote/target.h"

#include <cstring>

namespace ofi_dpdk::remote {
namespace {

using atomic::Class;

proto::Response refused(int status) {
  proto::Response response;
  response.status = status;
  return response;
}

bool is_atomic(RemoteKind kind) {
  return kind == RemoteKind::kAtomic || kind == RemoteKind::kFetchAtomic ||
         kind == RemoteKind::kCompareAtomic;
}

}  // namespace

int atomic_limits(fi_datatype datatype, fi_op op, Class c, size_t* size, size_t* count) {
  size_t element = 0;
  const int ret = atomic::query(datatype, op, c, &element);
  if (ret != 0) return ret;
  if (size != nullptr) *size = element;
  if (count != nullptr) *count = kMaxAtomicBytes / element;
  return 0;
}

uint64_t atomic_access(Class c, fi_op op) {
  if (c == Class::kBase) return FI_REMOTE_WRITE;
  if (op == FI_ATOMIC_READ) return FI_REMOTE_READ;
  return FI_REMOTE_READ | FI_REMOTE_WRITE;
}

Target::Target(Host& host, const Regions& regions, proto::Engine& engine)
    : host_(host), caps_(host.caps()), regions_(regions), engine_(engine) {
  engine.set_request_handler([this](uint64_t peer, const uint8_t* bytes, size_t length,
                                    size_t placed) { return serve(peer, bytes, length, placed); });
  engine.set_request_placer(
      [this](uint64_t, const uint8_t* first, size_t first_length, size_t request_length) {
        return place(first, first_length, request_length);
      });
}

proto::Placement Target::place(const uint8_t* first, size_t first_length, size_t request_length) {
  RemoteOp op{};
  if (!decode(first, first_length, &op) || op.kind != RemoteKind::kWrite ||
      op.length != request_length - kRemoteOpSize || op.length == 0 || !has_cap(FI_RMA) ||
      !has_cap(FI_REMOTE_WRITE))
    return {};
  // A write whose CQ entry has no room is refused (serve_rma): assembled,
  // so its data does not land first.
  if ((op.flags & wire::kRemoteHasData) && !host_.remote_cq_room()) return {};
  uint8_t* target = nullptr;
  void* region = nullptr;
  if (regions_.resolve(op.key, op.addr, op.length, FI_REMOTE_WRITE, &target, &region) != 0)
    return {};
  engine_.recall_lent(target, op.length);  // reads served before it keep their bytes
  return {kRemoteOpSize, target};
}

proto::Response Target::serve(uint64_t peer_key, const uint8_t* bytes, size_t length,
                              size_t placed) {
  RemoteOp op{};
  if (!decode(bytes, length, &op) || (placed != 0 && length != kRemoteOpSize))
    return refused(FI_EINVAL);
  // A placed write's data is in its region already; `length` is its head.
  const size_t data_length = length + placed - kRemoteOpSize;
  if (is_atomic(op.kind)) return serve_atomic(op, bytes + kRemoteOpSize, data_length);
  if (op.kind != RemoteKind::kWrite && op.kind != RemoteKind::kRead) return refused(FI_EINVAL);
  return serve_rma(peer_key, op, bytes + kRemoteOpSize, data_length, placed != 0);
}

proto::Response Target::serve_rma(uint64_t peer_key, const RemoteOp& op, const uint8_t* data,
                                  size_t length, bool placed) {
  const bool write = op.kind == RemoteKind::kWrite;
  const uint64_t access = write ? FI_REMOTE_WRITE : FI_REMOTE_READ;
  if (!has_cap(FI_RMA) || !has_cap(access)) return refused(FI_EOPNOTSUPP);
  if (write && op.length != length) return refused(FI_EINVAL);
  // Before anything is allocated or written: a read no message can carry,
  // and a write whose remote CQ data has no room in the target's CQ (which
  // never grows past its size).
  if (!write && op.length > engine_.config().max_msg_size) return refused(FI_EMSGSIZE);
  uint8_t* target = nullptr;
  void* region = nullptr;
  if (const int status = regions_.resolve(op.key, op.addr, op.length, access, &target, &region))
    return refused(status);
  if (write && (op.flags & wire::kRemoteHasData) && !host_.remote_cq_room())
    return refused(FI_ENOSPC);
  proto::Response response;
  if (write) {
    if (!placed && op.length != 0) {
      engine_.recall_lent(target, op.length);  // reads served before it keep their bytes
      std::memcpy(target, data, op.length);
    }
    // Counted once the data is in place (fi_atomic(3): results are visible
    // before the target's completion notification).
    host_.count_remote(true, region, true);
    if (op.flags & wire::kRemoteHasData) host_.remote_cq_data(peer_key, op.cq_data, op.length);
  } else {
    if (host_.may_lend_reads()) {
      // Sent from the region itself (Response::lent_bytes, target.h says
      // who recalls them).
      response.lent_bytes = target;
      response.lent_length = op.length;
    } else {
      response.data = engine_.response_bytes(op.length);
      if (response.data.size() != op.length) return refused(FI_ENOMEM);
      if (op.length != 0) std::memcpy(response.data.data(), target, op.length);
    }
    host_.count_remote(false, region, false);
  }
  return response;
}

proto::Response Target::serve_atomic(const RemoteOp& request, const uint8_t* data, size_t length) {
  const Class c = request.kind == RemoteKind::kAtomic        ? Class::kBase
                  : request.kind == RemoteKind::kFetchAtomic ? Class::kFetch
                                                             : Class::kCompare;
  fi_op op;
  fi_datatype datatype;
  if (!atomic::to_op(request.op, &op) || !atomic::to_datatype(request.datatype, &datatype))
    return refused(FI_EINVAL);
  const uint64_t needed = atomic_access(c, op);
  if (!has_cap(FI_ATOMIC) || ((needed & FI_REMOTE_WRITE) && !has_cap(FI_REMOTE_WRITE)) ||
      ((needed & FI_REMOTE_READ) && !has_cap(FI_REMOTE_READ)))
    return refused(FI_EOPNOTSUPP);
  size_t size = 0, max_count = 0;
  if (atomic_limits(datatype, op, c, &size, &max_count) != 0) return refused(FI_EOPNOTSUPP);
  const uint64_t count = request.length;
  if (count == 0) return refused(FI_EINVAL);
  if (count > max_count) return refused(FI_EMSGSIZE);
  const size_t bytes = count * size;
  // FI_ATOMIC_READ may come without operands; everything else brings them,
  // and compare atomics their compare values after them.
  const size_t operands = op == FI_ATOMIC_READ && length == 0 ? 0 : bytes;
  if (length != operands + (c == Class::kCompare ? bytes : 0)) return refused(FI_EINVAL);
  uint8_t* target = nullptr;
  void* region = nullptr;
  if (const int status =
          regions_.resolve(request.key, request.addr, bytes, needed, &target, &region))
    return refused(status);
  if (needed & FI_REMOTE_WRITE) engine_.recall_lent(target, bytes);
  proto::Response response;
  if (c != Class::kBase) {
    response.data = engine_.response_bytes(bytes);
    if (response.data.size() != bytes) return refused(FI_ENOMEM);
  }
  const int ret = atomic::apply(op, datatype, c, target, operands ? data : nullptr,
                                c == Class::kCompare ? data + operands : nullptr,
                                c != Class::kBase ? response.data.data() : nullptr, count);
  if (ret != 0) return refused(-ret);  // refused before touching memory (unaligned, say)
  // fi_endpoint(3): base atomics count as remote writes, fetch and compare
  // atomics as remote reads; the region's counter sees every atomic that
  // needs write access (all but FI_ATOMIC_READ), swapped or not.
  host_.count_remote(c == Class::kBase, region, (needed & FI_REMOTE_WRITE) != 0);
  return response;
}

}  // namespace ofi_dpdk::remote
