// dpdk_msg.cc: fi_msg(3) on RDM endpoints: the send path builds one frame per
// message and hands it to the port; the receive path (on_frame) matches
// posted receives in posting order, or keeps the message as unexpected.
#include <rte_mbuf.h>

#include <algorithm>
#include <cstring>

#include "drivers/ofi/dpdk_prov.h"
#include "lib/proto/frame_codec.h"

namespace ofi_dpdk::ofi {
namespace {

size_t total_length(const iovec* iov, size_t count) {
  size_t total = 0;
  for (size_t i = 0; i < count; ++i) total += iov[i].iov_len;
  return total;
}

// Scatters `length` bytes into the iov; returns the bytes that fit.
size_t scatter(const iovec* iov, size_t count, const uint8_t* data, size_t length) {
  size_t copied = 0;
  for (size_t i = 0; i < count && copied < length; ++i) {
    const size_t n = std::min(iov[i].iov_len, length - copied);
    std::memcpy(iov[i].iov_base, data + copied, n);
    copied += n;
  }
  return copied;
}

// fi_inject and fi_injectdata make no completion at all; this private bit
// keeps that apart from FI_INJECT on fi_sendmsg, which still completes.
constexpr uint64_t kNoCompletion = 1ull << 63;

bool wants_completion(bool selective, uint64_t flags) {
  return !(flags & kNoCompletion) && (!selective || (flags & FI_COMPLETION));
}

}  // namespace

ssize_t Endpoint::send(const iovec* iov, size_t iov_count, fi_addr_t dest, void* context,
                       uint64_t flags, uint64_t data) {
  if (!enabled) return -FI_EOPBADSTATE;
  if (iov_count > kIovLimit) return -FI_EINVAL;
  const size_t length = total_length(iov, iov_count);
  net::Port& nic = *port().port;
  if (length > nic.max_frame_payload()) return -FI_EMSGSIZE;
  if (av == nullptr || dest >= av->table.size() || !av->table[dest].valid) return -FI_EINVAL;
  const av::Address& peer = av->table[dest].address;
  if (!nic.link_up()) {
    port().progress();
    return -FI_EAGAIN;
  }
  rte_mbuf* frame = nic.alloc_frame();
  if (frame == nullptr) {
    port().progress();
    return -FI_EAGAIN;
  }
  const auto frame_length = static_cast<uint16_t>(wire::kHeadersSize + length);
  auto* bytes = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(frame, frame_length));
  if (bytes == nullptr) {
    rte_pktmbuf_free(frame);
    return -FI_EMSGSIZE;
  }
  wire::FrameHeader header{};
  header.version = wire::kWireVersion;
  header.opcode = static_cast<uint8_t>(wire::Opcode::kMsg);
  header.flags = wire::kFlagLastSegment | ((flags & FI_REMOTE_CQ_DATA) ? wire::kFlagRemoteData : 0);
  header.dst_queue = peer.queue;
  header.src_queue = queue;
  header.src_session = session;
  header.dst_session = peer.session;
  header.msg_id = next_msg_id;
  header.msg_len = static_cast<uint32_t>(length);
  header.payload_len = static_cast<uint16_t>(length);
  header.cq_data = (flags & FI_REMOTE_CQ_DATA) ? data : 0;
  proto::encode_headers(bytes, peer.mac, nic.mac(), nic.ether_type(), header);
  uint8_t* payload = bytes + wire::kHeadersSize;
  for (size_t i = 0; i < iov_count; ++i) {
    std::memcpy(payload, iov[i].iov_base, iov[i].iov_len);
    payload += iov[i].iov_len;
  }
  if (nic.tx_burst(hw_queue, &frame, 1) != 1) {
    rte_pktmbuf_free(frame);
    port().progress();
    return -FI_EAGAIN;
  }
  ++next_msg_id;
  ++stats.frames_sent;
  ++stats.messages_sent;
  // The payload was copied into the frame: the buffer is free again, which
  // is what the completion reports.
  if (tx_cq != nullptr && wants_completion(tx_selective, flags))
    tx_cq->push({context, FI_SEND | FI_MSG, 0, nullptr, 0, 0, FI_ADDR_NOTAVAIL});
  return 0;
}

