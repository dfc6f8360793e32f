// dpdk_poll.cc: fi_poll (poll sets).  A poll set groups CQs and counters of
// one domain: fi_poll progresses their ports (manual progress) and returns
// the context of each CQ that holds something and of each counter whose
// value or error count moved since the set last looked (fi_poll(3)).
#include <mutex>
#include <new>
#include <vector>

#include "drivers/ofi/dpdk_cntr.h"
#include "drivers/ofi/dpdk_cq.h"
#include "drivers/ofi/dpdk_domain.h"
#include "drivers/ofi/dpdk_fid.h"
#include "drivers/ofi/dpdk_objects.h"
#include "drivers/ofi/dpdk_port_lock.h"

namespace ofi_dpdk::ofi {
namespace {

struct Poll {
  fid_poll fid;
  Domain* domain;
  std::mutex lock;  // the members; taken before any port lock
  struct Member {
    ::fid* object;       // a CQ or a counter of the domain
    uint64_t value = 0;  // a counter's value and errors when last looked at
    uint64_t errors = 0;
  };
  std::vector<Member> members;
};

bool is_cq(const fid* object) {
  return object->fclass == FI_CLASS_CQ;
}

std::atomic<int>& refs_of(fid* object) {
  return is_cq(object) ? from_fid<Cq>(object)->refs : from_fid<Cntr>(object)->refs;
}

Domain* domain_of(fid* object) {
  return is_cq(object) ? from_fid<Cq>(object)->domain : from_fid<Cntr>(object)->domain;
}

int poll_poll(fid_poll* pollset, void** context, int count) {
  Poll* poll = from_fid<Poll>(pollset);
  if (count < 0 || (count > 0 && context == nullptr)) return -FI_EINVAL;
  std::lock_guard guard(poll->lock);
  // One pass for the port they all share (a poll set is one domain's).
  PortContext& port = *poll->domain->port;
  if (!poll->members.empty()) {
    std::lock_guard port_guard(whole_lock(port));
    progress_if_manual(port);
  }
  int found = 0;
  for (Poll::Member& member : poll->members) {
    if (found == count) break;
    bool event;
    if (is_cq(member.object)) {
      Cq* cq = from_fid<Cq>(member.object);
      std::lock_guard port_guard(whole_lock(port));
      event = !cq->empty();
    } else {
      Cntr* cntr = from_fid<Cntr>(member.object);
      const uint64_t value = cntr->value.load(), errors = cntr->errors.load();
      event = value != member.value || errors != member.errors;
      member.value = value;
      member.errors = errors;
    }
    if (event) context[found++] = member.object->context;
  }
  return found;
}

int poll_add(fid_poll* pollset, fid* event_fid, uint64_t flags) {
  Poll* poll = from_fid<Poll>(pollset);
  if (event_fid == nullptr || flags != 0) return -FI_EINVAL;
  if (event_fid->fclass != FI_CLASS_CQ && event_fid->fclass != FI_CLASS_CNTR) return -FI_EINVAL;
  if (domain_of(event_fid) != poll->domain) return -FI_EINVAL;
  std::lock_guard guard(poll->lock);
  for (const Poll::Member& member : poll->members)
    if (member.object == event_fid) return -FI_EALREADY;
  Poll::Member member{event_fid};
  if (!is_cq(event_fid)) {
    // Counts made before it joined are not its events.
    member.value = from_fid<Cntr>(event_fid)->value.load();
    member.errors = from_fid<Cntr>(event_fid)->errors.load();
  }
  poll->members.push_back(member);
  refs_of(event_fid)++;
  return 0;
}

int poll_del(fid_poll* pollset, fid* event_fid, uint64_t flags) {
  Poll* poll = from_fid<Poll>(pollset);
  if (event_fid == nullptr || flags != 0) return -FI_EINVAL;
  std::lock_guard guard(poll->lock);
  for (auto it = poll->members.begin(); it != poll->members.end(); ++it) {
    if (it->object != event_fid) continue;
    refs_of(event_fid)--;
    poll->members.erase(it);
    return 0;
  }
  return -FI_ENOENT;
}

int poll_close(fid* fid) {
  Poll* poll = from_fid<Poll>(fid);
  {
    std::lock_guard guard(poll->lock);
    for (const Poll::Member& member : poll->members) refs_of(member.object)--;
  }
  poll->domain->refs--;
  delete poll;
  return 0;
}

fi_ops g_poll_fid_ops = {
    .size = sizeof(fi_ops),
    .close = poll_close,
    .bind = DPDK_ENOSYS(fi_ops, bind),
    .control = DPDK_ENOSYS(fi_ops, control),
    .ops_open = DPDK_ENOSYS(fi_ops, ops_open),
    .tostr = DPDK_ENOSYS(fi_ops, tostr),
    .ops_set = DPDK_ENOSYS(fi_ops, ops_set),
};

fi_ops_poll g_poll_ops = {
    .size = sizeof(fi_ops_poll),
    .poll = poll_poll,
    .poll_add = poll_add,
    .poll_del = poll_del,
};

}  // namespace

int poll_open(fid_domain* domain_fid, fi_poll_attr* attr, fid_poll** pollset) {
  if (pollset == nullptr || (attr != nullptr && attr->flags != 0)) return -FI_EINVAL;
  Domain* domain = from_fid<Domain>(domain_fid);
  auto* poll = new (std::nothrow) Poll();
  if (poll == nullptr) return -FI_ENOMEM;
  poll->fid.fid.fclass = FI_CLASS_POLL;
  poll->fid.fid.context = nullptr;
  poll->fid.fid.ops = &g_poll_fid_ops;
  poll->fid.ops = &g_poll_ops;
  poll->domain = domain;
  domain->refs++;
  *pollset = &poll->fid;
  return 0;
}

}  // namespace ofi_dpdk::ofi
