// wire.h: the ofi-dpdk wire protocol, in code.  This file is the
// specification; doc/wire-protocol.md explains it in prose.
//
// A frame is an Ethernet II header, then one FrameHeader, then payload.
// Every multi-byte field is big-endian on the wire.  The structs below are
// the exact wire layout (packed by construction: every field is naturally
// aligned), pinned by static_assert.  Change nothing here without bumping
// kWireVersion.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ofi_dpdk::wire {

// IEEE 802 "local experimental" EtherType; FI_DPDK_ETHERTYPE overrides it.
inline constexpr uint16_t kDefaultEtherType = 0x88B5;
inline constexpr uint8_t kWireVersion = 10;  // 2: conn and ack_conn; 3: delivery notices;
                                             // 4: auth_key, group, src_ep_queue;
                                             // 5: HELLO handshake, tokens, checksum
                                             //    over the Ethernet header;
                                             // 6: rendezvous (kFlagRendezvous, kFlagPull);
                                             // 7: BUNDLE frames;
                                             // 8: DATAGRAM frames (FI_EP_DGRAM),
                                             //    control messages (FI_EP_MSG);
                                             // 9: pieces of a segment (kFlagPiece);
                                             // 10: 64-bit tokens and nonces, RESETs
                                             //    name the sequence they answer,
                                             //    keyed frames (kFlagKeyed)

struct EtherHeader {
  uint8_t dst_mac[6];
  uint8_t src_mac[6];
  uint16_t ether_type;  // big-endian
};
static_assert(sizeof(EtherHeader) == 14);

// X-macro: one line per opcode gives the enum and the name used in logs.
#define OFI_DPDK_OPCODES(X)                                                                   \
  X(kMsg, 1, "MSG")            /* an untagged message segment */                              \
  X(kTagged, 2, "TAGGED")      /* a tagged message segment (tag valid) */                     \
  X(kAck, 3, "ACK")            /* ack + window; tag carries the SACK bitmap */                \
  X(kReset, 4, "RESET")        /* "I hold no connection for your session" */                  \
  X(kRequest, 5, "REQUEST")    /* RMA/atomic request segment: the target answers */           \
  X(kResponse, 6, "RESPONSE")  /* its answer: tag = request msg_id, cq_data = status */       \
  X(kHello, 7, "HELLO")        /* "I open transmit connection conn to you" */                 \
  X(kHelloAck, 8, "HELLO_ACK") /* its answer: the token that connection's data carries */     \
  X(kBundle, 9, "BUNDLE")      /* several whole small messages' segments: BundleEntry each */ \
  X(kDatagram, 10, "DATAGRAM") /* FI_EP_DGRAM: one whole message, no connection, never resent */

enum class Opcode : uint8_t {
#define OFI_DPDK_OPCODE_ENUM(name, value, text) name = value,
  OFI_DPDK_OPCODES(OFI_DPDK_OPCODE_ENUM)
#undef OFI_DPDK_OPCODE_ENUM
};

// Returns the opcode's name, or "UNKNOWN" for a value no opcode has.
constexpr const char* opcode_name(uint8_t value) {
#define OFI_DPDK_OPCODE_NAME(name, v, text) \
  if (value == (v)) return text;
  OFI_DPDK_OPCODES(OFI_DPDK_OPCODE_NAME)
#undef OFI_DPDK_OPCODE_NAME
  return "UNKNOWN";
}

constexpr bool opcode_known(uint8_t value) {
  return opcode_name(value)[0] != 'U';
}

// Opcodes whose frames carry a message stream segment (seq, msg_id, offset).
constexpr bool opcode_is_data(uint8_t value) {
  return value == static_cast<uint8_t>(Opcode::kMsg) ||
         value == static_cast<uint8_t>(Opcode::kTagged) ||
         value == static_cast<uint8_t>(Opcode::kRequest) ||
         value == static_cast<uint8_t>(Opcode::kResponse);
}

