// datagram.cc: FI_EP_DGRAM (TransportConfig::datagrams).  A message is one
// DATAGRAM frame (wire.h): no handshake, no connection, no sequence number,
// no acknowledgement and no retransmission, so a lost frame is a lost
// message and nothing waits for a peer.  A send completes as its frame
// leaves.  An arriving datagram is matched to the posted receives like any
// message (tag, source, key, multi-recv buffers); with none that matches it
// waits as an unexpected message within the unexpected budget, and beyond
// that budget it is dropped and counted: a stranger's flood costs what the
// budget allows and no more.  Nor can one sender take the budget from the
// others: once half of it is in use, a sender (datagram_share.h) holding
// an eighth of it takes no more until a receive frees some; what is left
// stays for the senders below their share.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "lib/proto/engine_state.h"

namespace ofi_dpdk::proto {

int Engine::send_datagram(const PeerAddress& peer, const SendRequest& request, size_t length) {
  if (length > config_.max_payload) return -EMSGSIZE;
  std::unique_ptr<TxMessage> message = new_message();
  message->length = length;
  message->wire_length = length;
  copy_request(message->request, request);
  message->request.iov = nullptr;
  // An inject's bytes are copied: the caller may reuse its buffer before
  // the outbox leaves.
  if (!take_payload(*message, request, length)) return refuse_no_memory(std::move(message));

  OutFrame frame{};
  std::copy(peer.mac, peer.mac + 6, frame.dst_mac);
  wire::FrameHeader& h = frame.header;
  h.version = wire::kWireVersion;
  h.opcode = static_cast<uint8_t>(wire::Opcode::kDatagram);
  h.flags = static_cast<uint16_t>((request.tagged ? wire::kFlagTagged : 0) |
                                  (request.has_data ? wire::kFlagRemoteData : 0));
  h.dst_queue = peer.queue;
  h.src_queue = queue_;
  h.src_ep_queue = address_queue_;
  h.src_session = session_;
  h.msg_len = static_cast<uint32_t>(length);
  h.payload_len = static_cast<uint16_t>(length);
  h.tag = request.tagged ? request.tag : 0;
  h.cq_data = request.has_data ? request.cq_data : 0;
  h.auth_key = peer.auth_key;
  h.group = request.group;
  frame.message = message.get();
  frame.offset = 0;
  outbox_.push_back(frame);
  ++stats_.frames_sent;
  ++stats_.datagrams_sent;
  ++stats_.messages_sent;

  // fi_msg(3)'s unreliable endpoints: the send is done when it left; its
  // completion is read after the outbox went (completions()).
  if (request.completion) {
    Completion done{};
    done.kind = Completion::Kind::kSend;
    done.context = request.context;
    done.user_flags = request.user_flags;
    done.len = length;
    done.tagged = request.tagged;
    done.tag = request.tag;
    completions_.push_back(done);
  }
  // Its payload is read until frames_sent(), which recycles it.
  retired_.push_back(std::move(message));
  return 0;
}

void Engine::on_datagram(const Segment& s) {
  const wire::FrameHeader& h = *s.header;
  if (!config_.datagrams || h.opcode != static_cast<uint8_t>(wire::Opcode::kDatagram)) {
    ++stats_.bad_frames;
    ++stats_.datagrams_dropped;
    return;
  }
  InboundMessage in;
  in.length = h.payload_len;
  in.tagged = h.flags & wire::kFlagTagged;
  in.tag = in.tagged ? h.tag : 0;
  in.has_data = h.flags & wire::kFlagRemoteData;
  in.cq_data = h.cq_data;
  in.sender.source_key = peer_key(s.src_mac, h.src_ep_queue);
  in.sender.auth_key = h.auth_key;
  in.sender.group = h.group;
  if (match_posted(in)) {
    ++stats_.datagrams_received;
    complete_recv(nullptr, in.recv, in, s.payload);
    return;
  }
  const size_t cost = unexpected_cost(in.length);
  if (unexpected_bytes_ + cost > config_.unexpected_bytes) {
    ++stats_.datagrams_dropped;
    return;
  }
  if (!datagram_shares_) datagram_shares_ = std::make_unique<DatagramShares>();
  size_t* share = datagram_shares_->bucket(config_.token_secret, s.src_mac);
  if (*share + cost > config_.unexpected_bytes / DatagramShares::kShareDivisor &&
      unexpected_bytes_ >= config_.unexpected_bytes / 2) {
    ++stats_.datagrams_over_share;
    ++stats_.datagrams_dropped;
    return;
  }
  const auto slot = new_unexpected(in.length);
  if (slot == unexpected_.end()) {
    ++stats_.datagrams_dropped;
    return;
  }
  UnexpectedMessage& u = *slot;
  u.sender = in.sender;
  u.connection_key = 0;  // no connection: nothing to notify, no order to keep
  u.tagged = in.tagged;
  u.tag = in.tag;
  u.has_data = in.has_data;
  u.cq_data = in.cq_data;
  u.length = in.length;
  u.received = in.length;
  if (in.length != 0) std::memcpy(u.bytes.get(), s.payload, in.length);
  u.complete = true;
  u.charged = cost;
  u.share.set(share, cost);
  unexpected_bytes_ += cost;
  ++stats_.datagrams_received;
}

}  // namespace ofi_dpdk::proto
