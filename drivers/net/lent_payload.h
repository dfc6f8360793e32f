// lent_payload.h: a frame's payload lent to the device for one transmit
// burst instead of copied into the frame.
//
// On a device that copies every segment into its own ring inside
// rte_eth_tx_burst (Port::lends_at_transmit: net_memif, net_af_packet,
// net_tap), the payload can stay where it is, in the application's buffer
// or the transport's copy of it, as a second segment chained behind the
// headers: the device's copy is then the only one on the sending side.
// The bytes must stay put until the burst returns, which they do: a send's
// buffer is the application's until the send completes, and the
// transport's copies are retired only after its frames are handed over
// (proto::Engine::frames_sent).
#pragma once

#include <rte_mbuf.h>

#include <cstdint>

namespace ofi_dpdk::net {

namespace lent_detail {
inline void give_back_nothing(void*, void*) {}
}  // namespace lent_detail

// Points `segment` (fresh from a pool, data room unused) at `length` bytes
// at `bytes`.  DPDK keeps an external buffer's record (its reference count
// and what to call when it drops to 0) beside the buffer; this one lives in
// the segment's own data room, which the segment no longer uses until it
// is freed and detached: no record shared between frames or threads, and
// nothing to call back.
inline void lend_payload(rte_mbuf* segment, const uint8_t* bytes, uint16_t length) {
  auto* record = rte_pktmbuf_mtod(segment, rte_mbuf_ext_shared_info*);
  record->free_cb = lent_detail::give_back_nothing;
  record->fcb_opaque = nullptr;
  rte_mbuf_ext_refcnt_set(record, 1);
  rte_pktmbuf_attach_extbuf(segment, const_cast<uint8_t*>(bytes), RTE_BAD_IOVA, length, record);
  segment->data_len = length;
  segment->pkt_len = length;
}

}  // namespace ofi_dpdk::net
