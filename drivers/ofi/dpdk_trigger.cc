// dpdk_trigger.cc: triggered operations (fi_trigger(3)).  An operation
// posted with FI_TRIGGER carries a struct fi_triggered_context as its
// context; with FI_TRIGGER_THRESHOLD it waits, copied by the call that
// posted it (Endpoint::send, post_recv, remote, atomic_op), until the
// counter it names reaches the threshold, then is posted as if called then,
// without FI_TRIGGER and with the same context, so its completion reports
// the fi_triggered_context.  The waiting list is the port's: a progress
// pass and fi_cntr_add / fi_cntr_set look at it.
#include "drivers/ofi/dpdk_trigger.h"

#include <rdma/fi_trigger.h>

#include <algorithm>

#include "drivers/ofi/dpdk_cntr.h"
#include "drivers/ofi/dpdk_cq.h"
#include "drivers/ofi/dpdk_endpoint.h"
#include "drivers/ofi/dpdk_fid.h"
#include "drivers/ofi/dpdk_log.h"
#include "drivers/ofi/dpdk_port.h"

namespace ofi_dpdk::ofi {

KeptIov keep_iov(const iovec* iov, size_t count, uint64_t flags) {
  KeptIov kept;
  if (iov == nullptr || count == 0) return kept;
  kept.parts.assign(iov, iov + count);
  if (flags & FI_INJECT) {
    kept.bytes = std::make_shared<std::vector<uint8_t>>();
    for (const iovec& part : kept.parts) {
      const auto* from = static_cast<const uint8_t*>(part.iov_base);
      kept.bytes->insert(kept.bytes->end(), from, from + part.iov_len);
    }
    kept.parts = {iovec{kept.bytes->data(), kept.bytes->size()}};
  }
  return kept;
}

ssize_t Endpoint::trigger(void* context, std::function<ssize_t(Endpoint&)> post) {
  if (!has_cap(FI_TRIGGER)) return -FI_EOPNOTSUPP;
  const auto* when = static_cast<const fi_triggered_context*>(context);
  if (when == nullptr) return -FI_EINVAL;
  if (when->event_type != FI_TRIGGER_THRESHOLD) {
    DPDK_INFO(FI_LOG_EP_DATA, "FI_TRIGGER: event type %d; only FI_TRIGGER_THRESHOLD is served\n",
              static_cast<int>(when->event_type));
    return -FI_EOPNOTSUPP;
  }
  fid_cntr* counter_fid = when->trigger.threshold.cntr;
  if (counter_fid == nullptr || counter_fid->fid.fclass != FI_CLASS_CNTR) return -FI_EINVAL;
  Cntr* counter = from_fid<Cntr>(counter_fid);
  const uint64_t threshold = when->trigger.threshold.threshold;
  PortContext& own = port();
  // Met already, and nothing waits before it: posted now.
  if (counter->value.load() >= threshold &&
      std::none_of(own.triggered.begin(), own.triggered.end(),
                   [&](const TriggeredOp& op) { return op.ep == this; }))
    return post(*this);
  if (triggered_waiting >= info->tx_attr->size) return -FI_EAGAIN;
  // fi_trigger(3): in the order of the thresholds, then as posted.
  const auto at =
      std::upper_bound(own.triggered.begin(), own.triggered.end(), threshold,
                       [](uint64_t value, const TriggeredOp& op) { return value < op.threshold; });
  try {
    own.triggered.insert(at, TriggeredOp{this, context, counter, threshold, std::move(post)});
  } catch (const std::bad_alloc&) {
    return -FI_ENOMEM;
  }
  ++triggered_waiting;
  return 0;
}

void PortContext::run_due_triggers() {
  for (size_t i = 0; i < triggered.size();) {
    TriggeredOp& op = triggered[i];
    if (op.counter->value.load() < op.threshold) {
      ++i;
      continue;
    }
    Endpoint& ep = *op.ep;
    const ssize_t ret = op.post(ep);
    if (ret == -FI_EAGAIN) {
      ++i;  // its queue is full: a later pass
      continue;
    }
    if (ret != 0) {
      // Refused as the call itself would have been: an error completion,
      // since the call that posted it returned long ago.
      DPDK_WARN(FI_LOG_EP_DATA, "a triggered operation failed when posted: %s\n",
                fi_strerror(static_cast<int>(-ret)));
      if (ep.tx_cq != nullptr) {
        fi_cq_err_entry error{};
        error.op_context = op.context;
        error.err = static_cast<int>(-ret);
        error.prov_errno = error.err;
        ep.tx_cq->push_error(error, FI_ADDR_NOTAVAIL);
      }
    }
    --ep.triggered_waiting;
    triggered.erase(triggered.begin() + static_cast<std::ptrdiff_t>(i));
  }
}

void PortContext::drop_triggers(const Endpoint* ep) {
  std::erase_if(triggered, [ep](const TriggeredOp& op) { return op.ep == ep; });
}

}  // namespace ofi_dpdk::ofi