// Frame flags (FrameHeader::flags).
inline constexpr uint16_t kFlagRemoteData = 1u << 0;  // cq_data is valid
inline constexpr uint16_t kFlagLastSegment = 1u << 1;
inline constexpr uint16_t kFlagAckValid = 1u << 2;  // ack and window are meaningful
// 1u << 3 was kFlagSyn up to version 4 (data segments opened connections);
// since version 5 only a HELLO handshake does, and the bit is unused.
// On MSG and TAGGED segments (FI_DELIVERY_COMPLETE): once a receive has
// taken the whole message, the receiver answers with a RESPONSE whose tag is
// this msg_id (status 0 in cq_data); the send completes on that notice.
inline constexpr uint16_t kFlagDeliveryNotice = 1u << 4;
// On an ACK without kFlagAckValid: a sender waiting for a delivery notice
// asks whether the receiver still holds its connection; the answer is an
// ACK, or a RESET when it does not.
inline constexpr uint16_t kFlagAckRequest = 1u << 5;
// On the last segment of a message whose sender waits on its ack (a
// completion, a request's answer): the receiver acks at its next pass
// instead of after its ack delay (a pingpong would otherwise wait that
// delay every message).  Also on a segment that fills the sender's window.
// Injects, which nobody waits on, go without it.
inline constexpr uint16_t kFlagAckNow = 1u << 6;
// The sender computed no checksum (FI_DPDK_CHECKSUM=0, for links that are
// only memory): only a receiver configured the same takes the frame.
inline constexpr uint16_t kFlagUnsealed = 1u << 7;
// On a MSG or TAGGED message: it is a rendezvous announcement, whose only
// payload is a RendezvousBody naming the length of the data it stands for.
// The receiver matches it like the message itself; once a receive takes it,
// the receiver pulls the data (kFlagPull) straight into that receive.
inline constexpr uint16_t kFlagRendezvous = 1u << 8;
// On a REQUEST: a pull, whose payload is a PullBody.  The engine answers it
// itself (no request handler) with a RESPONSE carrying the announced
// message's data, sent from the sender's own buffer.
inline constexpr uint16_t kFlagPull = 1u << 9;

// On a DATAGRAM: the message is tagged (tag valid).  (MSG and TAGGED
// segments say so by their opcode; a datagram has one opcode for both.)
inline constexpr uint16_t kFlagTagged = 1u << 10;
// On a MSG message: a connection-management message of FI_EP_MSG endpoints
// (a ControlBody and its data), whole in one segment, taken by the engine's
// control handler, never by a receive.  It travels in order with the
// messages of its connection, so a SHUTDOWN comes after all data sent
// before it.
inline constexpr uint16_t kFlagControl = 1u << 11;
// On a data segment sent again after the path to the peer proved narrower
// than when it was cut (path MTU discovery): this frame is one piece of
// segment `seq`, whose whole payload is segment_len bytes; it carries
// payload_len of them, from piece_offset into the segment (offset is the
// piece's own place in the message).  The receiver takes the segment once
// its pieces cover it.  Never in a BUNDLE.
inline constexpr uint16_t kFlagPiece = 1u << 12;

// The frame's integrity field holds a keyed tag (frame_tag.h), not a CRC:
// the sender has a job key.  A receiver with a job key takes only such
// frames, and one without takes none of them.
inline constexpr uint16_t kFlagKeyed = 1u << 13;
// On an ACK: duplicate_delta and duplicate_copies report a segment that
// arrived more than once, so that its sender can tell a needless
// retransmission from a repair (a spurious timeout, whose cut it undoes).
// A receiver that knows nothing of it ignores the flag and both fields.
inline constexpr uint16_t kFlagDuplicate = 1u << 14;
// With kFlagAckValid: congestion seen (ECN echo).  The receive half of
// connection ack_conn took a segment marked CE (a router's queue built up),
// and this is its first frame since whose ack covers that segment; the
// sender counts the segments this ack newly covers as marked
// (Engine::on_congestion_echo).
// A receiver that knows nothing of it never sets it, and a sender that
// knows nothing of it ignores it.
inline constexpr uint16_t kFlagCongestionSeen = 1u << 15;

