// RemoteObject through a scripted transport: retries, resume at the byte,
// ETag pinning, HTTP status mapping, and the parallel stream. No server; each
// test runs in milliseconds (backoff of 1 ms).
#include "shardloader/io/remote/remote_object.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "io/remote/mock_http_transport.h"
#include "shardloader/io/remote/remote_source.h"
#include "shardloader/status.h"
#include "test_util.h"

namespace shardloader {
namespace {

using ::shardloader::testing::HeaderValue;
using ::shardloader::testing::MockHttpTransport;
using ::shardloader::testing::MockReply;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kUrl[] = "http://mock.test/shards/000.tar";

std::string Pattern(size_t size) {
  std::string bytes(size, '\0');
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>((i * 131 + i / 251) & 0xff);
  return bytes;
}

SourceOptions FastOptions(int max_attempts = 8) {
  SourceOptions options;
  options.max_attempts = max_attempts;
  options.initial_backoff = absl::Milliseconds(1);
  options.max_backoff = absl::Milliseconds(1);
  return options;
}

// The "Range:" values of the GETs `transport` was sent, in order.
std::vector<std::string> RangesOf(const MockHttpTransport& transport) {
  std::vector<std::string> ranges;
  for (const HttpRequest& request : transport.RequestsWith("GET")) {
    ranges.push_back(HeaderValue(request, "Range").value_or("(none)"));
  }
  return ranges;
}

class RemoteObjectTest : public ::testing::Test {
 protected:
  RemoteObjectTest() { transport_->PutObject(kUrl, bytes_); }

  absl::StatusOr<std::shared_ptr<RemoteObject>> Open(const SourceOptions& options) {
    return OpenRemoteObject(kUrl, options, transport_);
  }
  std::shared_ptr<RemoteObject> OpenOrDie(const SourceOptions& options = FastOptions()) {
    absl::StatusOr<std::shared_ptr<RemoteObject>> object = Open(options);
    EXPECT_TRUE(object.ok()) << object.status();
    return object.ok() ? *object : nullptr;
  }
  // Reads `size` bytes at `offset`; the status, and the bytes in *out.
  static absl::Status Read(const RemoteObject& object, int64_t offset, size_t size,
                           std::string* out) {
    out->assign(size, '\0');
    return object.ReadRange(offset, size, out->data());
  }

  // Opens the object and reads its bytes 0-499, while the object's ETag
  // becomes `new_etag` once the first 50 bytes arrived.
  absl::Status ReadAcrossAnEtagChange(const std::string& new_etag) {
    std::shared_ptr<RemoteObject> object = OpenOrDie();
    transport_->Script(kUrl, {.cut_after = 50, .then_etag = new_etag});
    std::string got;
    return Read(*object, 0, 500, &got);
  }