ssize_t Endpoint::post_recv(const iovec* iov, size_t iov_count, fi_addr_t source,
                            void* context, uint64_t flags) {
  if (!enabled) return -FI_EOPBADSTATE;
  if (iov_count > kIovLimit) return -FI_EINVAL;
  if (!has_cap(FI_DIRECTED_RECV)) source = FI_ADDR_UNSPEC;
  PostedRecv recv{};
  std::copy(iov, iov + iov_count, recv.iov);
  recv.iov_count = iov_count;
  recv.context = context;
  recv.flags = flags;
  recv.source = source;

  // A message that came first waits in the unexpected queue.
  for (auto it = unexpected.begin(); it != unexpected.end(); ++it) {
    if (source != FI_ADDR_UNSPEC &&
        (av == nullptr || av->lookup_source(it->src_mac, it->src_queue) != source))
      continue;
    UnexpectedMessage message = std::move(*it);
    unexpected.erase(it);
    deliver(recv, message.src_mac, message.src_queue, message.payload.data(),
            message.payload.size(), message.has_data, message.cq_data);
    return 0;
  }
  if (posted.size() >= kQueueDepth) return -FI_EAGAIN;
  posted.push_back(recv);
  return 0;
}

void Endpoint::deliver(const PostedRecv& recv, const uint8_t* src_mac, uint16_t src_queue,
                       const uint8_t* payload, size_t length, bool has_data, uint64_t data) {
  ++stats.messages_received;
  const size_t capacity = total_length(recv.iov, recv.iov_count);
  const size_t copied = scatter(recv.iov, recv.iov_count, payload, length);
  if (rx_cq == nullptr) return;
  const fi_addr_t source =
      av != nullptr && (has_cap(FI_SOURCE) || recv.source != FI_ADDR_UNSPEC)
          ? av->lookup_source(src_mac, src_queue)
          : FI_ADDR_NOTAVAIL;
  const uint64_t flags = FI_RECV | FI_MSG | (has_data ? FI_REMOTE_CQ_DATA : 0);
  if (length > capacity) {
    fi_cq_err_entry error{};
    error.op_context = recv.context;
    error.flags = flags;
    error.len = copied;
    error.buf = recv.iov_count ? recv.iov[0].iov_base : nullptr;
    error.data = data;
    error.olen = length - capacity;
    error.err = FI_ETRUNC;
    error.prov_errno = FI_ETRUNC;
    rx_cq->push_error(error, source);
    return;
  }
  if (wants_completion(rx_selective, recv.flags))
    rx_cq->push({recv.context, flags, length, recv.iov_count ? recv.iov[0].iov_base : nullptr,
                 data, 0, source});
}

void Endpoint::on_frame(const DecodedFrameRef& frame) {
  ++stats.frames_received;
  if (!enabled || frame.opcode != static_cast<uint8_t>(wire::Opcode::kMsg) ||
      (frame.dst_session != 0 && frame.dst_session != session)) {
    // Not enabled yet, an opcode this version does not send, or meant for an
    // earlier incarnation of this endpoint.
    ++stats.dropped_bad_frame;
    return;
  }
  const bool has_data = frame.flags & wire::kFlagRemoteData;
  for (auto it = posted.begin(); it != posted.end(); ++it) {
    if (it->source != FI_ADDR_UNSPEC &&
        (av == nullptr || av->lookup_source(frame.src_mac, frame.src_queue) != it->source))
      continue;
    const PostedRecv recv = *it;
    posted.erase(it);
    deliver(recv, frame.src_mac, frame.src_queue, frame.payload, frame.payload_len, has_data,
            frame.cq_data);
    return;
  }
  if (unexpected.size() >= unexpected_limit) {
    // Until the transport's flow control lands (reliable-transport issue),
    // a full unexpected queue drops: counted, never silent.
    ++stats.dropped_no_buffer;
    return;
  }
  UnexpectedMessage message;
  message.payload.assign(frame.payload, frame.payload + frame.payload_len);
  std::memcpy(message.src_mac, frame.src_mac, 6);
  message.src_queue = frame.src_queue;
  message.cq_data = frame.cq_data;
  message.has_data = has_data;
  unexpected.push_back(std::move(message));
}

