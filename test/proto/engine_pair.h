// engine_pair.h: two engines, A and B, over the in-memory link
// (lossy_link.h), with the calls the transport tests make most: messages and
// receives either way, fetch-add requests from A to B, and stepping until
// completions arrive; and taking an outbox's frames by hand.  Header-only,
// for the tests of test/proto.
#pragma once

#include <cstring>
#include <vector>

#include "lib/proto/frame_codec.h"
#include "lib/proto/transport.h"
#include "test/proto/lossy_link.h"

namespace ofi_dpdk::proto::sim {

// The frames in an engine's outbox as the provider would put them on the
// wire, for a test that moves frames by hand; the outbox is then empty.
inline std::vector<std::vector<uint8_t>> take_outbox(Engine& engine, const uint8_t* own_mac) {
  std::vector<std::vector<uint8_t>> frames;
  for (const OutFrame& out : engine.outbox()) {
    std::vector<uint8_t> bytes(wire::kHeadersSize + out.header.payload_len);
    encode_headers(bytes.data(), out.dst_mac, own_mac, wire::kDefaultEtherType, out.header);
    out.copy_payload(bytes.data() + wire::kHeadersSize);
    seal_frame(bytes.data(), bytes.size());
    frames.push_back(std::move(bytes));
  }
  engine.frames_sent();
  return frames;
}

inline constexpr uint8_t kPairMacA[6] = {0x02, 0, 0, 0, 0, 0x0A};
inline constexpr uint8_t kPairMacB[6] = {0x02, 0, 0, 0, 0, 0x0B};

// Engines A and B over the link; B serves requests with a counter it adds
// one to per request, answering the old value (a fetch-add), or with
// `reply_bytes` bytes of data when set.
struct Pair {
  explicit Pair(uint64_t seed, TransportConfig a_config = {}, TransportConfig b_config = {})
      : link(seed) {
    a = link.add(a_config, kPairMacA, 0, 0xA0000001);
    b = link.add(b_config, kPairMacB, 0, 0xB0000001);
    link.engine(b).set_request_handler([this](uint64_t, const uint8_t*, size_t, size_t) {
      Response r;
      if (reply_bytes != 0) {
        r.data.assign(reply_bytes, 0);
        for (size_t i = 0; i < reply_bytes; ++i) r.data[i] = static_cast<uint8_t>(i * 7 + 1);
      } else {
        const uint64_t old = counter++;
        r.data.resize(8);
        std::memcpy(r.data.data(), &old, 8);
      }
      ++calls;
      return r;
    });
  }
  Engine& engine(size_t i) { return link.engine(i); }
  // A request from A to B whose answer goes to `result`.
  int request(std::vector<uint8_t>* result, void* context) {
    static const char kAdd[] = "add";
    iovec iov{const_cast<char*>(kAdd), 3};
    SendRequest s;
    s.iov = &iov;
    s.iov_count = 1;
    s.context = context;
    s.copy = true;
    s.request = true;
    s.response_iov[0] = {result->data(), result->size()};
    s.response_iov_count = 1;
    return engine(a).send(link.address(b), s, link.now());
  }
  int send(size_t from, size_t to, const std::vector<uint8_t>& bytes, void* context,
           bool delivery_complete = false) {
    iovec iov{const_cast<uint8_t*>(bytes.data()), bytes.size()};
    SendRequest s;
    s.iov = &iov;
    s.iov_count = 1;
    s.context = context;
    s.copy = true;
    s.delivery_complete = delivery_complete;
    return engine(from).send(link.address(to), s, link.now());
  }
  int post(size_t at, std::vector<uint8_t>* buffer, void* context) {
    RecvRequest r;
    r.iov[0] = {buffer->data(), buffer->size()};
    r.iov_count = 1;
    r.context = context;
    return engine(at).post_recv(r, link.now());
  }
  // Steps until engine e has `count` completions kept in done[e], or the
  // simulated time runs out.
  bool wait(size_t e, size_t count, uint64_t limit_ns) {
    const uint64_t end = link.now() + limit_ns;
    while (true) {
      collect();
      if (done[e].size() >= count) return true;
      if (link.now() >= end) return false;
      link.step();
    }
  }
  void run_for(uint64_t ns) {
    const uint64_t end = link.now() + ns;
    while (link.now() < end) {
      link.step();
      collect();
    }
  }
  void collect() {
    for (size_t e = 0; e < 2; ++e) {
      auto& c = engine(e).completions();
      done[e].insert(done[e].end(), c.begin(), c.end());
      c.clear();
    }
  }

  // One message A to B, to open the connection; forgets its completions.
  bool warm_up(uint64_t limit_ns = 100'000'000) {
    std::vector<uint8_t> in(8);
    static const std::vector<uint8_t> out(8, 0x5A);
    if (post(b, &in, &in) != 0 || send(a, b, out, &in) != 0) return false;
    if (!wait(b, 1, limit_ns) || !wait(a, 1, limit_ns)) return false;
    done[a].clear();
    done[b].clear();
    return true;
  }

  LossyLink link;
  size_t a = 0, b = 0;
  uint64_t counter = 0;
  int calls = 0;
  size_t reply_bytes = 0;
  std::vector<Completion> done[2];
};

}  // namespace ofi_dpdk::proto::sim
