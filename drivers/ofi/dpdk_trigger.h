// dpdk_trigger.h: triggered operations (fi_trigger(3), dpdk_trigger.cc).
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace ofi_dpdk::ofi {

struct Endpoint;
struct Cntr;

// An operation posted with FI_TRIGGER that waits for its counter
// (fi_trigger(3)); `post` posts it, lock held.
struct TriggeredOp {
  Endpoint* ep;
  void* context;  // the fi_triggered_context
  Cntr* counter;
  uint64_t threshold;
  std::function<ssize_t(Endpoint&)> post;
};
// What a triggered operation keeps of its iov: the entries, and with
// FI_INJECT (the buffer is the caller's again at once) the bytes too.
struct KeptIov {
  std::vector<iovec> parts;
  std::shared_ptr<std::vector<uint8_t>> bytes;
};
KeptIov keep_iov(const iovec* iov, size_t count, uint64_t flags);

}  // namespace ofi_dpdk::ofi
