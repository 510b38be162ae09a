#include "job/report.h"

#include <string.h>

#include <nlohmann/json.hpp>

namespace nbdcopy {

namespace {

using Json = nlohmann::ordered_json;  // fields in the documented order

template <typename T>
Json OrNull(const std::optional<T>& value) {
  return value ? Json(*value) : Json(nullptr);
}

Json ChecksumJson(const JobReport& report) {
  if (!report.blkhash) return nullptr;
  return Json{{"algorithm", report.blkhash->algorithm},
              {"block_size", report.blkhash->block_size},
              {"digest", OrNull(report.digest)}};
}

// The plain checksum (--checksum): the expected digest and whether the
// source's matched it (null: none expected, or not computed).
Json PlainChecksumJson(const JobReport& report) {
  if (!report.checksum) return nullptr;
  const std::optional<std::string>& expected = report.checksum->expected;
  Json match = expected && report.checksum_digest ? Json(*expected == *report.checksum_digest)
                                                  : Json(nullptr);
  return Json{{"algorithm", report.checksum->algorithm},
              {"digest", OrNull(report.checksum_digest)},
              {"expected", OrNull(expected)},
              {"match", match}};
}

Json VerifyJson(const JobReport& report) {
  if (!report.destination_digest && !report.destination_checksum) return nullptr;
  const bool match = (!report.destination_digest || report.digest == report.destination_digest) &&
                     (!report.destination_checksum ||
                      report.checksum_digest == report.destination_checksum);
  return Json{{"match", match},
              {"destination_digest", OrNull(report.destination_digest)},
              {"destination_checksum", OrNull(report.destination_checksum)}};
}

Json DirtyJson(const JobReport& report) {
  if (!report.dirty_bitmap) return nullptr;
  Json json = {{"name", *report.dirty_bitmap}};
  json["dirty_bytes"] = report.dirty ? Json(report.dirty->dirty_bytes) : Json(nullptr);
  json["ranges"] = report.dirty ? Json(report.dirty->ranges) : Json(nullptr);
  json["clean_bytes"] = report.dirty ? Json(report.dirty->clean_bytes) : Json(nullptr);
  return json;
}

Json RangesJson(const JobReport& report) {
  if (!report.ranges_file) return nullptr;
  Json json = {{"file", *report.ranges_file},
               {"listed_bytes", report.listed_bytes},
               {"listed_ranges", report.listed_ranges}};
  // What the copy does of them, its blocks whole (as for a dirty bitmap).
  json["dirty_bytes"] = report.dirty ? Json(report.dirty->dirty_bytes) : Json(nullptr);
  json["ranges"] = report.dirty ? Json(report.dirty->ranges) : Json(nullptr);
  json["clean_bytes"] = report.dirty ? Json(report.dirty->clean_bytes) : Json(nullptr);
  return json;
}

Json UnreadableJson(const JobReport& report) {
  if (!report.unreadable) return nullptr;
  Json ranges = Json::array();
  for (const auto& [offset, length] : report.unreadable->ranges) {
    ranges.push_back(Json{{"offset", offset}, {"length", length}});
  }
  return Json{{"bytes", report.unreadable->bytes},
              {"ranges", std::move(ranges)},
              {"reads", report.unreadable->reads}};
}

Json RecoveredJson(const JobReport& report) {
  if (!report.bad_area_bytes) return nullptr;
  return Json{{"bad_area_bytes", *report.bad_area_bytes},
              {"recovered_bytes", OrNull(report.recovered_bytes)}};
}

Json SignalName(int signal_number) {
  if (signal_number == 0) return nullptr;
  const char* abbreviation = sigabbrev_np(signal_number);
  return abbreviation ? Json(std::string("SIG") + abbreviation) : Json(signal_number);
}

}  // namespace

std::string RenderJson(const JobReport& report) {
  const CopyStats& stats = report.stats;
  double throughput = report.elapsed_seconds > 0
                          ? static_cast<double>(report.bytes_copied) / report.elapsed_seconds
                          : 0;
  Json json = {
      {"source", report.source},
      {"destination", report.destination},
      {"size", OrNull(report.size)},
      {"bytes_copied", report.bytes_copied},
      {"bytes_read", stats.bytes_read},
      {"bytes_written", stats.bytes_written},
      {"bytes_zeroed", stats.bytes_zeroed},
      {"bytes_skipped", stats.bytes_skipped},
      {"bytes_cloned", stats.bytes_cloned},
      {"bytes_already_done", report.bytes_already_done},
      {"requests", stats.requests},
      {"extent_queries", stats.map.windows_asked},
      {"bytes_unmapped", stats.map.bytes_unasked},
      {"synchronous", report.synchronous},
      {"connections", report.copy_started ? Json(report.connections) : Json(nullptr)},
      {"workers", stats.workers},
      {"connections_failed", stats.failed_connections.size()},
      {"request_size", report.copy_started ? Json(report.request_size) : Json(nullptr)},
      {"queue_size", report.copy_started ? Json(report.queue_size) : Json(nullptr)},
      {"final_budget", stats.final_budget > 0 ? Json(stats.final_budget) : Json(nullptr)},
      {"final_request_size",
       stats.final_request_size > 0 ? Json(stats.final_request_size) : Json(nullptr)},
      {"elapsed_seconds", report.elapsed_seconds},
      {"bytes_per_second", throughput},
      {"blkhash", ChecksumJson(report)},
      {"checksum", PlainChecksumJson(report)},
      {"verify", VerifyJson(report)},
      {"dirty_bitmap", DirtyJson(report)},
      {"ranges", RangesJson(report)},
      {"unreadable", UnreadableJson(report)},
      {"recovered", RecoveredJson(report)},
      {"checkpoints", report.checkpoints},
      {"reconnections", report.reconnections},
      {"interrupted_by", SignalName(report.signal_number)},
      {"exit_status", report.exit_status},
      {"error", report.error.empty() ? Json(nullptr) : Json(report.error)},
  };
  // Messages may quote bytes from servers: never let bad UTF-8 throw.
  return json.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace nbdcopy