// The flags a BundleEntry may carry: those that describe one segment.  The
// frame's own (kFlagAckValid, kFlagAckRequest, kFlagUnsealed) are in the
// BUNDLE frame's header and hold for every entry.
inline constexpr uint16_t kSegmentFlags = kFlagRemoteData | kFlagLastSegment | kFlagDeliveryNotice |
                                          kFlagAckNow | kFlagRendezvous | kFlagPull | kFlagControl;

// Sequence numbers of a connection start here, in each direction.
inline constexpr uint32_t kInitialSeq = 1;
// An ACK's tag: bit i set means segment ack + 1 + i has arrived (SACK).
inline constexpr int kSackBits = 64;

struct FrameHeader {
  uint8_t version;       // kWireVersion
  uint8_t opcode;        // Opcode
  uint16_t flags;        // kFlag*
  uint16_t dst_queue;    // receiving endpoint's queue id at dst_mac
  uint16_t src_queue;    // sending endpoint's queue id at src_mac
  uint32_t src_session;  // sender's incarnation (epoch), never 0
  uint32_t dst_session;  // receiver's incarnation as the sender knows it, 0 if unknown
  uint32_t seq;          // per-connection sequence number
  uint32_t ack;          // cumulative ack: next seq expected from the peer;
                         // RESET: the seq of the frame it answers
  uint32_t msg_id;       // per-connection message number
  uint32_t msg_len;      // whole message length in bytes
  uint32_t offset;       // of this segment's payload within the message
  uint16_t payload_len;  // bytes of payload following this header
  uint16_t window;       // receive credits the sender grants the peer
  uint64_t tag;          // tagged messages: the tag; ACK: the SACK bitmap
  uint64_t cq_data;      // remote CQ data when kFlagRemoteData
  // What protects the frame, over the Ethernet header (on our EtherType;
  // not in UDP), this header (this field as 0) and the payload: the CRC-32C
  // in the low 32 bits (the high 32 are 0), or with kFlagKeyed the 64-bit
  // keyed tag of frame_tag.h.
  uint64_t integrity;
  // Tokens name a transmit connection unguessably (version 5; 64 bits since
  // version 10).  The receiving side of a connection grants its token in
  // the HELLO_ACK; the sender's data segments and probes carry it in
  // `token`, and the receiving side's acks and RESETs carry it back in
  // `ack_token`.  A frame whose token its receiver does not hold for that
  // connection opens nothing and changes nothing: only a completed HELLO
  // handshake opens a receive half, so a retransmitted segment can never
  // start a second connection and run twice.
  //   HELLO:      token = the opener's nonce (ack_token 0)
  //   HELLO_ACK:  ack_token = that nonce echoed; the granted token is in
  //               the HandshakeBody
  //   data, probe: token = the granted token of the sender's connection conn
  //   acks (kFlagAckValid): ack_token = the token of connection ack_conn
  //   RESET:      ack_token = the token (or nonce) of the frame it answers
  uint64_t token;
  uint64_t ack_token;
  // Connection numbers tell the connections of one pair of incarnations
  // apart: a sender that gave up on a connection (peer timeout, RESET) opens
  // the next one with conn + 1, so stragglers and acks of the old one can
  // never be taken for the new one's (serial comparison, 16 bits).
  uint16_t conn;      // sender's transmit connection that seq/msg_id belong to
  uint16_t ack_conn;  // receiver's transmit connection that ack/window/RESET answer
  // The network (authorization) key of the connection: an endpoint takes
  // only frames carrying a key it was enabled with, so jobs sharing a wire
  // never see each other's traffic.  0: no key.
  uint32_t auth_key;
  // MSG and TAGGED: the peer group the message was sent to (fi_group_addr);
  // only a receive posted for that group takes it.  0 otherwise.
  uint32_t group;
  // The queue of the sending endpoint's address: src_queue itself, or for a
  // context of a scalable endpoint its endpoint's first queue.  The
  // receiver names the source (FI_SOURCE) by (src_mac, src_ep_queue).
  uint16_t src_ep_queue;
  uint16_t segment_len;   // kFlagPiece: the whole segment's payload length; else 0
  uint32_t piece_offset;  // kFlagPiece: where this piece starts in its segment; else 0
  // ACK with kFlagDuplicate: the segment at sequence ack + duplicate_delta
  // arrived duplicate_copies more times than once since the last such
  // report (wire-protocol.md, "Undoing a spurious timeout"); else both 0.
  // (Until these were named the 4 bytes were reserved and sent as 0.)
  int16_t duplicate_delta;
  uint16_t duplicate_copies;
};
static_assert(sizeof(FrameHeader) == 104);
static_assert(offsetof(FrameHeader, src_session) == 8);
static_assert(offsetof(FrameHeader, payload_len) == 36);
static_assert(offsetof(FrameHeader, tag) == 40);
static_assert(offsetof(FrameHeader, integrity) == 56);
static_assert(offsetof(FrameHeader, token) == 64);
static_assert(offsetof(FrameHeader, ack_token) == 72);
static_assert(offsetof(FrameHeader, conn) == 80);
static_assert(offsetof(FrameHeader, ack_conn) == 82);
static_assert(offsetof(FrameHeader, auth_key) == 84);
static_assert(offsetof(FrameHeader, group) == 88);
static_assert(offsetof(FrameHeader, src_ep_queue) == 92);
static_assert(offsetof(FrameHeader, piece_offset) == 96);
static_assert(offsetof(FrameHeader, duplicate_delta) == 100);

