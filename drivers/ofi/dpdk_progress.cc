// dpdk_progress.cc: where a received frame goes next.  The port's queues are
// polled, each frame is checked by the codec and handed to the endpoint its
// header names (the software demultiplexer; with rte_flow steering each
// queue already holds one endpoint's frames, and the same lookup confirms
// it).
#include <rte_mbuf.h>

#include <cstring>

#include "drivers/ofi/dpdk_prov.h"
#include "lib/proto/frame_codec.h"

namespace ofi_dpdk::ofi {
namespace {

constexpr uint16_t kRxBurst = 32;

}  // namespace

void PortContext::progress() {
  net::Port& nic = *port;
  if (!nic.link_up()) return;
  rte_mbuf* frames[kRxBurst];
  for (uint16_t queue = 0; queue < nic.queue_pairs(); ++queue) {
    const uint16_t count = nic.rx_burst(queue, frames, kRxBurst);
    for (uint16_t i = 0; i < count; ++i) {
      rte_mbuf* frame = frames[i];
      proto::DecodedFrame decoded;
      const auto result =
          frame->nb_segs == 1
              ? proto::decode_frame(rte_pktmbuf_mtod(frame, const uint8_t*),
                                    rte_pktmbuf_data_len(frame), nic.ether_type(), &decoded)
              : proto::DecodeResult::kTruncated;  // we never send chained frames
      if (result == proto::DecodeResult::kNotOurs) {
        ++rx_not_ours;
      } else if (result != proto::DecodeResult::kOk) {
        ++rx_bad_frames;
      } else if (std::memcmp(decoded.dst_mac, nic.mac(), 6) != 0) {
        ++rx_not_ours;
      } else if (decoded.header.dst_queue >= endpoints.size() ||
                 endpoints[decoded.header.dst_queue] == nullptr) {
        ++rx_no_endpoint;
      } else {
        const wire::FrameHeader& h = decoded.header;
        endpoints[h.dst_queue]->on_frame({h.opcode, decoded.src_mac, h.src_queue, h.src_session,
                                          h.dst_session, h.flags, h.cq_data, decoded.payload,
                                          h.payload_len});
      }
      rte_pktmbuf_free(frame);
    }
  }
}

}  // namespace ofi_dpdk::ofi
