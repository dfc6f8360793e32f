// dpdk_remote_op.h: what the initiator side of RMA and atomics shares
// (dpdk_rma.cc, dpdk_atomic.cc): the request header (lib/remote's RemoteOp,
// wire::RemoteOpHeader) and sending a request.  The target side is
// lib/remote's Target, over the host in dpdk_rma.cc.
#pragma once

#include <endian.h>
#include <sys/types.h>

#include <cstdint>
#include <cstring>

#include "lib/proto/transport.h"
#include "lib/remote/remote_op.h"

namespace ofi_dpdk::ofi {

struct Endpoint;
struct Cntr;

using remote::kRemoteOpSize;
using remote::RemoteKind;
using remote::RemoteOp;
using wire::kRemoteHasData;

// Sends an RMA or atomic request to `peer`: copied at the call (only its
// header with request.copy_header), completed by the response; a CQ entry as the endpoint's
// selective completion and `flags` say, and `counter` (may be null) counts it.  Lock held.
ssize_t send_request(Endpoint& ep, const proto::PeerAddress& peer, proto::SendRequest& request,
                     Cntr* counter, uint64_t flags);

}  // namespace ofi_dpdk::ofi
