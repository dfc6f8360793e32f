// target.h: the target side of RMA and atomics.  A request (a REQUEST
// message of lib/proto, wire::RemoteOpHeader in front) is checked against
// the endpoint's capabilities and the region it names before any byte
// moves, then executed: a write's data copied (or placed as it arrives), a
// read's data or an atomic's old values returned in the response, an atomic
// applied through lib/atomic's table.  The transport delivers each request
// once, so each runs once.  A read's data is sent from the region itself
// (proto::Response::lent_bytes) unless Host::may_lend_reads says no; a write or atomic that
// modifies those bytes before they are acknowledged first has them copied (Engine::recall_lent), so
// requests keep their order, and whoever closes a region calls recall_lent on its memory first.
//
// The regions requests name are looked up in the domain's Regions
// (regions.h), here, with no call into the provider.  What else the target
// needs of the endpoint it serves (its capabilities, its counters and CQ)
// comes through Host, which the provider implements
// (drivers/ofi/dpdk_rma.cc); tests implement both with plain memory.
//
// Answers (the response's status, an FI_E* value):
//   FI_EKEYREJECTED  no region with that key
//   FI_EACCES        the region lacks FI_REMOTE_READ / FI_REMOTE_WRITE
//   FI_EFAULT        the range is not inside the region
//   FI_EOPNOTSUPP    the endpoint lacks the capability, or the atomic
//                    (datatype, op) is not offered
//   FI_EMSGSIZE      more atomic elements than fi_atomicvalid allows
//   FI_EINVAL        a malformed request
//   FI_ENOSPC        a write with remote CQ data while the target's receive
//                    CQ has no room for its entry (a placed write's data
//                    may have landed; the entry never overflows the CQ)
//   FI_ENOMEM        no buffer could be had for the answer
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>

#include <cstddef>
#include <cstdint>

#include "lib/atomic/atomic_table.h"
#include "lib/proto/transport.h"
#include "lib/remote/regions.h"
#include "lib/remote/remote_op.h"

namespace ofi_dpdk::remote {

// Bytes of operands one atomic may carry: fi_atomicvalid's count is this
// over the datatype's size.
inline constexpr size_t kMaxAtomicBytes = 64 << 10;

// fi_atomicvalid and fi_query_atomic: 0 with the element size and the
// largest count, or -FI_EOPNOTSUPP / -FI_EINVAL.
int atomic_limits(fi_datatype datatype, fi_op op, atomic::Class c, size_t* size, size_t* count);

// The region access an atomic of class `c` needs at the target.
uint64_t atomic_access(atomic::Class c, fi_op op);

class Host {
 public:
  virtual ~Host() = default;
  // The endpoint's capabilities (FI_RMA, FI_ATOMIC, FI_REMOTE_READ,
  // FI_REMOTE_WRITE), read once, when its Target is made (at fi_endpoint,
  // after which they do not change).
  virtual uint64_t caps() const = 0;
  // An operation ran at a region whose Region::counter is `region_counter`:
  // counted as a remote write (RMA writes, base atomics) or a remote read
  // (RMA reads, fetching atomics) by the endpoint's counters
  // (fi_endpoint(3)); `modified`: it needed write access, so the region's
  // own counter (FI_RMA_EVENT) counts it too.
  virtual void count_remote(bool as_write, void* region_counter, bool modified) = 0;
  // fi_writedata's data, for the target's CQ (fi_rma(3)); `peer_key` names
  // the writer (proto::peer_key of its address), `length` the bytes the
  // write placed (the entry's len: fi_cq(3) of libfabric 2.x).  Called only
  // after remote_cq_room said yes, under the same lock.
  virtual void remote_cq_data(uint64_t peer_key, uint64_t data, uint64_t length) = 0;
  // Whether the CQ that remote CQ data goes to can take one more entry
  // (or there is none: the data goes nowhere).
  virtual bool remote_cq_room() const = 0;
  // Whether a read's bytes may still be sent from the region after the read
  // is counted (proto::Response::lent_bytes).  Not when the application
  // watches reads being counted (an FI_REMOTE_READ counter): it may take
  // the count as leave to change the bytes, so they are copied at once.
  virtual bool may_lend_reads() const { return true; }
};

class Target {
 public:
  // Serves `engine`'s requests from now on, in `regions`; all three must
  // outlive it, and nothing else serves the engine's requests.
  Target(Host& host, const Regions& regions, proto::Engine& engine);
  Target(const Target&) = delete;
  Target& operator=(const Target&) = delete;

  // Shown a request's first segment: a write to a region that grants it
  // goes straight there as it arrives (only its header is kept); anything
  // else is assembled whole.
  proto::Placement place(const uint8_t* first, size_t first_length, size_t request_length);
  // Runs one request: `bytes` is the request (its header, when `placed`
  // bytes of a write went straight to the region).
  proto::Response serve(uint64_t peer_key, const uint8_t* bytes, size_t length, size_t placed);

 private:
  proto::Response serve_rma(uint64_t peer_key, const RemoteOp& op, const uint8_t* data,
                            size_t length, bool placed);
  proto::Response serve_atomic(const RemoteOp& op, const uint8_t* data, size_t length);

  Host& host_;
  const uint64_t caps_;
  const Regions& regions_;
  proto::Engine& engine_;
  bool has_cap(uint64_t cap) const { return (caps_ & cap) == cap; }
};

}  // namespace ofi_dpdk::remote
