// fault_plan.h: what the fault injector does to each frame, decided by a
// seeded pseudo-random plan.  No DPDK here, so the statistics of the plan
// are unit-tested on their own and a run can be replayed from its seed.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace ofi_dpdk::net {

// Per-frame probabilities, each in [0, 1].  The actions are exclusive: a
// frame gets at most one of them.  Should the rates add up to more than 1,
// they are served in declaration order (drop first) and the later ones get
// what is left.
struct FaultConfig {
  double drop = 0;
  double reorder = 0;
  double duplicate = 0;
  double corrupt = 0;
  double delay = 0;
  uint32_t delay_us = 100;  // how long a delayed frame is held
  uint64_t seed = 1;

  // True when at least one rate is above zero.
  bool any() const;
};

// Parses "0.05" or "5%" into a probability.  Surrounding blanks are allowed.
// Returns std::nullopt on text that is not a number, on NaN or infinity, and
// on values outside [0, 1].
std::optional<double> parse_rate(std::string_view text);

enum class FaultAction : uint8_t {
  kPass,
  kDrop,
  kDuplicate,
  kReorder,
  kCorrupt,
  kDelay,
};

const char* fault_action_name(FaultAction action);

// One decision per frame.  Deterministic from FaultConfig::seed; not
// thread-safe, so each RX queue owns its own plan.
class FaultPlan {
 public:
  // Rates outside [0, 1] are clamped, NaN counts as 0.
  explicit FaultPlan(const FaultConfig& config);

  FaultAction next() {
    if (!active_) return FaultAction::kPass;
    // 53 random bits compared against cumulative thresholds scaled by 2^53:
    // exact for rate 0 (never) and rate 1 (always).
    const uint64_t draw = next_u64() >> 11;
    for (int i = 0; i < kActions; ++i) {
      if (draw < thresholds_[i]) return kOrder[i];
    }
    return FaultAction::kPass;
  }

  // Uniform 32-bit value, for choosing which byte and bit to corrupt.
  uint32_t random_u32() { return static_cast<uint32_t>(next_u64() >> 32); }

  // Uniform in [0, bound) for bound > 0, by multiply-and-shift (no division).
  uint32_t random_below(uint32_t bound) {
    return static_cast<uint32_t>((static_cast<uint64_t>(random_u32()) * bound) >> 32);
  }

 private:
  static constexpr int kActions = 5;
  static constexpr FaultAction kOrder[kActions] = {FaultAction::kDrop, FaultAction::kReorder,
                                                   FaultAction::kDuplicate, FaultAction::kCorrupt,
                                                   FaultAction::kDelay};

  // splitmix64: one 64-bit word of state, every seed (0 included) is good,
  // and the output passes the usual statistical batteries.
  uint64_t next_u64() {
    state_ += 0x9e3779b97f4a7c15ULL;
    uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  uint64_t state_;
  uint64_t thresholds_[kActions];  // cumulative, in units of 2^-53
  bool active_;
};

}  // namespace ofi_dpdk::net
