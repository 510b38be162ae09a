#include "job/report.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <nlohmann/json.hpp>

namespace nbdcopy {
namespace {

using Json = nlohmann::json;

JobReport Finished() {
  JobReport report;
  report.source = "nbd+unix://alice:***@/?socket=/tmp/s";
  report.destination = "out.img";
  report.size = 3000;
  report.bytes_copied = 3000;
  report.stats.bytes_read = 2048;
  report.stats.bytes_written = 1024;
  report.stats.bytes_zeroed = 1024;
  report.stats.bytes_skipped = 952;
  report.stats.requests = 5;
  report.stats.bytes_cloned = 512;
  report.stats.map.windows_asked = 3;
  report.stats.map.bytes_unasked = 1000;
  report.stats.workers = 2;
  report.stats.failed_connections = {"connection 3 of 4 ...", "connection 4 of 4 ..."};
  report.stats.final_budget = 4096;
  report.stats.final_request_size = 512;
  report.copy_started = true;
  report.connections = 4;
  report.request_size = 1024;
  report.queue_size = 8192;
  report.elapsed_seconds = 1.5;
  return report;
}

TEST(ReportTest, EveryFigureOfAFinishedCopy) {
  Json json = Json::parse(RenderJson(Finished()));
  EXPECT_EQ(json["source"], "nbd+unix://alice:***@/?socket=/tmp/s");
  EXPECT_EQ(json["destination"], "out.img");
  EXPECT_EQ(json["size"], 3000);
  EXPECT_EQ(json["bytes_copied"], 3000);
  EXPECT_EQ(json["bytes_read"], 2048);
  EXPECT_EQ(json["bytes_written"], 1024);
  EXPECT_EQ(json["bytes_zeroed"], 1024);
  EXPECT_EQ(json["bytes_skipped"], 952);
  EXPECT_EQ(json["requests"], 5);
  EXPECT_EQ(json["bytes_cloned"], 512);
  EXPECT_EQ(json["extent_queries"], 3);
  EXPECT_EQ(json["bytes_unmapped"], 1000);
  EXPECT_EQ(json["synchronous"], false);
  EXPECT_EQ(json["connections"], 4);
  EXPECT_EQ(json["workers"], 2);
  EXPECT_EQ(json["connections_failed"], 2);
  EXPECT_EQ(json["request_size"], 1024);
  EXPECT_EQ(json["queue_size"], 8192);
  EXPECT_EQ(json["final_budget"], 4096);
  EXPECT_EQ(json["final_request_size"], 512);
  EXPECT_DOUBLE_EQ(json["elapsed_seconds"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(json["bytes_per_second"].get<double>(), 2000);
  EXPECT_TRUE(json["blkhash"].is_null());
  EXPECT_TRUE(json["verify"].is_null());
  EXPECT_TRUE(json["interrupted_by"].is_null());
  EXPECT_EQ(json["exit_status"], 0);
  EXPECT_TRUE(json["error"].is_null());
}

TEST(ReportTest, OneLine) {
  std::string text = RenderJson(Finished());
  EXPECT_EQ(text.find('\n'), std::string::npos);
  EXPECT_EQ(text.front(), '{');
  EXPECT_EQ(text.back(), '}');
}

TEST(ReportTest, ChecksumAndVerify) {
  JobReport report = Finished();
  report.blkhash = BlkhashSpec{"sha256", 65536};
  report.digest = "abcd";
  report.destination_digest = "abcd";
  Json json = Json::parse(RenderJson(report));
  EXPECT_EQ(json["blkhash"],
            Json::parse(R"({"algorithm":"sha256","block_size":65536,"digest":"abcd"})"));
  EXPECT_EQ(json["verify"], Json::parse(R"({"match":true,"destination_digest":"abcd",
                                             "destination_checksum":null})"));
  EXPECT_EQ(json["checksum"], nullptr);
  report.destination_digest = "ef01";
  EXPECT_EQ(Json::parse(RenderJson(report))["verify"]["match"], false);
}

TEST(ReportTest, PlainChecksumExpectedAndVerified) {
  JobReport report = Finished();
  report.checksum = ChecksumSpec{"sha512", "aa"};
  report.checksum_digest = "bb";
  Json json = Json::parse(RenderJson(report));
  EXPECT_EQ(json["checksum"], Json::parse(R"({"algorithm":"sha512","digest":"bb",
                                              "expected":"aa","match":false})"));
  EXPECT_EQ(json["verify"], nullptr);
  report.checksum->expected = "bb";
  report.destination_checksum = "bb";
  json = Json::parse(RenderJson(report));
  EXPECT_EQ(json["checksum"]["match"], true);
  EXPECT_EQ(json["verify"], Json::parse(R"({"match":true,"destination_digest":null,
                                             "destination_checksum":"bb"})"));
  report.destination_checksum = "cc";
  EXPECT_EQ(Json::parse(RenderJson(report))["verify"]["match"], false);
  report.checksum->expected.reset();
  EXPECT_EQ(Json::parse(RenderJson(report))["checksum"]["match"], nullptr);
}

TEST(ReportTest, FailureBeforeTheCopy) {
  JobReport report;
  report.source = "missing.img";
  report.destination = "out.img";
  report.exit_status = 1;
  report.error = "missing.img: No such file or directory";
  Json json = Json::parse(RenderJson(report));
  EXPECT_TRUE(json["size"].is_null());
  EXPECT_TRUE(json["connections"].is_null());
  EXPECT_TRUE(json["request_size"].is_null());
  EXPECT_TRUE(json["final_budget"].is_null());
  EXPECT_TRUE(json["final_request_size"].is_null());
  EXPECT_EQ(json["bytes_copied"], 0);
  EXPECT_EQ(json["bytes_per_second"], 0);
  EXPECT_EQ(json["exit_status"], 1);
  EXPECT_EQ(json["error"], "missing.img: No such file or directory");
}

TEST(ReportTest, Interrupted) {
  JobReport report = Finished();
  report.signal_number = SIGTERM;
  report.exit_status = 143;
  report.error = "interrupted after copying 1000 of 3000 bytes";
  Json json = Json::parse(RenderJson(report));
  EXPECT_EQ(json["interrupted_by"], "SIGTERM");
  EXPECT_EQ(json["exit_status"], 143);
}

TEST(ReportTest, InvalidUtf8InAMessageIsReplacedNotThrown) {
  JobReport report = Finished();
  report.error = "server said \xff\xfe";
  Json json = Json::parse(RenderJson(report));
  EXPECT_EQ(json["error"], "server said \xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(ReportTest, SalvageListsTheUnreadableRangesAndWhatWasRecovered) {
  JobReport report = Finished();
  EXPECT_TRUE(Json::parse(RenderJson(report))["unreadable"].is_null());
  EXPECT_TRUE(Json::parse(RenderJson(report))["recovered"].is_null());
  report.unreadable = JobReport::Unreadable{{{512, 512}, {2048, 1024}}, 1536, 40};
  report.bad_area_bytes = 4096;
  report.recovered_bytes = 2560;
  report.exit_status = 4;
  Json json = Json::parse(RenderJson(report));
  EXPECT_EQ(json["unreadable"], Json::parse(R"({"bytes": 1536, "reads": 40, "ranges":
      [{"offset": 512, "length": 512}, {"offset": 2048, "length": 1024}]})"));
  EXPECT_EQ(json["recovered"], Json::parse(R"({"bad_area_bytes": 4096, "recovered_bytes": 2560})"));
  EXPECT_EQ(json["exit_status"], 4);
}

}  // namespace
}  // namespace nbdcopy
