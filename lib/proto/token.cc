#include "lib/proto/token.h"

namespace ofi_dpdk::proto {
namespace {

inline uint64_t rotl(uint64_t x, int b) {
  return (x << b) | (x >> (64 - b));
}

uint64_t nonzero(uint64_t hash) {
  return hash != 0 ? hash : 1;
}

}  // namespace

uint64_t keyed_hash(const uint64_t secret[2], const uint64_t* words, size_t count) {
  uint64_t v0 = secret[0] ^ 0x736f6d6570736575ull, v1 = secret[1] ^ 0x646f72616e646f6dull,
           v2 = secret[0] ^ 0x6c7967656e657261ull, v3 = secret[1] ^ 0x7465646279746573ull;
  auto round = [&] {
    v0 += v1;
    v1 = rotl(v1, 13);
    v1 ^= v0;
    v0 = rotl(v0, 32);
    v2 += v3;
    v3 = rotl(v3, 16);
    v3 ^= v2;
    v0 += v3;
    v3 = rotl(v3, 21);
    v3 ^= v0;
    v2 += v1;
    v1 = rotl(v1, 17);
    v1 ^= v2;
    v2 = rotl(v2, 32);
  };
  for (size_t i = 0; i < count; ++i) {
    v3 ^= words[i];
    round();
    round();
    v0 ^= words[i];
  }
  const uint64_t last = uint64_t{count} << 56;
  v3 ^= last;
  round();
  round();
  v0 ^= last;
  v2 ^= 0xff;
  for (int i = 0; i < 4; ++i) round();
  return v0 ^ v1 ^ v2 ^ v3;
}

uint64_t handshake_token(const uint64_t secret[2], uint64_t key, uint32_t session, uint16_t conn,
                         uint32_t auth_key, uint32_t gen) {
  const uint64_t words[] = {key, uint64_t{session} << 32 | auth_key, uint64_t{conn} << 32 | gen};
  return nonzero(keyed_hash(secret, words, 3));
}

uint64_t hello_nonce(const uint64_t secret[2], uint32_t session, uint16_t queue, uint64_t counter) {
  // All ones first: a word real peer keys do not take, to keep the inputs
  // of nonces and tokens apart.
  const uint64_t words[] = {~uint64_t{0}, uint64_t{session} << 32 | queue, counter};
  return nonzero(keyed_hash(secret, words, 3));
}

}  // namespace ofi_dpdk::proto
