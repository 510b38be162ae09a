#include "endpoints/nbd/nbd_export_change.h"

#include <fmt/format.h>

namespace nbdcopy {

namespace {

const char* YesNo(bool value) { return value ? "yes" : "no"; }

std::string SizeText(const std::optional<uint64_t>& size) {
  return size ? std::to_string(*size) : std::string("unknown");
}

}  // namespace

std::string ExportChange(const EndpointInfo& was, const EndpointInfo& now) {
  std::string change;
  auto differ = [&change](const char* property, const std::string& now_value,
                          const std::string& was_value) {
    if (now_value == was_value) return;
    if (!change.empty()) change += "; ";
    change += fmt::format("{} {}, was {}", property, now_value, was_value);
  };
  differ("size", SizeText(now.size), SizeText(was.size));
  differ("read-only", YesNo(now.read_only), YesNo(was.read_only));
  differ("flush", YesNo(now.can_flush), YesNo(was.can_flush));
  differ("multi-conn", YesNo(now.can_multi_conn), YesNo(was.can_multi_conn));
  differ("block status", YesNo(now.can_extents), YesNo(was.can_extents));
  differ("zero", YesNo(now.efficient_zero), YesNo(was.efficient_zero));
  differ("minimum block size", std::to_string(now.min_block_size),
         std::to_string(was.min_block_size));
  differ("maximum block size", std::to_string(now.max_block_size),
         std::to_string(was.max_block_size));
  return change;
}

}  // namespace nbdcopy
