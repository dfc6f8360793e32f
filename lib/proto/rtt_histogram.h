// rtt_histogram.h: the round trips a transport measured (one sample per
// ack that acknowledged a segment sent once: Engine::on_ack), kept as
// counts, so that an operator and the bottleneck bench read the median
// and the tail the connections saw rather than the smoothed mean.
//
// Buckets split each power of two of nanoseconds from 1024 ns up into
// eight, so a percentile is told within an eighth (12.5 %) of itself;
// samples under 1024 ns count in the first bucket, those over about 69 s
// in the last.  Adding one costs a count-leading-zeros, two shifts and an
// increment: it runs once per acknowledged segment at most.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>

namespace ofi_dpdk::proto {

class RttHistogram {
 public:
  void add(uint64_t rtt_ns) {
    ++counts_[bucket_of(rtt_ns)];
    ++samples_;
    max_ns_ = std::max(max_ns_, rtt_ns);
  }

  uint64_t samples() const { return samples_; }
  uint64_t max_ns() const { return max_ns_; }

  // The round trip `per_mille` thousandths of the samples are at or under,
  // as its bucket's upper edge (never above the largest sample); 0 with no
  // samples.
  uint64_t percentile(unsigned per_mille) const {
    if (samples_ == 0) return 0;
    // The rank of the sample asked for, from 1: ceil(samples * q).
    const uint64_t rank =
        std::max<uint64_t>(1, (samples_ * std::min(per_mille, 1000u) + 999) / 1000);
    uint64_t seen = 0;
    for (size_t i = 0; i < kBuckets; ++i) {
      seen += counts_[i];
      if (seen >= rank) return std::min(upper_edge(i), max_ns_);
    }
    return max_ns_;
  }

 private:
  static constexpr unsigned kFirstPower = 10;  // 1024 ns
  static constexpr unsigned kSplits = 8;       // buckets per power of two
  static constexpr unsigned kPowers = 26;      // up to 2^36 ns, about 69 s
  static constexpr size_t kBuckets = kPowers * kSplits;

  static size_t bucket_of(uint64_t rtt_ns) {
    const uint64_t value = std::max<uint64_t>(rtt_ns, uint64_t{1} << kFirstPower);
    const unsigned power = 63 - static_cast<unsigned>(std::countl_zero(value));
    if (power >= kFirstPower + kPowers) return kBuckets - 1;
    // The three bits under the leading one choose the split.
    const unsigned split = static_cast<unsigned>(value >> (power - 3)) & (kSplits - 1);
    return (power - kFirstPower) * kSplits + split;
  }
  static uint64_t upper_edge(size_t bucket) {
    const unsigned power = kFirstPower + static_cast<unsigned>(bucket / kSplits);
    const uint64_t split = bucket % kSplits;
    return ((kSplits + split + 1) << (power - 3)) - 1;
  }

  uint64_t counts_[kBuckets] = {};
  uint64_t samples_ = 0;
  uint64_t max_ns_ = 0;
};

}  // namespace ofi_dpdk::proto
