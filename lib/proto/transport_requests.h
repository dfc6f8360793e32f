// transport_requests.h: what an application's operation hands the
// reliable transport and gets back: addresses, send and receive requests,
// a request's response, completions, the kErr* codes they carry, and the
// callbacks an endpoint serves requests and control messages with.  The
// engine that takes them is transport.h.
#pragma once

#include <sys/uio.h>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <list>
#include <memory>
#include <span>
#include <type_traits>

#include "lib/proto/response_bytes.h"

namespace ofi_dpdk::proto {

// An application's 8 iovecs (the provider's iov_limit) and a request's
// header in front of them.
inline constexpr size_t kMaxIov = 9;
// Segments in flight per connection and direction (a power of two).
inline constexpr uint32_t kMaxWindow = 256;

// Error codes of completions: libfabric's positive errno values, so the
// provider passes them through (FI_ETIMEDOUT, FI_EIO, FI_ETRUNC, FI_ECANCELED).
inline constexpr int kErrTimedOut = 110;     // FI_ETIMEDOUT
inline constexpr int kErrPeerReset = 5;      // FI_EIO; prov_errno says why
inline constexpr int kErrTruncated = 265;    // FI_ETRUNC
inline constexpr int kErrCanceled = 125;     // FI_ECANCELED
inline constexpr int kErrNoHandler = 95;     // FI_EOPNOTSUPP: the peer serves no requests
inline constexpr int kErrTooLarge = 90;      // FI_EMSGSIZE: a request above the peer's budget
inline constexpr int kErrNoMessage = 42;     // FI_ENOMSG: a peek found no matching message
inline constexpr int kErrKeyRejected = 129;  // FI_EKEYREJECTED: the region closed under the request
inline constexpr int kErrNoMemory = 12;      // FI_ENOMEM: the target could not allocate for it
inline constexpr int kErrHostUnreachable = 113;  // FI_EHOSTUNREACH: no route to the peer
// Provider-specific errno values (fi_cq_err_entry::prov_errno).
enum ProvErrno : int {
  kProvNone = 0,
  kProvPeerTimeout = 1,    // the peer stopped acknowledging
  kProvPeerRestarted = 2,  // the peer is a new incarnation
  kProvAnswerLost = 3,     // the request reached the peer; its answer was lost
  kProvSendGone = 4,       // a rendezvous sender no longer holds the announced message
  // (5, FI_EIO, is what an error completion with no reason of its own
  // carries as its prov_errno: the provider passes the error code there.)
  // An FI_DELIVERY_COMPLETE send the peer acknowledged whole, whose wait
  // for the notice failed: a receive may have taken it, or may still.
  kProvMaybeDelivered = 6,
  // The peer answers, but no receive took the message (its pull or its
  // delivery notice) within TransportConfig::delivery_timeout_ns.
  kProvNotTaken = 7,
  // The port found no way to the peer: the next hop toward its IPv4
  // address did not answer ARP within FI_DPDK_RESOLVE_TIMEOUT_MS.
  kProvNoRoute = 8,
};
const char* prov_errno_text(int prov_errno);
// Whether `prov_errno` is one of the values above (else an FI_E* code).
bool prov_errno_known(int prov_errno);

struct PeerAddress {
  uint8_t mac[6] = {};
  uint16_t queue = 0;
  uint32_t session = 0;   // 0: learn it from the peer
  uint32_t auth_key = 0;  // the network key the connection's frames carry
};

// A scalable endpoint's contexts lie within this many queues of its
// address: a frame may name as its sender's address (src_ep_queue) its own
// queue or one at most this far below.
inline constexpr uint16_t kMaxAddressSpan = 64;
// Copy buffers from 64 KiB to 4 MiB (sends' copies, responses, requests
// being assembled) are kept for reuse, 8 MiB of them at most per endpoint
// (Engine::spare_copies_).
inline constexpr size_t kMinSpareCopy = size_t{64} << 10;
inline constexpr size_t kMaxSpareCopy = size_t{4} << 20;
inline constexpr size_t kSpareCopyBytes = size_t{8} << 20;
// Copy buffers under kMinSpareCopy (a request's header, an atomic's
// operands or old values, an injected send) come in powers of two from
// kSmallCopy bytes to half kMinSpareCopy, and are kept for reuse,
// kSpareClassBytes of each size at most per endpoint (1 MiB in all): one
// from the heap per operation would be an allocation each.  Anything larger
// takes at least kMinSpareCopy.
inline constexpr size_t kSmallCopy = 256;
inline constexpr size_t kSpareClassBytes = size_t{128} << 10;

inline uint64_t peer_key(const uint8_t mac[6], uint16_t queue) {
  // queue << 48, then the MAC's six bytes, mac[0] the most significant.
  if constexpr (std::endian::native == std::endian::little) {
    uint64_t bytes = 0;
    std::memcpy(&bytes, mac, 6);
    return uint64_t{queue} << 48 | __builtin_bswap64(bytes) >> 16;
  } else {
    uint64_t key = queue;
    for (int i = 0; i < 6; ++i) key = key << 8 | mac[i];
    return key;
  }
}

struct SendRequest {
  const iovec* iov = nullptr;
  size_t iov_count = 0;
  void* context = nullptr;
  uint64_t user_flags = 0;  // returned untouched in the completion
  bool tagged = false;
  uint64_t tag = 0;
  bool has_data = false;
  uint64_t cq_data = 0;
  bool copy = false;  // inject: keep a copy, the caller reuses the buffer now
  // Without copy: the first iov (a request's header, made on the caller's
  // stack) is copied; the others are sent from until the send completes.
  bool copy_header = false;
  bool completion = true;  // false: no completion at all (fi_inject)
  // A request: completes when its response arrives, whose data is placed
  // in response_iov; the completion's error is the response's status.
  bool request = false;
  size_t response_iov_count = 0;
  bool internal = false;  // a response we send: not an application send
  // FI_DELIVERY_COMPLETE: once acknowledged, the send waits for the
  // receiver's delivery notice (a receive took it) before it completes.
  bool delivery_complete = false;
  uint32_t group = 0;  // the peer group the message is sent to
  // A control message (wire::kFlagControl): the iov is a ControlBody and
  // its data, taken by the peer's control handler.
  bool control = false;
  // Last, so that a copy of the request takes only the entries in use
  // (copy_request).
  iovec response_iov[kMaxIov];  // the first response_iov_count only are read
};

// `from` into `to`, response_iov only up to its count: a message kept for
// sending holds its request, and most have no response to place.
inline void copy_request(SendRequest& to, const SendRequest& from) {
  static_assert(std::is_trivially_copyable_v<SendRequest>);
  std::memcpy(static_cast<void*>(&to), &from, offsetof(SendRequest, response_iov));
  std::copy_n(from.response_iov, from.response_iov_count, to.response_iov);
}

// Who sent a message, as a receive matches it.
struct Sender {
  uint64_t source_key = 0;  // peer_key(mac, src_ep_queue): the sender's address
  uint32_t auth_key = 0;    // the network key its frames carried
  uint32_t group = 0;       // the peer group it was sent to
};

// A request (RMA, atomics) is sent like a message; the target's
// RequestHandler turns its bytes into a Response, which travels back on the
// reverse stream and completes the request.  The stream delivers each
// request once, so the handler runs once per request; the response is
// kept until the initiator acknowledged it.
struct Response {
  int status = 0;      // 0, or a kErr*-style positive error for the initiator
  ResponseBytes data;  // returned bytes (fetched values), copied when made
  // Or the bytes of a registered region a read returns, sent (and resent)
  // from the region itself: one copy fewer at the target.  They must not
  // change or go away until the initiator acknowledged them, unless
  // recalled first (Engine::recall_lent): the engine does so before it
  // writes into memory itself, the handler before a write or atomic, the
  // provider before a region closes.
  const uint8_t* lent_bytes = nullptr;
  size_t lent_length = 0;
};
// A control message (wire::kFlagControl) from the peer whose address is
// `source_key` (incarnation `session`): a whole ControlBody and its data.
using ControlHandler =
    std::function<void(uint64_t source_key, uint32_t session, const uint8_t* body, size_t length)>;

// Whether messages and requests from the peer whose address is
// `source_key` are taken (FI_EP_MSG: only the connected peer's).
using SenderFilter = std::function<bool(uint64_t source_key)>;

// The largest payload a frame to the peer whose link address (PeerAddress::
// mac) is `link` may carry on the way there, or 0 for no limit beyond
// TransportConfig::max_payload: a peer beyond a router whose links carry
// less than ours.
using PathLimit = std::function<uint32_t(const uint8_t* link)>;

// The engine learned that frames to the peer at `link` carry at most
// `payload` bytes of payload (large segments went unanswered while small
// frames were answered): for its caller to remember for later connections
// (PathLimit).
using PathLearned = std::function<void(const uint8_t* link, uint32_t payload)>;

// The MTUs (bytes after the Ethernet header) a connection falls back to,
// largest first, when its large segments go unanswered while the peer
// answers small frames: Ethernet's, then IPv6's minimum, which tunnels
// keep to.  Nothing below the last.
inline constexpr uint32_t kFallbackMtus[] = {1500, 1280};

// Up to out.size() UDP source ports that frames from the peer at `link`,
// endpoint queue `peer_queue`, to this endpoint should come from, so that
// the receiving NIC's RSS puts them on this endpoint's queue; returns how
// many (0: no such choice).
using ReachingPorts =
    std::function<size_t(const uint8_t* link, uint16_t peer_queue, std::span<uint16_t> out)>;

// `placed`: how many bytes after `request` (its head, `length` bytes) went
// straight where the RequestPlacer said; 0 when the request was assembled
// whole.
using RequestHandler = std::function<Response(uint64_t peer_key, const uint8_t* request,
                                              size_t length, size_t placed)>;

// Where the rest of a request may go as it arrives, instead of being
// assembled in a buffer and copied by the handler (an RMA write's data into
// its region): asked once, with the request's first segment, before any of
// its bytes is placed.  `header` bytes stay for the handler; the rest go to
// `target` in order.  A null target (the default) assembles it whole.
struct Placement {
  size_t header = 0;
  uint8_t* target = nullptr;
};
using RequestPlacer = std::function<Placement(uint64_t peer_key, const uint8_t* first,
                                              size_t first_length, size_t request_length)>;

// FI_MULTI_RECV: one posted buffer that successive messages fill, each in
// the next bytes; shared by the posted receive and the parts cut from it.
struct MultiRecv {
  size_t capacity = 0;
  size_t used = 0;        // bytes handed to messages so far
  size_t min_free = 0;    // FI_OPT_MIN_MULTI_RECV when posted
  size_t in_flight = 0;   // messages given a part that have not completed
  bool released = false;  // off the posted list: the last completion says so
};

struct RecvRequest {
  // Only the first iov_count are read: the rest are left unwritten (a
  // receive posted per message would clear 144 bytes for nothing).
  iovec iov[kMaxIov];
  size_t iov_count = 0;
  void* context = nullptr;
  uint64_t user_flags = 0;
  bool tagged = false;
  uint64_t tag = 0;
  uint64_t ignore = 0;
  bool any_source = true;
  uint64_t source_key = 0;  // peer_key when !any_source
  // FI_AUTH_KEY: only messages whose frames carried this network key.
  bool match_auth_key = false;
  uint32_t auth_key = 0;
  uint32_t group = 0;  // takes only messages sent to this peer group
  bool completion = true;
  std::shared_ptr<MultiRecv> multi;  // FI_MULTI_RECV (untagged only)
};

// Receives posted and not yet taken, in posting order: an engine's own, or
// those of a shared receive context (fi_srx_context), which several
// engines match from.  Engines sharing one are serialised by their caller.
struct PostedReceives {
  std::list<RecvRequest> list;
  // Nodes kept for the next receive (kSpareRecords at most): a receive
  // posted per message would otherwise be an allocation each.
  std::list<RecvRequest> spare;
  size_t count = 0;
};

struct Completion {
  enum class Kind : uint8_t { kSend, kRecv } kind;
  void* context;
  uint64_t user_flags;
  int error;        // 0, or a kErr* value
  int prov_errno;   // ProvErrno
  size_t len;       // bytes sent, or bytes placed
  size_t overflow;  // bytes that did not fit (kErrTruncated)
  void* buf;        // first receive buffer
  bool tagged;
  uint64_t tag;
  bool has_data;
  uint64_t cq_data;
  uint64_t source_key;  // recv: the sender's peer_key (address, not connection)
  uint32_t auth_key;    // recv: the network key the message came with
  // FI_MULTI_RECV: the buffer this receive was placed in is released.  With
  // release_only the completion is that alone, no message (fi_cq(3)).
  bool multi_released;
  bool release_only;
};

}  // namespace ofi_dpdk::proto
