// unmap_guard_policy.cc: see unmap_guard_policy.h.
#include "drivers/net/unmap_guard_policy.h"

#include <rte_config.h>
#include <rte_version.h>

#include <charconv>

namespace ofi_dpdk::net {
namespace {

// Reads a decimal number at the front of `text` and drops it from there.
std::optional<unsigned> take_number(std::string_view* text) {
  unsigned value = 0;
  const auto [end, error] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (error != std::errc() || end == text->data()) return std::nullopt;
  text->remove_prefix(static_cast<size_t>(end - text->data()));
  return value;
}

bool take(std::string_view* text, char c) {
  if (text->empty() || text->front() != c) return false;
  text->remove_prefix(1);
  return true;
}

constexpr DpdkRelease kBuiltRelease{RTE_VER_YEAR, RTE_VER_MONTH, RTE_VER_MINOR};

}  // namespace

std::optional<UnmapGuardRequest> parse_unmap_guard_request(std::string_view text) {
  if (text == "auto") return UnmapGuardRequest::kAuto;
  if (text == "on" || text == "1" || text == "yes") return UnmapGuardRequest::kOn;
  if (text == "off" || text == "0" || text == "no") return UnmapGuardRequest::kOff;
  return std::nullopt;
}

std::optional<DpdkRelease> parse_dpdk_version(std::string_view text) {
  constexpr std::string_view kPrefix = "DPDK ";
  if (!text.starts_with(kPrefix)) return std::nullopt;
  text.remove_prefix(kPrefix.size());
  const auto year = take_number(&text);
  if (!year || !take(&text, '.')) return std::nullopt;
  const auto month = take_number(&text);
  if (!month || !take(&text, '.')) return std::nullopt;
  const auto minor = take_number(&text);
  if (!minor || (!text.empty() && text.front() != '-')) return std::nullopt;
  if (*month < 1 || *month > 12) return std::nullopt;
  return DpdkRelease{*year, *month, *minor};
}

std::string to_string(const DpdkRelease& release) {
  const std::string month = (release.month < 10 ? "0" : "") + std::to_string(release.month);
  return std::to_string(release.year) + "." + month + "." + std::to_string(release.minor);
}

bool memif_unmap_race_seen_on(const DpdkRelease& release) {
  // Every point release of both: their disconnect path is the one of
  // 22.11.0 (doc/upstream/README.md), and no fix has been released.
  return release.month == 11 && (release.year == 22 || release.year == 24);
}

UnmapGuardChoice choose_memif_unmap_guard(UnmapGuardRequest request,
                                          std::optional<DpdkRelease> running,
                                          const DpdkRelease& built) {
  const bool seen = running && memif_unmap_race_seen_on(*running);
  const std::string release = running ? "DPDK " + to_string(*running)
                                      : std::string("this DPDK (its version is not understood)");
  UnmapGuardChoice choice;
  switch (request) {
    case UnmapGuardRequest::kAuto:
      choice.guard = seen;
      choice.why = seen ? "net_memif unmap guard on: " + release +
                              " is a release whose net_memif unmaps its rings under a "
                              "poller when its peer goes (FI_DPDK_MEMIF_UNMAP_GUARD=auto; "
                              "off turns it off)"
                        : "net_memif unmap guard off: the race it covers was seen on DPDK "
                          "22.11 and 24.11, not on " +
                              release + " (FI_DPDK_MEMIF_UNMAP_GUARD=on turns it on)";
      break;
    case UnmapGuardRequest::kOn:
      choice.guard = true;
      choice.why = "net_memif unmap guard on (FI_DPDK_MEMIF_UNMAP_GUARD=on)";
      if (!seen) choice.why += ", on " + release + ", a release the race was not seen on";
      break;
    case UnmapGuardRequest::kOff:
      choice.why = "net_memif unmap guard off (FI_DPDK_MEMIF_UNMAP_GUARD=off)";
      if (seen) {
        choice.warn = true;
        choice.why += ": " + release +
                      "'s net_memif unmaps its rings when its peer goes, and a poller "
                      "inside a burst then faults";
      }
      break;
  }
  if (running && (running->year != built.year || running->month != built.month))
    choice.why += "; built against DPDK " + to_string(built);
  return choice;
}

UnmapGuardChoice choose_memif_unmap_guard(UnmapGuardRequest request) {
  return choose_memif_unmap_guard(request, parse_dpdk_version(rte_version()), kBuiltRelease);
}

}  // namespace ofi_dpdk::net