inline constexpr size_t kHeadersSize = sizeof(EtherHeader) + sizeof(FrameHeader);

// A BUNDLE frame (version 7) carries the segments of several small messages
// of one connection, each a whole message, in sequence order: a sender that
// has more than one queued for the same peer pays one frame, one checksum
// and one device call for all of them.  Its FrameHeader holds what belongs
// to the frame (queues, sessions, conn and token, the ack and window, the
// frame flags) and payload_len, the bytes of all entries; seq, msg_id,
// msg_len, offset, tag, cq_data and group are 0.  The payload is a run of entries, each this
// header and then its payload_len bytes; each entry is taken exactly as a
// frame of its own with the frame's header and the entry's fields would
// be, so loss, repair and acknowledgement stay per segment.
struct BundleEntry {
  uint8_t opcode;     // kMsg, kTagged, kRequest or kResponse
  uint8_t reserved8;  // 0
  uint16_t flags;     // kSegmentFlags only
  uint32_t seq;
  uint32_t msg_id;
  uint32_t msg_len;
  uint32_t offset;
  uint32_t group;
  uint16_t payload_len;
  uint16_t reserved16;  // 0
  uint32_t reserved32;  // 0
  uint64_t tag;
  uint64_t cq_data;
};
static_assert(sizeof(BundleEntry) == 48);
static_assert(offsetof(BundleEntry, payload_len) == 24);
static_assert(offsetof(BundleEntry, tag) == 32);

// A DATAGRAM frame (version 8) is a whole message of an FI_EP_DGRAM
// endpoint: msg_len = payload_len, offset 0; flags kFlagTagged,
// kFlagRemoteData (and the frame's kFlagUnsealed) only; tag, cq_data,
// group, auth_key and src_ep_queue as on a MSG segment.  No connection
// carries it: seq, ack, msg_id, window, conn, ack_conn, token, ack_token
// and dst_session are 0.  Nothing acknowledges it and nothing resends it.
// Only an FI_EP_DGRAM endpoint takes it; it takes nothing else.
inline constexpr uint16_t kDatagramFlags = kFlagTagged | kFlagRemoteData | kFlagUnsealed;

