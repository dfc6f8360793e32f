// token.h: the keyed hashes behind connection tokens and HELLO nonces
// (engine_handshake.cc).  A token is granted to whoever asks with a HELLO,
// without keeping state, and checked when the first segment shows it; only
// a holder of the endpoint's secret (TransportConfig::token_secret) can
// compute one, so a sender that never received our HELLO_ACK cannot open a
// connection.  Public so tests and the fuzz corpus can build valid frames
// for an engine whose secret they chose.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ofi_dpdk::proto {

// The keyed hash: SipHash-2-4's rounds over 64-bit words.
uint64_t keyed_hash(const uint64_t secret[2], const uint64_t* words, size_t count);

// The token granted to a HELLO from peer `key` (peer_key), incarnation
// `session`, transmit connection `conn`, network key `auth_key`, for the
// receive half's generation `gen`.  64 bits, never 0.
uint64_t handshake_token(const uint64_t secret[2], uint64_t key, uint32_t session, uint16_t conn,
                         uint32_t auth_key, uint32_t gen);

// The nonce of an endpoint's `counter`-th HELLO (counting from 1).  64
// bits, never 0.
uint64_t hello_nonce(const uint64_t secret[2], uint32_t session, uint16_t queue, uint64_t counter);

}  // namespace ofi_dpdk::proto