namespace {

// The fi_msg(3) calls: each takes the port lock and calls the endpoint.
ssize_t msg_recvv(fid_ep* ep_fid, const iovec* iov, void** /*desc*/, size_t count,
                  fi_addr_t src_addr, void* context) {
  Endpoint* ep = from_fid<Endpoint>(ep_fid);
  std::lock_guard guard(ep->port().lock);
  return ep->post_recv(iov, count, src_addr, context, ep->rx_op_flags);
}

ssize_t msg_recv(fid_ep* ep, void* buf, size_t len, void* desc, fi_addr_t src_addr,
                 void* context) {
  iovec iov{buf, len};
  return msg_recvv(ep, &iov, &desc, 1, src_addr, context);
}

ssize_t msg_recvmsg(fid_ep* ep_fid, const fi_msg* msg, uint64_t flags) {
  if (msg == nullptr) return -FI_EINVAL;
  Endpoint* ep = from_fid<Endpoint>(ep_fid);
  if (flags & ~(FI_COMPLETION | FI_MORE | FI_REMOTE_CQ_DATA)) return -FI_EBADFLAGS;
  std::lock_guard guard(ep->port().lock);
  return ep->post_recv(msg->msg_iov, msg->iov_count, msg->addr, msg->context, flags);
}

ssize_t msg_sendv(fid_ep* ep_fid, const iovec* iov, void** /*desc*/, size_t count,
                  fi_addr_t dest_addr, void* context) {
  Endpoint* ep = from_fid<Endpoint>(ep_fid);
  std::lock_guard guard(ep->port().lock);
  return ep->send(iov, count, dest_addr, context, ep->tx_op_flags, 0);
}

ssize_t msg_send(fid_ep* ep, const void* buf, size_t len, void* desc, fi_addr_t dest_addr,
                 void* context) {
  iovec iov{const_cast<void*>(buf), len};
  return msg_sendv(ep, &iov, &desc, 1, dest_addr, context);
}

ssize_t msg_sendmsg(fid_ep* ep_fid, const fi_msg* msg, uint64_t flags) {
  if (msg == nullptr) return -FI_EINVAL;
  Endpoint* ep = from_fid<Endpoint>(ep_fid);
  constexpr uint64_t kAllowed = FI_COMPLETION | FI_INJECT | FI_INJECT_COMPLETE |
                                FI_TRANSMIT_COMPLETE | FI_REMOTE_CQ_DATA | FI_MORE;
  if (flags & ~kAllowed) return -FI_EBADFLAGS;
  std::lock_guard guard(ep->port().lock);
  return ep->send(msg->msg_iov, msg->iov_count, msg->addr, msg->context, flags, msg->data);
}

ssize_t msg_senddata(fid_ep* ep_fid, const void* buf, size_t len, void*, uint64_t data,
                     fi_addr_t dest_addr, void* context) {
  Endpoint* ep = from_fid<Endpoint>(ep_fid);
  iovec iov{const_cast<void*>(buf), len};
  std::lock_guard guard(ep->port().lock);
  return ep->send(&iov, 1, dest_addr, context, ep->tx_op_flags | FI_REMOTE_CQ_DATA, data);
}

ssize_t msg_inject(fid_ep* ep_fid, const void* buf, size_t len, fi_addr_t dest_addr) {
  Endpoint* ep = from_fid<Endpoint>(ep_fid);
  if (len > ep->info->tx_attr->inject_size) return -FI_EMSGSIZE;
  iovec iov{const_cast<void*>(buf), len};
  std::lock_guard guard(ep->port().lock);
  return ep->send(&iov, 1, dest_addr, nullptr, FI_INJECT | kNoCompletion, 0);
}

ssize_t msg_injectdata(fid_ep* ep_fid, const void* buf, size_t len, uint64_t data,
                       fi_addr_t dest_addr) {
  Endpoint* ep = from_fid<Endpoint>(ep_fid);
  if (len > ep->info->tx_attr->inject_size) return -FI_EMSGSIZE;
  iovec iov{const_cast<void*>(buf), len};
  std::lock_guard guard(ep->port().lock);
  return ep->send(&iov, 1, dest_addr, nullptr, FI_INJECT | FI_REMOTE_CQ_DATA | kNoCompletion,
                  data);
}

}  // namespace

fi_ops_msg g_msg_ops = {
    .size = sizeof(fi_ops_msg),
    .recv = msg_recv,
    .recvv = msg_recvv,
    .recvmsg = msg_recvmsg,
    .send = msg_send,
    .sendv = msg_sendv,
    .sendmsg = msg_sendmsg,
    .inject = msg_inject,
    .senddata = msg_senddata,
    .injectdata = msg_injectdata,
};

}  // namespace ofi_dpdk::ofi