// The payload of a control message (kFlagControl), big-endian; `data_len`
// bytes of connection data (fi_connect's, fi_accept's, fi_reject's
// param) follow it.
enum class ControlKind : uint8_t {
  kConnect = 1,   // fi_connect, to a passive endpoint's address
  kAccept = 2,    // fi_accept, from the new endpoint to the connecting one
  kReject = 3,    // fi_reject, from the passive endpoint
  kShutdown = 4,  // fi_shutdown (or close), to the connected peer
};
inline constexpr size_t kMaxConnectionData = 256;  // FI_OPT_CM_DATA_SIZE
struct ControlBody {
  uint8_t kind;       // ControlKind
  uint8_t reserved8;  // 0
  uint16_t data_len;  // at most kMaxConnectionData
  // CONNECT: a random number its answer (ACCEPT or REJECT) echoes; the
  // connecting endpoint takes no answer without it.  SHUTDOWN: 0.
  uint32_t nonce;
};
static_assert(sizeof(ControlBody) == 8);

// The payload of HELLO and HELLO_ACK frames (big-endian like the header).
struct HandshakeBody {
  // HELLO_ACK: the token the opener's data segments on this connection
  // carry (never 0).  HELLO: 0.
  uint64_t token;
  // The largest frame payload the sender of this frame accepts; each side
  // sends segments of at most the smaller of its own and the peer's.
  uint32_t max_payload;
  uint32_t reserved;  // 0
  // HELLO_ACK: UDP source ports that the answering side's NIC steers (by
  // RSS) to the queue of the endpoint answering, for frames from the
  // opener; the opener's frames of this connection take them by path (0
  // ends the list; none: the opener picks its own).  HELLO: 0.
  uint16_t reaching_ports[4];
};
// The first of the dynamic ports (RFC 6335), 49152-65535: source ports
// are named from these only.
inline constexpr uint16_t kFirstDynamicPort = 49152;
static_assert(sizeof(HandshakeBody) == 24);

// The payload of a rendezvous announcement (kFlagRendezvous), big-endian.
struct RendezvousBody {
  uint64_t length;       // bytes of the message's data, at most max_msg_size
  uint32_t reserved[2];  // 0
};
static_assert(sizeof(RendezvousBody) == 16);

// The payload of a pull (a REQUEST with kFlagPull), big-endian.
struct PullBody {
  uint32_t msg_id;    // the announcement's msg_id on the puller's receive stream
  uint16_t conn;      // the announcing sender's transmit connection it came on
  uint16_t reserved;  // 0
  uint64_t length;    // bytes wanted: the receive's capacity, at most the
                      // message's length; 0 discards the message
};
static_assert(sizeof(PullBody) == 16);

// The head of an RMA or atomic REQUEST's payload (lib/remote), big-endian;
// a write's data, or an atomic's operands and then its compare values,
// follow it.  The RESPONSE's status (cq_data) is an FI_E* value or 0, its
// payload a read's data or an atomic's old values.
enum class RemoteKind : uint8_t {
  kWrite = 1,          // fi_write: data follows
  kRead = 2,           // fi_read: the response carries `length` bytes
  kAtomic = 3,         // fi_atomic: operands follow, nothing comes back
  kFetchAtomic = 4,    // fi_fetch_atomic: the old values come back
  kCompareAtomic = 5,  // fi_compare_atomic: compare values follow the operands
};
inline constexpr uint8_t kRemoteHasData =
    1;  // RemoteOpHeader::flags: cq_data is for the target's CQ

struct RemoteOpHeader {
  uint8_t kind;       // RemoteKind
  uint8_t flags;      // kRemoteHasData
  uint16_t datatype;  // atomics: enum fi_datatype
  uint16_t op;        // atomics: enum fi_op
  uint16_t reserved;  // 0
  uint64_t key;       // the target region's key
  uint64_t addr;      // where in it (as the target's mr_mode addresses)
  uint64_t length;    // RMA: bytes; atomics: elements
  uint64_t cq_data;   // kRemoteHasData: the target's completion data
};
static_assert(sizeof(RemoteOpHeader) == 40);
static_assert(offsetof(RemoteOpHeader, key) == 8);
static_assert(offsetof(RemoteOpHeader, cq_data) == 32);

}  // namespace ofi_dpdk::wire
