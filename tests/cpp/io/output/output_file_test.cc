// OutputFile: local files appear under their name only on Commit() (a
// temporary name before, nothing after Abort()); S3 objects are one PUT when
// small and a multipart upload when large, through a scripted transport.
#include "shardloader/io/output/output_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "io/remote/mock_http_transport.h"
#include "shardloader/io/open/open_source.h"
#include "shardloader/status.h"
#include "test_util.h"

namespace shardloader {
namespace {

namespace fs = std::filesystem;
using ::shardloader::testing::MockHttpTransport;
using ::shardloader::testing::MockReply;
using ::testing::HasSubstr;

// Names in `dir`, sorted.
std::vector<std::string> Listing(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

class LocalOutputFileTest : public ::testing::Test {
 protected:
  testing::TempDir dir_;
};

TEST_F(LocalOutputFileTest, AppearsOnlyOnCommit) {
  const std::string path = dir_.Join("shard.tar");
  absl::StatusOr<std::unique_ptr<OutputFile>> file = CreateOutputFile(path);
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_TRUE((*file)->Write("hello ").ok());
  ASSERT_TRUE((*file)->Write("world").ok());
  const std::vector<std::string> before = Listing(dir_.path());
  ASSERT_EQ(before.size(), 1u);
  EXPECT_THAT(before[0], ::testing::StartsWith(".shard.tar.partial-"));
  ASSERT_TRUE((*file)->Commit().ok());
  EXPECT_EQ(Listing(dir_.path()), std::vector<std::string>{"shard.tar"});
  EXPECT_EQ(testing::ReadFile(path), "hello world");
  EXPECT_EQ((*file)->size_bytes(), 11);
  // SHA-256("hello world").
  EXPECT_EQ((*file)->Sha256HexDigest(),
            "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9");
}

TEST_F(LocalOutputFileTest, AbortAndDestructionLeaveNothing) {
  {
    absl::StatusOr<std::unique_ptr<OutputFile>> file = CreateOutputFile(dir_.Join("a.tar"));
    ASSERT_TRUE(file.ok()) << file.status();
    ASSERT_TRUE((*file)->Write("partial").ok());
    (*file)->Abort();
  }
  {
    absl::StatusOr<std::unique_ptr<OutputFile>> file = CreateOutputFile(dir_.Join("b.tar"));
    ASSERT_TRUE(file.ok()) << file.status();
    ASSERT_TRUE((*file)->Write("partial").ok());
  }  // destroyed without Commit()
  EXPECT_TRUE(Listing(dir_.path()).empty());
}

TEST_F(LocalOutputFileTest, CommitReplacesAnOldFileWhole) {
  const std::string path = dir_.Join("index.json");
  testing::WriteFile(path, "old contents, longer than the new ones");
  ASSERT_TRUE(WriteWholeFile(path, "new").ok());
  EXPECT_EQ(testing::ReadFile(path), "new");
}

TEST_F(LocalOutputFileTest, AMissingDirectoryIsNotFoundNamingIt) {
  const std::string path = dir_.Join("no/such/dir/shard.tar");
  absl::StatusOr<std::unique_ptr<OutputFile>> file = CreateOutputFile(path);
  ASSERT_FALSE(file.ok());
  EXPECT_TRUE(absl::IsNotFound(file.status())) << file.status();
  EXPECT_THAT(std::string(file.status().message()), HasSubstr("no/such/dir"));
}

TEST_F(LocalOutputFileTest, HttpUrlsCannotBeWritten) {
  absl::StatusOr<std::unique_ptr<OutputFile>> file = CreateOutputFile("https://host/shard.tar");
  ASSERT_FALSE(file.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(file.status())) << file.status();
}

constexpr char kObjectUrl[] = "http://s3.mock.test:9000/bucket/out/shard.tar";

class S3OutputFileTest : public ::testing::Test {
 protected:
  S3OutputFileTest() {
    options_.endpoint_url = "http://s3.mock.test:9000";
    options_.region = "eu-mock-1";
    options_.anonymous = true;  // no credentials needed; signing is tested in s3_client_test
    options_.part_size_bytes = 5 << 20;  // S3's smallest part
    options_.initial_backoff = absl::Milliseconds(1);
    options_.max_backoff = absl::Milliseconds(1);
  }

  std::unique_ptr<OutputFile> Create() {
    absl::StatusOr<std::unique_ptr<OutputFile>> file =
        CreateS3OutputFile("s3://bucket/out/shard.tar", options_, transport_);
    EXPECT_TRUE(file.ok()) << file.status();
    return file.ok() ? *std::move(file) : nullptr;
  }

  // Scripts the answers of a multipart upload with `parts` parts.
  void ScriptMultipart(int parts) {
    transport_->Script(std::string(kObjectUrl) + "?uploads=",
                       {.status = 200,
                        .body = "<InitiateMultipartUploadResult><UploadId>up-1</UploadId>"
                                "</InitiateMultipartUploadResult>"});
    for (int i = 1; i <= parts; ++i) {
      transport_->Script(absl::StrCat(kObjectUrl, "?partNumber=", i, "&uploadId=up-1"),
                         {.status = 200, .headers = {{"etag", absl::StrCat("\"part-", i, "\"")}}});
    }
  }

  std::vector<std::string> Sent() const {
    std::vector<std::string> sent;
    for (const HttpRequest& request : transport_->requests()) {
      sent.push_back(request.method + " " + request.url.substr(std::string(kObjectUrl).size()));
    }
    return sent;
  }

  SourceOptions options_;
  std::shared_ptr<MockHttpTransport> transport_ = std::make_shared<MockHttpTransport>();
};

TEST_F(S3OutputFileTest, ASmallFileIsOnePutAtCommit) {
  transport_->Script(kObjectUrl, {.status = 200});
  std::unique_ptr<OutputFile> file = Create();
  ASSERT_NE(file, nullptr);
  ASSERT_TRUE(file->Write("small shard").ok());
  EXPECT_TRUE(transport_->requests().empty()) << "nothing is sent before Commit()";
  ASSERT_TRUE(file->Commit().ok());
  const std::vector<HttpRequest> puts = transport_->RequestsWith("PUT");
  ASSERT_EQ(puts.size(), 1u);
  EXPECT_EQ(puts[0].url, kObjectUrl);
  EXPECT_EQ(puts[0].body, "small shard");
}

TEST_F(S3OutputFileTest, ALargeFileIsAMultipartUploadCompletedInOrder) {
  ScriptMultipart(3);
  transport_->Script(std::string(kObjectUrl) + "?uploadId=up-1",
                     {.status = 200, .body = "<CompleteMultipartUploadResult/>"});
  std::unique_ptr<OutputFile> file = Create();
  ASSERT_NE(file, nullptr);
  const std::string part(3 << 20, 'x');
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(file->Write(part).ok());  // 12 MiB
  // Two full parts are uploaded while writing; the object does not exist yet.
  EXPECT_EQ(Sent(), (std::vector<std::string>{"POST ?uploads=", "PUT ?partNumber=1&uploadId=up-1",
                                              "PUT ?partNumber=2&uploadId=up-1"}));
  ASSERT_TRUE(file->Commit().ok());
  const std::vector<HttpRequest> requests = transport_->requests();
  ASSERT_EQ(requests.size(), 5u);
  EXPECT_EQ(requests[3].body.size(), size_t{2} << 20);  // the last, short part
  EXPECT_EQ(requests[4].method, "POST");
  EXPECT_THAT(requests[4].body,
              HasSubstr("<Part><PartNumber>1</PartNumber><ETag>\"part-1\"</ETag></Part>"
                        "<Part><PartNumber>2</PartNumber><ETag>\"part-2\"</ETag></Part>"
                        "<Part><PartNumber>3</PartNumber><ETag>\"part-3\"</ETag></Part>"));
}

TEST_F(S3OutputFileTest, AnUploadNotCommittedIsAborted) {
  ScriptMultipart(1);
  transport_->Script(std::string(kObjectUrl) + "?uploadId=up-1", {.status = 204});
  {
    std::unique_ptr<OutputFile> file = Create();
    ASSERT_NE(file, nullptr);
    ASSERT_TRUE(file->Write(std::string(6 << 20, 'x')).ok());
  }  // destroyed without Commit()
  EXPECT_EQ(Sent(), (std::vector<std::string>{"POST ?uploads=", "PUT ?partNumber=1&uploadId=up-1",
                                              "DELETE ?uploadId=up-1"}));
}

TEST_F(S3OutputFileTest, ALateCompletionErrorIsAnError) {
  ScriptMultipart(2);
  // S3 may answer 200 with an error document when completion fails late.
  transport_->Script(std::string(kObjectUrl) + "?uploadId=up-1",
                     {.status = 200, .body = "<Error><Code>InternalError</Code></Error>"});
  std::unique_ptr<OutputFile> file = Create();
  ASSERT_NE(file, nullptr);
  ASSERT_TRUE(file->Write(std::string(6 << 20, 'x')).ok());
  const absl::Status status = file->Commit();
  EXPECT_TRUE(absl::IsUnavailable(status)) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr("CompleteMultipartUpload"));
}

TEST_F(S3OutputFileTest, APartAnsweredWithoutAnETagFailsTheWrite) {
  transport_->Script(std::string(kObjectUrl) + "?uploads=",
                     {.status = 200, .body = "<UploadId>up-1</UploadId>"});
  transport_->Script(std::string(kObjectUrl) + "?partNumber=1&uploadId=up-1", {.status = 200});
  std::unique_ptr<OutputFile> file = Create();
  ASSERT_NE(file, nullptr);
  const absl::Status status = file->Write(std::string(6 << 20, 'x'));
  EXPECT_TRUE(absl::IsUnavailable(status)) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr("no ETag"));
}

}  // namespace
}  // namespace shardloader
