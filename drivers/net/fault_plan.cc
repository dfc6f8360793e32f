#include "drivers/net/fault_plan.h"

#include <charconv>
#include <cmath>

namespace ofi_dpdk::net {
namespace {

constexpr double kTwoPow53 = 9007199254740992.0;

// NaN and negatives count as 0, anything above 1 as 1.
double clamp_rate(double rate) {
  if (!(rate > 0)) return 0;
  return rate > 1 ? 1 : rate;
}

std::string_view trim(std::string_view text) {
  constexpr std::string_view kBlanks = " \t\r\n";
  const size_t first = text.find_first_not_of(kBlanks);
  if (first == std::string_view::npos) return {};
  const size_t last = text.find_last_not_of(kBlanks);
  return text.substr(first, last - first + 1);
}

}  // namespace

bool FaultConfig::any() const {
  return drop > 0 || reorder > 0 || duplicate > 0 || corrupt > 0 || delay > 0;
}

std::optional<double> parse_rate(std::string_view text) {
  text = trim(text);
  bool percent = false;
  if (!text.empty() && text.back() == '%') {
    percent = true;
    text.remove_suffix(1);
  }
  if (text.empty()) return std::nullopt;

  double value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  if (!std::isfinite(value)) return std::nullopt;
  if (percent) value /= 100;
  if (value < 0 || value > 1) return std::nullopt;
  return value == 0 ? 0.0 : value;  // folds "-0" into +0
}

const char* fault_action_name(FaultAction action) {
  switch (action) {
    case FaultAction::kPass:
      return "pass";
    case FaultAction::kDrop:
      return "drop";
    case FaultAction::kDuplicate:
      return "duplicate";
    case FaultAction::kReorder:
      return "reorder";
    case FaultAction::kCorrupt:
      return "corrupt";
    case FaultAction::kDelay:
      return "delay";
  }
  return "?";
}

FaultPlan::FaultPlan(const FaultConfig& config) : state_(config.seed) {
  // Same order as kOrder.
  const double rates[kActions] = {config.drop, config.reorder, config.duplicate, config.corrupt,
                                  config.delay};
  double cumulative = 0;
  for (int i = 0; i < kActions; ++i) {
    cumulative = std::fmin(1.0, cumulative + clamp_rate(rates[i]));
    // Rounding, not truncation, so that a rate of 1 is exactly 2^53 and
    // every draw (< 2^53) falls below it.
    thresholds_[i] = static_cast<uint64_t>(std::llround(cumulative * kTwoPow53));
  }
  active_ = thresholds_[kActions - 1] > 0;
}

}  // namespace ofi_dpdk::net