  const std::string bytes_ = Pattern(1000);
  const std::shared_ptr<MockHttpTransport> transport_ = std::make_shared<MockHttpTransport>();
};

TEST_F(RemoteObjectTest, OpenPinsSizeAndEtagFromHead) {
  std::shared_ptr<RemoteObject> object = OpenOrDie();
  ASSERT_NE(object, nullptr);
  EXPECT_EQ(object->size(), 1000);
  EXPECT_EQ(object->etag(), "\"etag-1\"");
  ASSERT_EQ(transport_->requests().size(), 1u);
  EXPECT_EQ(transport_->requests()[0].method, "HEAD");
}

TEST_F(RemoteObjectTest, ReadsARangeWithOneRangedGetCarryingIfMatch) {
  std::shared_ptr<RemoteObject> object = OpenOrDie();
  std::string got;
  ASSERT_TRUE(Read(*object, 100, 600, &got).ok());
  EXPECT_EQ(got, bytes_.substr(100, 600));
  const std::vector<HttpRequest> gets = transport_->RequestsWith("GET");
  ASSERT_EQ(gets.size(), 1u);
  EXPECT_EQ(HeaderValue(gets[0], "Range"), "bytes=100-699");
  EXPECT_EQ(HeaderValue(gets[0], "If-Match"), "\"etag-1\"");
}

TEST_F(RemoteObjectTest, RetriesServerErrorsAndThrottlingThenSucceeds) {
  std::shared_ptr<RemoteObject> object = OpenOrDie();
  transport_->FailNext(kUrl, 1, 500);
  transport_->FailNext(kUrl, 1, 503, "<Error><Code>SlowDown</Code></Error>");
  transport_->FailNext(kUrl, 1, 429);
  transport_->FailNext(kUrl, 1, 408);
  std::string got;
  ASSERT_TRUE(Read(*object, 0, 10, &got).ok());
  EXPECT_EQ(got, bytes_.substr(0, 10));
  EXPECT_EQ(transport_->RequestsWith("GET").size(), 5u);
}

TEST_F(RemoteObjectTest, RetriesTransferErrors) {
  std::shared_ptr<RemoteObject> object = OpenOrDie();
  transport_->Script(kUrl, {.transport_error = absl::UnavailableError("connection reset")});
  transport_->Script(kUrl, {.transport_error = absl::DeadlineExceededError("low speed")});
  std::string got;
  ASSERT_TRUE(Read(*object, 990, 10, &got).ok());
  EXPECT_EQ(got, bytes_.substr(990));
  EXPECT_EQ(transport_->RequestsWith("GET").size(), 3u);
}

TEST_F(RemoteObjectTest, GivesUpAfterMaxAttemptsAsUnavailableNamingUriAndOffset) {
  std::shared_ptr<RemoteObject> object = OpenOrDie(FastOptions(/*max_attempts=*/3));
  transport_->FailNext(kUrl, 10, 503);
  std::string got;
  const absl::Status status = Read(*object, 200, 10, &got);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_THAT(status.message(), HasSubstr("gave up after 3 attempts"));
  EXPECT_THAT(status.message(), HasSubstr("HTTP 503"));
  EXPECT_EQ(GetContext(status).uri, kUrl);
  EXPECT_EQ(GetContext(status).offset, 200);
  EXPECT_EQ(transport_->RequestsWith("GET").size(), 3u);
}

TEST_F(RemoteObjectTest, OpenRetriesHeadToo) {
  transport_->FailNext(kUrl, 2, 502);
  ASSERT_NE(OpenOrDie(), nullptr);
  EXPECT_EQ(transport_->RequestsWith("HEAD").size(), 3u);
}

TEST_F(RemoteObjectTest, ResumesAtTheByteWhereAShortBodyStopped) {
  std::shared_ptr<RemoteObject> object = OpenOrDie();
  transport_->CutNext(kUrl, 300);
  transport_->CutNext(kUrl, 0);
  transport_->CutNext(kUrl, 100);
  std::string got;
  ASSERT_TRUE(Read(*object, 100, 600, &got).ok());
  EXPECT_EQ(got, bytes_.substr(100, 600));
  // Each retry asks for the rest only, starting at the first missing byte.
  EXPECT_THAT(RangesOf(*transport_),
              ElementsAre("bytes=100-699", "bytes=400-699", "bytes=400-699", "bytes=500-699"));
}

TEST_F(RemoteObjectTest, ShortBodiesCountAsAttempts) {
  std::shared_ptr<RemoteObject> object = OpenOrDie(FastOptions(/*max_attempts=*/2));
  transport_->CutNext(kUrl, 1);
  transport_->CutNext(kUrl, 1);
  std::string got;
  const absl::Status status = Read(*object, 0, 100, &got);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_EQ(got.substr(0, 2), bytes_.substr(0, 2));  // what arrived is kept
  EXPECT_THAT(RangesOf(*transport_), ElementsAre("bytes=0-99", "bytes=1-99"));
}

TEST_F(RemoteObjectTest, EtagChangeMidReadIsDataLossThroughIfMatch) {
  const absl::Status status = ReadAcrossAnEtagChange("\"etag-2\"");
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
  EXPECT_THAT(status.message(), HasSubstr("412"));
  EXPECT_EQ(GetContext(status).uri, kUrl);
  // The resumed GET still asks for the pinned version, and is not retried.
  const std::vector<HttpRequest> gets = transport_->RequestsWith("GET");
  ASSERT_EQ(gets.size(), 2u);
  EXPECT_EQ(HeaderValue(gets[1], "If-Match"), "\"etag-1\"");
  EXPECT_EQ(HeaderValue(gets[1], "Range"), "bytes=50-499");
}

TEST_F(RemoteObjectTest, WeakEtagIsComparedNotSentAndAChangeIsDataLoss) {
  transport_->PutObject(kUrl, bytes_, "W/\"weak-1\"");
  const absl::Status status = ReadAcrossAnEtagChange("W/\"weak-2\"");
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
  EXPECT_THAT(status.message(), HasSubstr("ETag was W/\"weak-1\", now W/\"weak-2\""));
  for (const HttpRequest& get : transport_->RequestsWith("GET")) {
    EXPECT_EQ(HeaderValue(get, "If-Match"), std::nullopt);
  }
}

TEST_F(RemoteObjectTest, SizeChangeInContentRangeIsDataLoss) {
  std::shared_ptr<RemoteObject> object = OpenOrDie();
  transport_->Script(kUrl, {.status = 206,
                            .headers = {{"content-range", "bytes 0-9/2000"}},
                            .body = bytes_.substr(0, 10)});
  std::string got;
  const absl::Status status = Read(*object, 0, 10, &got);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
  EXPECT_THAT(status.message(), HasSubstr("it was 1000 bytes, now 2000"));
}

TEST_F(RemoteObjectTest, AServerIgnoringRangeIsUnimplemented) {
  std::shared_ptr<RemoteObject> object = OpenOrDie();
  transport_->Script(kUrl, {.status = 200, .body = bytes_.substr(0, 10)});
  std::string got;
  EXPECT_EQ(Read(*object, 5, 10, &got).code(), absl::StatusCode::kUnimplemented);
}

TEST_F(RemoteObjectTest, MissingObjectIsNotFoundWithoutRetries) {
  const absl::StatusOr<std::shared_ptr<RemoteObject>> object =
      OpenRemoteObject("http://mock.test/missing.tar", FastOptions(), transport_);
  EXPECT_EQ(object.status().code(), absl::StatusCode::kNotFound) << object.status();
  EXPECT_EQ(GetContext(object.status()).uri, "http://mock.test/missing.tar");
  EXPECT_EQ(transport_->requests().size(), 1u);
}

TEST_F(RemoteObjectTest, ClientErrorsMapToTheTableAndAreNotRetried) {
  struct Case {
    long http;
    absl::StatusCode code;
  };
  for (const Case& c :
       {Case{404, absl::StatusCode::kNotFound}, Case{403, absl::StatusCode::kPermissionDenied},
        Case{401, absl::StatusCode::kPermissionDenied},
        Case{400, absl::StatusCode::kInvalidArgument}, Case{416, absl::StatusCode::kOutOfRange}}) {
    auto transport = std::make_shared<MockHttpTransport>();
    transport->PutObject(kUrl, bytes_);
    absl::StatusOr<std::shared_ptr<RemoteObject>> object =
        OpenRemoteObject(kUrl, FastOptions(), transport);
    ASSERT_TRUE(object.ok()) << object.status();
    transport->FailNext(kUrl, 1, c.http, "<Error><Code>Denied</Code></Error>");
    std::string got;
    const absl::Status status = Read(**object, 10, 10, &got);
    EXPECT_EQ(status.code(), c.code) << c.http << ": " << status;
    EXPECT_THAT(status.message(), HasSubstr(absl::StrCat("HTTP ", c.http)));
    EXPECT_EQ(GetContext(status).offset, 10);
    EXPECT_EQ(transport->RequestsWith("GET").size(), 1u) << c.http;
  }
}

TEST_F(RemoteObjectTest, HeadWithoutContentLengthIsInvalidArgument) {
  transport_->Script(kUrl, {.status = 200});
  EXPECT_EQ(Open(FastOptions()).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(RemoteObjectTest, RangeOutsideTheObjectIsDataLossBeforeAnyRequest) {
  std::shared_ptr<RemoteObject> object = OpenOrDie();
  char buffer[16];
  for (const auto& [offset, size] : std::vector<std::pair<int64_t, size_t>>{
           {1001, 1},
           {995, 10},
           {-1, 1},
           {1, static_cast<size_t>(std::numeric_limits<int64_t>::max())},
           {500, std::numeric_limits<size_t>::max()},
           {std::numeric_limits<int64_t>::max(), 1}}) {
    const absl::Status status = object->ReadRange(offset, size, buffer);
    EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << offset << "+" << size;
    EXPECT_EQ(GetContext(status).uri, kUrl);
  }
  EXPECT_TRUE(transport_->RequestsWith("GET").empty());
}

TEST_F(RemoteObjectTest, ParallelStreamReassemblesPartsAndResumesCutOnes) {
  const std::string big = Pattern(300 << 10);  // five 64 KiB parts
  transport_->PutObject(kUrl, big);
  SourceOptions options = FastOptions();
  options.part_size_bytes = 64 << 10;
  options.max_concurrency = 3;
  absl::StatusOr<std::shared_ptr<RemoteObject>> object = Open(options);
  ASSERT_TRUE(object.ok()) << object.status();
  transport_->CutNext(kUrl, 1000);
  transport_->FailNext(kUrl, 1, 500);
  std::unique_ptr<ByteSource> stream = ParallelStreamOf(*object, options);
  absl::StatusOr<std::string> got = testing::ReadBytes(*stream, big.size());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(*got == big);
  char extra;
  EXPECT_EQ(*stream->Read(&extra, 1), 0u);
  EXPECT_EQ(transport_->RequestsWith("GET").size(), 5u + 2u);
}

}  // namespace
}  // namespace shardloader
